"""perflab baseline set|list|show|rm: names for stored campaigns, to gate later ones against."""

from __future__ import annotations

import json

import click

from perflab.cli.common import json_option, store_option
from perflab.cli.gate_common import write_output
from perflab.store import open_store
from perflab.store import dumps


@click.group("baseline")
def command() -> None:
    """Name a stored campaign (e.g. main) and gate later campaigns against it.

    \b
    perflab baseline set main 7 --note "nightly of 1a2b3c"
    perflab compare --baseline main 9 --fail-if 'median>+3%'
    """


def _host(store, host_id: int | None) -> str:
    return "unrecorded" if host_id is None else f"{store.host(host_id)['hostname']} (host {host_id})"


@command.command("set")
@click.argument("name")
@click.argument("campaign", type=int)
@click.option("--note", default="", help="A note kept with the name (commit, branch, why).")
@click.option("--fresh", is_flag=True,
              help="Start NAME's history anew (after an accepted change of level): the gate's "
                   "drift and cumulative checks then read only saves from here on.")
@store_option
def set_(name: str, campaign: int, note: str, fresh: bool, db_url: str | None) -> None:
    """Point NAME at CAMPAIGN (moving it if it named another); the save joins NAME's history."""
    store = open_store(db_url)
    old = {b.name: b for b in store.baselines()}.get(name)
    b = store.set_baseline(name, campaign, note, fresh=fresh)
    moved = f" (was campaign {old.campaign_id})" if old and old.campaign_id != b.campaign_id else ""
    click.echo(f"baseline '{b.name}' -> campaign {b.campaign_id}{moved}, measured on "
               f"{_host(store, b.host_id)}")


@command.command("list")
@store_option
@json_option
def list_(db_url: str | None, json_path: str | None) -> None:
    """Every baseline: name, campaign, study, machine, when it was set."""
    store = open_store(db_url)
    rows = []
    for b in store.baselines():
        camp = store.campaign(b.campaign_id)
        rows.append({**b.as_dict(), "study": camp.study, "host": _host(store, b.host_id)})
    if json_path:
        write_output(json_path, json.dumps(json.loads(dumps(rows)), indent=2) + "\n", "JSON")
        if json_path == "-":
            return
    if not rows:
        click.echo(f"no baselines in {store.display}; save one with 'perflab baseline set NAME CAMPAIGN'")
        return
    width = max(len(r["name"]) for r in rows)
    for r in rows:
        note = f"  {r['note']}" if r["note"] else ""
        click.echo(f"{r['name']:<{width}}  campaign {r['campaign_id']:<5} {r['study']:<10} "
                   f"{r['host']}  set {r['created'][:19]}{note}")


@command.command("show")
@click.argument("name")
@store_option
@json_option
def show(name: str, db_url: str | None, json_path: str | None) -> None:
    """What NAME points at: campaign, study, status, runs, machine, note."""
    store = open_store(db_url)
    b = store.baseline(name)
    camp = store.campaign(b.campaign_id)
    saves = store.baseline_history(name, 10)
    info = {**b.as_dict(), "study": camp.study, "status": camp.status,
            "history": [h.campaign_id for h in saves],
            "measurements": len(store.measurements(camp.id)), "host": _host(store, b.host_id),
            "started": camp.started.isoformat(), "config": camp.config}
    if json_path:
        write_output(json_path, json.dumps(json.loads(dumps(info)), indent=2) + "\n", "JSON")
        if json_path == "-":
            return
    click.echo(f"baseline '{b.name}': campaign {camp.id} ({camp.study}, {camp.status}, "
               f"{info['measurements']} measurements, started {info['started'][:19]})")
    click.echo(f"  measured on {info['host']}; set {info['created'][:19]}")
    if b.note:
        click.echo(f"  note: {b.note}")
    click.echo(f"  history: {len(saves)} save{'s' * (len(saves) != 1)} (campaigns "
               f"{', '.join(str(h.campaign_id) for h in saves)}), read by the gate for drift and "
               "the cumulative change")


@command.command("rm")
@click.argument("name")
@store_option
def rm(name: str, db_url: str | None) -> None:
    """Forget NAME (its campaign stays in the store)."""
    store = open_store(db_url)
    b = store.remove_baseline(name)
    click.echo(f"removed baseline '{b.name}' (campaign {b.campaign_id} is kept)")
