"""Every silenced check says why: a `# type: ignore[code]` is followed by `# reason`, a
`# noqa: CODE` by `- reason` (or `(reason)`), so a reader (and the next refactor) can tell whether
the suppression still holds. Comments are read with tokenize, so the patterns inside strings
(as in this file) do not count."""

from __future__ import annotations

import io
import re
import tokenize
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# mypy's form: the error codes in brackets, then a comment of its own with the reason.
_IGNORE = re.compile(r"type:\s*ignore(?P<codes>\[[^\]]*\])?(?P<rest>.*)")
# ruff's form: the codes, then the reason after a dash or in parentheses.
_NOQA = re.compile(r"noqa(?P<codes>:\s*[A-Z]+[0-9]+(?:\s*,\s*[A-Z]+[0-9]+)*)?(?P<rest>.*)", re.IGNORECASE)


def unexplained(source: str) -> list[tuple[int, str]]:
    """(line, comment) of each suppression in ``source`` without a code or a reason."""
    out = []
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type != tokenize.COMMENT:
            continue
        text = tok.string
        m = _IGNORE.search(text)
        if m and not (m["codes"] and re.search(r"#\s*\w", m["rest"])):
            out.append((tok.start[0], text))
            continue
        m = _NOQA.search(text)
        if m and not (m["codes"] and re.match(r"\s*(-|\()\s*\w", m["rest"])):
            out.append((tok.start[0], text))
    return out


def test_every_type_ignore_and_noqa_in_src_and_tests_says_why():
    bad = [f"{path.relative_to(ROOT)}:{line}: {text}"
           for top in ("src", "tests") for path in sorted((ROOT / top).rglob("*.py"))
           for line, text in unexplained(path.read_text(encoding="utf-8"))]
    assert not bad, "suppressions without a code and a reason:\n" + "\n".join(bad)


def test_the_check_sees_each_form_without_a_reason():
    assert unexplained("x = f()  # type: ignore\n") == [(1, "# type: ignore")]
    assert unexplained("x = f()  # type: ignore[arg-type]\n")
    assert unexplained("import os  # noqa\n")
    assert unexplained("import os  # noqa: F401\n")
    assert not unexplained("x = f()  # type: ignore[arg-type]  # set by the caller\n")
    assert not unexplained("import os  # noqa: F401 - re-exported\n")
    assert not unexplained("import os  # noqa: E402,F401 (registers on import)\n")
    assert not unexplained('s = "# type: ignore"\n')  # a string, not a comment
