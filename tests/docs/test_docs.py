"""The docs a person reads: a page per command, README links that resolve, a README of readable
length with no unfilled placeholder."""

from __future__ import annotations

import re
from pathlib import Path

from perflab.cli import COMMANDS

ROOT = Path(__file__).resolve().parents[2]
# Commands documented on a shared page.
PAGE = {"resume": "results"}


def test_every_command_has_a_page():
    missing = [name for name in COMMANDS if not (ROOT / "docs" / f"{PAGE.get(name, name)}.md").is_file()]
    assert not missing, f"commands without a page under docs/: {missing}"


def test_readme_links_resolve_and_nothing_is_left_unfilled():
    text = (ROOT / "README.md").read_text()
    assert len(text.splitlines()) <= 320, "the README should stay short: move detail to docs/"
    assert not re.search(r"[A-Z_]{4,}PLACEHOLDER|SHAPE_OUTPUT", text)
    broken = [target for target in re.findall(r"\]\(([^)#\s]+)", text)
              if not target.startswith("http") and not (ROOT / target).exists()]
    assert not broken, f"README links to missing files: {broken}"


def test_doc_pages_link_to_existing_pages():
    broken = []
    for page in sorted((ROOT / "docs").glob("*.md")):
        # Pasted output in fenced blocks is not markdown: `operator[](unsigned long)` is no link.
        text = re.sub(r"```.*?```", "", page.read_text(), flags=re.S)
        for target in re.findall(r"\]\(([^)#\s]+)", text):
            if not target.startswith("http") and not (page.parent / target).exists():
                broken.append(f"{page.name} -> {target}")
    assert not broken, f"broken links in docs/: {broken}"
