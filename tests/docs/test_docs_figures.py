"""One source per figure: a harness's figures are recorded once, in docs/figures/*.json, by the
script that measured them (`bench/verdicts.py --figures`, `bench/twospeed_real.py --figures`), and
every page that quotes one shows that value.

- Every `verdict-check:` line on any page (README, docs/) is the recorded line of that check at
  those settings (its name with runs=, saves=, planted=, ...): a check quoted on two pages with two
  values fails, whichever page is stale.
- A page that shows bench/twospeed_real.py's output shows the recorded run: its counts are the
  file's.
- Figures quoted in prose are found by the phrases in QUOTES, on every page: each must equal the
  recorded value, and each phrase must still be found somewhere (a reworded page drops out of the
  check only by failing it).
"""

from __future__ import annotations

import importlib.util
import json
import re
import sys

import pytest

from tests.docs_pages import ROOT, blocks, pages

FIGURES = ROOT / "docs" / "figures"


def _load(name: str, path: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / path)
    module = importlib.util.module_from_spec(spec)
    argv, sys.argv = sys.argv, [path]  # twospeed_real reads its arguments at import
    try:
        spec.loader.exec_module(module)
    finally:
        sys.argv = argv
    return module


verdicts = _load("verdicts_bench", "bench/verdicts.py")
twospeed = _load("twospeed_bench", "bench/twospeed_real.py")


def recorded_checks() -> dict[str, dict]:
    data = json.loads((FIGURES / "verdicts.json").read_text())
    return {verdicts.key(e): e for e in data["checks"]}


def gate_rows() -> dict[str, dict]:
    return {r["model"]: r for r in json.loads((FIGURES / "gate_table.json").read_text())["rows"]}


def recorded(ref: str) -> str:
    """'verdicts:KEY:FIELD', 'gate_table:MODEL:FIELD' or 'twospeed_real:FIELD' -> the recorded
    value as text. A trailing '%' asks for the value as a percentage."""
    ref = ref.rstrip("%")
    source, rest = ref.split(":", 1)
    if source == "verdicts":
        key, field = rest.rsplit(":", 1)
        return recorded_checks()[key]["figures"][field]
    if source == "gate_table":
        model, field = rest.rsplit(":", 1)
        return str(gate_rows()[model][field])
    return str(json.loads((FIGURES / f"{source}.json").read_text())["figures"][rest])


def _same(shown: str, value: str, percent: bool = False) -> bool:
    """The shown figure is the value at the precision shown (a percentage: 4.5 % of 0.045)."""
    try:
        x, v = float(shown), float(value) * (100 if percent else 1)
    except ValueError:
        return shown == value
    decimals = len(shown.split(".")[1]) if "." in shown else 0
    return abs(x - v) <= 0.5 * 10 ** -decimals + 1e-9


# (recorded figure, phrase with one group: the figure as a page quotes it). Every page is searched.
QUOTES = [
    ("twospeed_real:run_slower", r"named (?:a \+3 %|the second command) slower in (\d+) of 10"),
    ("twospeed_real:run_slower", r"found (?:the )?\+?3 % in (\d+) of 10"),
    ("twospeed_real:run_slower_1.03_inside", r"1\.03 inside its interval in (\d+) of 10"),
    ("twospeed_real:compare_no_difference", r"said no difference in (\d+) of 20 pairs"),
    ("verdicts:gate-shift-history runs=200 runs_per_campaign=10 saves=20:false_positive",
     r"with a 20-save history (0\.\d+)"),
    ("verdicts:gate-shift-history runs=200 runs_per_campaign=10 saves=20:false_positive",
     r"\| shift, with a history \| 10 \| 20 \| (0\.\d+) \|"),
    ("verdicts:gate-shift-history runs=200 runs_per_campaign=10 saves=20:detection",
     r"\| shift, with a history \| 10 \| 20 \| 0\.\d+ \| 0\.\d+ \| (0\.\d+) \|"),
    ("verdicts:gate-vcpu-states runs=200 runs_per_campaign=40 saves=1:false_positive",
     r"vcpu-states, one save: (0\.\d+) \(200\)"),
    ("verdicts:cores-persistent-skewed runs=40:detection",
     r"(?:a 5 % CPU is found in|with the sign test there, in) (0\.\d+) and 0\.\d+ of\s?40"),
    ("verdicts:cores-persistent-loaded runs=40:detection",
     r"(?:a 5 % CPU is found in|with the sign test there, in) 0\.\d+ and (0\.\d+) of\s?40"),
    ("verdicts:cores-persistent-vcpu-states-sequential runs=40:detection",
     r"A 5 % slow vCPU on the guest at the defaults is found in (0\.\d+) \(sequential\)"),
    ("verdicts:cores-persistent-vcpu-states-sequential runs=40:detection",
     r"a 5 % slow vCPU: (0\.\d+) / 0\.\d+ at the defaults"),
    ("verdicts:cores-persistent-vcpu-states-concurrent runs=40:detection",
     r"a 5 % slow vCPU: 0\.\d+ / (0\.\d+) at the defaults"),
    ("verdicts:gate-shift runs=60 runs_per_campaign=10 saves=1:false_positive",
     r"shift, one baseline save: (0\.\d+) false failures"),
    ("verdicts:gate-shift runs=60 runs_per_campaign=10 saves=1:detection",
     r"shift, one baseline save: 0\.\d+ false failures, (0\.\d+) found"),
    ("verdicts:gate-vcpu-states runs=200 runs_per_campaign=40 saves=1:detection",
     r"vcpu-states, one save: 0\.\d+ \(200\), (0\.\d+) found"),
    ("verdicts:compare-two-speed runs=60:false_positive%",
     r"compared within the speeds \(stats/speeds\.py\), ([\d.]+) % false alarms"),
    ("verdicts:compare-two-speed runs=60:detection%",
     r"compared within the speeds \(stats/speeds\.py\), [\d.]+ % false alarms and ([\d.]+) % detection"),
    ("verdicts:compare-replicated-shift campaigns=3x3 planted=+15% runs=60:detection",
     r"\(\+15 % found in (0\.\d+) and 0\.\d+\)"),
    ("verdicts:compare-replicated-vcpu-states campaigns=3x3 planted=+15% runs=60:detection",
     r"\(\+15 % found in 0\.\d+ and (0\.\d+)\)"),
    ("gate_table:shift-history:false_failures", r"with a 20-save history (0\.\d+) \(200 trials"),
    ("gate_table:shift-history:exit_3", r"with a 20-save history 0\.\d+ \(200 trials; (0\.\d+) of it inconclusive"),
    ("gate_table:shift-history:detection", r"\| shift, with a history \| 10 \| 20 \| 0\.\d+ \| 0\.\d+ \| (0\.\d+) \|"),
    ("gate_table:two-speed:null_beyond%", r"the plain medians of null pairs crossed 5 % in (\d+) % of them"),
    ("gate_table:shift:false_failures%", r"With one save a side \(([\d.]+) % false failures"),
    ("gate_table:shift:detection%", r"With one save a side \([\d.]+ % false failures, ([\d.]+) % detection\)"),
    ("gate_table:shift-history:exit_3%", r"the false failures drop to the test's level \([\d.]+ % failed as regressions, ([\d.]+) % UNSURE\)"),
    ("gate_table:shift-history:detection%", r"catches ([\d.]+) % of the time"),
]


def _texts():
    for page in pages():
        yield page, re.sub(r"\s+", " ", page.read_text())


def quote_findings(texts, quotes=QUOTES) -> tuple[list[str], list[str]]:
    """(quotes that differ from the record, phrases found on no page)."""
    wrong, unused = [], []
    texts = list(texts)
    for ref, phrase in quotes:
        value, hits = recorded(ref), 0
        for page, text in texts:
            for m in re.finditer(phrase, text):
                hits += 1
                if not _same(m.group(1), value, ref.endswith("%")):
                    wrong.append(f"{page.name}: {m.group(0)!r} quotes {m.group(1)}, the record "
                                 f"({ref}) says {value}")
        if not hits:
            unused.append(phrase)
    return wrong, unused


def test_every_quoted_figure_is_the_recorded_one():
    wrong, unused = quote_findings(_texts())
    assert not wrong, "\n".join(wrong)
    # the old wording of a figure may be gone everywhere; the current one must be found
    unused = [p for p in unused if "found (?:the )?" not in p]
    assert not unused, f"phrases in QUOTES no page uses any more (reword them with the page): {unused}"


def verdict_line_findings(page_files) -> list[str]:
    checks = recorded_checks()
    bad = []
    for page in page_files:
        for n, line in enumerate(page.read_text().splitlines(), 1):
            entry = verdicts.parse(line) if "verdict-check:" in line else None
            if entry is None:
                continue
            key = verdicts.key(entry)
            if key not in checks:
                bad.append(f"{page.name}:{n}: {key}: not in docs/figures/verdicts.json "
                           f"(record it: bench/verdicts.py ... --figures docs/figures/verdicts.json)")
            elif entry["figures"] != checks[key]["figures"]:
                bad.append(f"{page.name}:{n}: {key}: shows {entry['figures']}, recorded "
                           f"{checks[key]['figures']} ({checks[key].get('recorded')})")
    return bad


def test_every_verdict_line_on_a_page_is_the_recorded_one():
    bad = verdict_line_findings(pages())
    assert not bad, "\n".join(bad)


def test_the_twospeed_run_shown_is_the_recorded_one():
    shown = [b for p in pages() for b in blocks(p)
             if b.lines and b.lines[0].startswith("$ ") and "bench/twospeed_real.py" in b.lines[0]]
    assert shown, "no page shows a run of bench/twospeed_real.py"
    record = json.loads((FIGURES / "twospeed_real.json").read_text())
    for b in shown:
        assert twospeed.figures_of(b.lines) == record["figures"], (
            f"{b.page.name}:{b.line}: the run shown is not the one docs/figures/twospeed_real.json records")


def test_the_gate_table_shown_is_the_recorded_one():
    gate_table = _load("gate_table_bench", "bench/gate_table.py")
    text = (ROOT / "docs" / "ci.md").read_text()
    shown = [line for line in text.splitlines() if re.match(r"\| [a-z].* \| \d+ \| \d+ \| 0\.\d+ \|", line)]
    expected = [gate_table.row_line(r) for r in gate_rows().values()]
    assert shown == expected, "docs/ci.md's gate table is not docs/figures/gate_table.json's rows (bench/gate_table.py)"
    pairs = {r["pairs"] for r in gate_rows().values()}
    assert re.search(rf"\({pairs.pop()} null and \d+ planted candidates per row", text) and not pairs


def test_the_count_of_verdict_lines_quoted_is_the_records():
    own = sum("source" not in e for e in recorded_checks().values())  # bench/verdicts.py's own lines
    for page, text in _texts():
        for m in re.finditer(r"\b(\d+) lines in all\b", text):
            assert int(m.group(1)) == own, f"{page.name}: {m.group(0)!r}; docs/figures/verdicts.json holds {own}"


def test_each_figures_file_names_its_harness():
    for path in sorted(FIGURES.glob("*.json")):
        data = json.loads(path.read_text())
        assert (ROOT / data["harness"]).is_file(), f"{path.name}: harness {data['harness']} is not in the repository"


# --- the checks can fail ---------------------------------------------------------------------------

def test_a_verdict_line_that_differs_from_the_record_is_caught(tmp_path):
    page = tmp_path / "p.md"
    page.write_text("```\nverdict-check: gate-shift-history false_positive=0.085 detection=0.735 runs=200 "
                    "runs_per_campaign=10 saves=20\nverdict-check: gate-nothing false_positive=0.0 runs=1\n```\n")
    bad = verdict_line_findings([page])
    assert len(bad) == 2 and "shows" in bad[0] and "not in docs/figures" in bad[1], bad


def test_a_prose_figure_that_differs_is_caught(tmp_path):
    value = recorded("twospeed_real:run_slower")
    other = "0" if value != "0" else "1"
    texts = [(tmp_path / "a.md", f"perflab run named the second command slower in {value} of 10 tries"),
             (tmp_path / "b.md", f"it named a +3 % slower in {other} of 10 tries")]
    wrong, _ = quote_findings(texts, QUOTES[:1])
    assert len(wrong) == 1 and wrong[0].startswith("b.md"), wrong


@pytest.mark.parametrize("line,fields", [
    ("verdict-check: modes-two-speed-n20 detection=0.850 runs=200", ({"runs": "200"}, {"detection": "0.850"})),
    ("verdict-check: x false_positive=0.1 detection=0.2 runs=9 planted=+15%",
     ({"runs": "9", "planted": "+15%"}, {"false_positive": "0.1", "detection": "0.2"})),
])
def test_a_line_is_read_as_settings_and_figures(line, fields):
    e = verdicts.parse(line)
    assert (e["settings"], e["figures"]) == fields


def test_a_figure_is_held_at_the_precision_shown():
    assert _same("0.47", "0.467") and _same("74", "0.735", percent=True) and _same("10", "10")
    assert not _same("0.085", "0.070") and not _same("4.5", "0.040", percent=True) and not _same("0.46", "0.467")
