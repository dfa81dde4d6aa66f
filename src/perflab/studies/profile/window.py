"""The profile study's window logic: markers, the perf event, attach targets, window figures.

Recording itself (perf record and the workload or the running job) is in measure/window.py;
this module decides what to record and describes what a recording's window was.
"""

from __future__ import annotations

import os
import re
from typing import Any

from perflab.errors import PerflabError
from perflab.measure.window import Window, WindowRecording
from perflab.platform.machine import Machine
from perflab.platform.sysfs import Root

__all__ = ["Window", "event_markers", "compile_marker", "choose_event", "attach_targets",
           "window_figures", "check_log_dir"]


def event_markers(n: int) -> tuple[str, str]:
    """Start/stop regexes of event N for minihlt and Athena-style logs (#7 must not match #73)."""
    return (rf"start processing event #{n}(?!\d)", rf"done processing event #{n}(?!\d)")


def compile_marker(regex: str | None, option: str) -> re.Pattern[str] | None:
    """Compile a marker regex or raise a one-line PerflabError naming the option."""
    if regex is None:
        return None
    try:
        return re.compile(regex)
    except re.error as exc:
        raise PerflabError(
            f"{option} {regex!r} is not a valid regular expression ({exc}); "
            "fix it or escape special characters, e.g. 'event \\#7'"
        ) from None


def choose_event(requested: str | None, machine: Machine) -> tuple[str, str]:
    """(event, one-line reason): hardware cycles where the PMU counts them, else cpu-clock."""
    if requested:
        return requested, f"event {requested} (as asked)"
    probe = (machine.metadata.get("probes") or {}).get("hw_counters") or {}
    if probe.get("available"):
        return "cycles", "event cycles (the PMU counts cycles here)"
    why = probe.get("reason") or "no hardware counter probe"
    return "cpu-clock", f"event cpu-clock: no hardware cycles counter here ({why})"


def check_log_dir(log_file: str | None) -> None:
    """A log in a directory that does not exist is a typo: nothing could ever write it."""
    if log_file and not os.path.isdir(os.path.dirname(os.path.abspath(log_file))):
        raise PerflabError(f"--log {log_file}: directory {os.path.dirname(os.path.abspath(log_file))} "
                           "does not exist; give the path of the log file the job writes")


def _uid(root: Root, pid: int) -> int | None:
    for line in (root.read(f"proc/{pid}/status") or "").splitlines():
        if line.startswith("Uid:"):
            return int(line.split()[1])
    return None


def _children(root: Root, pid: int) -> list[int]:
    """Direct children of pid: /proc/PID/task/TID/children, else a scan of every /proc/N/stat."""
    tasks = root.listdir(f"proc/{pid}/task", r"\d+")
    texts = [root.read(f"proc/{pid}/task/{t}/children") for t in tasks]
    if tasks and all(t is not None for t in texts):
        return sorted({int(c) for t in texts for c in (t or "").split()})
    out = []
    for n in root.listdir("proc", r"\d+"):
        stat = root.read(f"proc/{n}/stat") or ""
        # comm may hold spaces and parentheses: the ppid is the 2nd field after the last ")".
        rest = stat[stat.rfind(")") + 1:].split()
        if len(rest) >= 2 and rest[1] == str(pid):
            out.append(int(n))
    return out


def attach_targets(pid: int, children: bool, root: Root = Root("/"), uid: int | None = None) -> tuple[int, ...]:
    """The processes to attach perf to: pid, and with `children` its descendants now running."""
    if pid <= 0 or not root.isdir(f"proc/{pid}"):
        raise PerflabError(f"--pid {pid}: no such process; give the PID of a running job (see ps or pgrep)")
    me = os.getuid() if uid is None else uid
    owner = _uid(root, pid)
    if me != 0 and owner is not None and owner != me:
        raise PerflabError(f"--pid {pid} is not yours (uid {owner}, you are {me}): perf may only attach "
                           "to your own processes; run as that user or as root")
    if not children:
        return (pid,)
    found, todo = [pid], [pid]
    while todo:
        for c in _children(root, todo.pop()):
            if c not in found:
                found.append(c)
                todo.append(c)
    return tuple(found)


def window_figures(rec: WindowRecording, first_ns: int | None, outside: int) -> dict[str, Any]:
    """What one recording's window was, its latencies (us), and samples outside it (should be 0)."""
    row: dict[str, Any] = {
        "perf_data": rec.perf_data, "exit_code": rec.exit_code, "opened": rec.opened,
        "start_line": rec.start_line, "stop_line": rec.stop_line, "closed_by": rec.closed_by,
        "enable_latency_us": rec.enable_latency_ns / 1e3 if rec.enable_latency_ns is not None else None,
        "disable_latency_us": rec.disable_latency_ns / 1e3 if rec.disable_latency_ns is not None else None,
        "enable_sent_ns": rec.enable_sent_ns, "enabled_ns": rec.enabled_ns, "disabled_ns": rec.disabled_ns,
        "start_marker_ns": rec.start_marker_ns, "stop_marker_ns": rec.stop_marker_ns,
        "outside_window": outside, "attached": list(rec.attached),
    }
    if rec.enabled_ns is not None and rec.disabled_ns is not None:
        row["window_ms"] = (rec.disabled_ns - rec.enabled_ns) / 1e6
    if rec.start_marker_ns is not None and first_ns is not None:
        # perf enables before it acknowledges; the first sample shows when it really started.
        row["first_sample_us"] = (first_ns - rec.start_marker_ns) / 1e3
    return row
