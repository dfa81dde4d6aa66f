"""Variants study: model, the study through the MockExecutor, snapshot, verdict check (probes and
real builds of a small C program: tests/real/test_variants.py)."""

from __future__ import annotations

import io
import json
import os
import random
from dataclasses import replace
from pathlib import Path

import pytest

from perflab.errors import PerflabError
from perflab.kernels.variant_build import build_variant
from perflab.kernels.variants import BuildTarget, Variant, expand_matrix, parse_variant, resolve_baseline
from perflab.measure.executor import MockExecutor
from perflab.model import MetricPattern, RunResult, Workload
from perflab.platform.machine import Machine
from perflab.platform.topology import Topology
from perflab.report.terminal.variants import render
from perflab.stats.interval import CI
from perflab.store import open_store
from perflab.studies import run_study
from perflab.studies.variants import study as vs
from perflab.checks.noise import MODELS
from perflab.checks.variants import NoisyMachine, rates, sim_config, verdict_check
from perflab.studies.variants.result import BuildInfo, VariantsResult

import perflab.kernels

KERNELS = Path(perflab.kernels.__file__).resolve().parent / "linkorder"
SNAPSHOTS = Path(__file__).parents[1] / "snapshots"
MACHINE = Machine(topology=Topology(cpus=(), cores=(), sockets=(), nodes=()), metadata={"hostname": "t"})


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    # one build cache for the module: the variants are built once and reused
    return tmp_path_factory.mktemp("variant-cache")


# -- model ----------------------------------------------------------------------------------


def test_matrix_expansion_is_the_exact_product():
    vs_ = expand_matrix(["abi=m64,m32", "opt=O2,O3"])
    assert [v.name for v in vs_] == ["m64-O2", "m64-O3", "m32-O2", "m32-O3"]
    assert vs_[0].cflags == ("-m64", "-O2")
    assert vs_[3].cflags == ("-m32", "-msse2", "-mfpmath=sse", "-O3")
    ab = expand_matrix(["abi=m64,m32,mx32"])  # without an opt axis: the baseline's -O2
    assert [(v.name, v.cflags) for v in ab] == [
        ("m64", ("-O2", "-m64")), ("m32", ("-O2", "-m32", "-msse2", "-mfpmath=sse")),
        ("mx32", ("-O2", "-mx32"))]
    three = expand_matrix(["lto=on,off pgo=on,off", "cc=gcc,clang"])
    assert len(three) == 8 and three[0].name == "lto-pgo-gcc"
    assert three[0].pgo and "-flto" in three[0].cflags and three[-1].compiler == "clang"


def test_matrix_and_variant_errors_say_how_to_fix():
    with pytest.raises(PerflabError, match="AXIS one of abi"):
        expand_matrix(["colour=red"])
    with pytest.raises(PerflabError, match="choose from O0"):
        expand_matrix(["opt=O9"])
    with pytest.raises(PerflabError, match="NAME='FLAGS'"):
        parse_variant("-O2")
    with pytest.raises(PerflabError, match="twice"):
        resolve_baseline([Variant("a", ("-O2",)), Variant("a", ("-O3",))], None)
    with pytest.raises(PerflabError, match="not one of the variants"):
        resolve_baseline([Variant("a", ("-O2",))], "b")


def test_parse_variant_splits_compile_link_pgo_and_compiler():
    v = parse_variant("x=cc=clang -O3 -march=native -lfoo -static pgo")
    assert v.compiler == "clang" and v.pgo and v.cflags == ("-O3", "-march=native", "-static")
    assert v.ldflags == ("-lfoo",) and v.driver("c++") == "clang++"
    assert v.link_flags == ("-static", "-lfoo")  # what a Makefile's LDFLAGS must repeat
    lo = parse_variant("bad=-O2 -L/x -lmopt {src} -lm")
    assert lo.link_line == ("-L/x", "-lmopt", "{src}", "-lm") and lo.cflags == ("-O2",)


def test_baseline_defaults_to_m64_O2_and_is_added_when_missing():
    vars_, base = resolve_baseline(expand_matrix(["abi=m64,m32"]), None)
    assert base == "m64" and len(vars_) == 2
    vars_, base = resolve_baseline([parse_variant("lto=-O2 -flto")], None)
    assert base == "base" and vars_[0].cflags == ("-O2", "-m64")


# -- the study through the MockExecutor (real builds of sinloop, simulated runs) -------------


class Model:
    """Mock runs by variant: fast is 20 % faster but prints another checksum; crash always fails."""

    def __init__(self):
        self.i = 0

    def __call__(self, spec):
        self.i += 1
        name = spec.params["variant"]
        if name == "crash":
            return RunResult(wall_ns=10**6, user_s=0, sys_s=0, maxrss_kb=1, minflt=0, majflt=0, nvcsw=0,
                             nivcsw=0, exit_code=None, signal=4, stderr_tail="Illegal instruction")
        secs = {"fast": 0.8, "m32": 1.02}.get(name, 1.0) * (1 + (self.i % 5) * 0.002)
        rss = {"m32": 80_000}.get(name, 100_000)
        return RunResult(wall_ns=int(secs * 1e9), user_s=secs, sys_s=0.0, maxrss_kb=rss, minflt=rss // 4,
                         majflt=0, nvcsw=0, nivcsw=0, exit_code=0,
                         metrics={"events_per_s": 100 / secs, "checksum": 7.5 if name == "fast" else 42.0})


def _config(cache, specs, rounds=6, **kw):
    wl = Workload(name="w", argv=("{exe}", "1000"), metrics=(MetricPattern(r"checksum (?P<checksum>\S+)"),),
                  primary_metric="events_per_s", checksum_metric="checksum")
    target = BuildTarget("sinloop", (KERNELS / "sinloop.c",), "c", ldflags=("-lm",))
    return vs.VariantsConfig(target=target, workload=wl, variants=tuple(parse_variant(s) for s in specs),
                             rounds=rounds, cache_dir=str(cache), **kw)


SPECS = ("m64=-m64 -O2", "m32=-m32 -msse2 -mfpmath=sse -O2", "fast=-O2 -ffast-math", "crash=-O1")


def test_study_interleaves_stores_and_guards_results(cache, tmp_path):
    config = _config(cache, SPECS, rounds=8, warmup=1, seed=3)
    assert vs.VariantsConfig.from_dict(json.loads(json.dumps(config.as_dict()))) == config
    ex = MockExecutor(model=Model())
    with open_store(str(tmp_path / "v.db")) as store:
        res = run_study(vs, config, store, ex, machine=MACHINE)
        ms = store.measurements(res.campaign_id)
        camp = store.campaign(res.campaign_id)
    names = [s.params["variant"] for s in ex.calls if s.params["round"] >= 0 and s.params["variant"] != "crash"]
    rounds = [names[i:i + 3] for i in range(0, len(names), 3)]
    assert all(sorted(r) == ["fast", "m32", "m64"] for r in rounds)
    assert len({tuple(r) for r in rounds}) > 1  # shuffled, not a fixed order
    # every measured run is stored with its design key; the crashing variant stops after 2 failures
    assert len(ms) == 3 * 8 + vs.MAX_FAILURES and {m.label for m in ms} == {"m64", "m32", "fast", "crash"}
    assert [m.result.failure for m in ms if m.label == "crash"] == ["killed by SIGILL"] * 2
    assert camp.status == "done" and camp.summary["baseline"] == "m64"
    m32, fast, crash = res.row("m32"), res.row("fast"), res.row("crash")
    assert m32.status == "measured" and m32.comparisons["maxrss_kb"].ratio == pytest.approx(0.8)
    assert m32.comparisons["maxrss_kb"].better and "max RSS -20.0 %" in m32.verdict
    # fast-math: 20 % faster but a different checksum: reported, never the fastest
    assert fast.status == "different result" and fast.comparisons["events_per_s"].better
    assert res.fastest is None and "not named though faster, because the result differs: fast" in res.verdict
    assert crash.status == "failed" and crash.failures == {"killed by SIGILL": 2} and not crash.comparisons
    assert "crash" in res.verdict and "every run failed" in crash.verdict
    # the analysis is pure: the stored runs give the same result, which survives JSON
    again = vs.analyse(config, ms, {o.name: o.build for o in res.variants})
    again.campaign_id = res.campaign_id
    assert again.as_dict() == res.as_dict()
    assert VariantsResult.from_dict(json.loads(json.dumps(res.as_dict()))).as_dict() == res.as_dict()
    ci = res.row("m32").comparisons["events_per_s"].as_dict()["ci"]
    assert set(ci) == {"low", "high", "level"} and 0.9 < ci["level"] < 1


def test_fastest_is_a_same_result_variant_with_significance(cache, tmp_path):
    config = _config(cache, ("m64=-m64 -O2", "quick=-O3", "m32=-m32 -msse2 -mfpmath=sse -O2"), rounds=8)

    def model(spec):
        secs = {"quick": 0.9}.get(spec.params["variant"], 1.0) * (1 + spec.params["round"] % 3 * 0.003)
        return RunResult(wall_ns=int(secs * 1e9), user_s=secs, sys_s=0, maxrss_kb=1000, minflt=0, majflt=0,
                         nvcsw=0, nivcsw=0, exit_code=0, metrics={"events_per_s": 100 / secs, "checksum": 1.0})

    with open_store(str(tmp_path / "v.db")) as store:
        res = run_study(vs, config, store, MockExecutor(model=model), machine=MACHINE)
    assert res.fastest == "quick" and res.verdict.startswith("fastest: quick (-O3), events_per_s +11.1 %")


def _model(times):
    """Seconds per variant; 'wobble' variants alternate +-1 % by round, so two equal ones differ
    in sign from round to round (no significant difference between them)."""
    def model(spec):
        rnd = spec.params["round"]
        secs = times.get(spec.params["variant"], 1.0) * (1 + 0.01 * (-1) ** (rnd + (spec.params["variant"] == "q2")))
        return RunResult(wall_ns=int(secs * 1e9), user_s=secs, sys_s=0, maxrss_kb=1000, minflt=0, majflt=0,
                         nvcsw=0, nivcsw=0, exit_code=0,
                         metrics={"events_per_s": 100 / secs, "seconds": secs, "checksum": 1.0})
    return model


def test_two_equally_fast_variants_are_a_tie_not_a_fastest(cache, tmp_path):
    config = _config(cache, ("m64=-m64 -O2", "q1=-O3", "q2=-O2 -fno-plt"), rounds=10)
    with open_store(str(tmp_path / "v.db")) as store:
        res = run_study(vs, config, store, MockExecutor(model=_model({"q1": 0.9, "q2": 0.9})), machine=MACHINE)
    assert all(res.row(n).comparisons["events_per_s"].better for n in ("q1", "q2"))
    assert res.fastest is None and sorted(res.tied) == ["q1", "q2"]
    assert res.verdict.startswith(f"tie for fastest: {res.leader}, ")
    assert "not significantly better than the others, paired by round, Holm over 1" in res.verdict
    assert res.verdict.endswith("ranked by events_per_s, higher is better (the workload's primary metric)")
    assert VariantsResult.from_dict(json.loads(json.dumps(res.as_dict()))).as_dict() == res.as_dict()


def test_a_leader_that_beats_every_rival_is_the_fastest(cache, tmp_path):
    config = _config(cache, ("m64=-m64 -O2", "q1=-O3", "q2=-O2 -fno-plt"), rounds=10)
    with open_store(str(tmp_path / "v.db")) as store:
        res = run_study(vs, config, store, MockExecutor(model=_model({"q1": 0.8, "q2": 0.9})), machine=MACHINE)
    assert res.fastest == "q1" and res.tied == [] and res.contest["q2"].better
    assert "; better than each other variant (paired by round, Holm over 1): q2 (+12.5 %" in res.verdict


def test_a_lower_is_better_metric_ranks_in_its_direction(cache, tmp_path):
    wl = Workload(name="w", argv=("{exe}", "1000"), primary_metric="seconds", higher_is_better=False,
                  checksum_metric="checksum")
    config = replace(_config(cache, ("m64=-m64 -O2", "q1=-O3", "q2=-O2 -fno-plt"), rounds=10), workload=wl)
    with open_store(str(tmp_path / "v.db")) as store:
        res = run_study(vs, config, store, MockExecutor(model=_model({"q1": 0.8, "q2": 1.2})), machine=MACHINE)
    assert res.primary == "seconds" and not res.higher_is_better
    assert res.ranking == "seconds, lower is better (the workload's primary metric)"
    assert res.fastest == "q1" and res.verdict.startswith("fastest: q1 (-O3), seconds -20.0 %")
    assert "slower than m64: q2 (seconds +20.0 %)" in res.verdict


def test_unsupported_variant_is_skipped_in_one_line_and_the_rest_measured(cache, tmp_path):
    lines = []
    ex = MockExecutor(model=Model())
    with open_store(str(tmp_path / "v.db")) as store:
        res = run_study(vs, _config(cache, ("m64=-m64 -O2", "mx32=-mx32 -O2"), rounds=3), store, ex,
                        machine=MACHINE, progress=lines.append)
    assert res.row("mx32").status == "skipped" and "CONFIG_X86_X32_ABI" in res.row("mx32").verdict
    assert {s.params["variant"] for s in ex.calls} == {"m64"}
    assert any(line.startswith("mx32: skipped: cannot run -mx32") for line in lines)


# -- snapshot of the terminal output, through the mock ----------------------------------------


def _snapshot_result() -> VariantsResult:
    """A simulated campaign: lto 5 % faster, native 8 % faster with another checksum, O3 skipped."""
    config = sim_config(rounds=10)
    runs = []
    specs = [s for s in vs.plan(config) if s.params["round"] >= 0]
    machine = NoisyMachine({"lto": 1.05, "native": 1.08}, random.Random(7), len(specs))
    ex = MockExecutor(machine)
    for s in specs:
        r = ex.run(replace(s, argv=("true",)))
        if s.params["variant"] == "native":
            r.metrics["checksum"] = 41.0
        runs.append((dict(s.params), r))
    builds = {"O3": BuildInfo(skipped="cannot run -mx32: exec format error: x32 is not supported by this kernel")}
    return vs.analyse(config, [r for r in runs if r[0]["variant"] != "O3"], builds)


def test_terminal_output_snapshot():
    from rich.console import Console

    console = Console(file=io.StringIO(), width=120, color_system=None, force_terminal=False)
    render(_snapshot_result(), console)
    text = console.file.getvalue()
    snap = SNAPSHOTS / "variants.txt"
    if os.environ.get("PERFLAB_UPDATE_SNAPSHOTS"):
        snap.parent.mkdir(exist_ok=True)
        snap.write_text(text)
    assert text == snap.read_text()
    assert "fastest: lto" in text and "DIFFERS" in text and "different result" in text


# -- statistics: the verdict's error rates, a short run of bench/verdicts.py's check --


def test_verdict_check_short():
    fp, det = verdict_check(runs=40, seed=1, echo=False)
    assert fp <= 0.10 and det >= 0.80, (fp, det)
    # two variants equally faster than the baseline: one is named "fastest" rarely, not half the time
    _, _, split = rates(runs=30, seed=2, model=MODELS["shift"])
    assert split <= 0.15, split


def test_levels_are_real():
    res = _snapshot_result()
    base = res.row(res.baseline).estimates["wall_s"].ci
    assert isinstance(base, CI) and base.level == pytest.approx(0.978515625)  # n=10: x(2)..x(9)


def test_template_build_cache_keys_on_the_source_tree_and_flags(tmp_path):
    """A project build is reused until a source byte, a flag or the template changes; products of
    the user's own build in the tree (.o) are neither copied nor hashed."""
    from perflab.kernels.buildsys import DEFAULT_MAKE

    src = tmp_path / "proj"
    src.mkdir()
    for f in ("fmsum.c", "Makefile"):
        (src / f).write_bytes((Path(__file__).parents[1] / "data" / "fmsum" / f).read_bytes())
    target = BuildTarget("fmsum", template=DEFAULT_MAKE, src_dir=src, exe="fmsum")
    cache = tmp_path / "cache"
    first = build_variant(target, parse_variant("O2=-O2"), cache_dir=cache)
    assert not first.cached and any(w.startswith("CFLAGS=-O2") for w in first.command)
    (src / "fmsum.o").write_bytes(b"stale object from the user's own build")
    assert build_variant(target, parse_variant("O2=-O2"), cache_dir=cache).cached
    assert not (first.path.parent / "fmsum.o").read_bytes().startswith(b"stale")
    assert not build_variant(target, parse_variant("O3=-O3"), cache_dir=cache).cached
    (src / "fmsum.c").write_text((src / "fmsum.c").read_text() + "\n/* changed */\n")
    again = build_variant(target, parse_variant("O2=-O2"), cache_dir=cache)
    assert not again.cached and again.path != first.path


def test_too_few_rounds_are_named_and_a_missing_metric_falls_back_to_time():
    config = sim_config(rounds=5)
    specs = [s for s in vs.plan(config) if s.params["round"] >= 0]
    ex = MockExecutor(NoisyMachine({"lto": 1.5}, random.Random(3), len(specs)))
    runs = [(dict(s.params), ex.run(replace(s, argv=("true",)))) for s in specs]
    res = vs.analyse(config, runs)
    # 2 / 2^5 * 3 variants > 0.05: not even a 50 % speed-up can be significant with 5 rounds
    assert res.fastest is None and "no difference can reach significance" in res.verdict
    assert "use --rounds 7 or more" in res.verdict
    for _, r in runs:
        r.metrics.pop("events_per_s")
    assert vs.analyse(config, runs).primary == "wall_s"
