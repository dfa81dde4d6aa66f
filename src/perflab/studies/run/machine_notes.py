"""What the machine did around a `perflab run`: other load and hypervisor steal over the whole
study, from /proc (through platform.sysfs.Root)."""

from __future__ import annotations

import os

from perflab.platform.sysfs import Root


def cpu_times(root: Root = Root("/")) -> list[int] | None:
    for line in (root.read("proc/stat") or "").splitlines():
        if line.startswith("cpu "):
            return [int(v) for v in line.split()[1:]]
    return None


def machine_notes(before: list[int] | None, after: list[int] | None,
                   root: Root = Root("/")) -> list[str]:
    """Other load and hypervisor steal over the whole study, from /proc."""
    notes = []
    load = (root.read("proc/loadavg") or "").split()
    ncpu = os.cpu_count() or 1
    if load and float(load[0]) > ncpu:
        notes.append(f"load average {float(load[0]):.2f} on {ncpu} CPUs: other processes "
                     "competed with the benchmark")
    if before and after and len(before) >= 8 and len(after) >= 8:
        total = sum(after[:8]) - sum(before[:8])
        steal = (after[7] - before[7]) / total if total > 0 else 0.0
        if steal > 0.01:
            notes.append(f"the hypervisor stole {100 * steal:.1f}% of CPU time during the "
                         "benchmark: timings of a VM are noisy")
    return notes
