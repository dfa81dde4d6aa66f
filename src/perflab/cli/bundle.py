"""`perflab bundle -o OUT.tar.gz (--workload NAME | -- CMD)` and `perflab bundle verify OUT.tar.gz`."""

from __future__ import annotations

import sys

import click

from perflab.cli.common import emit_json, json_option, make_console, resolve_target, store_option, target_options
from perflab.cli.options import DURATION, SIZE, Cpu, OutputPath, default_of
from perflab.studies.bundle.study import BundleConfig
from perflab.studies.bundle.verify import VerifyConfig


@click.command(name="verify")
@click.argument("archive", type=click.Path(dir_okay=False))
@click.option("--dir", "workdir", metavar="DIR", help="Unpack here (must be empty or absent); kept afterwards.")
@click.option("--isolation", type=click.Choice(["bwrap", "unshare", "chroot"]),
              help="Force the isolation run.sh uses (default: the first that works).")
@click.option("--keep", is_flag=True, help="Keep the temporary unpacked directory.")
@click.option("--timeout", type=DURATION, default=default_of(VerifyConfig, "timeout"), show_default=True,
              help="Seconds per run.")
@store_option
@json_option
def verify(archive, workdir, isolation, keep, timeout, db_url, json_path) -> None:
    """Unpack a bundle into a fresh directory, run it isolated, compare with a normal run."""

    from perflab.measure.executor import default_executor
    from perflab.report.terminal.bundle import render_verify
    from perflab.store import open_store
    from perflab.studies import run_study
    from perflab.studies.bundle import verify as study

    config = VerifyConfig(archive=archive, workdir=workdir, isolation=isolation, timeout=timeout, keep=keep)
    console = make_console(highlight=False, stderr=json_path == "-")
    with open_store(db_url) as store, default_executor() as executor:
        result = run_study(study, config, store, executor)
    render_verify(result, console)
    if json_path:
        emit_json(json_path, result.as_dict(), "bundle-verify")
    if not result.same:
        sys.exit(1)


class _BundleCommand(click.Command):
    """`perflab bundle ...` packs; `perflab bundle verify ...` is handed to the verify command."""

    def make_context(self, info_name, args, parent=None, **extra):
        if args and args[0] == "verify":
            return verify.make_context(f"{info_name} verify", list(args[1:]), parent=parent, **extra)
        return super().make_context(info_name, args, parent=parent, **extra)


@click.command(name="bundle", cls=_BundleCommand, context_settings={"ignore_unknown_options": True},
               epilog="Check a bundle with: perflab bundle verify OUT.tar.gz [--isolation bwrap|unshare|chroot]")
@target_options
@click.option("--output", "-o", required=True, metavar="OUT.tar.gz", type=OutputPath(dash=False),
              help="The bundle to write.")
@click.option("--budget", type=SIZE, metavar="SIZE", help="Fail if the unpacked bundle is larger (e.g. 1GiB).")
@click.option("--include", multiple=True, metavar="PATH", help="Also carry this file or directory (repeatable).")
@click.option("--cpu", type=Cpu(), metavar="N", help="CPU that strace and the workload share.")
@click.option("--no-seccomp", is_flag=True, help="Do not use strace --seccomp-bpf.")
@click.option("--timeout", type=DURATION, default=default_of(BundleConfig, "timeout"), show_default=True,
              help="Seconds per run.")
@store_option
@json_option
def command(workload_name, command_args, shell, config_path, output, budget, include, cpu, no_seccomp,
            timeout, db_url, json_path, metric) -> None:
    """Pack the files a workload really uses (strace) with a one-touch run.sh into OUT.tar.gz."""

    from perflab.measure.executor import default_executor
    from perflab.report.terminal.bundle import render
    from perflab.store import open_store
    from perflab.studies import run_study
    from perflab.studies.bundle import study

    workload = resolve_target(workload_name, command_args, shell, config_path, metric=metric)
    config = BundleConfig(workload=workload, output=output, budget_bytes=budget, cpu=cpu,
                                seccomp=not no_seccomp, include=tuple(include), timeout=timeout)
    console = make_console(highlight=False, stderr=json_path == "-")
    with open_store(db_url) as store, default_executor() as executor:
        console.print(f"results store: {store.display}")
        result = run_study(study, config, store, executor)
    render(result, console)
    if json_path:
        emit_json(json_path, result.as_dict(), "bundle")
