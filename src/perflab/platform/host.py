"""The machine a campaign runs on, captured once and in one shape: metadata, topology, probes.

Every study records its host through ``capture()`` so that one machine is one host row in the
store (the store dedups by a fingerprint of the stable parts). Batch-system labels (Slurm job and
array ids, a fleet name) travel with the campaign, not the host: one node runs many jobs
(platform/machine.py reads them, beside the Machine a capture returns).
"""

from __future__ import annotations

import os

from perflab.platform.machine import Machine
from perflab.platform.metadata import collect
from perflab.platform.probes import all_probes
from perflab.platform.sysfs import Root
from perflab.platform.topology import Topology, read_topology


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
