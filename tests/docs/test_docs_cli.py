"""Every perflab command line in README.md and docs/ parses against the real CLI: the options
exist and their values are accepted, by click's own parser on the real command objects (nothing
runs). A line the page shows failing with 'perflab: error:' may fail; a fenced block marked
<!-- illustrative --> is skipped."""

from __future__ import annotations

import os
import re

import click
import pytest

from perflab.cli import cli
from perflab.errors import PerflabError
from tests.docs_pages import commands


def parse(argv: list[str]) -> None:
    """Parse argv as `perflab ARGV` would, down the groups to the leaf command, running nothing."""
    cmd: click.Command = cli
    name, parent = "perflab", None
    args = list(argv)
    while True:
        after = args[args.index("--") + 1:] if "--" in args else []  # click consumes args
        try:
            ctx = cmd.make_context(name, list(args), parent=parent)
        except click.exceptions.Exit:  # --help, --version: eager options that only print
            return
        except click.BadParameter as exc:
            # A file the page names (PLATFORMS.toml, a bundle) need not exist here.
            if isinstance(getattr(exc.param, "type", None), click.Path) and "does not exist" in str(exc):
                return
            # A value the shell supplies ($!, $(pgrep ...)): its type cannot be checked on the page.
            if re.search(r"'(\$|SUBST)", exc.format_message()):
                return
            raise
        if not isinstance(cmd, click.Group):
            _no_stray_options(cmd, ctx, after)
            return
        rest = [*getattr(ctx, "_protected_args", []), *ctx.args]
        if not rest:
            return
        name, sub, args = cmd.resolve_command(ctx, rest)
        if sub is None:
            raise click.UsageError(f"no such command {name!r}")
        cmd, parent = sub, ctx


def _no_stray_options(cmd: click.Command, ctx: click.Context, after: list[str]) -> None:
    """Commands that take a workload's command line pass unknown options on to it
    (ignore_unknown_options); before '--' such a word is a misspelt perflab option."""
    for param in cmd.params:
        if isinstance(param, click.Argument) and param.nargs == -1:
            value = list(ctx.params.get(param.name) or ())
            before = value[: len(value) - len(after)] if after else value
            stray = [w for w in before if isinstance(w, str) and w.startswith("-") and w != "-"]
            if stray:
                raise click.NoSuchOption(stray[0], ctx=ctx)


ALL = commands()


@pytest.fixture(scope="module", autouse=True)
def _in_a_scratch_directory(tmp_path_factory):
    """Parsing converts the values as perflab would: `lab --out DIR` (and its default,
    ./perflab-lab) is created and removed again to check it is writable, which in the checkout
    raced other tests' check that nothing is written there."""
    here = os.getcwd()
    os.chdir(tmp_path_factory.mktemp("parse"))
    yield
    os.chdir(here)


def test_the_pages_show_commands():
    # The extraction itself: a page set with no perflab line would make every check below vacuous.
    assert len(ALL) > 150
    assert any(c.argv[:1] == ["cores"] for c in ALL)


def _placeholder(word: str) -> bool:
    """A synopsis's placeholder: [ID], CAMPAIGN..., N, URL, STUDY."""
    return bool(re.search(r"[\[\]]|\.\.\.", word) or re.fullmatch(r"[A-Z][A-Z_]*", word))


def check_synopsis(argv: list[str]) -> None:
    """A synopsis (`perflab results [ID] [--study S]`): its subcommands and options exist."""
    cmd: click.Command = cli
    ctx = click.Context(cli, info_name="perflab")
    words = [w.strip("[]") for w in argv]
    while isinstance(cmd, click.Group) and words and not words[0].startswith("-") and not _placeholder(words[0]):
        sub = cmd.get_command(ctx, words[0])
        if sub is None:
            raise click.UsageError(f"no such command {words[0]!r}")
        cmd, words = sub, words[1:]
        ctx = click.Context(cmd, info_name=cmd.name, parent=ctx)
    if isinstance(cmd, click.Group):  # `perflab STUDY ...`: no command to hold the options to
        return
    known = {opt for p in cmd.params for opt in (*p.opts, *p.secondary_opts)}
    for w in words:
        if w.startswith("-") and w.split("=")[0] not in known and w != "--":
            raise click.NoSuchOption(w, ctx=ctx)


# What a code span in the prose may leave out: it names a command or an option in passing.
_PASSING = ("Missing argument", "Missing option", "requires an argument", "Missing command", "Usage:")


@pytest.mark.parametrize("command", ALL, ids=[c.where for c in ALL])
def test_command_parses(command):
    try:
        if command.inline and any(_placeholder(w) for w in command.argv):
            check_synopsis(command.argv)
        else:
            parse(command.argv)
    except (click.ClickException, PerflabError) as exc:
        if command.shows_error:
            return
        if command.inline and isinstance(exc, click.ClickException) and (
                isinstance(exc, click.MissingParameter) or any(p in exc.format_message() for p in _PASSING)
                or type(exc).__name__ == "NoArgsIsHelpError"):
            return
        msg = exc.format_message() if isinstance(exc, click.ClickException) else str(exc)
        pytest.fail(f"{command.where}: `perflab {' '.join(command.argv)}` does not parse: {msg}")


def test_the_parser_rejects_what_perflab_rejects():
    # The check can fail: an unknown option, a bad value and an unknown subcommand are caught.
    for argv in (["cores", "--no-such-option"], ["cores", "--rounds", "1"], ["nosuch"],
                 ["fleet", "submitt", "farm"], ["run", "--runs", "many"]):
        with pytest.raises((click.ClickException, PerflabError)):
            parse(argv)
    parse(["cores", "-w", "minihlt-quick", "--rounds", "8"])
    parse(["fleet", "submit", "farm", "--nodes", "3", "--", "run", "-w", "minihlt-quick"])


def test_shell_lines_are_taken_apart_as_the_shell_would():
    from tests.docs_pages import _simple_commands

    assert _simple_commands("perflab run --runs 20 > /dev/null 2>&1 | tail -1") == [
        ["perflab", "run", "--runs", "20"], ["tail", "-1"]]
    assert _simple_commands("$(perflab workload path minihlt) --events 1 > job.log &") == [
        ["SUBST", "--events", "1"], ["perflab", "workload", "path", "minihlt"]]
    assert _simple_commands("FPS=100 perflab run -w enc --runs 6; echo $?  # comment") == [
        ["FPS=100", "perflab", "run", "-w", "enc", "--runs", "6"], ["echo", "$?"]]
