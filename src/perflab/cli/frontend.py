"""perflab frontend: runtime against hot code size, 4 KiB vs 2 MiB text pages (seed 001)."""

from __future__ import annotations

import click

from perflab.cli.common import instrument_wrap, make_console, run_and_render, study_output_options
from perflab.cli.options import COUNT, PROBABILITY, SIZE, Count, CpuList, Fraction, tune_options, default_of
from perflab.studies.frontend.study import FrontendConfig


@click.command(name="frontend")
@click.option("--kind", type=click.Choice(["switch", "calls"]), default=default_of(FrontendConfig, "kind"), show_default=True,
              help="switch: one switch dispatching pseudo-random opcodes over n code blocks; calls: many small "
                   "functions called in a pseudo-random order.")
@click.option("--min-size", default="16K", show_default=True, type=SIZE, help="Smallest hot code size.")
@click.option("--max-size", default="4M", show_default=True, type=SIZE, help="Largest hot code size.")
@click.option("--points-per-octave", default=default_of(FrontendConfig, "points_per_octave"), show_default=True, type=Count(1, 16),
              help="Geometric steps per doubling.")
@click.option("--iters", type=Count(1, 10**10),
              help="Dispatches per run (same at every size)  [default: 2000000; 200000 with "
                   "--instrument cachegrind]")
@click.option("--reps", type=COUNT,
              help="Rounds; each runs every (size, mode) once, shuffled. Fewer than 9 cannot pass "
                   "Holm's correction over 17 sizes.  [default: 10; 2 with --instrument cachegrind, "
                   "whose counts barely vary: 2 measure the spread]")
@click.option("--modes", help="Page modes for text: 4k, 2m or both.  [default: 4k,2m; 4k with "
                              "--instrument cachegrind]")
@click.option("--block-bytes", default=default_of(FrontendConfig, "block_bytes"), show_default=True, type=Count(17, 4096),
              help="Bytes of work per case.")
@click.option("--per-cpu", "per_cpu", type=CpuList(), metavar="LIST",
              help="Run the scan pinned to each of these CPUs in turn (does the front-end cost differ between cores?).")
@click.option("--perf-span/--no-perf-span", default=default_of(FrontendConfig, "perf_span"), show_default=True,
              help="Also measure the hot code span from perf-sampled instruction addresses.")
@click.option("--counters/--no-counters", default=default_of(FrontendConfig, "counters"), show_default=True,
              help="Count iTLB and L1i misses per dispatch with perf stat where the PMU has them.")
@click.option("--alpha", default=default_of(FrontendConfig, "alpha"), show_default=True, type=PROBABILITY,
              help="Family-wise error rate (Holm across sizes).")
@click.option("--min-effect", default=default_of(FrontendConfig, "min_effect"), show_default=True, type=Fraction(0.0, 1.0, inclusive=True),
              help="Smallest gain from 2 MiB pages that counts (0.03 = 3 %).")
@click.option("--allow-system-changes", is_flag=True,
              help="May switch THP from never to madvise during the scan (restored afterwards).")
@click.option("--seed", default=default_of(FrontendConfig, "seed"), show_default=True, type=Count(0, 2**32),
              help="Seed of the shuffled run order.")
@click.option("--instrument", type=click.Choice(["time", "cachegrind"]), default="time", show_default=True,
              help="cachegrind: no PMU needed: simulated I1 misses per dispatch against code size under "
                   "Valgrind (4 KiB pages; Valgrind models no TLB).")
@click.option("--cache-model", metavar="'I1=S,W,L D1=S,W,L LL=S,W,L'",
              help="The caches --instrument cachegrind simulates (default: this machine's, from sysfs).")
@study_output_options
@tune_options
def command(kind, min_size, max_size, points_per_octave, iters, reps, modes, block_bytes, per_cpu,
            perf_span, counters, alpha, min_effect, allow_system_changes, seed, instrument, cache_model,
            db_url, json_path, tune):
    """Is the front end (i-cache, iTLB) the bottleneck, and do 2 MiB text pages cure it?

    Generates a program whose hot code grows with n and scans its time per dispatch over code
    sizes with 4 KiB and 2 MiB text pages in shuffled paired rounds. Verdict: a one-sided
    Wilcoxon signed-rank test per size on the per-round 4K/2M ratios, Holm-corrected across sizes,
    with a minimum effect; iTLB and L1i misses per dispatch where the PMU counts them. Without a
    PMU, --instrument cachegrind scans simulated I1 misses per dispatch instead (no TLB model).
    """

    from perflab.cli.run import _cache_model
    from perflab.report.terminal.frontend import render
    from perflab.studies.frontend import study as frontend

    model = _cache_model(instrument, cache_model, False)  # no Valgrind: one line, exit 2
    simulated = model is not None
    modes = modes if modes is not None else ("4k" if simulated else "4k,2m")
    config = frontend.FrontendConfig(
        kind=kind, min_bytes=min_size, max_bytes=max_size, points_per_octave=points_per_octave,
        iters=iters or (200_000 if simulated else 2_000_000), reps=reps or (2 if simulated else 10),
        modes=tuple(m.strip().lower() for m in modes.split(",") if m.strip()),
        block_bytes=block_bytes, per_cpu=tuple(per_cpu) if per_cpu else None, perf_span=perf_span,
        counters=counters, alpha=alpha,
        min_effect=min_effect, allow_system_changes=allow_system_changes, seed=seed,
        instrument=instrument if simulated else "", cache_model=model.text() if simulated else "",
    )
    console = make_console(stderr=json_path == "-")
    if not simulated:
        run_and_render(frontend, config, console, render, db_url, json_path, tune=tune)
        return
    _run_simulated(frontend, config, model, console, render, db_url, json_path, tune)


def _run_simulated(module, config, model, console, render, db_url, json_path, tune) -> None:
    """run_and_render with the Cachegrind executor around the native one (ILmr kept raw); the
    first size's measured slowdown is printed before the rest of the scan."""
    from perflab.studies.frontend import sim as frontend_sim

    # every size costs about the same: one line is the advice
    wrap = instrument_wrap(model, console, advice="for a long scan give fewer --iters or sizes",
                           events=frontend_sim.EVENTS, once=True)
    run_and_render(module, config, console, render, db_url, json_path, wrap=wrap, tune=tune)
