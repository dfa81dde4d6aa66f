"""Build-variant study: the same code built many ways, compared on time, memory and size.

Seeds 000 (x32 vs x86-64 vs ia32: "physical memory -20 %, elapsed -2 %"), 002 and 003
(optimisation level, cross-file optimisation, profile feedback, target, fast-math, FMA, library
link order). Each variant is probed (can it be built? can this kernel run it?), built through
the cache, then measured interleaved: every round runs every variant once in a seeded shuffled
order, so drift hits all variants alike. Each variant is compared with a baseline (default
``-m64 -O2``): ratio of medians with a bootstrap CI, Mann-Whitney with Holm correction across
variants, Cliff's delta.
"""

from __future__ import annotations

import errno
import os
import random
import subprocess
import tempfile
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable, Sequence

from perflab.model import Workload
from perflab.errors import PerflabError
from perflab.kernels.build import BuildError, cache_root
from perflab.model import RunResult
from perflab.studies.variant_build import (
    BuildTarget,
    Variant,
    VariantBuild,
    build_variant,
    is_baseline_like,
    text_bytes,
)


@dataclass(frozen=True)
class VariantProbe:
    """Whether a variant can be built / run here, and the one-line reason when not."""

    available: bool
    reason: str = ""


# (variant, its build or None before building) -> VariantProbe; tests inject stubs
ProbeFn = Callable[[Variant, "VariantBuild | None"], VariantProbe]


@dataclass(frozen=True)
class VariantsConfig:
    target: BuildTarget
    workload: Workload  # argv[0] is replaced by each variant's binary (or "{exe}" substituted)
    variants: tuple[Variant, ...]
    baseline: str | None = None  # a variant name; None -> the -m64 -O2 one (added if missing)
    rounds: int = 10
    warmup: int = 1
    seed: int = 0
    train_argv: tuple[str, ...] = ()  # PGO training command ("{exe}" + args); default: workload argv
    confidence: float = 0.95
    alpha: float = 0.05
    timeout: float | None = None
    cache_dir: str | None = None


@dataclass
class VariantRow:
    name: str
    flags: str
    status: str  # "measured", "skipped", "failed"
    reason: str = ""
    cached: bool | None = None
    path: str = ""
    text: int | None = None
    data: int | None = None
    bss: int | None = None
    n: int = 0
    wall_median: float | None = None
    wall_ci: tuple[float, float] | None = None
    metric_median: float | None = None
    metric_ci: tuple[float, float] | None = None
    maxrss_kb_median: float | None = None
    minflt_median: float | None = None
    majflt_median: float | None = None
    checksum: float | None = None
    checksum_ok: bool | None = None
    notes: list[str] = field(default_factory=list)
    # against the baseline
    time_ratio: tuple[float, float, float] | None = None  # ratio, lo, hi
    time_p: float | None = None  # Holm-adjusted
    time_significant: bool | None = None
    time_effect: float | None = None
    metric_ratio: tuple[float, float, float] | None = None
    metric_p: float | None = None
    metric_significant: bool | None = None
    rss_ratio: tuple[float, float, float] | None = None
    rss_p: float | None = None
    rss_significant: bool | None = None
    verdict: str = ""


@dataclass
class VariantsResult:
    campaign_id: int | None
    baseline: str
    metric: str | None
    higher_is_better: bool
    rows: list[VariantRow]
    order: list[list[str]]  # the shuffled order of each round (warm-up excluded)
    skipped: list[str]

    def row(self, name: str) -> VariantRow:
        return next(r for r in self.rows if r.name == name)

    def as_dict(self) -> dict:
        from dataclasses import asdict

        return {
            "study": "variants", "campaign_id": self.campaign_id, "baseline": self.baseline,
            "metric": self.metric, "higher_is_better": self.higher_is_better,
            "variants": [asdict(r) for r in self.rows], "order": self.order, "skipped": self.skipped,
        }


# -------------------------------------------------------------------------------------------
# Probes


def _platform_probe(name: str):
    """The cached ABI probe ``perflab.kernels.abi.<name>()``."""
    from perflab.kernels import abi

    return getattr(abi, name)()


X32_REFUSED = ("cannot run -mx32: exec format error: x32 is not supported by this kernel "
               "(CONFIG_X86_X32_ABI not set)")

_PROBE_C = r"""
int main(void) {
#ifdef PERFLAB_LEVEL
    __builtin_cpu_init();
    if (!__builtin_cpu_supports(PERFLAB_LEVEL)) return 3;
#endif
    return 0;
}
"""


def default_probe(v: Variant, vb: VariantBuild | None) -> VariantProbe:
    """Before the build: is the compiler there, can this ABI link? After: can this machine run it?

    The run probe builds a trivial program with the variant's ABI, target and link flags and
    executes it: ENOEXEC means the kernel refuses the ABI (x32 without CONFIG_X86_X32_ABI), a
    missing loader means no 32-bit runtime, exit 3 means the CPU lacks the -march level.
    """
    compiler = v.driver("c")
    if vb is None:
        import shutil

        if shutil.which(compiler) is None:
            clang = _platform_probe("clang_available") if compiler.startswith("clang") else None
            why = clang.reason if clang is not None and not clang.available else f"{compiler} not installed"
            return VariantProbe(False, f"cannot build: {why}")
        if v.abi == "mx32":
            # no point building what this kernel will refuse to run
            p = _platform_probe("x32_runnable")
            if p is not None and not p.available and "CONFIG_X86_X32" in p.reason:
                return VariantProbe(False, X32_REFUSED)
        if v.abi == "m32":
            p = _platform_probe("m32_buildable")
            if p is not None and not p.available:
                return VariantProbe(False, f"cannot build -m32: {p.reason}")
        return VariantProbe(True)
    if v.abi == "mx32":
        p = _platform_probe("x32_runnable")
        if p is not None and not p.available:
            return VariantProbe(False, X32_REFUSED if "CONFIG_X86_X32" in p.reason else f"cannot run -mx32: {p.reason}")
    flags = [f for f in v.cflags if f.startswith(("-m", "-static"))]
    level = next((f.split("=", 1)[1] for f in v.cflags if f.startswith("-march=x86-64-v")), None)
    with tempfile.TemporaryDirectory(prefix="perflab-probe-") as tmp:
        src, exe = Path(tmp) / "probe.c", Path(tmp) / "probe"
        src.write_text(_PROBE_C)
        defs = [f'-DPERFLAB_LEVEL="{level}"'] if level else []
        proc = subprocess.run([compiler, *flags, *defs, str(src), "-o", str(exe)],
                              capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            first = next((ln for ln in proc.stderr.splitlines() if "error" in ln), proc.stderr.strip()[:200])
            return VariantProbe(False, f"cannot build a trivial {' '.join(flags) or 'default'} program: {first}")
        try:
            rc = subprocess.run([str(exe)], capture_output=True, check=False, timeout=30).returncode
        except OSError as exc:
            if exc.errno == errno.ENOEXEC:
                if v.abi == "mx32":
                    return VariantProbe(False, X32_REFUSED)
                return VariantProbe(False, f"cannot run: exec format error ({exc})")
            if exc.errno == errno.ENOENT:
                return VariantProbe(False, "cannot run: the program's loader is missing "
                                    "(no runtime for this ABI installed)")
            return VariantProbe(False, f"cannot run: {exc}")
        if rc == 3 and level:
            return VariantProbe(False, f"cannot run -march={level}: this CPU lacks its instructions")
        if rc != 0:
            return VariantProbe(False, f"a trivial program built this way exits with {rc}")
    return VariantProbe(True)


# -------------------------------------------------------------------------------------------
# The study


def _argv(workload: Workload, exe: Path) -> tuple[str, ...]:
    if "{exe}" in workload.argv:
        return tuple(str(exe) if a == "{exe}" else a for a in workload.argv)
    return (str(exe), *workload.argv[1:])


def resolve_baseline(variants: Sequence[Variant], baseline: str | None) -> tuple[list[Variant], str]:
    """The variants to measure (baseline added when missing) and the baseline's name."""
    vs = list(variants)
    names = [v.name for v in vs]
    if len(set(names)) != len(names):
        dup = next(n for n in names if names.count(n) > 1)
        raise PerflabError(f"variant name '{dup}' is given twice: name each variant once")
    if baseline is not None:
        if baseline not in names:
            raise PerflabError(
                f"--baseline '{baseline}' is not one of the variants ({', '.join(names)}): "
                f"name one of them or leave --baseline out for -m64 -O2"
            )
        return vs, baseline
    for v in vs:
        if is_baseline_like(v):
            return vs, v.name
    base = Variant("base", ("-O2", "-m64"))  # the order --matrix uses, so both share one build
    if "base" in names:
        raise PerflabError("a variant is called 'base' but is not -m64 -O2: pass --baseline NAME")
    return [base, *vs], "base"


def _pct(r: float) -> str:
    return f"{(r - 1) * 100:+.1f} %"


def run_variants(
    config: VariantsConfig,
    executor,
    store,
    console=None,
    probe: ProbeFn | None = None,
    builder: Callable[..., VariantBuild] | None = None,
) -> VariantsResult:
    """Probe, build (cached), measure interleaved, compare with the baseline, store everything."""
    from perflab import stats

    probe = probe or default_probe
    builder = builder or build_variant
    say = console.print if console is not None else (lambda *a, **k: None)
    if config.rounds < 2:
        raise PerflabError("--rounds must be at least 2 to compare variants (try --rounds 10)")
    variants, base_name = resolve_baseline(config.variants, config.baseline)
    wl = config.workload
    metric = wl.primary_metric
    checksum_metric = wl.checksum_metric

    rows: dict[str, VariantRow] = {v.name: VariantRow(v.name, v.flags_text, "skipped") for v in variants}
    builds: dict[str, VariantBuild] = {}
    skipped: list[str] = []
    cache_dir = Path(config.cache_dir) if config.cache_dir else None
    train = config.train_argv or ("{exe}", *wl.argv[1:])

    campaign = store.start_campaign("variants", {
        "workload": wl.name, "argv": list(wl.argv), "baseline": base_name, "rounds": config.rounds,
        "seed": config.seed, "train_argv": list(train),
        "variants": {v.name: v.flags_text for v in variants},
    })
    try:
        for v in variants:
            p = probe(v, None)
            if p.available:
                try:
                    vb = builder(config.target, v, train_argv=train, cache_dir=cache_dir)
                except BuildError as exc:
                    p = VariantProbe(False, f"cannot build: {exc}")
                else:
                    p = probe(v, vb)
                    rows[v.name].cached = vb.cached
                    rows[v.name].path = str(vb.path)
                    rows[v.name].notes = list(vb.notes)
                    if vb.sizes:
                        rows[v.name].text, rows[v.name].data, rows[v.name].bss = (
                            vb.sizes.text, vb.sizes.data, vb.sizes.bss)
                    if p.available:
                        builds[v.name] = vb
                        say(f"{v.name}: {'cached' if vb.cached else 'built'} ({v.flags_text})")
                        for note in vb.notes:
                            say(f"  {v.name}: {note}")
                        store.add_artifact(campaign, "binary", str(vb.path),
                                           {"variant": v.name, "flags": v.flags_text, "cached": vb.cached})
            if not p.available:
                rows[v.name].reason = p.reason
                skipped.append(v.name)
                say(f"{v.name}: skipped: {p.reason}")
        if base_name not in builds:
            raise PerflabError(
                f"the baseline '{base_name}' could not be built or run ({rows[base_name].reason}); "
                f"pick another with --baseline NAME"
            )
        _pgo_no_change(builds, variants, config, rows)

        runnable = [v.name for v in variants if v.name in builds]
        samples: dict[str, list[RunResult]] = {n: [] for n in runnable}
        say(f"measuring {len(runnable)} variants x {config.rounds} rounds, interleaved in shuffled order "
            f"(+{config.warmup} warm-up)")
        rng = random.Random(config.seed)
        order_log: list[list[str]] = []
        total = config.warmup + config.rounds
        for rnd in range(total):
            order = list(runnable)
            rng.shuffle(order)
            warm = rnd < config.warmup
            if not warm:
                order_log.append(order)
            for name in order:
                vb = builds[name]
                spec = wl.spec(argv=_argv(wl, vb.path), label=name, timeout=config.timeout,
                               params={"variant": name, "warmup": warm})
                res = executor.run(spec)
                if warm:
                    if not res.ok:
                        _fail(rows[name], res, runnable)
                    continue
                store.add_measurement(campaign, res, params={"variant": name}, rep=rnd - config.warmup,
                                      label=name)
                if res.ok:
                    samples[name].append(res)
                else:
                    _fail(rows[name], res, runnable)
                    say(f"{name}: failed: {rows[name].reason}")
            runnable = [n for n in runnable if rows[n].status != "failed"]
        if base_name not in runnable or len(samples[base_name]) < 2:
            raise PerflabError(f"the baseline '{base_name}' failed to run: {rows[base_name].reason}")

        _analyse(rows, samples, base_name, metric, wl.higher_is_better, checksum_metric, config, stats)
        result = VariantsResult(campaign, base_name, metric, wl.higher_is_better,
                                [rows[v.name] for v in variants], order_log, skipped)
        store.finish_campaign(campaign, "done", result.as_dict())
        return result
    except KeyboardInterrupt:
        store.finish_campaign(campaign, "interrupted")
        raise
    except BaseException:
        store.finish_campaign(campaign, "failed")
        raise


def _fail(row: VariantRow, res: RunResult, runnable: list[str]) -> None:
    row.status = "failed"
    if res.signal == 4:
        row.reason = "illegal instruction (SIGILL): this CPU cannot run code built this way"
    elif res.timed_out:
        row.reason = "timed out"
    else:
        tail = (res.stderr_tail or "").strip().splitlines()
        row.reason = f"exit {res.exit_code if res.exit_code is not None else 'signal ' + str(res.signal)}" + (
            f": {tail[-1][:160]}" if tail else "")


def _pgo_no_change(builds, variants, config, rows) -> None:
    """Say so when a PGO build's machine code equals the same flags without the profile."""
    by_key = {(v.compiler, v.cflags, v.ldflags, v.link_line): v.name for v in variants if not v.pgo}
    for v in variants:
        if not v.pgo or v.name not in builds:
            continue
        twin = by_key.get((v.compiler, v.cflags, v.ldflags, v.link_line))
        if twin is None or twin not in builds:
            continue
        a, b = text_bytes(builds[v.name].path), text_bytes(builds[twin].path)
        if a is not None and a == b:
            rows[v.name].notes.append(f"profile did not apply: the code is identical to '{twin}'")


def _analyse(rows, samples, base, metric, higher_better, checksum_metric, config, stats) -> None:
    conf = config.confidence

    def med_ci(xs):
        s = stats.summary(xs)
        return s.median, stats.bootstrap_median_ci(xs, confidence=conf, seed=config.seed)

    for name, rs in samples.items():
        row = rows[name]
        if not rs:
            continue
        row.status = "measured" if row.status != "failed" else "failed"
        row.n = len(rs)
        row.wall_median, row.wall_ci = med_ci([r.wall_s for r in rs])
        vals = [r.metrics[metric] for r in rs if metric and metric in r.metrics]
        if vals:
            row.metric_median, row.metric_ci = med_ci(vals)
        row.maxrss_kb_median = stats.median([r.maxrss_kb for r in rs])
        row.minflt_median = stats.median([r.minflt for r in rs])
        row.majflt_median = stats.median([r.majflt for r in rs])
        sums = [r.metrics[checksum_metric] for r in rs if checksum_metric and checksum_metric in r.metrics]
        if sums:
            row.checksum = max(set(sums), key=sums.count)
    base_row = rows[base]
    others = [n for n in samples if n != base and len(samples[n]) >= 2]
    comps = {}
    for n in others:
        a, b = samples[n], samples[base]
        c_time = stats.compare([r.wall_s for r in a], [r.wall_s for r in b], alpha=config.alpha,
                               confidence=conf, seed=config.seed)
        c_rss = stats.compare([r.maxrss_kb for r in a], [r.maxrss_kb for r in b], alpha=config.alpha,
                              confidence=conf, seed=config.seed)
        c_met = None
        ma = [r.metrics[metric] for r in a if metric and metric in r.metrics]
        mb = [r.metrics[metric] for r in b if metric and metric in r.metrics]
        if len(ma) >= 2 and len(mb) >= 2:
            c_met = stats.compare(ma, mb, alpha=config.alpha, confidence=conf, seed=config.seed)
        comps[n] = (c_time, c_rss, c_met)
    # Holm across the variants, separately per quantity (time, memory, metric)
    for idx in range(3):
        names = [n for n in others if comps[n][idx] is not None]
        adj = stats.holm([comps[n][idx].p_value for n in names]) if names else []
        for n, p in zip(names, adj):
            c, row = comps[n][idx], rows[n]
            triple = (c.ratio, c.lo, c.hi)
            sig = p < config.alpha
            if idx == 0:
                row.time_ratio, row.time_p, row.time_significant, row.time_effect = triple, p, sig, c.effect_size
            elif idx == 1:
                row.rss_ratio, row.rss_p, row.rss_significant = triple, p, sig
            else:
                row.metric_ratio, row.metric_p, row.metric_significant = triple, p, sig
    for n in others:
        row = rows[n]
        if checksum_metric and row.checksum is not None and base_row.checksum is not None:
            row.checksum_ok = row.checksum == base_row.checksum
            if not row.checksum_ok:
                fast = any(f in ("-ffast-math", "-Ofast") for f in row.flags.split())
                row.notes.append(
                    f"checksum differs from {base} ({row.checksum:g} vs {base_row.checksum:g})"
                    + (": expected with -ffast-math/-Ofast" if fast else ": the build changes results"))
        row.verdict = _verdict(row, metric, higher_better)
    if checksum_metric and base_row.checksum is not None:
        base_row.checksum_ok = True
    base_row.verdict = "baseline"


def _verdict(row: VariantRow, metric: str | None, higher_better: bool) -> str:
    """Seed 000 style: 'physical memory -20.3 % (significant), elapsed -2.1 % (not significant)'."""
    parts = []
    if row.rss_ratio:
        parts.append(f"physical memory {_pct(row.rss_ratio[0])}"
                     f" ({'significant' if row.rss_significant else 'not significant'})")
    if row.time_ratio:
        parts.append(f"elapsed {_pct(row.time_ratio[0])} [{_pct(row.time_ratio[1])}, {_pct(row.time_ratio[2])}]"
                     f" ({'significant' if row.time_significant else 'not significant'}, p={row.time_p:.2g})")
    if row.metric_ratio and metric:
        better = (row.metric_ratio[0] > 1) == higher_better
        word = ("faster" if better else "slower") if row.metric_significant else "no significant change"
        parts.append(f"{metric} {_pct(row.metric_ratio[0])} ({word})")
    return ", ".join(parts)


# -------------------------------------------------------------------------------------------
# Seed 003's link-order demonstration


def linkorder_archive(cache_dir: Path | None = None, compiler: str = "gcc") -> Path:
    """Build (cached) libmopt.a, the fast-sin archive of the link-order demonstration."""
    from perflab.kernels.build import build_key

    here = Path(__file__).resolve().parent.parent / "kernels" / "linkorder"
    src = here / "mopt.c"
    key = build_key([src], compiler, ["-O2", "ar"])
    d = (cache_dir or cache_root()) / "linkorder" / key
    lib = d / "libmopt.a"
    if lib.exists():
        return lib
    d.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=d))
    obj = tmp / "mopt.o"
    for cmd in ([compiler, "-O2", "-c", str(src), "-o", str(obj)], ["ar", "rcs", str(tmp / "libmopt.a"), str(obj)]):
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            raise BuildError(f"building libmopt.a failed: {proc.stderr.strip()[:200]}")
    os.replace(tmp / "libmopt.a", lib)
    return lib


def linkorder_demo(iterations: int = 20_000_000, cache_dir: Path | None = None):
    """Target, workload and the two variants (objects first / archive first) of seed 003's trap."""
    from perflab.model import MetricPattern

    here = Path(__file__).resolve().parent.parent / "kernels" / "linkorder"
    lib = linkorder_archive(cache_dir)
    target = BuildTarget("sinloop", (here / "sinloop.c",), language="c", extra_inputs=(lib,))
    wl = Workload(
        name="sinloop", argv=("{exe}", str(iterations)),
        metrics=(MetricPattern(r"checksum (?P<checksum>\S+)"),), checksum_metric="checksum",
    )
    good = Variant("objects-first", ("-O2",), link_line=("{src}", f"-L{lib.parent}", "-lmopt", "-lm"))
    bad = Variant("archive-first", ("-O2",), link_line=(f"-L{lib.parent}", "-lmopt", "{src}", "-lm"))
    return target, wl, (good, bad)


def with_common_flags(variants: Sequence[Variant], cflags: Sequence[str]) -> tuple[Variant, ...]:
    """Append flags every variant shares (--cflags) to each variant."""
    if not cflags:
        return tuple(variants)
    return tuple(replace(v, cflags=(*v.cflags, *cflags)) for v in variants)


# -------------------------------------------------------------------------------------------
# Terminal output


def _size(n: int) -> str:
    return f"{n}" if n < 10240 else f"{n / 1024:.0f}K"


def _kb(x: float | None) -> str:
    return "-" if x is None else f"{x / 1024:.1f} MiB"


def print_table(result: VariantsResult, console) -> None:
    """One rich table: per variant medians with CIs, sizes, and the ratio against the baseline."""
    from rich.table import Table

    t = Table(title=f"variants vs baseline '{result.baseline}' (median [95 % CI], Holm-corrected p)")
    for col in ("variant", "build", "elapsed s", result.metric or "metric", "max RSS", "minflt",
                "text/data/bss", "time ratio", "RSS ratio", "checksum"):
        t.add_column(col, justify="left" if col in ("variant", "build") else "right")
    for r in result.rows:
        if r.status != "measured":
            t.add_row(r.name, r.status, r.reason[:60], "", "", "", "", "", "", "")
            continue
        el = f"{r.wall_median:.3f} [{r.wall_ci[0]:.3f}, {r.wall_ci[1]:.3f}]"
        met = "-" if r.metric_median is None else f"{r.metric_median:.4g} [{r.metric_ci[0]:.4g}, {r.metric_ci[1]:.4g}]"
        size = "-" if r.text is None else f"{_size(r.text)}/{_size(r.data)}/{_size(r.bss)}"
        tr = ("-" if r.time_ratio is None else
              f"{r.time_ratio[0]:.3f} [{r.time_ratio[1]:.3f}, {r.time_ratio[2]:.3f}] "
              f"{'*' if r.time_significant else ''}p={r.time_p:.2g}")
        rr = ("-" if r.rss_ratio is None else
              f"{r.rss_ratio[0]:.3f}{' *' if r.rss_significant else ''}")
        ck = "-" if r.checksum_ok is None else ("same" if r.checksum_ok else "DIFFERS")
        t.add_row(r.name, "cached" if r.cached else "built", el, met, _kb(r.maxrss_kb_median),
                  f"{r.minflt_median:.0f}", size, tr, rr, ck)
    console.print(t)
    for r in result.rows:
        if r.status == "measured" and r.name != result.baseline:
            console.print(f"{r.name}: {r.verdict}")
        for note in r.notes:
            console.print(f"{r.name}: note: {note}")
    for r in result.rows:
        if r.status != "measured":
            console.print(f"{r.name}: {r.status}: {r.reason}")
