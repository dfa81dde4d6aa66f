"""perflab frontend: runtime against hot code size, 4 KiB vs 2 MiB text pages (seed 001)."""

from __future__ import annotations

import click

from perflab.cli.common import make_console, run_and_render, study_output_options
from perflab.cli.options import COUNT, PROBABILITY, SIZE, Count, CpuList, Fraction


@click.command(name="frontend")
@click.option("--kind", type=click.Choice(["switch", "calls"]), default="switch", show_default=True,
              help="switch: pseudo-random opcodes mod n over n blocks (seed's B); calls: many small "
                   "functions called in a pseudo-random order (seed's A).")
@click.option("--min-size", default="16K", show_default=True, type=SIZE, help="Smallest hot code size.")
@click.option("--max-size", default="4M", show_default=True, type=SIZE, help="Largest hot code size.")
@click.option("--points-per-octave", default=2, show_default=True, type=Count(1, 16),
              help="Geometric steps per doubling.")
@click.option("--iters", default=2_000_000, show_default=True, type=Count(1, 10**10),
              help="Dispatches per run (same at every size).")
@click.option("--reps", default=10, show_default=True, type=COUNT,
              help="Rounds; each runs every (size, mode) once, shuffled. Fewer than 9 cannot pass "
                   "Holm's correction over 17 sizes.")
@click.option("--modes", default="4k,2m", show_default=True, help="Page modes for text: 4k, 2m or both.")
@click.option("--block-bytes", default=64, show_default=True, type=Count(17, 4096),
              help="Bytes of work per case.")
@click.option("--per-cpu", "per_cpu", type=CpuList(), metavar="LIST",
              help="Run the scan pinned to each of these CPUs in turn (the seed's per-core test).")
@click.option("--perf-span/--no-perf-span", default=True, show_default=True,
              help="Also measure the hot code span from perf-sampled instruction addresses.")
@click.option("--counters/--no-counters", default=True, show_default=True,
              help="Count iTLB and L1i misses per dispatch with perf stat where the PMU has them.")
@click.option("--alpha", default=0.05, show_default=True, type=PROBABILITY,
              help="Family-wise error rate (Holm across sizes).")
@click.option("--min-effect", default=0.03, show_default=True, type=Fraction(0.0, 1.0, inclusive=True),
              help="Smallest gain from 2 MiB pages that counts (0.03 = 3 %).")
@click.option("--allow-system-changes", is_flag=True,
              help="May switch THP from never to madvise during the scan (restored afterwards).")
@click.option("--seed", default=0, show_default=True, type=Count(0, 2**32),
              help="Seed of the shuffled run order.")
@study_output_options
def command(kind, min_size, max_size, points_per_octave, iters, reps, modes, block_bytes, per_cpu,
            perf_span, counters, alpha, min_effect, allow_system_changes, seed, db_url, json_path):
    """Is the front end (i-cache, iTLB) the bottleneck, and do 2 MiB text pages cure it?

    Generates a program whose hot code grows with n and scans its time per dispatch over code
    sizes with 4 KiB and 2 MiB text pages in shuffled paired rounds. Verdict: a one-sided
    Wilcoxon signed-rank test per size on the per-round 4K/2M ratios, Holm-corrected across sizes,
    with a minimum effect; iTLB and L1i misses per dispatch where the PMU counts them.
    """

    from perflab.report.terminal.frontend import render
    from perflab.studies import frontend

    config = frontend.FrontendConfig(
        kind=kind, min_bytes=min_size, max_bytes=max_size, points_per_octave=points_per_octave,
        iters=iters, reps=reps, modes=tuple(m.strip().lower() for m in modes.split(",") if m.strip()),
        block_bytes=block_bytes, per_cpu=tuple(per_cpu) if per_cpu else None, perf_span=perf_span,
        counters=counters, alpha=alpha,
        min_effect=min_effect, allow_system_changes=allow_system_changes, seed=seed,
    )
    run_and_render(frontend, config, make_console(stderr=json_path == "-"), render, db_url, json_path)
