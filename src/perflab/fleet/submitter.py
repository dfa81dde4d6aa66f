"""The batch system a fleet runs on: a small interface (submit, status, cancel) and Slurm.

A fleet is a set of slots, one per node: an index (``--nodes N``, each slot pinned to a distinct
node the submitter picked from the nodes that are up; or a job array's task index where slots
stand in for nodes on one machine, ``--host-label``) or the node name (``--nodelist``). The
submitter maps slots to its own job ids and back; nothing else in perflab knows Slurm, so an
HTCondor submitter only has to implement this Protocol.
"""

from __future__ import annotations

import os
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from perflab.errors import PerflabError
from perflab.startup import which

# Slurm job states (squeue/scontrol/sacct) -> the fleet's four.
_PENDING = {"PENDING", "CONFIGURING", "REQUEUED", "REQUEUE_HOLD", "REQUEUE_FED", "RESV_DEL_HOLD",
            "SPECIAL_EXIT", "RESIZING"}
_RUNNING = {"RUNNING", "COMPLETING", "SUSPENDED", "STOPPED", "SIGNALING", "STAGE_OUT"}
_DONE = {"COMPLETED"}
# sinfo's short node states a job can start on (now or once the node's current jobs end); a
# trailing '*' (not responding), '~' (powered off) or '#'/'!'/'%' (powering up or down) is not up.
_UP = {"idle", "mix", "alloc", "comp", "plnd"}
_FEATURE = re.compile(r"[A-Za-z0-9_.:-]+")


@dataclass(frozen=True)
class Placement:
    """Where and how long the tasks may run (what the user asked for on `fleet submit`)."""

    nodes: int | None = None  # N distinct nodes (N array tasks where slots stand in for nodes)
    nodelist: tuple[str, ...] = ()  # one job per named node
    partition: str | None = None
    constraint: str | None = None
    time: str | None = None
    exclusive: bool = True
    max_parallel: int | None = None  # at most K slots at once (Slurm's array throttle %K)
    visits: int = 0  # each node measured this many times, in rounds (0: decided at submission, fleet/submit.py)

    def slots(self) -> list[str]:
        return list(self.nodelist) if self.nodelist else [str(i) for i in range(self.nodes or 0)]


@dataclass(frozen=True)
class SlotState:
    """One slot as the batch system sees it: pending, running, done or failed (or unknown)."""

    slot: str
    job: str  # the batch system's id of this slot's task, e.g. "1234_5"
    state: str
    raw: str = ""  # the batch system's own word, e.g. CANCELLED
    reason: str = ""


class Submitter(Protocol):
    """Submit a script once per slot, ask where each slot stands, cancel slots."""

    name: str

    def check(self, placement: Placement) -> None: ...

    def submit(self, script: Path, placement: Placement, slots: list[str], job_name: str,
               log_dir: Path, env: dict[str, str], nodes: dict[str, str] | None = None,
               after: list[str] | None = None) -> dict[str, str]: ...

    def status(self, jobs: dict[str, str]) -> dict[str, SlotState]: ...

    def cancel(self, jobs: list[str]) -> None: ...

    def up_nodes(self, placement: Placement) -> tuple[list[str], list[str]]: ...

    def log_path(self, log_dir: Path, job_name: str, job: str) -> Path: ...


def _run(argv: list[str], env: dict[str, str] | None = None, check: bool = True) -> str:
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=60,
                              env={**os.environ, **(env or {})})
    except FileNotFoundError:
        raise PerflabError(f"{argv[0]} not found on PATH; run perflab fleet on a Slurm login node "
                           "or install the Slurm client (Debian: slurm-client)") from None
    except subprocess.TimeoutExpired:
        raise PerflabError(f"{argv[0]} did not answer in 60 s; is slurmctld up (scontrol ping)?") from None
    if check and proc.returncode != 0:
        err = " ".join((proc.stderr or proc.stdout).split())[:300]
        if any(k in err for k in ("resolve_ctls_from_dns_srv", "Could not establish a configuration source",
                                  "slurm.conf", "Unable to contact slurm controller")):
            # Slurm's own words for "no cluster configured here" name neither the file nor the fix.
            raise PerflabError(f"{' '.join(argv[:2])} found no Slurm cluster ({err[:120]}): point SLURM_CONF "
                               "at the cluster's slurm.conf, run on its login node, or start a local test "
                               "cluster with scripts/slurm-local start")
        raise PerflabError(f"{' '.join(argv[:2])} failed: {err or f'exit {proc.returncode}'}")
    return proc.stdout


class Slurm:
    """Slurm through its commands (sbatch, squeue, scontrol, sacct, scancel); no daemon of ours."""

    name = "slurm"

    def check(self, placement: Placement) -> None:
        """sbatch present and the partition known; raises one-line PerflabErrors."""
        if which("sbatch") is None:
            raise PerflabError("sbatch not found on PATH: fleet mode submits through Slurm; run on a "
                               "login node or install the Slurm client (Debian: slurm-client)")
        if placement.partition:
            names = {p.strip().rstrip("*") for p in _run(["sinfo", "-h", "-o", "%P"]).split()}
            if placement.partition not in names:
                raise PerflabError(f"unknown Slurm partition {placement.partition!r}; partitions here: "
                                   f"{', '.join(sorted(names)) or 'none'} (fix --partition)")

    def _common(self, placement: Placement, job_name: str) -> list[str]:
        argv = ["sbatch", "--parsable", f"--job-name={job_name}", "--nodes=1", "--ntasks=1"]
        if placement.exclusive:
            argv.append("--exclusive")
        if placement.partition:
            argv.append(f"--partition={placement.partition}")
        if placement.constraint:
            argv.append(f"--constraint={placement.constraint}")
        if placement.time:
            argv.append(f"--time={placement.time}")
        return argv

    def submit(self, script: Path, placement: Placement, slots: list[str], job_name: str,
               log_dir: Path, env: dict[str, str], nodes: dict[str, str] | None = None,
               after: list[str] | None = None) -> dict[str, str]:
        """Submit; return slot -> job id. One job per node where ``nodes`` (slot -> node) pins
        them or --nodelist names them; else array tasks (slots that stand in for nodes)."""
        # sbatch expands %-patterns in --output: a literal % of the directory is written %%.
        out_dir = str(log_dir).replace("%", "%%")
        if placement.nodelist or nodes:
            return self._per_node(script, placement, slots, job_name, out_dir, env,
                                  nodes or {n: n for n in slots}, after or [])
        # %K: Slurm runs at most K tasks of the array at once (nodes that share CPUs on a test
        # box, or a farm that must not be emptied at once).
        throttle = f"%{placement.max_parallel}" if placement.max_parallel else ""
        argv = self._common(placement, job_name) + [
            f"--array={','.join(slots)}{throttle}", f"--output={out_dir}/{job_name}-%A_%a.out", str(script)]
        array_id = _run(argv, env).strip().split(";")[0]
        return {slot: f"{array_id}_{slot}" for slot in slots}

    def _per_node(self, script: Path, placement: Placement, slots: list[str], job_name: str, out_dir: str,
                  env: dict[str, str], nodes: dict[str, str], after: list[str]) -> dict[str, str]:
        """One job per slot on its own node (``sbatch --nodelist``): an array task may land on any
        node, and one node can take every task of a throttled array in turn. At most K at once
        as K chains: each job starts after the job K places before it ends (afterany); the
        first K after ``after`` (the fleet's tasks still queued or running)."""
        jobs: dict[str, str] = {}
        order: list[str] = []
        k = placement.max_parallel
        for slot in slots:
            if k and len(order) >= k:
                dep = [f"--dependency=afterany:{order[-k]}"]
            elif k and after:
                dep = [f"--dependency=afterany:{':'.join(after)}"]
            else:
                dep = []
            # The slot as the script's argument: an --export here would replace the user's
            # SBATCH_EXPORT (what the job's environment carries), which an argument leaves alone.
            argv = self._common(placement, job_name) + dep + [
                f"--nodelist={nodes[slot]}", f"--output={out_dir}/{job_name}-%j.out", str(script), slot]
            jobs[slot] = _run(argv, env).strip().split(";")[0]
            order.append(jobs[slot])
        return jobs

    def up_nodes(self, placement: Placement) -> tuple[list[str], list[str]]:
        """(nodes a task can run on, idle ones first; the others as 'NAME (state)') of the
        partition (default: the cluster's default) that satisfy the constraint, from sinfo."""
        out = _run(["sinfo", "-h", "-N", "-o", "%N|%P|%t|%f"])
        up: dict[str, str] = {}
        other: dict[str, str] = {}
        for line in out.splitlines():
            parts = line.strip().split("|")
            if len(parts) != 4:
                continue
            name, part, st, feats = parts
            if (part.rstrip("*") != placement.partition) if placement.partition else not part.endswith("*"):
                continue
            if placement.constraint and not constraint_matches(placement.constraint, feats.split(",")):
                continue
            if st in _UP:
                up.setdefault(name, st)
            else:
                other.setdefault(name, st)
        idle = [n for n, st in up.items() if st == "idle"]
        return idle + [n for n in up if n not in idle], [f"{n} ({st})" for n, st in other.items() if n not in up]

    def log_path(self, log_dir: Path, job_name: str, job: str) -> Path:
        return log_dir / f"{job_name}-{job}.out"

    def status(self, jobs: dict[str, str]) -> dict[str, SlotState]:
        """slot -> state from squeue (queued, running), then scontrol and sacct (finished)."""
        if not jobs:
            return {}
        parents = sorted({j.split("_")[0] for j in jobs.values()})
        seen: dict[str, tuple[str, str]] = {}
        out = _run(["squeue", "-h", "--array", "-j", ",".join(parents), "-o", "%i|%T|%r"], check=False)
        for line in out.splitlines():
            parts = line.strip().split("|")
            if len(parts) == 3:
                seen[parts[0]] = (parts[1], parts[2])
        missing = [j for j in jobs.values() if j not in seen]
        if missing:
            seen.update({k: v for k, v in self._finished(parents).items() if k not in seen})
        result = {}
        for slot, job in jobs.items():
            raw, reason = seen.get(job) or seen.get(job.split("_")[0] + "_*", ("", ""))
            base = raw.split()[0] if raw else ""
            state = ("pending" if base in _PENDING else "running" if base in _RUNNING
                     else "done" if base in _DONE else "failed" if base else "unknown")
            result[slot] = SlotState(slot, job, state, base, reason if reason not in ("None", "(null)") else "")
        return result

    def _finished(self, parents: list[str]) -> dict[str, tuple[str, str]]:
        """Finished tasks: scontrol knows them for MinJobAge; sacct (if accounting runs) longer."""
        seen: dict[str, tuple[str, str]] = {}
        out = _run(["sacct", "-n", "-P", "-X", "-j", ",".join(parents), "-o", "JobID,State,ExitCode"],
                   check=False)
        for line in out.splitlines():
            parts = line.split("|")
            if len(parts) == 3 and re.fullmatch(r"\d+(_\d+)?", parts[0]):
                seen[parts[0]] = (parts[1], f"exit {parts[2]}")
        # One job per node is one parent per node: past a few, one listing of every job the
        # controller keeps costs one call instead of one a node.
        for parent in parents if len(parents) <= 16 else [None]:
            out = _run(["scontrol", "-o", "show", "job", *([parent] if parent else [])], check=False)
            for line in out.splitlines():
                f = dict(kv.split("=", 1) for kv in line.split() if "=" in kv)
                if "JobId" not in f:
                    continue
                value = (f.get("JobState", ""), f"exit {f.get('ExitCode', '?')}")
                for key in _task_keys(f):
                    seen.setdefault(key, value)
        return seen

    def cancel(self, jobs: list[str]) -> None:
        if jobs:
            _run(["scancel", *jobs])


def _task_keys(f: dict[str, str]) -> list[str]:
    """Job ids one `scontrol show job` record stands for: a job, an array task, or the tasks of
    an array that never started (one record, its task id a range like 0-3,5 or NO_VAL)."""
    tid = f.get("ArrayTaskId", "N/A")
    if tid in ("N/A", ""):
        return [f["JobId"]]
    parent = f.get("ArrayJobId", f["JobId"])
    if tid.isdigit() and int(tid) < 4294967294:
        return [f"{parent}_{tid}"]
    keys = []
    for part in tid.split("%")[0].split(","):
        lo, _, hi = part.partition("-")
        if lo.isdigit() and (hi.isdigit() or not hi) and int(hi or lo) < 4294967294:
            keys += [f"{parent}_{i}" for i in range(int(lo), int(hi or lo) + 1)]
    # A task id Slurm leaves unset (NO_VAL): the record speaks for every task not listed apart.
    return keys or [f"{parent}_*"]


def constraint_matches(constraint: str, features: list[str]) -> bool:
    """Whether a node with these features satisfies a Slurm --constraint of feature names,
    '&' (and), '|' (or), parentheses and brackets; raises a one-line PerflabError otherwise."""
    have = {f.strip() for f in features if f.strip() and f.strip() != "(null)"}
    tokens = re.findall(r"[A-Za-z0-9_.:-]+|[&|()\[\]]|\S", constraint)
    pos = 0

    def fail() -> PerflabError:
        return PerflabError(f"cannot pick nodes for --constraint {constraint!r}: perflab reads feature "
                            "names with &, | and brackets; name the nodes with --nodelist instead")

    def term() -> bool:
        nonlocal pos
        if pos >= len(tokens):
            raise fail()
        tok = tokens[pos]
        pos += 1
        if tok in ("(", "["):
            value = expr()
            if pos >= len(tokens) or tokens[pos] not in (")", "]"):
                raise fail()
            pos += 1
            return value
        if not _FEATURE.fullmatch(tok):
            raise fail()
        return tok in have

    def conj() -> bool:
        nonlocal pos
        value = term()
        while pos < len(tokens) and tokens[pos] == "&":
            pos += 1
            value = term() and value
        return value

    def expr() -> bool:
        nonlocal pos
        value = conj()
        while pos < len(tokens) and tokens[pos] == "|":
            pos += 1
            value = conj() or value
        return value

    result = expr()
    if pos != len(tokens):
        raise fail()
    return result


SUBMITTERS = {"slurm": Slurm}


def submitter(name: str = "slurm") -> Submitter:
    try:
        return SUBMITTERS[name]()
    except KeyError:
        raise PerflabError(f"unknown batch system {name!r}; known: {', '.join(SUBMITTERS)}") from None
