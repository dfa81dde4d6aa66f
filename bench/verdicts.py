#!/usr/bin/env python3
"""Every study's verdict on simulated campaigns, with and without a planted effect.

One line per check: `verdict-check: NAME false_positive=X detection=Y runs=N` (goal: false
positives <= 0.05 and detection >= 0.90 at each study's default settings). Each harness lives in
perflab.checks and documents its model (noise, drift, bursts, the planted effect).
Usage: bench/verdicts.py [RUNS] [NAME ...] [--models M,M]   (RUNS default 200; names filter the
checks; --models runs the cores check under those noise models only, so that its models can run
as separate processes)
"""

from __future__ import annotations

import importlib
import sys
import time

# name -> (module in perflab.checks, its function taking runs=N and printing its lines)
CHECKS = {
    "cores": ("cores_check", "verdict_lines"),
    "frontend": ("frontend_check", "verdict_lines"),
    "instances": ("instances_check", "verdict_lines"),
    "variants": ("variants_check", "verdict_lines"),
    "run-compare": ("run_check", "verdict_check"),
    "run-until-decided": ("run_check", "until_decided_lines"),
    "compare": ("compare_check", "verdict_check"),
    "gate": ("gate_check", "verdict_lines"),
    "modes": ("modes_check", "verdict_check"),
    "profile-diff": ("profile_diff_check", "verdict_check"),
    "profile-counts": ("profile_counts_check", "verdict_check"),
}


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
        print(f"# {name}: {time.monotonic() - t0:.0f} s", file=sys.stderr, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
