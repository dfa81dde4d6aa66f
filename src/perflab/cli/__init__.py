"""Command-line entry point: a click group whose subcommands are imported only when used.

Each subcommand lives in its own module ``perflab.cli.<name>`` exposing a click command named
``command``, so ``perflab --help`` imports none of them (and none of numpy, scipy, matplotlib).
"""

from __future__ import annotations

import sys

import click

from perflab import __version__
from perflab.errors import PerflabError

# name -> (module, one-line help). The help is duplicated here so that `perflab --help` need not
# import every subcommand module.
COMMANDS: dict[str, tuple[str, str]] = {
    "run": ("perflab.cli.run", "Time one or more commands, hyperfine-style, with sound statistics."),
    "machine": ("perflab.cli.machine", "Show this machine's topology and metadata; tune it for benchmarking, reset it."),
    "workload": ("perflab.cli.workload", "List, build and locate named workloads."),
    "cores": ("perflab.cli.cores", "Find slow CPUs by pinning the workload to each in turn."),
    "instances": ("perflab.cli.instances", "Scan throughput against the number of concurrent copies."),
    "variants": ("perflab.cli.variants", "Compare builds of the same code on time, memory and size."),
    "profile": ("perflab.cli.profile", "Profile a window of a run (one event) and diff profiles."),
    "frontend": ("perflab.cli.frontend", "Scan runtime against hot code size, 4 KiB vs 2 MiB text pages."),
    "micro": ("perflab.cli.micro", "Microbenchmarks of single operations per ABI."),
    "footprint": ("perflab.cli.footprint", "List the files a workload really uses (strace)."),
    "bundle": ("perflab.cli.bundle", "Pack a workload's needed files into a standalone bundle."),
    "score": ("perflab.cli.score", "Score this machine on a HEPscore-style suite, with intervals; export it."),
    "import": ("perflab.cli.imports", "Import a HEPscore result or a HEP Benchmark Suite report as a score."),
    "cost": ("perflab.cli.cost", "Choose a platform for a target event rate inside a power envelope."),
    "lab": ("perflab.cli.lab", "Run the default studies on a workload and write one report."),
    "report": ("perflab.cli.report", "Write an HTML or Markdown report of stored campaigns."),
    "compare": ("perflab.cli.compare", "Compare two campaigns side by side, or gate one against a baseline."),
    "baseline": ("perflab.cli.baseline", "Name stored campaigns as baselines for the regression gate."),
    "results": ("perflab.cli.results", "List stored campaigns and their measurements."),
    "resume": ("perflab.cli.resume", "Finish an interrupted campaign without repeating stored runs."),
    "fleet": ("perflab.cli.fleet", "Run one study on every node of a farm through Slurm, into one store."),
}


class LazyGroup(click.Group):
    """A group that imports a subcommand's module only when that subcommand runs."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        entry = COMMANDS.get(cmd_name)
        if entry is None:
            return None
        import importlib

        return importlib.import_module(entry[0]).command

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [(name, help_) for name, (_, help_) in COMMANDS.items()]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="perflab")
def cli() -> None:
    """perflab: a performance lab for CPU-bound throughput workloads.

    Every study measures on this machine, keeps every measurement in a results store as it
    completes (SQLite file perflab.db by default, or --db URL), and prints a verdict.
    """


def main(argv: list[str] | None = None) -> None:
    """Run the CLI; PerflabError becomes one line on stderr and exit status 2."""
    args = sys.argv[1:] if argv is None else argv
    if args[:1] != ["machine"]:  # `perflab machine` shows the tuning and reset undoes it
        from perflab.platform.tune.state import startup_warning

        line = startup_warning()
        if line:
            click.echo(line, err=True)
    try:
        cli.main(args=argv, prog_name="perflab", standalone_mode=False)
    except PerflabError as exc:
        click.echo(f"perflab: error: {exc}", err=True)
        sys.exit(exc.exit_code)
    except click.exceptions.Abort as exc:
        click.echo(_interrupted(exc.__cause__), err=True)
        sys.exit(130)
    except click.UsageError as exc:
        # One line with a hint, not click's usage block: scripts and people read the first line.
        cmd = exc.ctx.command_path if exc.ctx is not None else "perflab"
        click.echo(f"perflab: error: {exc.format_message()} (see '{cmd} --help')", err=True)
        sys.exit(2)
    except click.ClickException as exc:
        click.echo(f"perflab: error: {exc.format_message()}", err=True)
        sys.exit(exc.exit_code if exc.exit_code != 1 else 2)
    except KeyboardInterrupt as exc:
        click.echo(_interrupted(exc), err=True)
        sys.exit(130)
    except BrokenPipeError:
        sys.exit(0)


def _interrupted(exc: BaseException | None) -> str:
    """The last line after Ctrl-C or SIGTERM: what is kept, and how to finish."""
    campaign = getattr(exc, "campaign_id", None)
    if campaign is None:
        return "perflab: interrupted"
    return (f"perflab: interrupted; campaign {campaign} keeps every finished run: finish it with "
            f"'perflab resume {campaign}'")
