"""The README's tour and the pages' marked examples show what their recorded real runs printed.

bench/docs_examples.py (`make docs-examples`) reruns each example and records its whole output in
docs/examples/NAME.txt; a page's block after `<!-- example: NAME -->` must be what that record
gives under the example's cut. A page edited by hand, or a command changed in the script without
rerunning it, fails here; the records are not rerun (that takes minutes of real measurement)."""

from __future__ import annotations

import importlib.util
import re
import sys

import pytest

from tests.docs_pages import ROOT, blocks, pages

_spec = importlib.util.spec_from_file_location("docs_examples", ROOT / "bench" / "docs_examples.py")
docs_examples = importlib.util.module_from_spec(_spec)
sys.modules["docs_examples"] = docs_examples  # dataclasses look their module up there
_spec.loader.exec_module(docs_examples)

MARKED = [(page, mark, start, end) for page in pages()
          for mark, start, end in docs_examples.marked_blocks(page.read_text())]


def test_every_example_is_on_its_page_and_recorded():
    on_pages = {(str(p.relative_to(ROOT)), n) for p, n, _, _ in MARKED}
    # An example told in blocks is on its page as NAME.1, NAME.2, ...: one mark for each block.
    wanted = {(e.page, f"{e.name}.{b}" if b else e.name) for e in docs_examples.EXAMPLES
              for b in {ln.block for ln in e.lines if ln.shown}}
    assert wanted <= on_pages, f"examples of bench/docs_examples.py missing from their page: {wanted - on_pages}"
    unknown = {n for _, n in on_pages if docs_examples.split_mark(n)[0] not in docs_examples.BY_NAME}
    assert not unknown, f"pages mark examples the script does not run: {unknown}"
    missing = [e.name for e in docs_examples.EXAMPLES if not docs_examples.record_path(e.name).is_file()]
    assert not missing, f"no record in docs/examples/ for {missing}: run make docs-examples"


@pytest.mark.parametrize("page,name,start,end", MARKED, ids=[f"{p.name}:{n}" for p, n, _, _ in MARKED])
def test_page_shows_its_record(page, name, start, end):
    shown = page.read_text().splitlines()[start:end]
    example, block = docs_examples.split_mark(name)
    try:
        expected = docs_examples.shown_block(docs_examples.BY_NAME[example], block)
    except SystemExit as exc:
        pytest.fail(str(exc))
    assert shown == expected, (
        f"{page.name}: the block of example {name!r} differs from docs/examples/{name}.txt; "
        f"run `.venv/bin/python bench/docs_examples.py {example}` (or --pages to rewrite the page only)")


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
    for e in docs_examples.EXAMPLES:
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
    assert edited != shown and edited != docs_examples.shown_block(docs_examples.BY_NAME[name])


def test_marked_blocks_are_fenced_blocks():
    for page in pages():
        starts = {b.line for b in blocks(page)}
        for name, start, _ in docs_examples.marked_blocks(page.read_text()):
            assert start in starts, f"{page.name}: <!-- example: {name} --> is not right before a fenced block"
