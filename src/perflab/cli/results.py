"""`perflab results [ID]`: list stored campaigns, or one campaign's runs."""

from __future__ import annotations


import click

from perflab.cli.common import emit_json, json_option, make_console, render_monitor, store_option
from perflab.cli.options import Count, OutputPath
from perflab.errors import PerflabError


# The listing's default length: a store a CI gate or a fleet has filled for months holds
# thousands of campaigns, and a table of 1,900 took 1.5 s to draw here and scrolled away.
LAST = 50


def _journal_notes(console, store, campaign_id: int | None) -> None:
    """Say which runs a perflab killed mid-batch left in its journal, which no listing counts."""
    from perflab.studies.session import journalled_runs

    for cid, n in sorted(journalled_runs(store).items()):
        if campaign_id in (None, cid):
            runs = "run" if n == 1 else "runs"
            console.print(f"note: campaign {cid} has {n} more measured {runs} in the journal of a perflab "
                          f"that was killed (not counted above): 'perflab resume {cid}' stores them")


@click.command(name="results")
@click.argument("campaign_id", required=False, type=Count(1, 2**31 - 1))
@click.option("--study", "-s", metavar="NAME", help="Only campaigns of this study (e.g. instances).")
@click.option("--all-runs", "-a", is_flag=True, help="With ID: list every run, not one row per configuration.")
@click.option("--last", "-n", "last", type=Count(0, 2**31 - 1), default=LAST, show_default=True, metavar="N",
              help="Without ID: only the newest N campaigns (0: every one).")
@click.option("--monitor-csv", type=OutputPath(), help="With ID: write the machine monitor's samples as CSV ('-': stdout).")
@click.option("--monitor-json", type=OutputPath(), help="With ID: write the monitor's samples and summary as JSON.")
@store_option
@json_option
def command(campaign_id: int | None, study: str | None, all_runs: bool, last: int, monitor_csv: str | None,
            monitor_json: str | None, db_url: str | None, json_path: str | None) -> None:
    """List stored campaigns; with a campaign ID, summarise its measurements."""
    if (monitor_csv or monitor_json) and campaign_id is None:
        raise PerflabError("--monitor-csv and --monitor-json export one campaign's samples: give its ID "
                           "(perflab results lists them)")
    from perflab.store import open_store
    from perflab.report.listing import campaign_row, died_note, group_measurements, shown_status
    from perflab.report.terminal.results import campaigns_table, groups_table, runs_table, short

    # Tables go to stderr when the JSON goes to stdout, so `--json -` stays parseable.
    console = make_console(markup=False, highlight=False, stderr="-" in (json_path, monitor_csv, monitor_json))
    with open_store(db_url) as store:
        if campaign_id is None and study and store.count_campaigns(study=study) == 0:
            from perflab.studies import STUDIES

            known = sorted(STUDIES)
            if study not in known:
                raise PerflabError(f"--study {study!r} is no study perflab stores; give one of {', '.join(known)}")
        if campaign_id is None:
            rows = [campaign_row(c) for c in store.campaigns(study=study, last=last or None)]
            older = store.count_campaigns(study=study) - len(rows) if last and len(rows) == last else 0
            table = campaigns_table(rows, f"campaigns in {store.display}")
            if rows:
                console.print(table)
                if any(short(r["verdict"]) != " ".join(str(r["verdict"] or "").split()) for r in rows):
                    console.print("verdict: its first clause; 'perflab results ID' shows a campaign's whole verdict")
                if older:
                    console.print(f"the newest {len(rows)} of {len(rows) + older} campaigns; {older} older ones "
                                  f"are not shown ('--last 0' lists every one)")
                # A campaign a killed perflab left behind is named even where the listing
                # leaves it out: it is what 'perflab resume' is for.
                hidden = [campaign_row(c) for c in store.campaigns(study=study, status="running")
                          if c.id < rows[0]["id"]] if older else []
                for note in filter(None, map(died_note, hidden + rows)):
                    console.print(note)
            else:
                console.print(f"no campaigns{' of study ' + study if study else ''} in {store.display}")
            payload: object = rows
        else:
            camp = store.campaign(campaign_id)
            ms = store.measurements(campaign_id)
            row = campaign_row(camp)
            console.print(
                f"campaign {camp.id}: {camp.study}{' (' + camp.name + ')' if camp.name else ''}, "
                f"{shown_status(row)}, {len(ms)} runs, started {row['started']}  [{store.display}]"
            )
            if died_note(row):
                console.print(died_note(row))
            if row["verdict"]:
                console.print(f"verdict: {row['verdict']}")
            if monitor_csv or monitor_json:
                _export_monitor(store, camp, monitor_csv, monitor_json)
            render_monitor(store, camp.id, None, console, sources_said=False)
            from perflab.platform.tune.state import summary as state_summary

            machine_state = (camp.labels or {}).get("machine_state")
            if state_summary(machine_state):
                console.print(f"machine state: {state_summary(machine_state)}")
            children = store.campaigns(parent_id=camp.id)
            if children:
                console.print("child campaigns: " + ", ".join(f"{c.id} {c.study} ({c.status})" for c in children))
            if all_runs:
                table = runs_table(ms)
                payload = {"campaign": row, "machine_state": machine_state, "runs": [
                    {"id": m.id, "label": m.label, "params": m.params, "rep": m.rep, **m.result.as_dict()}
                    for m in ms]}
            else:
                groups = group_measurements(ms)
                table = groups_table(groups)
                from dataclasses import asdict

                payload = {"campaign": row, "machine_state": machine_state, "summary": camp.summary, "groups": [asdict(g) for g in groups]}
            if ms:
                console.print(table)
        _journal_notes(console, store, campaign_id)
    if json_path:
        from perflab.store import dumps

        text = dumps(payload)
        if json_path == "-":
            click.echo(text)
        else:
            with open(json_path, "w") as f:
                f.write(text + "\n")


def _export_monitor(store, camp, csv_path: str | None, json_path: str | None) -> None:
    """Write a campaign's monitor samples; a campaign that was not monitored is one line, exit 2."""
    from perflab.report.monitor_export import monitor_csv, monitor_json
    from perflab.studies.monitor import stored_result

    rows = store.monitor_samples(camp.id)
    if not rows:
        raise PerflabError(f"campaign {camp.id} ({camp.study}) has no monitor samples: run the study with "
                           "--monitor (on by default in lab and instances)")
    if csv_path:
        text = monitor_csv(rows)
        if csv_path == "-":
            click.echo(text, nl=False)
        else:
            with open(csv_path, "w", encoding="utf-8") as fh:
                fh.write(text)
    if json_path:
        # The ignore: stored_result is None only for a campaign without samples, refused above.
        emit_json(json_path, monitor_json(camp.id, rows, stored_result(store, camp.id)), None)  # type: ignore[arg-type]  # see above
