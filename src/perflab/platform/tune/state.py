"""What `perflab machine tune` changed, kept in a state file, and the machine state every campaign records.

The state file is written before the first change and rewritten after each knob, so a tune
killed half-way, or a machine tuned and never reset, is restored by `perflab machine reset`. It
lives in $PERFLAB_STATE_DIR (tests point it elsewhere), else /run/perflab: /run is emptied at
boot, as the tuned values are. Each entry carries the tune session that made it, so a study's
``--tune`` on a machine already tuned restores its own changes and leaves the earlier ones.
This module is on every command's start-up path (one stat of the file): os and json only.
"""

from __future__ import annotations

import json
import os
import time
from typing import Any

from perflab.errors import PerflabError
from perflab.platform import owner
from perflab.platform.sysfs import Root

VERSION = 1
STATE_NAME = "tune.json"
DIFFERS = "the campaigns ran under different machine states"

# The knobs a campaign records as its machine state (label "machine_state"): file, how to read it.
# Per-CPU knobs (governor, minimum frequency) are read for CPUs 0 and the last, a sample that
# keeps this cheap on a 256-CPU node and still shows a tuned benchmark CPU beside an untuned one.
STATE_FILES = {
    "aslr": "proc/sys/kernel/randomize_va_space",
    "perf_event_max_sample_rate": "proc/sys/kernel/perf_event_max_sample_rate",
    "nmi_watchdog": "proc/sys/kernel/nmi_watchdog",
    "irq_default_affinity": "proc/irq/default_smp_affinity",
    "intel_no_turbo": "sys/devices/system/cpu/intel_pstate/no_turbo",
    "cpufreq_boost": "sys/devices/system/cpu/cpufreq/boost",
    "thp": "sys/kernel/mm/transparent_hugepage/enabled",
    "smt": "sys/devices/system/cpu/smt/control",
}


def state_dir() -> str:
    """$PERFLAB_STATE_DIR, else /run/perflab (else /var/tmp/perflab where there is no /run)."""
    env = os.environ.get("PERFLAB_STATE_DIR")
    if env:
        return env
    return "/run/perflab" if os.path.isdir("/run") else "/var/tmp/perflab"


def state_path() -> str:
    return os.path.join(state_dir(), STATE_NAME)


def load() -> dict[str, Any] | None:
    """The state file's content, or None where this machine is not tuned by perflab."""
    try:
        with open(state_path(), encoding="utf-8") as fh:
            state = json.load(fh)
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise PerflabError(f"cannot read perflab's tune state {state_path()}: {exc}; restore the "
                           "machine by hand and remove the file") from None
    return state if isinstance(state, dict) else None


def save(state: dict[str, Any]) -> None:
    """Write the state atomically (a kill between two writes leaves the old or the new, whole)."""
    os.makedirs(state_dir(), exist_ok=True)
    tmp = state_path() + f".{os.getpid()}.tmp"
    with open(tmp, "w", encoding="utf-8") as fh:
        json.dump(state, fh, indent=1)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, state_path())


def clear() -> None:
    try:
        os.unlink(state_path())
    except FileNotFoundError:
        pass


def stale(state: dict[str, Any], root: Root = Root()) -> bool:
    """True where the state was written in an earlier boot: the kernel forgot those values."""
    return state.get("boot") != root.read("proc/sys/kernel/random/boot_id")


def sessions_gone(state: dict[str, Any]) -> list[dict[str, Any]]:
    """The study sessions (``--tune``) whose perflab is gone but whose changes are still in place."""
    out = []
    for s in state.get("sessions", []):
        if s.get("kind") == "study" and (owner.alive(s.get("owner")) is False or _zombie(s.get("owner"))):
            out.append(s)
    return out


def _zombie(who: Any) -> bool:
    """A process killed but not yet reaped (state Z): gone, though its /proc entry still reads."""
    if not isinstance(who, dict) or owner.alive(who) is not True:
        return False
    text = Root().read(f"proc/{who['pid']}/stat") or ""
    return ")" in text and text[text.rindex(")") + 2:][:1] == "Z"


def since_text(state: dict[str, Any]) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(state.get("since", 0)))


def tuned_line(state: dict[str, Any]) -> str:
    """One line: tuned since when, by what, and which knobs."""
    by = ", ".join(f"'{s['command']}' (pid {(s.get('owner') or {}).get('pid', '?')})"
                   for s in state.get("sessions", []))
    knobs = sorted({e["knob"] for e in state.get("files", [])} | ({"cpuset"} if state.get("cpuset") else set()))
    return (f"tuned by perflab since {since_text(state)} by {by or 'perflab'}: {', '.join(knobs) or 'nothing'} "
            "('perflab machine reset' restores it)")


def tuned_lines(state: dict[str, Any], root: Root, per_knob: int = 3) -> list[str]:
    """What `perflab machine` lists under the tuned line: per knob its first files, was -> now."""
    out: list[str] = []
    by_knob: dict[str, list[dict]] = {}
    for e in state.get("files", []):
        by_knob.setdefault(e["knob"], []).append(e)
    for knob, entries in by_knob.items():
        for e in entries[:per_knob]:
            out.append(f"  {knob}: /{e['path']} was {e['old']}, now {root.read(e['path'])}")
        if len(entries) > per_knob:
            out.append(f"  {knob}: ... and {len(entries) - per_knob} more files")
    rec = state.get("cpuset")
    if rec:
        for name in rec.get("created", []):
            path = f"{rec['mount']}/{name}"
            procs = len((root.read(f"{path}/cgroup.procs") or "").split())
            out.append(f"  cpuset: {path} CPUs {root.read(f'{path}/cpuset.cpus')}, {procs} processes")
    return out


def startup_warning() -> str | None:
    """The line every perflab command prints while a killed study's tuning is still in place."""
    if not os.path.exists(state_path()):
        return None
    try:
        state = load()
    except Exception:  # noqa: BLE001 - a warning must never stop a command; reset says more
        return None
    if not state:
        return None
    if stale(state):
        return None
    gone = sessions_gone(state)
    if not gone:
        return None
    s = gone[0]
    return (f"perflab: warning: this machine is still tuned by '{s['command']}' (pid "
            f"{(s.get('owner') or {}).get('pid', '?')}, gone without restoring it) since "
            f"{since_text(state)}: 'perflab machine reset' restores it")


def machine_state(root: Root = Root()) -> dict[str, Any]:
    """What a campaign records of the machine it ran under: tuned or not, and each knob's value."""
    knobs: dict[str, Any] = {}
    for name, rel in STATE_FILES.items():
        value = root.read(rel)
        if value is not None:
            # THP's file lists every mode: the bracketed one is in use
            knobs[name] = value[value.index("[") + 1:value.index("]")] if "[" in value and "]" in value else value
    cpus = root.read("sys/devices/system/cpu/online") or ""
    last = cpus.replace(",", "-").split("-")[-1] if cpus else "0"
    for cpu in dict.fromkeys(("0", last)):
        base = f"sys/devices/system/cpu/cpu{cpu}/cpufreq"
        for f in ("scaling_governor", "scaling_min_freq"):
            value = root.read(f"{base}/{f}")
            if value is not None:
                knobs[f"cpu{cpu}_{f}"] = value
    cpuset = root.read("proc/self/cpuset") if root.is_live else None
    if cpuset is not None:
        knobs["cpuset"] = cpuset
    out: dict[str, Any] = {"tuned": False, "knobs": knobs}
    state = _quiet_load()
    if state and not stale(state, root):
        out["tuned"] = True
        out["since"] = since_text(state)
        out["changed"] = sorted({e["knob"] for e in state.get("files", [])}
                                | ({"cpuset"} if state.get("cpuset") else set()))
    return out


def _quiet_load() -> dict[str, Any] | None:
    if not os.path.exists(state_path()):
        return None
    try:
        return load()
    except Exception:  # noqa: BLE001 - an unreadable file is named by 'perflab machine'
        return None


def difference(a: dict[str, Any] | None, b: dict[str, Any] | None) -> str | None:
    """One line naming how two campaigns' machine states differ (None: same, or not recorded)."""
    if not isinstance(a, dict) or not isinstance(b, dict):
        return None
    parts = []
    if bool(a.get("tuned")) != bool(b.get("tuned")):
        parts.append(f"A {'tuned' if a.get('tuned') else 'untuned'}, B {'tuned' if b.get('tuned') else 'untuned'}")
    ka, kb = a.get("knobs") or {}, b.get("knobs") or {}
    for key in sorted(set(ka) | set(kb)):
        if key in ka and key in kb and ka[key] != kb[key]:
            parts.append(f"{key} {ka[key]} vs {kb[key]}")
    if not parts:
        return None
    return (f"{DIFFERS} (" + "; ".join(parts)
            + "): part of a difference may be the machine's")


def summary(ms: dict[str, Any] | None) -> str | None:
    """A campaign's machine state in one line (None where it recorded none: an older perflab)."""
    if not isinstance(ms, dict):
        return None
    knobs = ms.get("knobs") or {}
    shown = ", ".join(f"{k} {v}" for k, v in knobs.items())
    head = (f"tuned by perflab (since {ms.get('since')}; changed: {', '.join(ms.get('changed') or [])})"
            if ms.get("tuned") else "not tuned by perflab")
    return f"{head}; {shown}" if shown else head
