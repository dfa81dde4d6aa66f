"""The machine a campaign runs on, captured once and in one shape: metadata, topology, probes.

Every study records its host through ``capture()`` so that one machine is one host row in the
store (the store dedups by a fingerprint of the stable parts). Batch-system labels (Slurm job and
array ids, a fleet name) travel with the campaign, not the host: one node runs many jobs.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Mapping

from perflab.platform.metadata import collect
from perflab.platform.probes import all_probes
from perflab.platform.sysfs import Root
from perflab.platform.topology import Topology, read_topology

# Environment variables a campaign records as labels (fleet mode sets PERFLAB_FLEET; Slurm sets
# the rest in every batch task). PERFLAB_HOST_LABEL stands in for a node name where several
# array tasks share one machine, as in the tests' single-node cluster.
BATCH_ENV = {
    "PERFLAB_FLEET": "fleet",
    "PERFLAB_FLEET_SLOT": "fleet_slot",
    "PERFLAB_HOST_LABEL": "host_label",
    "SLURM_JOB_ID": "slurm_job_id",
    "SLURM_ARRAY_JOB_ID": "slurm_array_job_id",
    "SLURM_ARRAY_TASK_ID": "slurm_array_task_id",
    "SLURMD_NODENAME": "slurm_node",
}


@dataclass(frozen=True)
class Machine:
    """What a study needs to know about the machine: its topology, and metadata to record."""

    topology: Topology
    metadata: dict = field(default_factory=dict)

    def record(self) -> tuple[dict, dict]:
        """(metadata, topology dict): the arguments of ``Store.add_host``."""
        return self.metadata, self.topology.to_dict()


def capture(root: Root = Root("/"), topology: Topology | None = None, probes: bool = True) -> Machine:
    """Read the machine once: topology (unless given, e.g. a fixture) and metadata.

    Metadata is context, never a reason to lose a study: a collector that fails leaves a note.
    """
    topo = topology if topology is not None else read_topology(root)
    try:
        metadata = collect(root)
    except Exception as exc:  # noqa: BLE001 - see the docstring
        metadata = {"error": f"metadata collection failed: {type(exc).__name__}: {exc}"}
    if probes and root.is_live:
        metadata["probes"] = {k: {"available": p.available, "reason": p.reason}
                              for k, p in all_probes().items()}
    label = os.environ.get("PERFLAB_HOST_LABEL")
    if label:
        # A stand-in node name: the store's fingerprint includes the hostname, so each label is
        # its own host row, as each node of a real farm would be.
        metadata["hostname"] = label
    return Machine(topology=topo, metadata=metadata)


def batch_labels(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """Labels from the batch system and fleet mode found in the environment (may be empty)."""
    env = os.environ if environ is None else environ
    return {key: env[var] for var, key in BATCH_ENV.items() if env.get(var)}
