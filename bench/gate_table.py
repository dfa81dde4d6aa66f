#!/usr/bin/env python3
"""How often the CI gate fails a pipeline for nothing, per noise model: docs/ci.md's table.

Each row is perflab.checks.gate.simulate at the runs per campaign and baseline saves the
row names (the power rule's runs for that model), PAIRS null and PAIRS planted (+10 %)
candidates. Prints the table's rows as Markdown; with --figures PATH also writes them as JSON
(docs/figures/gate_table.json is the run docs/ci.md shows; tests/docs/test_docs_figures.py holds the
page to it). Seeded: the same pairs on the same code print the same rates.

Usage: bench/gate_table.py [PAIRS] [--rows M,M] [--figures PATH]   (PAIRS default 200; about 25
minutes of one CPU for all rows; --rows: those models only, their rows replaced in PATH)
"""

from __future__ import annotations

import datetime
import json
import sys
import time
from pathlib import Path

# (the row's label, checks.gate.SETTINGS key): the models the table shows, in its order
ROWS = [
    ("quiet (2 % per run)", "quiet"),
    ("skewed (floor + 5 % tail)", "skewed"),
    ("loaded (drift, tail, bursts)", "loaded"),
    ("two-speed (x1.48, 40 % slow)", "two-speed"),
    ("shift (3 % SD between campaigns)", "shift"),
    ("shift, with a history", "shift-history"),
]


def row_line(row: dict) -> str:
    """The table row docs/ci.md shows for one recorded row."""
    return (f"| {row['label']} | {row['runs_per_campaign']} | {row['saves']} | {row['false_failures']} | "
            f"{row['exit_3']} | {row['detection']} |")


def main(argv: list[str]) -> int:
    opts = {k: argv[argv.index(k) + 1] for k in ("--figures", "--rows") if k in argv[:-1]}
    args = [a for i, a in enumerate(argv) if a not in opts and (i == 0 or argv[i - 1] not in opts)]
    figures = Path(opts["--figures"]) if "--figures" in opts else None
    wanted = opts["--rows"].split(",") if "--rows" in opts else [name for _, name in ROWS]
    pairs = int(args[0]) if args else 200
    from perflab.checks.gate import SETTINGS, SimConfig, simulate

    rows = []
    for label, name in ROWS:
        if name not in wanted:
            continue
        kw = {"model": name, **SETTINGS[name]}
        t0 = time.monotonic()
        res = simulate(SimConfig(pairs=pairs, **kw))
        row = {"label": label, "model": name, "runs_per_campaign": kw["runs"], "saves": kw.get("saves", 1),
               "false_failures": f"{res.false_positive:.3f}", "exit_3": f"{res.unsure:.3f}",
               "detection": f"{res.detection:.3f}", "pairs": res.runs,
               # null candidates whose median change alone crossed the threshold: what a gate on
               # plain medians would fail
               "null_beyond": f"{res.null_beyond:.3f}"}
        rows.append(row)
        print(row_line(row), flush=True)
        print(f"# {name}: {time.monotonic() - t0:.0f} s", file=sys.stderr, flush=True)
        if figures is not None:
            record(figures, {**row, "recorded": datetime.date.today().isoformat()})
    return 0


def record(path: Path, row: dict) -> None:
    """Put one row into the JSON file at path, replacing the row of its model; rows in table order."""
    data = json.loads(path.read_text()) if path.exists() else {"harness": "bench/gate_table.py", "rows": []}
    rows = {r["model"]: r for r in data["rows"]}
    rows[row["model"]] = row
    order = [name for _, name in ROWS]
    data["rows"] = sorted(rows.values(), key=lambda r: order.index(r["model"]))
    path.write_text(json.dumps(data, indent=1) + "\n")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
