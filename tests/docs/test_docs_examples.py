"""The README's tour and the pages' marked examples show what their recorded real runs printed.

scripts/docs-examples (`make docs-examples`) runs each docs/examples/NAME.sh and records its whole
output in docs/examples/NAME.txt; a page's block after `<!-- example: NAME -->` must be what that
record gives under the script's cuts. A page edited by hand, or a command changed in a script
without rerunning it, fails here; the records are not rerun (that takes minutes of real measurement)."""

from __future__ import annotations

import importlib.machinery
import importlib.util
import re
import subprocess
import sys

import pytest

from tests.docs_pages import ROOT, blocks, pages

# The runner is a script (no .py), so it is loaded by path.
_loader = importlib.machinery.SourceFileLoader("docs_examples", str(ROOT / "scripts" / "docs-examples"))
_spec = importlib.util.spec_from_loader("docs_examples", _loader)
docs_examples = importlib.util.module_from_spec(_spec)
sys.modules["docs_examples"] = docs_examples  # dataclasses look their module up there
_loader.exec_module(docs_examples)
EXAMPLES = docs_examples.load()
BY_NAME = {e.name: e for e in EXAMPLES}

MARKED = [(page, mark, start, end) for page in pages()
          for mark, start, end in docs_examples.marked_blocks(page.read_text())]


def test_every_example_is_on_its_page_and_recorded():
    on_pages = {(str(p.relative_to(ROOT)), n) for p, n, _, _ in MARKED}
    # An example told in blocks is on its page as NAME.1, NAME.2, ...: one mark for each block.
    wanted = {(e.page, f"{e.name}.{b}" if b else e.name) for e in EXAMPLES
              for b in {s.block for s in e.steps if s.shown}}
    assert wanted <= on_pages, f"examples of docs/examples/*.sh missing from their page: {wanted - on_pages}"
    unknown = {n for _, n in on_pages if docs_examples.split_mark(n)[0] not in BY_NAME}
    assert not unknown, f"pages mark examples that have no docs/examples/NAME.sh: {unknown}"
    missing = [e.name for e in EXAMPLES if not docs_examples.record_path(e.name).is_file()]
    assert not missing, f"no record in docs/examples/ for {missing}: run make docs-examples"


@pytest.mark.parametrize("page,name,start,end", MARKED, ids=[f"{p.name}:{n}" for p, n, _, _ in MARKED])
def test_page_shows_its_record(page, name, start, end):
    shown = page.read_text().splitlines()[start:end]
    example, block = docs_examples.split_mark(name)
    try:
        expected = docs_examples.shown_block(BY_NAME[example], block)
    except SystemExit as exc:
        pytest.fail(str(exc))
    assert shown == expected, (
        f"{page.name}: the block of example {name!r} differs from docs/examples/{name}.txt; "
        f"run `make docs-examples EXAMPLES={example}` (or scripts/docs-examples --pages to rewrite the page only)")


def test_records_hold_verdicts_not_failures():
    # A record of a crash would make the page show one: every record has its verdict line and no traceback.
    verdict = {"cores": r"^verdict: ", "instances": r"^answer: ", "variants": r"^verdict: ", "cost": r"^best: |cheapest",
               "profile-pid": r"^recording 1/1: attached", "fleet": r"^│ node-2 .*│ done", "encoder": r"^│ encoder",
               "machine": r"^│ m32", "ci": r"^gate: FAIL", "ci-unsure": r"^gate: UNSURE", "frontend": r"^verdict: ",
               "frontend-cachegrind": r"^verdict: ", "report": r"^report: ", "fleet-pg": r"^(no slow host|slow hosts)",
               "fleet-shard": r"^(no slow host|slow hosts)", "fleet-offline": r"^│ 1 +│ done .*edge-1",
               "cores-default": r"^verdict: ", "cores-competitor": r"^verdict: ", "variants-cmake": r"^verdict: ",
               "variants-pgo": r"^verdict: ", "variants-tie": r"^verdict: ", "lab-resume": r"studies done in",
               "profile-callgrind": r"FieldMap::field.* changed most: ", "bundle-mismatch": r"^MISMATCH",
               "results-died": r"^│ +1 │ run +│ died", "lab-quick": r"^  micro .* done",
               "instances-default": r"^answer: ", "instances-fork": r"^verdict: ",
               "workload-lua": r"^verdict: fastest: ", "workload-mycflags": r"^  pgo: flags passed as MYCFLAGS",
               "workload-cmds": r"^cached:  no", "minihlt-abi": r"^maxrss \d+ KB",
               "minihlt-builds": r"^checksum identical across builds: yes"}
    for e in EXAMPLES:
        text = docs_examples.record_path(e.name).read_text()
        assert "Traceback" not in text, f"docs/examples/{e.name}.txt shows a crash"
        # A shell step that went wrong (a kill with nothing to kill, a missing program) is not an example.
        assert not re.search(r"^(bash: .*(command not found|No such file)|.*kill: usage)", text, flags=re.M), (
            f"docs/examples/{e.name}.txt shows a shell step that failed")
        if e.name in verdict:
            # These two show an error on purpose: a task's log after the store was lost, a resume refused.
            if e.name not in {"fleet-shard", "results-died"}:
                assert "perflab: error:" not in text, f"docs/examples/{e.name}.txt shows a failure"
            assert re.search(verdict[e.name], text, flags=re.M), f"docs/examples/{e.name}.txt has no {verdict[e.name]!r}"


def test_a_changed_page_is_caught():
    # The comparison can fail: a figure edited in a shown block no longer matches its record.
    page, name, start, end = next(m for m in MARKED if m[1] == "cores")
    shown = page.read_text().splitlines()[start:end]
    edited = [re.sub(r"\d", "7", line) if line.startswith("verdict:") else line for line in shown]
    assert edited != shown and edited != docs_examples.shown_block(BY_NAME[name])


def test_marked_blocks_are_fenced_blocks():
    for page in pages():
        starts = {b.line for b in blocks(page)}
        for name, start, _ in docs_examples.marked_blocks(page.read_text()):
            assert start in starts, f"{page.name}: <!-- example: {name} --> is not right before a fenced block"


def test_every_marked_example_has_its_script_and_every_script_is_shown():
    # One script per example: a mark with no docs/examples/NAME.sh is a block nothing reruns, a
    # script no page marks (or not on the page it names) reruns for nothing.
    marked = {(str(p.relative_to(ROOT)), docs_examples.split_mark(n)[0]) for p, n, _, _ in MARKED}
    no_script = sorted(f"{page}: {name}" for page, name in marked if not docs_examples.script_path(name).is_file())
    assert not no_script, f"marked examples without a docs/examples/NAME.sh: {no_script}"
    unshown = sorted(f"{e.name}.sh (#: page {e.page})" for e in EXAMPLES if (e.page, e.name) not in marked)
    assert not unshown, f"scripts no page marks as <!-- example: NAME -->: {unshown}"
    records = {p.stem for p in docs_examples.RECORDS.glob("*.txt")}
    assert records == set(BY_NAME), f"records without a script: {sorted(records - set(BY_NAME))}"
    scripts = "".join(e.script.read_text() for e in EXAMPLES)
    unused = [p.name for p in (docs_examples.RECORDS / "inputs").iterdir() if f"inputs/{p.name}" not in scripts]
    assert not unused, f"docs/examples/inputs/ files no script copies: {unused}"


def test_scripts_are_bash():
    # The directives are comments to bash: every script is one a reader can read (and bash can parse) as it is.
    proc = subprocess.run(["bash", "-c", 'for f in "$@"; do bash -n "$f" || echo "$f"; done', "bash",
                           *[str(e.script) for e in EXAMPLES]], capture_output=True, text=True)
    assert not proc.stdout and not proc.stderr, proc.stdout + proc.stderr


def test_script_directives(tmp_path):
    script = tmp_path / "demo.sh"
    script.write_text("#!/usr/bin/env bash\n#: page docs/run.md\ncat > in.txt <<'EOF'\n\n#: not a directive in a heredoc? it is\nEOF\n")
    with pytest.raises(docs_examples.BadScript, match=r"demo.sh:5: .* is not a directive here"):
        docs_examples.parse(script)
    script.write_text("#: page docs/run.md\nprintf 'a\\nb\\n' > in.txt\n\n#: steps\n#: block 1\n"
                      "#: show matching '^(x|y) ' \"^it's\" --rows 1\nperflab run -- true\n#: hidden\nsleep 1\n"
                      "# a comment, not a step\n#: block 2\n#: show head-tail 1 1\ncat in.txt\n#: cleanup\nwait\n")
    e = docs_examples.parse(script)
    assert (e.name, e.page, e.setup, e.cleanup) == ("demo", "docs/run.md", "printf 'a\\nb\\n' > in.txt", "wait")
    assert [(s.shell, s.shown, s.block) for s in e.steps] == [
        ("perflab run -- true", True, 1), ("sleep 1", False, 1), ("cat in.txt", True, 2)]
    out = ["x 1", "z", "│ row 1 │", "│ row 2 │", "it's", "y 2"]
    assert e.steps[0].show(out) == ["x 1", "...", "│ row 1 │", "...", "it's", "y 2"]
    assert e.steps[2].show(["1", "2", "3"]) == ["1", "...", "3"]
    assert e.steps[1].show(out) == out
    for bad, says in [("#: page docs/run.md\n#: steps\n#: show matching '(x'\ntrue\n", r"demo.sh:3: .*missing \)"),
                      ("#: page docs/run.md\n#: steps\n#: show first 3\ntrue\n", r"demo.sh:3: .*expected one of"),
                      ("#: steps\ntrue\n", r"no '#: page PAGE' line"),
                      ("#: page docs/run.md\n#: steps\ntrue\n#: hidden\n", r"after the last step")]:
        script.write_text(bad)
        with pytest.raises(docs_examples.BadScript, match=says):
            docs_examples.parse(script)


def test_runner_refuses_an_unknown_example():
    proc = subprocess.run([sys.executable, str(ROOT / "scripts" / "docs-examples"), "no-such-example"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert proc.stderr.startswith("docs-examples: no example no-such-example (no docs/examples/NAME.sh)")
    assert len(proc.stderr.splitlines()) == 1 and "Traceback" not in proc.stderr
