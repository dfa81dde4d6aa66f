"""The machine a study runs on, as studies see it: its topology and the metadata to record.

platform/host.py captures one; platform/hostcache.py keeps a capture for the boot and hands back
its topology as the record it stored, built into a Topology only when a study first asks for
it. `perflab run` only records it, and the topology's five dataclasses cost ~3 ms of its
start-up (bench/startup.sh): so this module loads neither the topology nor its reader.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, Mapping

from perflab import platform
from perflab.platform.affinity import usable_cpus
from perflab.platform.tune.state import machine_state

if TYPE_CHECKING:
    from perflab.platform.sysfs import Root
    from perflab.platform.topology_types import Topology


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
    "PERFLAB_NODE_FEATURES": "slurm_features",
    "PERFLAB_CLOCK_OFFSET_NS": "clock_offset_ns",  # wall minus monotonic clock: runs' start_ns to wall time
}


def allowed_cpus(root: Root) -> tuple[int, ...] | None:
    """A topology's ``allowed``: the CPUs this process may run on (platform.affinity), on the live
    machine; None for a snapshot, whose topology restricts nothing."""
    return usable_cpus(root) if root.is_live else None


class Machine:
    """What a study needs to know about the machine: its topology, and metadata to record."""

    __slots__ = ("metadata", "_topology", "_record", "_allowed")

    def __init__(self, topology: Topology, metadata: dict | None = None) -> None:
        self._topology: Topology | None = topology
        self.metadata = {} if metadata is None else metadata
        self._record: dict[str, Any] | None = None
        self._allowed: tuple[int, ...] | None = None

    @classmethod
    def from_record(cls, record: dict[str, Any], metadata: dict,
                    allowed: tuple[int, ...] | None) -> Machine:
        """A machine whose topology is ``Topology.to_dict()``'s record, with this process's
        affinity ``allowed`` (which a stored record cannot know)."""
        machine = cls.__new__(cls)
        machine._topology, machine.metadata = None, metadata
        machine._record, machine._allowed = record, allowed
        return machine

    @property
    def topology(self) -> Topology:
        if self._topology is None:
            assert self._record is not None
            self._topology = platform.Topology.from_dict(self._record, self._allowed)
        return self._topology

    def record(self) -> tuple[dict, dict]:
        """(metadata, topology dict): the arguments of ``Store.add_host``."""
        if self._topology is None and self._record is not None:
            allowed = list(self._allowed) if self._allowed is not None else None
            return self.metadata, {**self._record, "allowed": allowed}
        return self.metadata, self.topology.to_dict()

    def __repr__(self) -> str:
        return f"Machine(metadata={self.metadata.get('hostname')!r}, topology={self.topology!r})"


def campaign_labels() -> dict[str, Any]:
    """Every campaign's own labels: the batch system's, and the machine state it runs under
    (tuned by perflab or not, and each knob's value: platform/tune/state.py)."""
    return {**batch_labels(), "machine_state": machine_state()}


def batch_labels(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """Labels from the batch system and fleet mode found in the environment (may be empty)."""
    env = os.environ if environ is None else environ
    return {key: env[var] for var, key in BATCH_ENV.items() if env.get(var)}
