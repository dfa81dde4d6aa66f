"""Submitting a fleet: check everything that can be checked here, then write and submit one script.

Nothing is submitted unless the batch system answers, the partition exists, the store is
reachable, the fleet name is new and the study accepts its options. The store's password never
enters the script, the fleet record or any output: the tasks get it from the job's environment.
"""

from __future__ import annotations

import os
import re
import sys
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Callable

from perflab.errors import PerflabError
from perflab.fleet import state
from perflab.fleet.script import TaskSpec, write_script
from perflab.fleet.submitter import Placement, Submitter
from perflab.store.url import redact_url

# Studies a node can run on its own and record into a store.
STUDIES = ("run", "cores", "instances", "variants", "frontend", "micro", "profile", "footprint", "lab", "score")
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


@dataclass(frozen=True)
class FleetRequest:
    """What `perflab fleet submit` was asked, typed once at the CLI edge."""

    name: str
    study_argv: tuple[str, ...]
    placement: Placement
    db: str  # the store URL or path as given (may hold a password)
    shards: str | None = None  # per-node SQLite directory the tasks write to instead
    python: str = sys.executable
    log_dir: str | None = None
    host_label: str | None = None
    bundle: str | None = None


def split_password(url: str) -> tuple[str, str | None]:
    """(URL without its password, the password or None): the script gets only the first."""
    if "://" not in url:
        return url, None
    from sqlalchemy.engine import URL, make_url

    try:
        u = make_url(url)
    except Exception:
        raise PerflabError(f"cannot parse the store URL {redact_url(url)!r}; use postgresql://USER@HOST/DB") from None
    if u.password is None:
        return url, None
    # URL.set(password=None) keeps the password (None means "unchanged"): build it anew.
    bare = URL.create(u.drivername, username=u.username, host=u.host, port=u.port, database=u.database,
                      query=u.query)
    return bare.render_as_string(hide_password=False), str(u.password)


def _spec(req: FleetRequest, task_db: str, workdir: str, log_dir: Path) -> TaskSpec:
    return TaskSpec(fleet=req.name, study=req.study_argv[0], study_args=req.study_argv[1:], db=task_db,
                    python=req.python, workdir=workdir, shards=req.shards is not None,
                    host_label=req.host_label, bundle=req.bundle,
                    failover_dir=None if req.shards else str(state.failover_dir(log_dir)))


def submit(req: FleetRequest, store, submitter: Submitter,
           check_study: Callable[[tuple[str, ...]], None] | None = None) -> state.Fleet:
    """Check, write the script, submit one task per slot, record the fleet; returns it.

    ``check_study`` (the CLI's) parses the study's own options without running anything.
    """
    if not _NAME.fullmatch(req.name):
        raise PerflabError(f"fleet name {req.name!r} must be letters, digits, '.', '_' or '-' (at most 64)")
    pl = req.placement
    if bool(pl.nodes) == bool(pl.nodelist):
        raise PerflabError("give either --nodes N or --nodelist LIST (one task per node)")
    if not req.study_argv:
        raise PerflabError("no study to run: write it after --, e.g. perflab fleet submit NAME --nodes 4 -- run -w minihlt")
    if req.study_argv[0] not in STUDIES and req.name in STUDIES:
        raise PerflabError(f"the fleet needs a NAME before its options: perflab fleet submit NAME --nodes N -- "
                           f"{req.name} {' '.join(req.study_argv[:3])} ... ('{req.name}' was read as the name)")
    if req.study_argv[0] not in STUDIES:
        raise PerflabError(f"{req.study_argv[0]!r} is not a study a fleet can run; choose one of {', '.join(STUDIES)}")
    args = list(req.study_argv[1:])
    if any(a == "--db" or a.startswith("--db=") for a in args[: args.index("--") if "--" in args else None]):
        raise PerflabError("give --db to 'perflab fleet submit', not to the study: every task writes to the fleet's store")
    if check_study is not None:
        check_study(req.study_argv)
    if req.bundle and not Path(req.bundle).is_file():
        raise PerflabError(f"no bundle {req.bundle}; make one with 'perflab bundle -o FILE' (fix --bundle)")
    if len(set(pl.nodelist)) != len(pl.nodelist):
        twice = sorted({n for n in pl.nodelist if pl.nodelist.count(n) > 1})
        raise PerflabError(f"--nodelist names {', '.join(twice)} more than once: one task per node, each "
                           "node one host (name each node once)")
    if pl.visits > 1 and req.host_label:
        raise PerflabError("--visits needs one job per node (--nodes or --nodelist without --host-label): "
                           "array tasks standing in for nodes have no node to visit again")
    submitter.check(pl)
    nodes, note = _pick_nodes(pl, submitter) if pl.nodes and not req.host_label else (None, "")
    slots = list(nodes) if nodes else pl.slots()
    pl, nodes, slots, round_of = _visits(pl, nodes, slots, req.host_label)
    if state.find(store, req.name) is not None:
        state.create(store, req.name, {})  # raises the one-line 'exists already' error
    # No --db: the default store, a SQLite file, which the tasks must find at its full path.
    task_db, password = (str(Path(req.shards).absolute()), None) if req.shards else \
        split_password(req.db or store.path or store.display)
    if not req.shards and "://" not in task_db:
        task_db = str(Path(task_db).absolute())
    log_dir = Path(req.log_dir or Path("perflab-fleet") / req.name).absolute()
    try:
        log_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise PerflabError(f"cannot create the fleet's log directory {log_dir}: {exc.strerror} (fix --log-dir)") from None
    script = log_dir / f"{req.name}.sbatch"
    script.write_text(write_script(_spec(req, task_db, os.getcwd(), log_dir)))
    script.chmod(0o755)
    job_name = f"perflab-fleet-{req.name}"
    config = {
        "name": req.name, "study": req.study_argv[0], "study_args": list(req.study_argv[1:]),
        "db": redact_url(task_db), "shards": req.shards is not None, "placement": asdict(pl),
        "slots": slots, "nodes": nodes, "note": note, "visits": pl.visits, "round_of": round_of,
        "script": str(script), "log_dir": str(log_dir),
        "job_name": job_name,
        "submitter": submitter.name, "python": req.python, "host_label": req.host_label,
        "bundle": req.bundle,
    }
    env = {"PGPASSWORD": password} if password else {}
    # Rounds in order: without --max-parallel, a round's job waits for the one a round before it
    # (K = the nodes), so round r + 1 of a node never starts before round r of every node has.
    chained = replace(pl, max_parallel=pl.max_parallel or len(slots) // pl.visits) if pl.visits > 1 else pl
    jobs = submitter.submit(script, chained, slots, job_name, log_dir, env, nodes=nodes)
    try:
        fleet = state.create(store, req.name, config)
        return state.record_jobs(store, fleet, jobs, nodes)
    except PerflabError:
        submitter.cancel(list(jobs.values()))
        raise


def default_visits(pl: Placement, nodes: int, host_label: str | None) -> int:
    """3 where fewer nodes run at once than there are (one job per node), else 1."""
    if host_label or not pl.max_parallel or pl.max_parallel >= nodes:
        return 1
    return 3


def _visits(pl: Placement, nodes: dict[str, str] | None, slots: list[str], host_label: str | None):
    """(placement with its visits decided, slot -> node, slots in submission order, slot -> round):
    V visits a node in V rounds, round r visiting the nodes in an order rotated by r, so that a
    trend over the minutes does not fall on the same node's position in every round."""
    visits = pl.visits or default_visits(pl, len(slots), host_label)
    pl = replace(pl, visits=visits)
    if visits == 1:
        return pl, nodes, slots, {}
    where = nodes or {s: s for s in slots}  # --nodelist: the slot is the node's name
    out, pinned, round_of = [], {}, {}
    for r in range(visits):
        k = r % len(slots)
        for base in slots[k:] + slots[:k]:
            slot = f"{base}.{r + 1}"
            out.append(slot)
            pinned[slot] = where[base]
            round_of[slot] = r + 1
    return pl, pinned, out, round_of


def _pick_nodes(pl: Placement, submitter: Submitter) -> tuple[dict[str, str], str]:
    """slot -> a distinct node that is up (idle ones first), and one line where fewer are up."""
    up, other = submitter.up_nodes(pl)
    where = (f"partition {pl.partition}" if pl.partition else "the default partition") + \
        (f" with --constraint {pl.constraint}" if pl.constraint else "")
    if not up:
        raise PerflabError(f"no node is up in {where} (sinfo: {', '.join(other[:8]) or 'no node'}); "
                           "wait for nodes, or fix --partition/--constraint")
    picked = up[: pl.nodes]
    note = ""
    if len(picked) < (pl.nodes or 0):
        down = f"; not up: {', '.join(other[:8])}{' ...' if len(other) > 8 else ''}" if other else ""
        note = (f"only {len(picked)} of the {pl.nodes} nodes asked for are up in {where}: one task on each of "
                f"{', '.join(picked)}{down}")
    return {str(i): n for i, n in enumerate(picked)}, note


def _rehome(fleet: state.Fleet, failed: list[str], submitter: Submitter,
            pl: Placement) -> tuple[dict[str, str], list[str]]:
    """Nodes for the failed slots of a fleet of distinct nodes: the slot's own node if it is up,
    else one no slot of the fleet has; (slot -> node, one line per slot moved or left)."""
    up, other = submitter.up_nodes(pl)
    states = dict(n.split(" ", 1) for n in other)
    taken = {n for s, n in fleet.nodes.items() if s not in failed}
    out, notes = {}, []
    for slot in failed:
        node = fleet.nodes.get(slot)
        if node in up and node not in taken:
            out[slot] = node
        else:
            spare = next((n for n in up if n not in taken and n not in out.values()), None)
            why = f"{node} is not up {states.get(node, '(not in sinfo)')}"  # type: ignore[arg-type]  # None: not in sinfo
            if spare is None:
                notes.append(f"slot {slot}: {why} and every node that is up has a slot of this fleet; "
                             f"left failed (bring {node} back, then resubmit)")
                continue
            out[slot] = spare
            notes.append(f"slot {slot}: {why}; rerun on {spare}, a node this fleet has not measured")
        taken.add(out[slot])
    return out, notes


def _revisit(fleet: state.Fleet, failed: list[str], submitter: Submitter,
             pl: Placement) -> tuple[dict[str, str], list[str]]:
    """Failed visits rerun on their own node where it is up; a visit on another node would be
    another host's, so one whose node is down is left failed (one line each)."""
    up, other = submitter.up_nodes(pl)
    states = dict(n.split(" ", 1) for n in other)
    out, notes = {}, []
    for slot in failed:
        node = fleet.nodes.get(slot)
        if node in up:
            out[slot] = node
        else:
            notes.append(f"slot {slot}: {node} is not up {states.get(node, '(not in sinfo)')}; a visit is "  # type: ignore[arg-type]  # as above
                         f"measured on its own node, so it is left failed (bring {node} back, then resubmit)")
    return out, notes


def resubmit(store, fleet: state.Fleet, submitter: Submitter, db: str) -> tuple[dict[str, str], list[str]]:
    """Submit again the slots without a finished campaign that are not queued or running:
    (slot -> new job, one line per slot moved to another node or left failed)."""
    states = state.slot_states(store, fleet, submitter)
    slots = [s.slot for s in states if s.state == "failed"]
    if not slots:
        return {}, []
    pl = Placement(**{**fleet.config["placement"], "nodelist": tuple(fleet.config["placement"]["nodelist"])})
    submitter.check(pl)
    nodes: dict[str, str] | None
    if fleet.config.get("visits", 1) > 1:
        nodes, notes = _revisit(fleet, slots, submitter, pl)
    else:
        nodes, notes = _rehome(fleet, slots, submitter, pl) if fleet.nodes and not pl.nodelist else (None, [])
    if nodes is not None:
        slots = list(nodes)
        if not slots:
            raise PerflabError(f"fleet {fleet.name}: nothing resubmitted: {'; '.join(notes)}")
    _, password = split_password(db) if db and not fleet.config.get("shards") else (None, None)
    env = {"PGPASSWORD": password} if password else {}
    # At most K at once still: the new chain waits for the fleet's tasks that are queued or running.
    live = [s.job for s in states if s.state in ("pending", "running") and s.job]
    jobs = submitter.submit(Path(fleet.config["script"]), pl, slots, fleet.config["job_name"],
                            fleet.log_dir, env, nodes=nodes, after=live)
    state.record_jobs(store, fleet, jobs, nodes)
    return jobs, notes
