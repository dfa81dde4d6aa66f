"""What the docs state about the code matches the code: the gate's exit statuses, the schema
version, option defaults quoted in prose, the workloads examples name; every page is reachable
from the README; no page speaks of the project's development (issue numbers, rounds, who else
used the machine) or of paths outside the repository; examples run programs that exist."""

from __future__ import annotations

import re

import click
import pytest

from perflab.cli import COMMANDS, cli
from perflab.store.schema import SCHEMA_VERSION
from perflab.studies.gate.result import EXIT_BAD_INPUT, EXIT_FAIL, EXIT_INCONCLUSIVE, EXIT_PASS
from tests.docs_pages import ROOT, blocks, commands, pages, prose

DOCS = ROOT / "docs"


def _rel(page) -> str:
    return str(page.relative_to(ROOT))


# --- exit statuses and the schema ---------------------------------------------------------------

def _exit_tables(text: str) -> list[dict[int, str]]:
    """Markdown tables whose first column is headed 'exit' or 'status': {status: row}."""
    tables, current = [], None
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")] if line.startswith("|") else None
        if cells and cells[0].lower() in ("exit", "status", "exit status"):
            current = {}
            tables.append(current)
        elif cells and current is not None and cells[0].isdigit():
            current[int(cells[0])] = line
        elif not cells:
            current = None
    return tables


@pytest.mark.parametrize("name", ["ci.md", "compare.md"])
def test_gate_exit_statuses_match_the_code(name):
    tables = _exit_tables((DOCS / name).read_text())
    assert tables, f"docs/{name} has no table of the gate's exit statuses"
    for table in tables:
        assert set(table) == {EXIT_PASS, EXIT_FAIL, EXIT_BAD_INPUT, EXIT_INCONCLUSIVE}, (
            f"docs/{name}: the gate exits {sorted({EXIT_PASS, EXIT_FAIL, EXIT_BAD_INPUT, EXIT_INCONCLUSIVE})}, "
            f"the table lists {sorted(table)}")
        assert "UNSURE" in table[EXIT_INCONCLUSIVE] and "FAIL" in table[EXIT_FAIL].upper()


def test_noise_is_never_said_to_pass_the_gate():
    # Exit 3 (UNSURE) is what a change the runs cannot tell from noise gets, not a pass.
    bad = [f"{_rel(p)}: {m.group(0)!r}" for p in pages()
           for m in re.finditer(r"cannot tell from noise\s+passes", p.read_text())]
    assert not bad, bad


def test_schema_version_quoted_is_the_codes():
    wrong = []
    for page in pages():
        for m in re.finditer(r"newer than this perflab knows \((\d+)\)|schema (?:is at )?version (\d+) now",
                             page.read_text()):
            if int(m.group(1) or m.group(2)) != SCHEMA_VERSION:
                wrong.append(f"{_rel(page)}: {m.group(0)!r}")
    assert not wrong, f"SCHEMA_VERSION is {SCHEMA_VERSION}: {wrong}"
    text = (DOCS / "results.md").read_text()
    listed = {int(v) for v in re.findall(r"version (\d+):", text)}
    assert listed == set(range(1, SCHEMA_VERSION + 1)), (
        f"docs/results.md lists migrations {sorted(listed)}, the code has 1-{SCHEMA_VERSION}")


# --- defaults quoted in prose ----------------------------------------------------------------------

_PAGE_COMMAND = {"results": ["results", "resume"], "ci": ["run", "compare", "baseline"],
                 "energy": ["run", "instances", "variants"], "minihlt": [], "statistics": []}


def _params(names: list[str]) -> dict[str, list[click.Parameter]]:
    ctx = click.Context(cli, info_name="perflab")
    out: dict[str, list[click.Parameter]] = {}

    def walk(cmd: click.Command) -> None:
        if isinstance(cmd, click.Group):
            for sub in cmd.list_commands(ctx):
                walk(cmd.get_command(ctx, sub))
        for p in cmd.params:
            for opt in p.opts:
                out.setdefault(opt, []).append(p)

    for name in names:
        walk(cli.get_command(ctx, name))
    return out


def _matches(shown: str, default) -> bool:
    if isinstance(default, bool) or not isinstance(default, (int, float, str)):
        return True  # flags and computed defaults (None, click's UNSET) are not quoted as values
    if isinstance(default, (int, float)):
        m = re.fullmatch(r"([0-9][0-9,]*(?:\.[0-9]+)?)\s*(%?)", shown.strip())
        if not m:
            return True
        x = float(m.group(1).replace(",", ""))
        return any(abs(v - default) <= 1e-9 * max(1, abs(default)) for v in (x, x / 100 if m.group(2) else x))
    return shown.strip("`").replace(" ", "") == str(default).replace(" ", "")


def test_defaults_quoted_are_the_codes():
    wrong = []
    for page in sorted(DOCS.glob("*.md")):
        names = _PAGE_COMMAND.get(page.stem, [page.stem] if page.stem in COMMANDS else [])
        if not names:
            continue
        params = _params(names)
        for m in re.finditer(r"`(--[a-z][a-z0-9-]*)[^`]*`[^.;|`]{0,30}?\(?\bdefault:?\s+"
                             r"(`[^`]+`|[0-9][0-9,]*(?:\.[0-9]+)?(?:\s*%)?)", prose(page)):
            for p in params.get(m.group(1), []):
                if not _matches(m.group(2), p.default):
                    wrong.append(f"{page.name}: {m.group(0)!r}, the code's default is {p.default!r}")
    assert not wrong, wrong


def test_the_defaults_check_can_fail():
    assert not _matches("3", 30) and not _matches("2 %", 0.04) and _matches("4 %", 0.04)
    assert _matches("30", 30) and not _matches("`none`", "auto")


# --- every page is reachable -----------------------------------------------------------------------

def test_every_docs_page_is_linked():
    linked = set()
    for page in pages():
        for target in re.findall(r"\]\(([^)#\s]+)", prose(page)):
            path = (page.parent / target).resolve()
            if path != page.resolve():
                linked.add(path)
    orphans = [p.name for p in sorted(DOCS.glob("*.md")) if p.resolve() not in linked]
    assert not orphans, f"docs pages nothing links to (link them from the README or a page): {orphans}"


# --- words and paths a user cannot place -----------------------------------------------------------

_FORBIDDEN = [
    (r"\bissues?\s*#?\d+", "an issue number"),
    (r"\bthe issue'?s?\b", "the issue"),
    (r"other engineers", "other engineers"),
    (r"\b(?:this|previous|last|next|earlier) round(?:'s)?\b(?! (?:of|robin))|\brounds ago\b|\bround of development",
     "a round of development"),
    (r"\bseeds? 00[0-4]\b", "a seed document by number (the README names them once, as studies)"),
    (r"\bseed(?:'s)? (?:A|B)\b|\bthe seed'?s?\b", "a seed document"),
    (r"(?<![\w.])(?:/work/|/home/\w|\.\./shared\b|/root/(?!\.cache/perflab))", "a path outside the repository"),
]


def test_no_page_speaks_of_the_projects_history():
    bad = []
    for page in pages():
        text = page.read_text()
        flat = re.sub(r"\s", " ", text)  # a phrase broken across two lines is still found
        for pattern, what in _FORBIDDEN:
            for m in re.finditer(pattern, flat, flags=re.I if what != "a seed document" else 0):
                n = text.count("\n", 0, m.start()) + 1
                bad.append(f"{_rel(page)}:{n}: {what}: {m.group(0)!r}")
    bad = [b for b in bad if not _seed_section(b)]
    assert not bad, "\n".join(bad)


def _seed_section(finding: str) -> bool:
    """The README's one section naming the seed documents by number may do so."""
    if not finding.startswith("README.md:") or "seed" not in finding:
        return False
    line = int(finding.split(":")[1])
    text = (ROOT / "README.md").read_text().splitlines()
    heading = next((text[i] for i in range(line - 1, -1, -1) if text[i].startswith("## ")), "")
    return heading.startswith("## The studies perflab reproduces")


def test_help_texts_speak_of_what_options_do():
    ctx = click.Context(cli, info_name="perflab")
    bad = []
    for name in COMMANDS:
        cmd = cli.get_command(ctx, name)
        subs = [cmd.get_command(ctx, s) for s in cmd.list_commands(ctx)] if isinstance(cmd, click.Group) else []
        for c in [cmd, *subs]:
            texts = [c.help or ""] + [getattr(p, "help", None) or "" for p in c.params]
            for t in texts:
                for pattern, what in _FORBIDDEN:
                    if re.search(pattern, t, flags=0 if what == "a seed document" else re.I):
                        bad.append(f"perflab {name} {c.name}: {what}: {t[:80]!r}")
    assert not bad, "\n".join(bad)


# --- examples run what exists ----------------------------------------------------------------------

def _builtin_workloads() -> set[str]:
    from perflab.workloads import BUILTIN
    return set(BUILTIN)


def test_named_workloads_exist_where_the_example_runs():
    builtin = _builtin_workloads()
    bad = []
    for c in commands():
        argv = c.argv[: c.argv.index("--")] if "--" in c.argv else c.argv
        names = [argv[i + 1] for i, w in enumerate(argv[:-1]) if w in ("-w", "--workload")]
        names += [w.split("=", 1)[1] for w in argv if w.startswith("--workload=")]
        page = ROOT / c.where.split(":")[0]
        defined = set(re.findall(r"\[workloads?\.([\w-]+)\]", page.read_text()))
        for target in re.findall(r"\]\(([\w-]+\.md)", prose(page)):  # a page it sends the reader to
            if (page.parent / target).is_file():
                defined |= set(re.findall(r"\[workloads?\.([\w-]+)\]", (page.parent / target).read_text()))
        if "--config" in argv:
            defined |= {n for n in names}
        for n in names:
            if n not in builtin and n not in defined and not c.inline:
                bad.append(f"{c.where}: -w {n}: not built in, and the page neither defines it in a "
                           f"perflab.toml it shows nor passes --config")
    assert not bad, "\n".join(bad)


def test_examples_run_programs_that_exist():
    """A '$ ' line may not run ./minihlt-O2 or a bare minihlt: builds live in the cache, and
    `$(perflab workload path minihlt ...)` names them."""
    bad = []
    for page in pages():
        made: set[str] = set()  # programs an earlier line of the page makes: cp X NAME, -o NAME
        for b in blocks(page):
            if b.illustrative:
                continue
            for i, line in enumerate(b.lines):
                if not line.startswith("$ "):
                    continue
                shell = re.sub(r"\$\([^()]*\)", "SUBST", line[2:])
                made |= set(re.findall(r"(?:\bcp\s+\S+\s+|-o\s+)(?:\./)?([\w.-]+)\s*(?:$|[;&|\s])", shell))
                for part in re.split(r"\|\||&&|[|;&]|\s--\s", shell):
                    words = part.split()
                    while words and re.match(r"^[A-Za-z_]\w*=", words[0]):
                        words = words[1:]
                    if words and re.fullmatch(r"(?:\./)?minihlt[\w.-]*", words[0]) and not (
                            words[0].startswith("./") and words[0][2:] in made):
                        bad.append(f"{_rel(page)}:{b.line + 1 + i}: runs {words[0]}: {line}")
    assert not bad, "\n".join(bad)


def test_fixture_paths_named_exist():
    """Snapshots a page names are archives in tests/data/topologies or the directories they unpack to;
    a `tar x` reads a file of the repository."""
    import tarfile

    fixtures = ROOT / "tests/data/topologies"
    known = set()
    for archive in fixtures.glob("*.tar.bz2"):
        known.add(archive.name[: -len(".tar.bz2")])
        with tarfile.open(archive) as tar:
            known.add(tar.next().name.split("/")[0])
    bad = []
    for page in pages():
        text = page.read_text()
        for m in re.finditer(r"\b(\d+(?:amd64|intel64|em64t|i386)-[\w+-]+?)(?:\.tar\.bz2)?(?![\w+-])", text):
            if m.group(1) not in known:
                bad.append(f"{_rel(page)}: {m.group(0)}")
        for m in re.finditer(r"^\$ tar x\w*f (\S+)", text, flags=re.M):
            if not (ROOT / m.group(1)).is_file():
                bad.append(f"{_rel(page)}: tar of {m.group(1)}, not a file of the repository")
    assert not bad, bad
