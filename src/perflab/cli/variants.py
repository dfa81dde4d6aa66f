"""`perflab variants`: parse options into a VariantsConfig and run the study."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

import click

from perflab.cli.common import json_option, store_option, target_options
from perflab.errors import PerflabError


def _toml_variants(config_path: str | None) -> dict[str, str]:
    """``[variants]`` of perflab.toml: NAME = "FLAGS"."""
    path = Path(config_path) if config_path else Path("perflab.toml")
    if not path.exists():
        if config_path:
            raise PerflabError(f"config file {config_path} not found: give an existing perflab.toml")
        return {}
    import tomllib

    try:
        data = tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as exc:
        raise PerflabError(f"{path}: invalid TOML: {exc}") from None
    table = data.get("variants", {})
    if not isinstance(table, dict) or not all(isinstance(v, str) for v in table.values()):
        raise PerflabError(f'{path}: [variants] must map names to flag strings, e.g. lto = "-O2 -flto"')
    return table


def _target(workload_name, command_args, shell, config_path, sources, events, static_mb):
    """BuildTarget + Workload for minihlt, a perflab.toml workload with a build, or --source."""
    from perflab.model import Workload
    from perflab.studies.variant_build import BuildTarget

    if sources:
        if not command_args:
            command_args = ("{exe}",)
        srcs = tuple(Path(s).resolve() for s in sources)
        lang = "c" if all(s.suffix == ".c" for s in srcs) else "c++"
        name = srcs[0].stem
        argv = tuple(command_args)
        if "{exe}" not in argv:
            argv = ("{exe}", *argv)
        return BuildTarget(name, srcs, lang, ldflags=("-lm",)), Workload(name=name, argv=argv, shell=shell)
    if workload_name == "minihlt":
        return _minihlt_target(events, static_mb)
    from perflab.cli.common import resolve_target

    wl = resolve_target(workload_name, command_args, shell, config_path)
    if wl.build is None:
        raise PerflabError(
            f"workload '{wl.name}' has no build recipe: variants rebuild the program, so use "
            f"--workload minihlt, a perflab.toml workload with [workload.NAME.build], or "
            f"--source FILE... -- {{exe}} ARGS"
        )
    base = Path(wl.source).parent if wl.source not in ("builtin", "command") else Path.cwd()
    srcs = tuple((base / s).resolve() for s in wl.build.sources)
    target = BuildTarget(wl.build.output or wl.name, srcs, wl.build.language, ldflags=wl.build.ldflags)
    return target, wl


def _minihlt_target(events, static_mb):
    """minihlt's sources and Workload from perflab.kernels.minihlt (engineer D's API)."""
    from perflab.model import Workload
    from perflab.kernels import minihlt
    from perflab.studies.variant_build import BuildTarget

    kwargs = {}
    if events is not None:
        kwargs["events"] = events
    if static_mb is not None:
        kwargs["static_mb"] = static_mb
    srcs = tuple(Path(s) for s in minihlt.sources())
    wl = minihlt.workload(**kwargs)
    headers = tuple(s for s in srcs if s.suffix in (".h", ".hpp"))
    cpp = tuple(s for s in srcs if s.suffix not in (".h", ".hpp"))
    # C++17 for every compiler (clang 14 defaults to C++14)
    return BuildTarget("minihlt", cpp, "c++", cflags=("-std=c++17",), ldflags=("-lm",),
                       extra_inputs=headers), wl


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
@click.option("--rounds", "-r", default=10, show_default=True, help="Interleaved rounds (runs per variant).")
@click.option("--warmup", default=1, show_default=True, help="Unrecorded warm-up rounds.")
@click.option("--seed", default=0, show_default=True, help="Seed of the per-round shuffle and bootstrap.")
@click.option("--events", type=int, help="minihlt: events per run.")
@click.option("--static-mb", type=int, help="minihlt: size of the static detector data.")
@click.option("--train", "train_args", metavar="ARGS",
              help="PGO training arguments (default: the measured ones; minihlt: another seed).")
@click.option("--timeout", type=float, help="Seconds before a run is killed.")
@click.option("--link-order-demo", is_flag=True,
              help="Seed 003's trap: sin() from an archive placed after vs before the object.")
@store_option
@json_option
def command(command_args, shell, workload_name, config_path, variant_specs, matrix, baseline, common_flags,
            sources, rounds, warmup, seed, events, static_mb, train_args, timeout, link_order_demo,
            db_url, json_path):
    """Compare builds of the same code on time, memory and size.

    Every variant is probed (buildable? runnable on this kernel and CPU?), built through the cache,
    and measured interleaved in a seeded shuffled order each round. Each is compared with the
    baseline (-m64 -O2 by default): ratio of medians with a bootstrap CI and a Holm-corrected
    Mann-Whitney verdict, for elapsed time, max RSS and the workload's metric.
    """
    from perflab.studies import variant_build as vbm
    from perflab.studies import variants as vs

    # `--matrix abi=m64,m32 opt=O2,O3`: click gives the second item to the positional arguments
    args = list(command_args)
    matrix = list(matrix)
    while args and vbm.is_matrix_token(args[0]) and matrix:
        matrix.append(args.pop(0))
    command_args = tuple(args)

    if link_order_demo:
        target, wl, variants = vs.linkorder_demo()
        baseline = baseline or "objects-first"
    else:
        target, wl = _target(workload_name, command_args, shell, config_path, sources, events, static_mb)
        variants = [vbm.parse_variant(f"{k}={v}") for k, v in _toml_variants(config_path).items()]
        variants += [vbm.parse_variant(s) for s in variant_specs]
        variants += vbm.expand_matrix(matrix)
        if not variants:
            raise PerflabError("no variants: give --variant NAME='FLAGS', --matrix AXIS=V1,V2 or "
                               "[variants] in perflab.toml")
        variants = vs.with_common_flags(variants, shlex.split(common_flags))
    train = ()
    if train_args is not None:
        train = ("{exe}", *shlex.split(train_args))
    elif wl.name == "minihlt":
        # train on other events than those measured (seed 003: a profile from its own input)
        argv = list(wl.argv[1:])
        train = ("{exe}", *argv, "--seed", "12345")
    config = vs.VariantsConfig(target=target, workload=wl, variants=tuple(variants), baseline=baseline,
                               rounds=rounds, warmup=warmup, seed=seed, train_argv=train, timeout=timeout)

    from rich.console import Console

    from perflab.measure.executor import default_executor
    from perflab.store import open_store

    console = Console(stderr=True)
    store = open_store(db_url)
    result = vs.run_variants(config, default_executor(), store, console=console)
    vs.print_table(result, Console())
    console.print(f"stored as campaign {result.campaign_id} in {store.display}")
    if json_path:
        text = json.dumps(result.as_dict(), indent=2, default=str)
        if json_path == "-":
            sys.stdout.write(text + "\n")
        else:
            Path(json_path).write_text(text + "\n")
