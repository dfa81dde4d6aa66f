"""Other processes off the benchmark CPUs with a cpuset, in cgroup v1 and v2, and back again.

The shield `cset shield` and BenchExec build: two cpusets beside the root one, perflab.system
(every CPU but the benchmark ones) and perflab.bench (the benchmark CPUs). Every process of the
root cpuset moves to perflab.system; a study's ``--tune`` moves itself (and so every copy it
spawns) into perflab.bench. Kernel threads bound to a CPU (PF_NO_SETAFFINITY: per-CPU kworkers,
ksoftirqd, migration) cannot move; the kernel refuses them, and they are counted and named.
In cgroup v2 processes live in leaf cgroups (systemd's slices): the top-level ones are narrowed
to the other CPUs through their cpuset.cpus (the old text kept), and the root cgroup's own
processes move to perflab.system as in v1. Reset moves every process of both cpusets back to the
root one, removes them, and writes back each narrowed cpuset.cpus and affinity.
"""

from __future__ import annotations

import errno
import os
import time
from typing import Any, Callable

from perflab.platform.owner import start_ticks
from perflab.platform.sysfs import Root, format_cpulist

SYSTEM, BENCH = "perflab.system", "perflab.bench"
PF_KTHREAD, PF_NO_SETAFFINITY = 0x00200000, 0x04000000


def find(root: Root) -> tuple[str | None, str]:
    """("v1" | "v2", mount point) of the cpuset controller, or (None, why there is none)."""
    v2 = None
    for line in (root.read("proc/mounts") or "").splitlines():
        f = line.split()
        if len(f) < 4:
            continue
        if f[2] == "cgroup" and "cpuset" in f[3].split(","):
            return "v1", f[1]
        if f[2] == "cgroup2" and v2 is None:
            v2 = f[1]
    if v2 is not None:
        if "cpuset" in (root.read(f"{v2}/cgroup.controllers") or "").split():
            return "v2", v2
        return None, f"cgroup v2 at {v2} has no cpuset controller (it is bound to a v1 hierarchy, or not built)"
    return None, "no cpuset controller mounted (no cgroup v1 cpuset, no cgroup v2)"


def _flags(root: Root, pid: str) -> int:
    text = root.read(f"proc/{pid}/stat") or ""
    try:
        return int(text[text.rindex(")") + 2:].split()[6])
    except (ValueError, IndexError):
        return 0


def _comm(root: Root, pid: str) -> str:
    return root.read(f"proc/{pid}/comm") or f"pid {pid}"


def _pids(root: Root, cgroup: str) -> list[str]:
    return [p for p in (root.read(f"{cgroup}/cgroup.procs") or "").split() if p.isdigit()]


def tune(root: Root, cpus: tuple[int, ...], others: list[int], state: dict[str, Any], sid: str,
         dry_run: bool, save: Callable[[], None]) -> tuple[str, str] | tuple[str, str, list[str]]:
    """Build the shield (recorded in ``state`` before each step); the knob's (status, text, more lines)."""
    kind, mount = find(root)
    if kind is None:
        return ("absent", mount)
    if not others:
        return ("kept", "no CPU left for the other processes outside the benchmark CPUs "
                                         "(give --cpus a subset, e.g. all but CPU 0)")
    where = f"{BENCH} = CPU {format_cpulist(cpus)}, {SYSTEM} = CPU {format_cpulist(others)} (cgroup {kind} at {mount})"
    movable, bound = _classify(root, mount)
    if dry_run:
        return ("dry-run", f"would make {where}: {len(movable)} processes would move; "
                                            f"{len(bound)} kernel threads cannot move", [_bound_line(bound, root)] if bound else [])
    rec = state.get("cpuset")
    if rec is not None and rec.get("session") != sid and root.isdir(f"{mount}/{BENCH}"):
        return ("kept", f"perflab's cpusets are already in place ({BENCH} = CPU "
                                         f"{root.read(f'{mount}/{BENCH}/cpuset.cpus')}): kept as they are "
                                         "('perflab machine reset' first to change their CPUs)")
    if rec is None and (root.isdir(f"{mount}/{BENCH}") or root.isdir(f"{mount}/{SYSTEM}")):
        # Made under another state file (another $PERFLAB_STATE_DIR): that one restores them.
        return ("kept", f"{mount}/{BENCH} exists, but perflab's state file here does not know it (made "
                        "under another PERFLAB_STATE_DIR?): left to the reset that made it", [])
    if rec is None:
        rec = state["cpuset"] = {"kind": kind, "mount": mount, "created": [], "narrowed": {},
                                 "subtree_added": False, "affinity": {}, "session": sid}
    save()
    if kind == "v2" and "cpuset" not in (root.read(f"{mount}/cgroup.subtree_control") or "").split():
        rec["subtree_added"] = True
        save()
        root.write(f"{mount}/cgroup.subtree_control", "+cpuset")
    mems = root.read(f"{mount}/cpuset.mems") or root.read(f"{mount}/cpuset.mems.effective") or "0"
    for name, cpu_list in ((SYSTEM, others), (BENCH, list(cpus))):
        path = f"{mount}/{name}"
        if name not in rec["created"]:
            rec["created"].append(name)
            save()
        if not root.isdir(path):
            root.mkdir(path)
        if kind == "v1" or root.exists(f"{path}/cpuset.mems") or not root.is_live:
            root.write(f"{path}/cpuset.mems", mems)
        root.write(f"{path}/cpuset.cpus", format_cpulist(cpu_list))
    other_groups = []
    if kind == "v2":
        for child in root.listdir(mount):
            path = f"{mount}/{child}"
            if child in (SYSTEM, BENCH) or not root.isdir(path) or root.read(f"{path}/cpuset.cpus") is None:
                continue
            if child not in rec["narrowed"]:
                rec["narrowed"][child] = root.read(f"{path}/cpuset.cpus") or ""
                save()
            root.write(f"{path}/cpuset.cpus", format_cpulist(others))
            other_groups.append(child)
    else:
        for child in root.listdir(mount):
            if child not in (SYSTEM, BENCH) and root.isdir(f"{mount}/{child}") and _pids(root, f"{mount}/{child}"):
                other_groups.append(f"{child} ({len(_pids(root, f'{mount}/{child}'))})")
    _remember_affinities(root, movable, rec)
    save()
    moved, refused, gone = 0, list(bound), 0
    for pid in movable:
        try:
            root.write(f"{mount}/{SYSTEM}/cgroup.procs", pid, append=True)
            moved += 1
        except OSError as exc:
            if exc.errno == errno.ESRCH:
                gone += 1
            else:
                refused.append(pid)
    text = f"made {where}: {moved} processes moved off CPU {format_cpulist(cpus)}"
    extra = [_bound_line([p for p in refused], root)] if refused else []
    if other_groups:
        extra.append(("narrowed to CPU " + format_cpulist(others) + ": " if kind == "v2" else
                      "processes in other cpusets, left as they are: ") + ", ".join(other_groups))
    return ("set", text + f"; {len(refused)} cannot move (kernel threads)" if refused else text,
                   [e for e in extra if e])


def _classify(root: Root, mount: str) -> tuple[list[str], list[str]]:
    """The root cpuset's processes: (movable, kernel threads bound to their CPUs)."""
    movable: list[str] = []
    bound: list[str] = []
    for pid in _pids(root, mount):
        (bound if _flags(root, pid) & PF_NO_SETAFFINITY else movable).append(pid)
    return movable, bound


def _bound_line(pids: list[str], root: Root | None = None) -> str:
    if not pids:
        return ""
    if root is None:
        return f"{len(pids)} kernel threads bound to their CPUs stay where they are"
    names = sorted({_comm(root, p) for p in pids})
    shown = ", ".join(names[:10]) + (f", ... ({len(names)} names)" if len(names) > 10 else "")
    return f"cannot move (the kernel refuses; per-CPU kernel threads): {shown}"


def _remember_affinities(root: Root, pids: list[str], rec: dict[str, Any]) -> None:
    """Affinities narrower than every CPU (taskset -c ...), restored after the move back: a cpuset
    move rewrites a task's affinity on kernels older than 6.2."""
    if not root.is_live:
        return
    everyone = set(os.sched_getaffinity(0)) | set(root.read_cpulist("sys/devices/system/cpu/online") or ())
    for pid in pids:
        for tid in root.listdir(f"proc/{pid}/task", r"\d+") or [pid]:
            try:
                aff = os.sched_getaffinity(int(tid))
            except OSError:
                continue
            if aff != everyone and tid not in rec["affinity"]:
                rec["affinity"][tid] = [start_ticks(root, int(tid)), sorted(aff)]


def enter(root: Root, rec: dict[str, Any]) -> str | None:
    """Move this process into perflab.bench; the cgroup it left (to go back to), or None."""
    here = _own_cgroup(root, rec)
    root.write(f"{rec['mount']}/{BENCH}/cgroup.procs", str(os.getpid()))
    return here


def leave(root: Root, rec: dict[str, Any], back: str | None) -> None:
    """Move this process back where it was (the root cpuset where that is gone)."""
    target = rec["mount"] + (back if back and root.isdir(rec["mount"] + back) else "")
    try:
        root.write(f"{target}/cgroup.procs", str(os.getpid()))
    except OSError:
        root.write(f"{rec['mount']}/cgroup.procs", str(os.getpid()))


def _own_cgroup(root: Root, rec: dict[str, Any]) -> str | None:
    if rec["kind"] == "v1":
        return root.read("proc/self/cpuset")
    for line in (root.read("proc/self/cgroup") or "").splitlines():
        if line.startswith("0::"):
            return line[3:]
    return None


def reset(root: Root, rec: dict[str, Any]) -> list[str]:
    """Undo the shield: processes back to the root cpuset, both cpusets gone, narrowed ones and
    affinities written back; what could not be undone, one line each."""
    mount, problems = rec["mount"], []
    for name in (BENCH, SYSTEM):
        path = f"{mount}/{name}"
        if name not in rec.get("created", []) or not root.isdir(path):
            continue
        # A process forked while the last ones move is born inside: move until none is left.
        for _ in range(20):
            pids = _pids(root, path)
            for pid in pids:
                try:
                    root.write(f"{mount}/cgroup.procs", pid, append=True)
                except OSError as exc:
                    if exc.errno != errno.ESRCH:
                        problems.append(f"cannot move pid {pid} ({_comm(root, pid)}) out of {name}: {exc.strerror}")
            try:
                root.rmdir(path)
                break
            except OSError as exc:
                if exc.errno not in (errno.EBUSY, errno.ENOTEMPTY):
                    problems.append(f"cannot remove {path}: {exc.strerror}")
                    break
                time.sleep(0.05)
        else:
            problems.append(f"cannot remove {path}: processes keep appearing in it")
    for child, old in (rec.get("narrowed") or {}).items():
        try:
            root.write(f"{mount}/{child}/cpuset.cpus", old)
        except OSError as exc:
            problems.append(f"cannot write back {mount}/{child}/cpuset.cpus ({old!r}): {exc.strerror}")
    if rec.get("subtree_added"):
        try:
            root.write(f"{mount}/cgroup.subtree_control", "-cpuset")
        except OSError as exc:
            problems.append(f"cannot disable the cpuset controller again in {mount}: {exc.strerror}")
    _restore_affinities(root, rec.get("affinity") or {})
    return problems


def _restore_affinities(root: Root, saved: dict[str, list]) -> None:
    for tid, (start, cpus) in saved.items():
        if start_ticks(root, int(tid)) != start:
            continue  # gone, or another process under a reused id
        try:
            if os.sched_getaffinity(int(tid)) != set(cpus):
                os.sched_setaffinity(int(tid), cpus)
        except OSError:
            pass
