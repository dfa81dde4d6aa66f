"""`perflab variants`: map options to a VariantsConfig, run the study, render it, write --json."""

from __future__ import annotations

import os
import re
import shlex
from dataclasses import replace
from pathlib import Path

import click

from perflab.cli.common import (
    check_metrics, emit_json, energy_option, make_console, open_energy, resolve_target, save_baseline,
    study_output_options, target_options,
)
from perflab.cli.options import Count, Duration, tune_options, tuned_study, default_of, percent_default
from perflab.errors import PerflabError
from perflab.kernels import minihlt
from perflab.kernels.buildsys import DEFAULT_MAKE, check_template
from perflab.kernels.linkorder import linkorder_demo
from perflab.kernels.variants import (
    BuildTarget, expand_matrix, is_matrix_token, parse_variant, with_common_flags,
)
from perflab.measure.executor import default_executor
from perflab.measure.metrics import compile_patterns
from perflab.model import Workload
from perflab.report.terminal.variants import render
from perflab.store import open_store
from perflab.studies import run_study
from perflab.studies.variants import study

_TOML_KEYS = ("build", "src", "exe")  # [variants] keys that are not variants


def _toml_variants(config_path: str | None) -> tuple[dict[str, str], dict[str, str], Path]:
    """``[variants]`` of perflab.toml: NAME = "FLAGS", plus build / src / exe for a template build."""
    path = Path(config_path) if config_path else Path("perflab.toml")
    if not path.exists():
        if config_path:
            raise PerflabError(f"config file {config_path} not found: give an existing perflab.toml")
        return {}, {}, path
    import tomllib

    try:
        data = tomllib.loads(path.read_text())
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise PerflabError(f"{path}: invalid TOML: {exc}") from None
    table = data.get("variants", {})
    if not isinstance(table, dict) or not all(isinstance(v, str) for v in table.values()):
        raise PerflabError(f'{path}: [variants] must map names to flag strings, e.g. lto = "-O2 -flto"')
    build = {k: table.pop(k) for k in _TOML_KEYS if k in table}
    return table, build, path


def _minihlt(events, static_mb, extra_args) -> Workload:
    kwargs = {k: v for k, v in (("events", events), ("static_mb", static_mb)) if v is not None}
    wl = minihlt.workload(build=False, **kwargs)
    return Workload(name=wl.name, argv=("{exe}", *wl.argv[1:], *extra_args), metrics=wl.metrics,
                    primary_metric=wl.primary_metric, checksum_metric=wl.checksum_metric)


def _command_workload(opts: dict) -> Workload:
    """``-- {exe} ARGS`` with --metric patterns; a metric named by --checksum is checked between builds."""
    if not opts["command_args"]:
        raise PerflabError("nothing to run: give the command after --, with {exe} for the built "
                           "program, e.g. -- {exe} input.dat")
    argv = tuple(opts["command_args"])
    metrics = compile_patterns(opts["metric_regexes"])
    names = {n for m in metrics for n in re.compile(m.regex).groupindex}
    checksum = opts["checksum"] or ("checksum" if "checksum" in names else None)
    if checksum is not None and checksum not in names:
        raise PerflabError(f"--checksum {checksum}: no --metric has a group named {checksum}; add e.g. "
                           f"--metric 'checksum: (?P<{checksum}>\\S+)'")
    name = Path(argv[0]).name if argv[0] != "{exe}" else "program"
    return Workload(name=name, argv=argv if "{exe}" in " ".join(argv) else ("{exe}", *argv),
                    shell=opts["shell"], metrics=metrics, checksum_metric=checksum)


def _target(opts: dict, toml_build: dict[str, str], toml_path: Path) -> tuple[BuildTarget, Workload]:
    """The program to rebuild and how to run it, from --build/--source/--workload and perflab.toml."""
    name, args = opts["workload_name"], tuple(opts["command_args"])
    template = opts["build"] or toml_build.get("build")
    if name is None and template is None and not opts["sources"]:
        raise PerflabError("nothing to build: give --workload minihlt, --source FILE... -- {exe} ARGS, "
                           "or --build TEMPLATE --src DIR --exe PATH -- {exe} ARGS")
    if template is not None:
        src = opts["src"] or (toml_path.parent / toml_build["src"] if "src" in toml_build else None)
        exe = opts["exe"] or toml_build.get("exe")
        if name == "minihlt":
            src, exe = src or minihlt.HERE, exe or "minihlt"
            template = minihlt.MAKE_TEMPLATE if template == "make" else template
            wl = _minihlt(opts["events"], opts["static_mb"], args)
        else:
            wl = resolve_target(name, args, opts["shell"], opts["config_path"], metric=opts["metric"]) if name else _command_workload(opts)
        template = DEFAULT_MAKE if template == "make" else template
        check_template(template)
        if src is None or not Path(src).is_dir():
            raise PerflabError(f"--build needs the project's source directory: --src DIR "
                               f"({src} is not a directory)" if src else "--build needs --src DIR (the project's sources)")
        if not exe:
            raise PerflabError("--build needs --exe PATH: the program's path inside the build directory")
        return BuildTarget(Path(exe).name, template=template, src_dir=Path(src).resolve(), exe=exe), wl
    if opts["sources"]:
        srcs = tuple(Path(s).resolve() for s in opts["sources"])
        lang = "c" if all(s.suffix == ".c" for s in srcs) else "c++"
        wl = _command_workload({**opts, "command_args": args or ("{exe}",)})
        return BuildTarget(srcs[0].stem, srcs, lang, ldflags=("-lm",)), replace(wl, name=srcs[0].stem)
    if name == "minihlt":
        headers = tuple(minihlt.headers())
        # C++17 for every compiler (clang 14 defaults to C++14)
        return BuildTarget("minihlt", tuple(minihlt.cpp_sources()), "c++", cflags=("-std=c++17",),
                           ldflags=("-lm",), extra_inputs=headers), _minihlt(opts["events"], opts["static_mb"], args)
    wl = resolve_target(name, args, opts["shell"], opts["config_path"], metric=opts["metric"])
    if wl.build is None:
        raise PerflabError(
            f"workload '{wl.name}' has no build recipe: variants rebuild the program, so use --workload "
            f"minihlt, a perflab.toml workload with [workload.NAME.build], --build TEMPLATE --src DIR, "
            f"or --source FILE... -- {{exe}} ARGS")
    base = Path(wl.source).parent if wl.source not in ("builtin", "command") else Path.cwd()
    srcs = tuple((base / s).resolve() for s in wl.build.sources)
    target = BuildTarget(wl.build.output or wl.name, srcs, wl.build.language, ldflags=wl.build.ldflags)
    return target, replace(wl, argv=("{exe}", *wl.argv[1:]), build=None)


def _sequential(opts: dict) -> dict:
    """--until-decided and its budget as VariantsConfig fields; a budget without it is an error."""
    from perflab.cli.run import _percent
    from perflab.studies.variants.study import DEFAULT_ROUNDS

    given = [f"--{k.replace('_', '-')}" for k in ("max_runs", "max_time") if opts[k] is not None]
    if not opts["until_decided"]:
        if given:
            raise PerflabError(f"{' and '.join(given)} bound --until-decided: add --until-decided, or drop them")
        return {}
    if opts["rounds"] != DEFAULT_ROUNDS:
        raise PerflabError("--until-decided chooses the rounds itself: drop --rounds, or bound it with --max-runs N")
    if opts["max_runs"] is not None and opts["max_runs"] < opts["min_runs"]:
        raise PerflabError(f"--max-runs {opts['max_runs']} is below --min-runs {opts['min_runs']}: raise --max-runs")
    return dict(until_decided=True, min_effect=_percent(opts["min_effect"], "--min-effect"),
                min_runs=opts["min_runs"], max_runs=opts["max_runs"], max_time=opts["max_time"])


@click.command(name="variants")
@target_options
@click.option("--variant", "-V", "variant_specs", multiple=True, metavar="NAME='FLAGS'",
              help="A named build, e.g. lto='-O2 -flto'; cc=clang picks clang, pgo a two-phase "
                   "profile-guided build, {src} an explicit link order. Repeatable.")
@click.option("--matrix", "-m", "matrix", multiple=True, metavar="AXIS=V1,V2",
              help="Expand axes to their product, e.g. --matrix abi=m64,m32 opt=O2,O3. Axes: abi, opt, "
                   "debug, march, lto, pgo, fastmath, fpcontract, link, cc.")
@click.option("--baseline", metavar="NAME", help="Variant to compare against (default: the -m64 -O2 one).")
@click.option("--cflags", "common_flags", default="", metavar="FLAGS", help="Extra flags for every variant.")
@click.option("--source", "sources", multiple=True, type=click.Path(exists=True, dir_okay=False),
              help="Build these C/C++ files (the command after -- runs {exe}).")
@click.option("--build", "build", metavar="TEMPLATE",
              help="Build with the project's own build system: 'cmake', 'make', or a template such as "
                   "'make -C {src} CC={cc} CFLAGS={cflags} LDFLAGS={ldflags} -j{jobs}'.")
@click.option("--src", "src", type=click.Path(file_okay=False), help="The project's source directory (--build).")
@click.option("--exe", "exe", metavar="PATH", help="The built program's path inside the build directory.")
@click.option("--metric", "metric_regexes", multiple=True, metavar="REGEX",
              help="Named-group regex for a value in the command's output, e.g. 'checksum: (?P<checksum>\\S+)'.")
@click.option("--checksum", metavar="NAME",
              help="The metric holding the program's result checksum (default: a metric named checksum).")
@click.option("--jobs", "-j", type=Count(0, 1024), default=default_of(study.VariantsConfig, "jobs"), help="Parallel build jobs (0: one per CPU).")
@click.option("--rounds", "-r", type=Count(2, 100_000), default=study.DEFAULT_ROUNDS, show_default=True,
              help="Interleaved rounds (runs per variant).")
@click.option("--until-decided", is_flag=True,
              help="Run rounds until each build is shown faster or slower than the baseline by "
                   "--min-effect or more, or shown not to (5% over all looks and builds), or "
                   "--max-runs (default 300) / --max-time runs out; replaces --rounds.")
@click.option("--min-effect", default=percent_default(study.VariantsConfig, "min_effect"), show_default=True, metavar="PCT",
              help="With --until-decided: the smallest change called, and the margin ruled out.")
@click.option("--min-runs", type=Count(2, 100_000), default=default_of(study.VariantsConfig, "min_runs"), show_default=True,
              help="With --until-decided: the rounds of the first look.")
@click.option("--max-runs", type=Count(2, 100_000), help="With --until-decided: the most rounds (default 300).")
@click.option("--max-time", type=Duration(), metavar="S",
              help="With --until-decided: the most seconds of rounds (at the first round's pace).")
@click.option("--warmup", type=Count(0, 1000), default=default_of(study.VariantsConfig, "warmup"), show_default=True, help="Unrecorded warm-up rounds.")
@click.option("--seed", type=int, default=default_of(study.VariantsConfig, "seed"), show_default=True, help="Seed of the per-round shuffle.")
@click.option("--events", type=Count(1, 10**12), help="minihlt: events per run.")
@click.option("--static-mb", type=Count(1, 1 << 20), help="minihlt: size of the static detector data.")
@click.option("--train", "train_args", metavar="ARGS",
              help="PGO training command ({exe} for the program), run in this directory "
                   "(default: the measured command; minihlt: other events, another --seed).")
@click.option("--timeout", type=Duration(), help="Seconds before a run is killed.")
@click.option("--link-order-demo", is_flag=True,
              help="The link-order trap: sin() from a static archive placed after vs before the object that calls it.")
@click.option("--instrument", type=click.Choice(["time", "cachegrind"]), default="time", show_default=True,
              help="cachegrind: also run each variant twice under Valgrind and rank the variants by "
                   "simulated instructions and estimated cycles beside their time.")
@click.option("--cache-model", "cache_model", metavar="'I1=S,W,L D1=S,W,L LL=S,W,L'",
              help="The caches --instrument cachegrind simulates (default: this machine's, from sysfs).")
@energy_option
@study_output_options
@tune_options
def command(**opts):
    """Compare builds of the same code on time, memory and result.

    Every variant is probed (buildable? runnable on this kernel and CPU?), built through the cache,
    and measured interleaved in a seeded shuffled order each round. Each is compared with the
    baseline (-m64 -O2 by default) round by round: Wilcoxon signed-rank, Holm-corrected, with the
    ratio's distribution-free CI, for elapsed time, max RSS and the workload's metric. A variant
    whose checksum differs from the baseline's is a "different result", never the fastest.
    """
    # `--matrix abi=m64,m32 opt=O2,O3`: click gives the second item to the positional arguments
    args, matrix = list(opts["command_args"]), list(opts["matrix"])
    while args and is_matrix_token(args[0]) and matrix:
        matrix.append(args.pop(0))
    opts["command_args"] = tuple(args)
    toml_variants, toml_build, toml_path = _toml_variants(opts["config_path"])
    baseline = opts["baseline"]
    if opts["link_order_demo"]:
        target, wl, variants = linkorder_demo()
        baseline = baseline or "objects-first"
    else:
        target, wl = _target(opts, toml_build, toml_path)
        # minihlt and --source workloads are made here, not by resolve_target: the command line's
        # --primary-metric / direction apply to them too (a second apply changes nothing).
        wl = opts["metric"].apply(wl)
        variants = [parse_variant(f"{k}={v}") for k, v in toml_variants.items()]
        variants += [parse_variant(s) for s in opts["variant_specs"]] + expand_matrix(matrix)
        if not variants:
            raise PerflabError("no variants: give --variant NAME='FLAGS', --matrix AXIS=V1,V2 or "
                               "[variants] in perflab.toml")
        variants = with_common_flags(variants, shlex.split(opts["common_flags"]))
    if opts["train_args"] is not None:
        train = tuple(shlex.split(opts["train_args"]))
    elif wl.name == "minihlt":
        # train on other events than those measured (seed 003: a profile from its own input)
        train = (*wl.argv, "--seed", "12345")
    else:
        train = ()
    config = study.VariantsConfig(
        target=target, workload=wl, variants=tuple(variants), baseline=baseline, rounds=opts["rounds"],
        warmup=opts["warmup"], seed=opts["seed"], train_argv=train, train_cwd=os.getcwd(),
        timeout=opts["timeout"], jobs=opts["jobs"], **_sequential(opts))
    from perflab.cli.common import instrument_wrap
    from perflab.cli.run import _cache_model

    model = _cache_model(opts["instrument"], opts["cache_model"], False)
    if model is not None:
        config = replace(config, instrument=opts["instrument"], cache_model=model.text())
    study.plan(config)  # bad designs fail here, before anything is built

    err = make_console(stderr=True)
    out = make_console(stderr=opts["json_path"] == "-")  # stdout is the JSON's then
    meter = open_energy(opts["energy_source"], out)  # beside the result, as instances and run say it
    from perflab.measure import metrics

    metrics.reset_ledger()
    with tuned_study(opts["tune"], config, lambda text: err.print(text, highlight=False, markup=False)), \
            open_store(opts["db_url"]) as store, default_executor() as native, \
            instrument_wrap(model, err)(native) as executor:
        result = run_study(study, config, store, executor, energy=meter,
                           progress=lambda m: err.print(m, soft_wrap=True))
        check_metrics(config, out)
        render(result, out)
        err.print(f"stored as campaign {result.campaign_id} in {store.display}")
        save_baseline(store, result.campaign_id)
    if opts["json_path"]:
        emit_json(opts["json_path"], result.as_dict(), study.NAME)
