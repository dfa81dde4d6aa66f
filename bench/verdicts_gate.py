#!/usr/bin/env python3
"""The regression gate's false-failure rate on null campaign pairs, and its detection rate.

Prints `verdict-check: gate-null false_positive=X detection=Y runs=N` (goal: false_positive
<= 0.05, detection >= 0.90 at the gate's defaults). See perflab.studies.gate_sim for the model.
Usage: bench/verdicts_gate.py [PAIRS]
"""

from __future__ import annotations

import sys
import time

from perflab.studies.gate_sim import SimConfig, simulate


def main() -> None:
    pairs = int(sys.argv[1]) if len(sys.argv) > 1 else SimConfig.pairs
    cfg = SimConfig(pairs=pairs)
    t0 = time.monotonic()
    res = simulate(cfg)
    print(res.line(), flush=True)
    print(f"# {cfg.runs} runs per campaign, per-run noise {100 * cfg.sigma:.0f}% (log-normal), "
          f"campaign drift {100 * cfg.drift:.0f}%, planted +{100 * cfg.planted:.0f}%, "
          f"--fail-if '{cfg.fail_if}', alpha {cfg.alpha}; noise alone put "
          f"{100 * res.null_beyond:.1f}% of null pairs beyond the threshold; {time.monotonic() - t0:.1f} s",
          file=sys.stderr)


if __name__ == "__main__":
    main()
