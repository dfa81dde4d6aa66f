"""perflab micro: single operations timed per ABI (seeds 000, 002, 003)."""

from __future__ import annotations

import click

from perflab.cli.common import make_console, run_and_render, study_output_options
from perflab.cli.options import COUNT, SIZE, Count, Positive, tune_options, default_of
from perflab.studies.micro.study import MicroConfig


@click.command(name="micro")
@click.option("--bench", "benches", multiple=True, metavar="NAME",
              help="Benchmark to run (repeatable; default: all but shm). Names: getpid, call, strcpy, "
                   "mul64, sin, log, memcpy, write, fprintf, fprintf_fflush, write_osync, malloc_small, "
                   "malloc_large, shm.")
@click.option("--abi", "abis", default="m64,m32,mx32", show_default=True,
              help="ABIs to build and compare (those this machine cannot run are skipped with a reason).")
@click.option("--reps", default=default_of(MicroConfig, "reps"), show_default=True, type=COUNT,
              help="Rounds; each runs every (bench, ABI) once, shuffled.")
@click.option("--scale", default=default_of(MicroConfig, "scale"), show_default=True, type=Positive(),
              help="Multiply every benchmark's iteration count.")
@click.option("--io-dir", default=default_of(MicroConfig, "io_dir"), show_default=True, type=click.Path(file_okay=False),
              help="Directory for the I/O benchmarks' temporary file (O_SYNC is only meaningful on a disk).")
@click.option("--shm", type=click.Choice(["auto", "on", "off"]), default=default_of(MicroConfig, "shm"), show_default=True,
              help="A 32-bit process touching more than 4 GiB through SysV shm segments; auto: only when "
                   "memory is plentiful.")
@click.option("--with-shm", is_flag=True, help="Same as --shm on.")
@click.option("--shm-total", default="5G", show_default=True, type=SIZE,
              help="Bytes the shm benchmark touches.")
@click.option("--seed", default=default_of(MicroConfig, "seed"), show_default=True, type=Count(0, 2**32),
              help="Seed of the shuffled run order.")
@study_output_options
@tune_options
def command(benches, abis, reps, scale, io_dir, shm, with_shm, shm_total, seed, db_url, json_path, tune):
    """What do single operations cost per ABI (-m64, -m32, -mx32)?

    ns per operation (cycles where counters exist) with an order-statistic CI over shuffled rounds
    (its level shown), each ABI's percentage difference from -m64 with its CI and a Holm-corrected
    p-value, and the size at which malloc switches from the heap to mmap, per ABI.
    """

    from perflab.report.terminal.micro import render
    from perflab.studies.micro import study as micro

    config = micro.MicroConfig(
        benches=tuple(benches) or micro.DEFAULT_BENCHES,
        abis=tuple(a.strip().lstrip("-") for a in abis.split(",") if a.strip()),
        reps=reps, scale=scale, io_dir=io_dir, shm="on" if with_shm else shm, shm_total=shm_total, seed=seed,
    )
    run_and_render(micro, config, make_console(stderr=json_path == "-"), render, db_url, json_path, tune=tune)
