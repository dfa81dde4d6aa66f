"""The regression gate at the CLI edge, shared by `perflab compare --baseline` and `perflab run`.

Options become a typed GateConfig here; the gate itself is perflab.studies.gate.study. Exit status:
0 pass, 1 a gated measure changed beyond its threshold and significantly, 2 bad input,
3 inconclusive: too few runs to have seen a change at the threshold, or two speeds that
cannot be compared like with like (studies/gate/result.py EXIT_*).
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any, Callable

import click

from perflab.errors import PerflabError

if TYPE_CHECKING:
    from perflab.studies.gate.study import GateConfig, GateResult, Threshold

# The gate (studies/gate/study.py, the compare machinery under it) loads only when a gate is asked
# for: `perflab run` without --baseline starts about 8 ms sooner. The help's default is the
# gate's DEFAULT_FAIL_IF (tests/cli/test_gate.py checks that they agree).
DEFAULT_FAIL_IF_HELP = "median>+5%"
FAIL_IF_HELP = ("Fail (exit 1) when MEASURE changed beyond the threshold AND significantly, "
                "e.g. 'median>+3%', 'rss>+10MiB', 'events_per_s<-2%' (repeatable; default "
                f"'{DEFAULT_FAIL_IF_HELP}'); exit 3 (UNSURE) when the runs could not have seen a "
                "change at the threshold.")
# The gate's exit statuses, told in the --help of every command that gates (tests/docs/test_docs_facts.py).
GATE_EXITS_HELP = ("Exit status with --baseline: 0 pass, 1 regression (FAIL), 2 bad input, 3 UNSURE "
                   "(the runs could not have seen a change at the threshold: more runs, or a quieter machine).")


def fail_if_option(f: Callable) -> Callable:
    return click.option("--fail-if", "fail_if", multiple=True, metavar="EXPR", help=FAIL_IF_HELP)(f)


def cross_machine_option(f: Callable) -> Callable:
    return click.option("--cross-machine", is_flag=True,
                        help="Gate even when the baseline was measured on another machine.")(f)


def junit_option(f: Callable) -> Callable:
    return click.option("--junit", "junit_path", metavar="PATH", type=click.Path(dir_okay=False),
                        help="Write the gate's verdict as JUnit XML (GitLab, Jenkins).")(f)


def thresholds_of(fail_if: tuple[str, ...]) -> tuple[Threshold, ...]:
    """Parse every --fail-if (or the default), so bad input stops before anything runs."""
    from perflab.studies.gate.study import DEFAULT_FAIL_IF, parse_threshold

    return tuple(parse_threshold(t) for t in (fail_if or (DEFAULT_FAIL_IF,)))


def precheck(store: Any, baseline: str, thresholds: tuple[Threshold, ...], study: str | None = None) -> None:
    """Before measuring: the baseline exists, is of this study, and has the gated measures."""
    from perflab.studies.gate.study import baseline_measures, check_measures

    camp, have, primary = baseline_measures(store, baseline)
    if study is not None and camp.study != study:
        raise PerflabError(f"baseline '{baseline}' is a '{camp.study}' campaign (campaign {camp.id}): "
                           f"gate a '{study}' run against a baseline of a '{study}' campaign")
    check_measures(thresholds, have, primary)


def write_output(path: str, text: str, what: str) -> None:
    if path == "-":
        click.echo(text, nl=False)
        return
    try:
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(text)
    except OSError as exc:
        raise PerflabError(f"cannot write {what} to {path}: {exc.strerror}; choose another path") from None
    click.echo(f"perflab: wrote {what} to {path}", err=True)


def run_gate(store: Any, config: GateConfig, junit_path: str | None = None,
             markdown_path: str | None = None, json_path: str | None = None,
             html_path: str | None = None, stdout_taken: bool = False) -> GateResult:
    """Evaluate the gate, print one line per compared measure, write the requested files."""
    # The writers load only when a gate runs: `perflab run` without --baseline starts sooner.
    from perflab.report import gate as gate_report
    from perflab.report.html.compare import compare_html
    from perflab.studies.gate.study import evaluate

    result = evaluate(config, store)
    for w in result.warnings:
        click.echo(f"perflab: warning: {w}", err=True)
    # When a file goes to stdout (PATH '-'), the verdict lines go to stderr.
    quiet = stdout_taken or "-" in (json_path, markdown_path, junit_path)
    out = sys.stderr if quiet else sys.stdout
    for ln in result.lines:
        click.echo(ln.text(result.family), file=out)
    click.echo(result.summary, file=out)
    if junit_path:
        write_output(junit_path, gate_report.to_junit(result), "JUnit XML")
    if markdown_path:
        write_output(markdown_path, gate_report.to_markdown(result), "Markdown")
    if json_path:
        write_output(json_path, gate_report.to_json(result), "JSON")
    if html_path:
        camps = [store.campaign(result.compare.a), store.campaign(result.compare.b)]
        write_output(html_path, compare_html(result.compare, camps, result.hosts), "HTML")
    return result


def exit_for(result: GateResult) -> None:
    """Exit 1 when the gate failed, 3 when it could not tell (distinct from bad input's 2)."""
    if result.exit_status:
        sys.exit(result.exit_status)


def run_gate_options(f: Callable) -> Callable:
    """`perflab run` options that save a baseline or gate the new campaign against one."""
    for opt in reversed((
        click.option("--baseline-save", "baseline_save", metavar="NAME",
                     help="After the run, name its campaign NAME (e.g. main) for later gates."),
        click.option("--baseline", "gate_baseline", metavar="NAME",
                     help="After the run, gate it against baseline NAME (exit 1 on a regression, 3 when the runs cannot tell)."),
        fail_if_option, cross_machine_option, junit_option,
        click.option("--gate-markdown", "gate_markdown", metavar="PATH", type=click.Path(dir_okay=False),
                     help="With --baseline: write the gate's table as Markdown."),
        click.option("--gate-json", "gate_json", metavar="PATH", type=click.Path(dir_okay=False),
                     help="With --baseline: write the gate's result as JSON."),
    )):
        f = opt(f)
    return f


class RunGate:
    """What `perflab run` was asked to do with baselines, checked before anything runs."""

    def __init__(self, baseline_save: str | None = None, gate_baseline: str | None = None,
                 fail_if: tuple[str, ...] = (), cross_machine: bool = False,
                 junit_path: str | None = None, gate_markdown: str | None = None,
                 gate_json: str | None = None) -> None:
        if not gate_baseline:
            for flag, v in (("--fail-if", fail_if), ("--junit", junit_path), ("--cross-machine", cross_machine),
                            ("--gate-markdown", gate_markdown), ("--gate-json", gate_json)):
                if v:
                    raise PerflabError(f"{flag} belongs to the gate: add --baseline NAME")
        self.save = None
        if baseline_save:
            from perflab.store.baselines import check_name

            self.save = check_name(baseline_save)
        self.baseline = gate_baseline
        self.thresholds = thresholds_of(fail_if) if gate_baseline else ()
        self.cross_machine = cross_machine
        self.files = (junit_path, gate_markdown, gate_json)

    def precheck(self, store: Any) -> None:
        """Refuse an unknown baseline or a threshold on a missing measure before measuring."""
        if self.baseline:
            precheck(store, self.baseline, self.thresholds, study="run")

    def bind(self, config: Any, store: Any) -> Any:
        """The run's config with the gate its looks decide (--until-decided with --baseline): the
        baseline's runs of each gated measure, read before the first run."""
        if not (self.baseline and getattr(config, "until_decided", False)):
            return config
        import dataclasses

        from perflab.studies.gate.looks import against
        from perflab.studies.gate.study import DEFAULT_ALPHA
        from perflab.studies.run.study import plan

        commands = [(s.label, dict(s.params)) for s in plan(config)]
        return dataclasses.replace(config, gate=against(store, self.baseline, self.thresholds, commands,
                                                        config.primary_metric, DEFAULT_ALPHA))

    def after(self, store: Any, campaign_id: int | None, stdout_taken: bool = False) -> None:
        """Gate the finished campaign, then save it as a baseline (only when it passed)."""
        if campaign_id is None:
            return
        status = 0
        if self.baseline:
            from perflab.studies.gate.study import GateConfig

            cfg = GateConfig(self.baseline, campaign_id, self.thresholds, cross_machine=self.cross_machine)
            status = run_gate(store, cfg, *self.files, stdout_taken=stdout_taken).exit_status
        if self.save:
            if status:
                what = "failed" if status == 1 else "could not pass"
                click.echo(f"perflab: baseline '{self.save}' not moved: campaign {campaign_id} {what} "
                           "the gate", err=True)
            else:
                b = store.set_baseline(self.save, campaign_id)
                click.echo(f"perflab: baseline '{b.name}' -> campaign {b.campaign_id}", err=True)
        if status:
            sys.exit(status)
