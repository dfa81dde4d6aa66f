"""variants --instrument cachegrind: every variant also ranked by simulated instructions and
estimated cycles beside its measured time, the disagreement named where they point opposite ways.

analyse is checked on stored-shape runs (a build with fewer instructions that runs slower); the
whole path on a tiny C program built -O0 and -O2 (2 timed rounds, 2 simulated runs each).
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys

import pytest

from perflab.kernels.variants import BuildTarget, Variant
from perflab.model import RunResult, Workload
from perflab.report.terminal.variants import render
from perflab.studies.variants import study as vs
from perflab.studies.variants.counts import CAUSE, COUNT_RUNS
from perflab.studies.variants.result import VariantsResult
from tests.real.test_cachegrind import needs_valgrind

VARIANTS = (Variant("base", ("-O2", "-m64")), Variant("O3", ("-O3",)), Variant("O0", ("-O0",)))


def _config(**kw) -> vs.VariantsConfig:
    kw = {"instrument": "cachegrind", "cache_model": "I1=32768,8,64 D1=32768,8,64 LL=33554432,16,64", **kw}
    return vs.VariantsConfig(target=BuildTarget("p", ()), workload=Workload("p", ("{exe}",)),
                             variants=VARIANTS, baseline="base", rounds=8, **kw)


def _run(wall: float, **counts: float) -> RunResult:
    return RunResult(wall_ns=int(wall * 1e9), user_s=wall, sys_s=0.0, maxrss_kb=2048, minflt=1,
                     majflt=0, nvcsw=1, nivcsw=0, exit_code=0, metrics=dict(counts))


# O3: 10 % fewer instructions and 5 % fewer estimated cycles, but 8 % slower in every round
# (what a simulated cache without memory-level parallelism or prefetchers can get wrong).
TIME = {"base": 1.00, "O3": 1.08, "O0": 1.50}
COUNTS = {"base": (1_000_000, 1_300_000), "O3": (900_000, 1_235_000), "O0": (3_000_000, 4_000_000)}


def _runs() -> list[tuple[dict, RunResult]]:
    out = []
    for rnd in range(8):
        for name, t in TIME.items():
            out.append(({"variant": name, "round": rnd}, _run(t * (1 + 0.001 * rnd))))
    for rnd in range(COUNT_RUNS):
        for name, (ir, cyc) in COUNTS.items():
            out.append(({"variant": name, "round": rnd, "instrument": "cachegrind"},
                        _run(40.0, instructions=ir, estimated_cycles=cyc, i1_misses=100)))
    return out


def test_plan_adds_simulated_runs_apart_from_the_timed_rounds():
    specs = vs.plan(_config())
    sim = [s for s in specs if s.instrument]
    assert len(sim) == COUNT_RUNS * len(VARIANTS)
    assert all(s.instrument == "cachegrind" and s.params["instrument"] == "cachegrind" for s in sim)
    assert len(specs) - len(sim) == (8 + 1) * len(VARIANTS)  # timed rounds and the warm-up as before
    assert not any(s.instrument for s in vs.plan(_config(instrument="", cache_model="")))
    assert vs.VariantsConfig.from_dict(_config().as_dict()) == _config()


def test_counts_rank_the_variants_and_the_disagreement_is_named():
    res = vs.analyse(_config(), _runs())
    o3 = res.row("O3")
    assert res.row("base").counts["instructions"] == 1_000_000 and o3.counts["i1_misses"] == 100
    ir = o3.count_comparisons["instructions"]
    assert ir.significant and ir.better and ir.ratio == pytest.approx(0.9) and ir.ci.level == 1.0
    assert o3.comparisons["wall_s"].better is False  # slower by time, paired over 8 rounds
    assert res.count_ranking == {"estimated_cycles": ["O3", "base", "O0"],
                                 "instructions": ["O3", "base", "O0"]}
    assert len(res.disagreements) == 1 and res.disagreements[0].startswith("O3 has -5.0 % estimated cycles and -10.0 % instructions")
    assert "slower by elapsed" in res.disagreements[0] and res.disagreements[0].endswith(CAUSE)
    assert not any(d.startswith("O0") for d in res.disagreements)  # more counts and slower: agree
    assert "estimated cycles O3 < base < O0" in res.verdict and "counts and time disagree: O3" in res.verdict
    # the simulated runs' wall time (40 s) is not the variants' time
    assert res.row("base").estimates["wall_s"].median < 2
    d = json.loads(json.dumps(res.as_dict()))
    assert d["count_ranking"]["instructions"][0] == "O3" and d["disagreements"] == res.disagreements
    assert VariantsResult.from_dict(d).row("O3").count_comparisons["instructions"] == ir
    buf = io.StringIO()
    from rich.console import Console

    render(res, Console(file=buf, width=250))
    text = buf.getvalue()
    assert "900,000 (-10.0 %*)" in text and "counts: cachegrind simulated, cache model I1=32768" in text
    assert "disagree: O3 has" in text


def test_agreeing_counts_say_so_and_a_varying_count_is_not_ranked():
    runs = [(p, r) for p, r in _runs() if not (p["variant"] == "O3")]
    cfg = vs.VariantsConfig(**{**_config().__dict__, "variants": (VARIANTS[0], VARIANTS[2])})
    res = vs.analyse(cfg, runs)
    assert res.disagreements == [] and "counts and time do not disagree" in res.verdict
    moving = [(p, r) for p, r in runs if not (p.get("instrument") and p["variant"] == "O0")]
    for rnd, ir in enumerate((3_000_000, 3_030_000)):  # 1 % apart: a clock or randomness
        moving.append(({"variant": "O0", "round": rnd, "instrument": "cachegrind"},
                       _run(40.0, instructions=ir, estimated_cycles=4_000_000)))
    res = vs.analyse(cfg, moving)
    assert "instructions" not in res.row("O0").count_comparisons
    assert any("not ranked as a count" in n for n in res.row("O0").notes)


@needs_valgrind
def test_variants_of_a_tiny_program_ranked_by_counts(tmp_path):
    src = tmp_path / "sum.c"
    src.write_text("#include <stdio.h>\nstatic unsigned long a[4096];\nint main(void) {\n"
                   "  unsigned long s = 0;\n  for (int r = 0; r < 20; r++)\n"
                   "    for (int i = 0; i < 4096; i++) { a[i] += i * r; s += a[i] >> 3; }\n"
                   "  printf(\"checksum: %lu\\n\", s);\n  return 0;\n}\n")
    env = {**os.environ, "PERFLAB_DB": str(tmp_path / "p.db"), "PERFLAB_CACHE": str(tmp_path / "cache"),
           "COLUMNS": "250"}
    p = subprocess.run([sys.executable, "-m", "perflab", "variants", "--source", str(src), "-V", "O0=-O0",
                        "--rounds", "2", "--warmup", "0", "--instrument", "cachegrind", "--json", "-",
                        "--", "{exe}"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    d = json.loads(p.stdout)["result"]
    assert d["instrument"] == "cachegrind" and d["cache_model"].startswith("I1=")
    o0 = next(v for v in d["variants"] if v["name"] == "O0")
    ir = o0["count_comparisons"]["instructions"]
    assert ir["significant"] and ir["ratio"] > 1.5 and ir["ci"]["level"] == 1.0  # -O0 counts the same each run
    assert d["count_ranking"]["instructions"][-1] == "O0"
    assert "by simulated counts (cachegrind" in d["verdict"]
    assert "x slower simulated" in " ".join(p.stderr.split())  # piped output may be folded
