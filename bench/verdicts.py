#!/usr/bin/env python3
"""Every study's verdict on simulated campaigns, with and without a planted effect.

One line per check: `verdict-check: NAME false_positive=X detection=Y runs=N` (goal: false
positives <= 0.05 and detection >= 0.90 at each study's default settings). Each harness lives in
perflab.checks and documents its model (noise, drift, bursts, the planted effect).
Usage: bench/verdicts.py [RUNS] [NAME ...] [--models M,M] [--figures PATH]   (RUNS default 200;
names filter the checks; --models runs the cores check under those noise models only, so that its
models can run as separate processes; --figures records the lines it printed in PATH, a JSON file
of every check's figures, replacing the entries of the same check and settings: the docs quote
them from docs/figures/verdicts.json, and tests/docs/test_docs_figures.py holds every page to it)
"""

from __future__ import annotations

import datetime
import importlib
import json
import re
import sys
import time
from pathlib import Path

# name -> (module in perflab.checks, its function taking runs=N and printing its lines)
CHECKS = {
    "cores": ("cores", "verdict_lines"),
    "cores-until-decided": ("cores", "until_decided_lines"),
    "frontend": ("frontend", "verdict_lines"),
    "instances": ("instances", "verdict_lines"),
    "instances-until-decided": ("instances", "until_decided_lines"),
    "variants": ("variants", "verdict_lines"),
    "variants-until-decided": ("variants", "until_decided_lines"),
    "run-compare": ("run", "verdict_check"),
    "run-until-decided": ("run", "until_decided_lines"),
    "compare": ("compare", "verdict_check"),
    "gate": ("gate", "verdict_lines"),
    "gate-until-decided": ("gate", "until_decided_lines"),
    "modes": ("modes", "verdict_check"),
    "profile-diff": ("profile_diff", "verdict_check"),
    "profile-counts": ("profile_counts", "verdict_check"),
    "score": ("score", "verdict_lines"),
    "monitor": ("monitor", "verdict_lines"),
    "series": ("series", "verdict_check"),
}


# What a line measured; its other fields (runs=, saves=, planted=, ...) say how, and with the
# check's name identify it.
RESULTS = ("false_positive", "detection", "false_fastest_in_tie", "sample_fastest_false_positive",
           "median_reps_asked", "null_ruled_out", "undecided", "runs_median", "runs_p90")


def parse(line: str) -> dict | None:
    """A `verdict-check:` line as {name, settings, figures}, the numbers as printed; else None."""
    m = re.match(r"\s*verdict-check: (\S+)((?: \w+=\S+)+)\s*$", line)
    if not m:
        return None
    fields = dict(f.split("=", 1) for f in m.group(2).split())
    return {"name": m.group(1), "settings": {k: v for k, v in fields.items() if k not in RESULTS},
            "figures": {k: v for k, v in fields.items() if k in RESULTS}}


def key(entry: dict) -> str:
    """The check and its settings: two lines with one key must show the same figures."""
    return " ".join([entry["name"], *(f"{k}={v}" for k, v in sorted(entry["settings"].items()))])


def record(lines: list[str], path: Path, recorded: str | None = None, source: str | None = None) -> None:
    """Put the lines' figures into the JSON file at path, replacing entries of the same key
    (source: what printed lines that another harness than this script made)."""
    data = json.loads(path.read_text()) if path.exists() else {
        "harness": "bench/verdicts.py", "checks": []}
    entries = {key(e): e for e in data["checks"]}
    for line in lines:
        entry = parse(line)
        if entry is not None:
            entries[key(entry)] = {**entry, "recorded": recorded or datetime.date.today().isoformat(),
                                   **({"source": source} if source else {})}
    data["checks"] = [entries[k] for k in sorted(entries)]
    path.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n")


def main() -> int:
    args = sys.argv[1:]
    if args and args[0] in ("-h", "--help"):
        print(__doc__)
        return 0
    models = None
    if "--models" in args:
        i = args.index("--models")
        models = tuple(args[i + 1].split(","))
        del args[i:i + 2]
    figures = None
    if "--figures" in args:
        i = args.index("--figures")
        figures = Path(args[i + 1])
        del args[i:i + 2]
    printed: list[str] = []
    runs = int(args.pop(0)) if args and args[0].isdigit() else 200
    wanted = set(args) or set(CHECKS)
    for name, (module, func) in CHECKS.items():
        if name not in wanted:
            continue
        try:
            fn = getattr(importlib.import_module(f"perflab.checks.{module}"), func)
        except (ImportError, AttributeError) as exc:
            print(f"verdict-check: {name} not available ({exc})", flush=True)
            continue
        t0 = time.monotonic()
        out = fn(runs=runs, models=models) if models and name == "cores" else fn(runs=runs)
        if isinstance(out, list):
            for line in out:
                print(line, flush=True)
                printed.append(line)
        print(f"# {name}: {time.monotonic() - t0:.0f} s", file=sys.stderr, flush=True)
    if figures is not None:
        record(printed, figures)
    return 0


if __name__ == "__main__":
    sys.exit(main())
