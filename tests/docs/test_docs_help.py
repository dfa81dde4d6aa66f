"""The --help of every command that can exit 3 says so: the gate's UNSURE (run and compare with
--baseline) and a fleet task that finished into its shard. Which commands can is read from the
code (a cli module that gates, or raises an error whose exit_code is 3), not listed by hand."""

from __future__ import annotations

import re

import click

from perflab.cli import COMMANDS, cli
from perflab.studies.gate.result import EXIT_INCONCLUSIVE
from tests.docs_pages import ROOT

CLI = ROOT / "src" / "perflab" / "cli"


def _gates(name: str) -> bool:
    """The command's module gates a campaign (exit_for, RunGate) and so can exit UNSURE."""
    path = CLI / f"{name}.py"
    return path.is_file() and bool(re.search(r"\b(?:exit_for|RunGate)\(", path.read_text()))


def _help(cmd: click.Command, name: str) -> str:
    ctx = click.Context(cmd, info_name=name, terminal_width=1000)
    return re.sub(r"\s+", " ", cmd.get_help(ctx))


def _says_exit_3(text: str) -> bool:
    return bool(re.search(rf"\bexits? (?:status )?{EXIT_INCONCLUSIVE}\b|\b{EXIT_INCONCLUSIVE} (?:UNSURE|when)", text))


def test_commands_that_gate_say_they_can_exit_3():
    gating = [n for n in COMMANDS if _gates(n)]
    assert {"run", "compare"} <= set(gating), gating
    ctx = click.Context(cli, info_name="perflab")
    bad = [n for n in gating if not _says_exit_3(_help(cli.get_command(ctx, n), n))]
    assert not bad, f"--help of {bad} never says the command exits {EXIT_INCONCLUSIVE} (UNSURE)"


def test_fleet_submit_says_a_task_can_exit_3():
    from perflab.store.failover import StoredInShard

    assert StoredInShard.exit_code == 3
    ctx = click.Context(cli, info_name="perflab")
    fleet = cli.get_command(ctx, "fleet")
    assert _says_exit_3(_help(fleet.get_command(ctx, "submit"), "submit"))


def test_the_exit_3_check_can_fail():
    assert not _says_exit_3("exit 1 on a regression")
    assert _says_exit_3("exit 1 on a regression, 3 when the runs cannot tell")
    assert _says_exit_3("finishes into its shard and exits 3")
