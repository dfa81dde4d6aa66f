"""What the docs tests read from README.md and docs/: pages, fenced blocks, and the perflab
command lines a reader would paste (shell syntax taken apart with shlex, never run)."""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# A fenced block preceded by this comment shows a command that is not meant to run as shown
# (a placeholder host, a machine this one is not); its lines are not parsed.
ILLUSTRATIVE = "<!-- illustrative -->"
_CONTROL = {"|", "||", "&&", ";", "&", "(", ")"}


def pages() -> list[Path]:
    """README.md and every docs page."""
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


@dataclass
class Block:
    page: Path
    line: int  # 1-based line of the opening fence
    lang: str
    lines: list[str]
    illustrative: bool


def blocks(page: Path) -> list[Block]:
    """The fenced blocks of a page, with whether an ILLUSTRATIVE comment marks them."""
    out: list[Block] = []
    lines = page.read_text().splitlines()
    i = 0
    while i < len(lines):
        m = re.match(r"^\s*```(\S*)", lines[i])
        if not m:
            i += 1
            continue
        start, body = i, []
        i += 1
        while i < len(lines) and not re.match(r"^\s*```\s*$", lines[i]):
            body.append(lines[i])
            i += 1
        prev = next((lines[j] for j in range(start - 1, -1, -1) if lines[j].strip()), "")
        out.append(Block(page, start + 1, m.group(1), body, prev.strip() == ILLUSTRATIVE))
        i += 1
    return out


def prose(page: Path) -> str:
    """A page without its fenced blocks (pasted output is not the page's own words)."""
    return re.sub(r"^\s*```.*?^\s*```\s*$", lambda m: "\n" * m.group(0).count("\n"), page.read_text(),
                  flags=re.S | re.M)


@dataclass
class Command:
    where: str  # page:line
    text: str  # the shell line as shown
    argv: list[str]  # perflab's arguments (after the program name)
    shows_error: bool  # the page shows it failing with a 'perflab: error:' line
    inline: bool = False  # a code span in the prose: may name a command without all it needs


def _simple_commands(shell: str) -> list[list[str]]:
    """The simple commands of one shell line: pipes, lists, redirections and $(...) taken apart."""
    inner = re.findall(r"\$\(([^()]*)\)", shell)
    shell = re.sub(r"\$\(([^()]*)\)", "SUBST", shell)
    shell = re.sub(r"(?<![\w.-])\d+(?=[<>])", "", shell)  # 2>file, 2>&1: the fd is the redirection's
    lexer = shlex.shlex(shell, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    try:
        tokens = list(lexer)
    except ValueError as exc:  # an unbalanced quote: the line cannot be pasted
        raise AssertionError(f"cannot parse shell line {shell!r}: {exc}") from None
    out: list[list[str]] = [[]]
    skip = False
    for tok in tokens:
        if skip:
            skip = False
            continue
        if tok in _CONTROL:
            out.append([])
        elif set(tok) <= set("<>&|") and ("<" in tok or ">" in tok):
            skip = True  # and its target
        else:
            out[-1].append(tok)
    for sub in inner:
        out.extend(_simple_commands(sub))
    return [c for c in out if c]


def _perflab_argv(words: list[str]) -> list[str] | None:
    """perflab's arguments when this simple command runs perflab, else None."""
    while words and re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", words[0]):  # FOO=1 perflab ...
        words = words[1:]
    if words and words[0] in ("sudo", "exec", "time"):
        words = words[1:]
    if words and words[0] == "timeout":  # timeout [-s SIG] DURATION perflab ...
        words = words[1:]
        while words and words[0].startswith("-"):
            words = words[2:] if words[0] in ("-s", "--signal", "-k", "--kill-after") else words[1:]
        words = words[1:]
    if words and (words[0] == "perflab" or words[0].endswith("/perflab")):
        return words[1:]
    return None


def commands() -> list[Command]:
    """Every perflab command line of README.md and docs/: '$ ' lines and CI job lines in fenced
    blocks, and inline code spans that begin with 'perflab '."""
    out: list[Command] = []
    for page in pages():
        name = page.relative_to(ROOT)
        for b in blocks(page):
            if b.illustrative:
                continue
            yaml = b.lang in ("yaml", "yml")
            i = 0
            while i < len(b.lines):
                raw = b.lines[i]
                if yaml:
                    m = re.match(r"^\s*(?:-\s+)?(?:run:\s+)?(.*\bperflab\s.*)$", raw)
                    shell = m.group(1) if m and not raw.lstrip().startswith("#") else None
                else:
                    shell = raw[2:] if raw.startswith("$ ") else None
                j = i + 1
                if shell is None:
                    i = j
                    continue
                while shell.endswith("\\") and j < len(b.lines):
                    shell = shell[:-1] + " " + b.lines[j].strip()
                    j += 1
                shown = []
                k = j
                while k < len(b.lines) and not b.lines[k].startswith("$ "):
                    shown.append(b.lines[k])
                    k += 1
                error = any(line.startswith("perflab: error:") for line in shown)
                for words in _simple_commands(shell):
                    argv = _perflab_argv(words)
                    if argv is not None:
                        out.append(Command(f"{name}:{b.line + 1 + i}", shell, argv, error))
                i = j
        text = prose(page)
        for m in re.finditer(r"`(perflab [^`]+)`", text):
            line = text[: m.start()].count("\n") + 1
            error = "perflab: error:" in text[m.end(): m.end() + 200]
            for words in _simple_commands(m.group(1)):
                argv = _perflab_argv(words)
                if argv is not None:
                    out.append(Command(f"{name}:{line}", m.group(1), argv, error, inline=True))
    return out
