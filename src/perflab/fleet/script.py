"""The batch script every fleet task runs: one perflab study on its node, into the fleet's store.

Every user-supplied value is quoted with shlex.quote, so a workload argument with spaces,
quotes or ';' reaches the study as given and is never read as shell. The database password is
not in the script: it travels in the job's environment (PGPASSWORD), or the node's ~/.pgpass.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass

# Stands for the node-local directory the bundle was unpacked into, in study arguments.
BUNDLE_PLACEHOLDER = "{bundle}"


@dataclass(frozen=True)
class TaskSpec:
    """What each task runs: the study and its arguments, where results go, the environment."""

    fleet: str
    study: str
    study_args: tuple[str, ...]
    db: str  # results store URL without password, or a shard directory (shards=True)
    python: str  # interpreter with perflab installed, on every node
    workdir: str
    shards: bool = False
    host_label: str | None = None  # tests: a distinct stand-in host name per slot
    bundle: str | None = None  # a `perflab bundle` archive readable from every node
    cache: str | None = None  # workload build cache; default node-local
    failover_dir: str | None = None  # where a task keeps the runs a lost server did not take


def _arg(value: str) -> str:
    """One study argument, quoted; ``{bundle}`` becomes the unpacked bundle's directory."""
    if BUNDLE_PLACEHOLDER not in value:
        return shlex.quote(value)
    parts = value.split(BUNDLE_PLACEHOLDER)
    return '"$PERFLAB_BUNDLE_DIR"'.join(shlex.quote(p) if p else "" for p in parts)


def write_script(spec: TaskSpec) -> str:
    """The bash script for every slot of the fleet (the slot comes from the environment)."""
    q = shlex.quote
    lines = [
        "#!/bin/bash",
        f"# perflab fleet {q(spec.fleet)}: one {q(spec.study)} study per node (written by perflab fleet submit)",
        "set -euo pipefail",
        f"export PERFLAB_FLEET={q(spec.fleet)}",
        # One job per node gets its slot as the script's argument; array tasks are slots by index.
        'export PERFLAB_FLEET_SLOT="${1:-${PERFLAB_FLEET_SLOT:-${SLURM_ARRAY_TASK_ID:-0}}}"',
    ]
    if spec.host_label:
        lines.append(f'export PERFLAB_HOST_LABEL={q(spec.host_label)}-"$PERFLAB_FLEET_SLOT"')
    cache = q(spec.cache) if spec.cache else '"${TMPDIR:-/tmp}/perflab-cache-$(id -un)"'
    lines += [
        # A node-local build cache: no shared file system needed, and no two nodes racing on one.
        f"export PERFLAB_CACHE={cache}",
        f"cd {q(spec.workdir)} 2>/dev/null || cd \"${{TMPDIR:-/tmp}}\"",
        # The node's Slurm features name its platform beside what the machine says of itself
        # (two nodes of one CPU model in two partitions of the farm, or test nodes on one box).
        'if [ -n "${SLURMD_NODENAME:-}" ] && command -v scontrol >/dev/null; then',
        '  PERFLAB_NODE_FEATURES=$(scontrol show node "$SLURMD_NODENAME" 2>/dev/null '
        "| sed -n 's/.*AvailableFeatures=\\([^ ]*\\).*/\\1/p' | sed 's/^(null)$//')",
        "  export PERFLAB_NODE_FEATURES",
        "fi",
        'echo "perflab fleet: slot $PERFLAB_FLEET_SLOT on ${SLURMD_NODENAME:-$(hostname)} (job ${SLURM_JOB_ID:-?})"',
        # The node's wall clock minus its monotonic clock (what each run's start is on): the
        # report puts the runs of every node on one time axis, to compare runs of the same time.
        f"PERFLAB_CLOCK_OFFSET_NS=$({q(spec.python)} -c "
        "'import time; print(time.time_ns() - time.monotonic_ns())' 2>/dev/null || true)",
        "export PERFLAB_CLOCK_OFFSET_NS",
    ]
    if spec.bundle:
        lines += [
            'export PERFLAB_BUNDLE_DIR="${TMPDIR:-/tmp}/perflab-bundle-${SLURM_JOB_ID:-$$}"',
            'mkdir -p "$PERFLAB_BUNDLE_DIR"',
            f'tar -xzf {q(spec.bundle)} -C "$PERFLAB_BUNDLE_DIR"',
            "trap 'rm -rf \"$PERFLAB_BUNDLE_DIR\"' EXIT",
        ]
    if spec.shards:
        lines += [
            f"mkdir -p {q(spec.db)}",
            # One SQLite file per slot and job: a resubmitted slot never writes into the old one.
            f'db={q(spec.db)}/{q(spec.fleet)}."$PERFLAB_FLEET_SLOT".job"${{SLURM_JOB_ID:-0}}".db',
        ]
    else:
        lines.append(f"db={q(spec.db)}")
        if spec.failover_dir:
            lines += [
                # Named after the slot and its job as the fleet records it (ARRAY_TASK or JOB):
                # fleet status finds the shard of a slot's job, fleet collect merges it.
                'job="${SLURM_ARRAY_JOB_ID:+${SLURM_ARRAY_JOB_ID}_${SLURM_ARRAY_TASK_ID:-0}}"',
                f'export PERFLAB_FAILOVER_SHARD={q(spec.failover_dir)}/{q(spec.fleet)}."$PERFLAB_FLEET_SLOT"'
                '.job"${job:-${SLURM_JOB_ID:-0}}".db',
            ]
    # --db first: the study's own arguments may end with `-- CMD ...`.
    words = [q(spec.python), "-m", "perflab", q(spec.study), "--db", '"$db"',
             *(_arg(a) for a in spec.study_args)]
    lines.append(" ".join(words))
    return "\n".join(lines) + "\n"
