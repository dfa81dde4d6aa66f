"""The docs say what perflab does and why, not how it came to be: no "Before, ...", "on the current
code", "tried first and rejected", "0.50 before", "an earlier run"; the code's comments, docstrings
and bench scripts name no issue. What was tried and dropped belongs in commit messages. (A
comparison with another rule stays, told as what that rule would do: "a rule that called ...
would call 72 %".)"""

from __future__ import annotations

import re
from pathlib import Path

from tests.docs_pages import ROOT, pages, prose

# Phrases that tell the project's history; found in a page's prose (pasted output is the
# program's own words: "was 2, now 0" is what `machine tune` printed).
HISTORY = [
    (r"(?:^|[.;:]\s+)Before,", "'Before, ...'"),
    (r"\b(?:on|in|with) the (?:current|new|old) code\b", "the current/old code"),
    (r"\bthe code before\b", "the code before"),
    (r"\btried (?:first|and (?:rejected|dropped))\b|\b(?:was|were) (?:tried first|rejected)\b", "what was tried"),
    (r"\bbefore the (?:last |latest )?(?:fix|change|changes|cache|rewrite)\b", "before a change"),
    (r"\((?:before|previously|formerly)\)|\b\d[\d.]*(?:\s*%)?\s+before\)", "a figure 'before'"),
    (r"\bthe rule before\b|\bthe old rule\b", "the rule before"),
    (r"\ban earlier run\b|\bin an earlier\s+run\b", "an earlier run"),
    (r"\b(?:no longer|used to)\s+(?:calls?|names?|prints?|says?|reports?|finds?|fails?)\b", "what perflab used to do"),
    (r"\bshould be replaced by\b", "a to-do"),
    (r";\s*now (?:in|at|it)\b|\bwithin a speed now\b", "'now' against a past"),
]

SOURCES = [ROOT / "src" / "perflab", ROOT / "bench", ROOT / "tests", ROOT / "scripts"]
_ISSUE = re.compile(r"\b[Ii]ssues?\s*#?\d+|\b[Ii]ssue\s+\d+'s\b")
# History told in the code's own comments and docstrings (perflab's messages as well).
_CODE_HISTORY = re.compile(r"\btried first\b|\b(?:on|in) the current code\b|\bthe code before\b|"
                           r"(?:#|\"\"\")\s*Before, ")


def history_findings(page_files) -> list[str]:
    bad = []
    for page in page_files:
        # a phrase quoted as a phrase ("tried first") is named, not told
        text = re.sub(r'"[^"\n]{1,60}"', lambda m: " " * len(m.group(0)), prose(page))
        flat = re.sub(r"\s", " ", text)  # a phrase broken across two lines is still found
        for pattern, what in HISTORY:
            for m in re.finditer(pattern, flat, flags=re.M):
                n = text.count("\n", 0, m.start()) + 1
                bad.append(f"{page.name}:{n}: {what}: {m.group(0)!r}")
    return bad


def test_no_page_tells_the_projects_history():
    bad = history_findings(pages())
    assert not bad, "say what perflab does and why (history goes in commit messages):\n" + "\n".join(bad)


def test_the_history_lexicon_can_fail(tmp_path):
    page = tmp_path / "p.md"
    page.write_text("Before, equal commands were called different. Run on the current code at load 1.\n"
                    "Found in 0.975 (0.50/0.55 before). The t-test was tried first and rejected.\n"
                    "```\n$ perflab machine tune\naslr: was 2, now 0\n```\n"
                    "A rule that called it would call 72 %. Named before any run.\n")
    found = [b.split(": ")[1] for b in history_findings([page])]
    assert found == ["'Before, ...'", "the current/old code", "what was tried", "a figure 'before'"], found


def _source_files():
    for base in SOURCES:
        for p in sorted(base.rglob("*")):
            if p.is_file() and (p.suffix in (".py", ".sh") or p.name in ("pg-local", "slurm-local")) \
                    and "__pycache__" not in p.parts and p.name != Path(__file__).name:
                yield p
    yield ROOT / "Makefile"


def test_no_source_comment_names_an_issue_or_tells_history():
    bad = []
    for p in _source_files():
        for n, line in enumerate(p.read_text(errors="replace").splitlines(), 1):
            if _ISSUE.search(line) or _CODE_HISTORY.search(line):
                bad.append(f"{p.relative_to(ROOT)}:{n}: {line.strip()[:90]}")
    assert not bad, "comments say why, not which issue asked (issue numbers go in commit messages):\n" + "\n".join(bad)
