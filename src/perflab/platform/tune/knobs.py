"""Prepare the machine for benchmarking, and undo it: the knobs of `perflab machine tune` and `reset`.

The knobs follow pyperf's `system tune` (perf sample rate, minimum frequency raised to the
maximum, turbo off through intel_pstate/no_turbo or cpufreq/boost, the performance governor,
IRQ affinity off the benchmark CPUs, a check of isolcpus/nohz_full/rcu_nocbs) and BenchExec's
confinement (platform/cpuset.py: every other process moved off the benchmark CPUs with a
cpuset), plus ASLR off, SMT siblings offline (``smt_off``) and THP (``thp``) where asked.
A knob is planned, recorded in the state file (platform/tune/state.py), then applied, one after
the other: a tune killed at any point leaves a state file that names every value it may have
changed, with the value it had before perflab first touched it. A knob this machine lacks is
named as such ("absent"), never an error.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from typing import Any

from perflab.errors import PerflabError
from perflab.platform import cpuset, owner
from perflab.platform.tune import state as tune_state
from perflab.platform.sysfs import Root, format_cpulist, parse_cpulist, parse_cpumask

KNOBS = ("turbo", "governor", "min_freq", "aslr", "perf_rate", "thp", "smt", "irq", "cpuset", "isolation")
CPU = "sys/devices/system/cpu"
THP = "sys/kernel/mm/transparent_hugepage/enabled"


@dataclass(frozen=True)
class TuneOptions:
    """What to tune: the benchmark CPUs, which knobs (None: all), SMT and THP only when asked."""

    cpus: tuple[int, ...]
    only: frozenset[str] | None = None
    smt_off: bool = False
    thp: str | None = None
    dry_run: bool = False

    def wants(self, knob: str) -> bool:
        return self.only is None or knob in self.only


@dataclass
class Change:
    """One file write: the value before (restored by reset), the value set, and the item it is for."""

    knob: str
    path: str
    old: str
    new: str
    item: str = ""
    new_from: str = ""  # read the value to set from this file when applied (after earlier knobs)
    error: str = ""


@dataclass
class Outcome:
    """One line of `perflab machine tune`: a knob, what happened, and why."""

    knob: str
    status: str  # set | already | absent | kept | failed | partial | check | dry-run
    text: str
    extra: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {"knob": self.knob, "status": self.status, "text": self.text, "extra": self.extra}


WHY = {
    "turbo": "turbo makes the clock depend on temperature and on the other cores' load",
    "governor": "the performance governor keeps the clock from ramping with load between runs",
    "min_freq": "the minimum frequency raised to the maximum: no ramp-up at each run's start",
    "aslr": "ASLR off: every run of a binary gets the same address layout (its spread goes; its "
            "bias, one layout's luck, stays)",
    "perf_rate": "perf's sampling interrupts at up to this rate per second steal time from the benchmark",
    "thp": "transparent huge pages set as asked",
    "smt": "an SMT sibling shares its core's execution units with the benchmark CPU",
    "irq": "interrupts handled on the benchmark CPUs interrupt the benchmark",
}


def default_cpus(root: Root) -> tuple[int, ...]:
    """The isolated CPUs where the kernel isolates some, else every online CPU but the first (the
    rest of the system keeps it), else the one CPU."""
    online = root.read_cpulist(f"{CPU}/online") or [0]
    isolated = [c for c in (root.read_cpulist(f"{CPU}/isolated") or []) if c in online]
    if isolated:
        return tuple(isolated)
    return tuple(online[1:]) if len(online) > 1 else tuple(online)


def check_root(root: Root, what: str, hint: str = "") -> None:
    """One line and exit 2 where this process may not change the live machine."""
    if root.is_live and os.geteuid() != 0:
        raise PerflabError(f"{what} writes /proc/sys, /sys and cgroups: run it as root (sudo {what}){hint}")


def _cpufreq(root: Root, cpus: tuple[int, ...]) -> list[tuple[int, str]]:
    """(cpu, cpufreq dir) for the benchmark CPUs that have one, one per frequency policy."""
    out, seen = [], set()
    for c in cpus:
        d = f"{CPU}/cpu{c}/cpufreq"
        if not root.isdir(d):
            continue
        key = os.path.realpath(root.join(d))
        if key not in seen:
            seen.add(key)
            out.append((c, d))
    return out


def plan_files(knob: str, root: Root, opts: TuneOptions, others: list[int]) -> tuple[list[Change], str]:
    """The file writes of a file knob, or ([], why there is nothing to change)."""
    cpus = opts.cpus
    if knob in ("governor", "min_freq"):
        dirs = _cpufreq(root, cpus)
        if not dirs:
            return [], "absent: no cpufreq for the benchmark CPUs (a guest, or no frequency driver loaded)"
        out = []
        for c, d in dirs:
            if knob == "governor":
                avail = (root.read(f"{d}/scaling_available_governors") or "").split()
                old = root.read(f"{d}/scaling_governor")
                if old is not None and "performance" in avail:
                    out.append(Change(knob, f"{d}/scaling_governor", old, "performance", item=str(c)))
            else:
                old = root.read(f"{d}/scaling_min_freq")
                if old is not None:
                    out.append(Change(knob, f"{d}/scaling_min_freq", old, root.read(f"{d}/scaling_max_freq") or old,
                                      item=str(c), new_from=f"{d}/scaling_max_freq"))
        return out, "" if out else "absent: no performance governor offered"
    if knob == "turbo":
        if root.read(f"{CPU}/intel_pstate/no_turbo") is not None:
            return [Change(knob, f"{CPU}/intel_pstate/no_turbo", root.read(f"{CPU}/intel_pstate/no_turbo") or "", "1")], ""
        if root.read(f"{CPU}/cpufreq/boost") is not None:
            return [Change(knob, f"{CPU}/cpufreq/boost", root.read(f"{CPU}/cpufreq/boost") or "", "0")], ""
        per = [Change(knob, f"{d}/boost", root.read(f"{d}/boost") or "", "0", item=str(c))
               for c, d in _cpufreq(root, cpus) if root.read(f"{d}/boost") is not None]
        return per, "" if per else "absent: no intel_pstate/no_turbo, cpufreq/boost or per-policy boost here"
    if knob == "aslr":
        old = root.read("proc/sys/kernel/randomize_va_space")
        return ([Change(knob, "proc/sys/kernel/randomize_va_space", old, "0")] if old is not None
                else []), "absent: no /proc/sys/kernel/randomize_va_space"
    if knob == "perf_rate":
        old = root.read("proc/sys/kernel/perf_event_max_sample_rate")
        return ([Change(knob, "proc/sys/kernel/perf_event_max_sample_rate", old, "1")] if old is not None
                else []), "absent: no perf events in this kernel"
    if knob == "thp":
        text = root.read(THP)
        if text is None:
            return [], "absent: no transparent huge pages in this kernel"
        cur = bracketed(text)
        if opts.thp is None:
            return [], f"kept: {cur}, recorded, not changed (--thp MODE changes it)"
        if opts.thp not in text.replace("[", " ").replace("]", " ").split():
            raise PerflabError(f"--thp {opts.thp}: this kernel offers {text}; give one of those")
        return [Change(knob, THP, cur or "", opts.thp)], ""
    if knob == "smt":
        siblings = smt_siblings(root, cpus)
        if not siblings:
            return [], "absent: the benchmark CPUs have no SMT sibling online outside them"
        if not opts.smt_off:
            return [], f"kept: siblings {format_cpulist(siblings)} stay online (--smt-off takes them offline)"
        return [Change(knob, f"{CPU}/cpu{c}/online", root.read(f"{CPU}/cpu{c}/online") or "1", "0", item=str(c))
                for c in siblings], ""
    if knob == "irq":
        if not others:
            return [], "kept: no CPU left for interrupts outside the benchmark CPUs (give --cpus a subset)"
        out = []
        default = root.read("proc/irq/default_smp_affinity")
        if default is not None:
            mask = format_cpumask(others, default)
            if set(parse_cpumask(default)) != set(others):
                out.append(Change(knob, "proc/irq/default_smp_affinity", default, mask, item="default"))
        for irq in root.listdir("proc/irq", r"\d+"):
            rel = f"proc/irq/{irq}/smp_affinity_list"
            old = root.read(rel)
            if old is None:
                continue
            try:
                now = set(parse_cpulist(old))
            except ValueError:
                continue
            if now & set(cpus):
                out.append(Change(knob, rel, old, format_cpulist(others), item=irq))
        return out, "" if out else "already: no interrupt is routed to the benchmark CPUs"
    raise AssertionError(knob)


def _irqbalance(root: Root) -> list[str]:
    """A line where irqbalance runs: it spreads interrupts over every CPU again."""
    pids = [p for p in root.listdir("proc", r"\d+") if root.read(f"proc/{p}/comm") == "irqbalance"]
    if not pids:
        return []
    return [f"irqbalance runs (pid {pids[0]}): it moves interrupts back onto the benchmark CPUs; stop it "
            "while benchmarking (systemctl stop irqbalance)"]


def bracketed(text: str | None) -> str | None:
    """'always [madvise] never' -> 'madvise'."""
    if not text or "[" not in text:
        return text
    return text[text.index("[") + 1:text.index("]")]


def format_cpumask(cpus: list[int], like: str) -> str:
    """CPUs as a hex mask in the kernel's comma-separated 32-bit words, as wide as ``like``."""
    value = sum(1 << c for c in cpus)
    words = max(len(like.split(",")), (max(cpus) // 32 + 1) if cpus else 1)
    width = len(like.split(",")[-1]) if like else 8
    parts = [f"{(value >> (32 * i)) & 0xFFFFFFFF:0{width if i == 0 else 8}x}" for i in range(words)]
    return ",".join(reversed(parts))


def smt_siblings(root: Root, cpus: tuple[int, ...]) -> list[int]:
    """Online SMT siblings of the benchmark CPUs that are not benchmark CPUs themselves."""
    online = set(root.read_cpulist(f"{CPU}/online") or ())
    out: set[int] = set()
    for c in cpus:
        sib = root.read_cpulist(f"{CPU}/cpu{c}/topology/thread_siblings_list") or []
        out.update(s for s in sib if s not in cpus and s in online)
    return sorted(out)


def isolation_line(root: Root, cpus: tuple[int, ...]) -> Outcome:
    """A check, no change: are the benchmark CPUs isolated on the kernel command line?"""
    args = dict(a.partition("=")[::2] for a in (root.read("proc/cmdline") or "").split())
    found = {}
    for key in ("isolcpus", "nohz_full", "rcu_nocbs"):
        # isolcpus may lead with flags: isolcpus=nohz,domain,2-7
        text = ",".join(t for t in args.get(key, "").split(",") if t[:1].isdigit())
        try:
            found[key] = set(parse_cpulist(text))
        except ValueError:
            found[key] = set()
    want = format_cpulist(cpus)
    missing = [k for k, v in found.items() if not set(cpus) <= v]
    if not missing:
        return Outcome("isolation", "check", f"CPU {want} isolated (isolcpus, nohz_full, rcu_nocbs)")
    return Outcome("isolation", "check",
                   f"CPU {want} not in {', '.join(missing)} of the kernel command line: the scheduler's "
                   f"tick and RCU callbacks still visit it (boot with {' '.join(f'{k}={want}' for k in missing)} "
                   "to isolate it; perflab cannot change that without a reboot)")


def new_session(command: str, kind: str, opts: TuneOptions) -> dict[str, Any]:
    """A tune session: what ran it and which process (a study's is restored by that study)."""
    me = owner.identity()
    sid = f"{os.getpid()}-{time.time_ns()}"  # one process may tune more than once
    return {"id": sid, "kind": kind, "command": command, "owner": me, "cpus": list(opts.cpus),
            "started": time.time()}


def tune(root: Root, opts: TuneOptions, command: str = "perflab machine tune",
         kind: str = "manual", session: dict[str, Any] | None = None) -> list[Outcome]:
    """Tune knob by knob (each recorded before it is applied); (outcome lines, session id)."""
    unknown = sorted((opts.only or set()) - set(KNOBS))
    if unknown:
        raise PerflabError(f"--only {','.join(unknown)}: no such knob; knobs are {','.join(KNOBS)}")
    online = root.read_cpulist(f"{CPU}/online") or list(opts.cpus)
    bad = [c for c in opts.cpus if c not in online]
    if bad:
        raise PerflabError(f"--cpus: CPU {format_cpulist(bad)} is not online (online: {format_cpulist(online)})")
    if not opts.dry_run:
        check_root(root, command, "; --dry-run shows what it would change" if kind == "manual" else "")
    state = tune_state.load() if not opts.dry_run else None
    if state is not None and tune_state.stale(state, root):
        state = None  # written before this boot: the kernel has forgotten those values
    if state is None:
        state = {"version": tune_state.VERSION, "root": os.path.abspath(root.path), "boot": root.read("proc/sys/kernel/random/boot_id"),
                 "since": time.time(), "sessions": [], "files": [], "cpuset": None}
    elif os.path.realpath(state.get("root", "/")) != os.path.realpath(root.path):
        raise PerflabError(f"perflab's tune state {tune_state.state_path()} is for {state.get('root')}, not "
                           f"{root.path}: reset that first ('perflab machine reset')")
    session = session or new_session(command, kind, opts)
    state["sessions"].append(session)
    smt_gone = smt_siblings(root, opts.cpus) if opts.smt_off and opts.wants("smt") else []
    others = [c for c in online if c not in opts.cpus and c not in smt_gone]
    lines: list[Outcome] = []
    for knob in KNOBS:
        if not opts.wants(knob):
            continue
        if knob == "isolation":
            lines.append(isolation_line(root, opts.cpus))
        elif knob == "cpuset":
            try:
                lines.append(Outcome("cpuset", *cpuset.tune(root, opts.cpus, others, state, session["id"],
                                                             opts.dry_run, lambda: _save(state, opts))))
            except OSError as exc:
                # What was made is in the state file already: reset removes it.
                lines.append(Outcome("cpuset", "failed", f"cannot build the cpusets: {exc.strerror} "
                                                         f"({exc.filename or 'cgroup'}); 'perflab machine reset' "
                                                         "removes what was made"))
        else:
            changes, why = plan_files(knob, root, opts, others)
            lines.append(_apply(knob, changes, why, state, session["id"], opts, root))
            if knob == "irq":
                lines[-1].extra += _irqbalance(root)
    _save(state, opts)
    return lines


def _save(state: dict[str, Any], opts: TuneOptions) -> None:
    if not opts.dry_run:
        tune_state.save(state)


def _apply(knob: str, changes: list[Change], why: str, state: dict, sid: str, opts: TuneOptions,
           root: Root) -> Outcome:
    if not changes:
        return Outcome(knob, why.split(":")[0], why.split(": ", 1)[-1])
    recorded = {e["path"] for e in state["files"]}
    for ch in changes:
        if ch.path not in recorded:  # a second tune keeps the value perflab first found
            state["files"].append({"knob": knob, "path": ch.path, "old": ch.old, "new": ch.new,
                                   "item": ch.item, "session": sid})
    _save(state, opts)  # recorded before the first write
    for ch in changes:
        if opts.dry_run:
            continue
        if ch.new_from:
            ch.new = root.read(ch.new_from) or ch.new
        try:
            if root.read(ch.path) != ch.new:
                root.write(ch.path, ch.new)
        except OSError as exc:
            ch.error = exc.strerror or str(exc)
    # A value the kernel refused to change is not perflab's to restore.
    refused = {(c.path, c.old) for c in changes if c.error and root.read(c.path) == c.old}
    state["files"] = [e for e in state["files"] if not (e["session"] == sid and (e["path"], e["old"]) in refused)]
    return describe(knob, changes, opts.dry_run)


def describe(knob: str, changes: list[Change], dry_run: bool) -> Outcome:
    """'old -> new' per distinct pair, with the CPUs or IRQs it applies to, and why."""
    already = [c for c in changes if not c.error and c.old == c.new]
    if len(already) == len(changes):
        return Outcome(knob, "already", f"{changes[0].new} already ({path_pattern([c.path for c in changes])})")
    done = [c for c in changes if not c.error and c.old != c.new]
    failed = [c for c in changes if c.error]
    groups: dict[tuple[str, str], list[str]] = {}
    for c in done:
        groups.setdefault((c.old, c.new), []).append(c.item)
    verb = "would set" if dry_run else "set"
    parts = []
    for (old, new), items in groups.items():
        where = _items(knob, items)
        parts.append(f"{old} -> {new}{where}")
    path = path_pattern([c.path for c in changes])
    text = f"{'; '.join(parts)} ({path}): {WHY.get(knob, '')}" if parts else ""
    extra = []
    if failed:
        errors = sorted({c.error for c in failed})
        extra.append(f"{len(failed)} cannot change{_items(knob, [c.item for c in failed], 12) or ' (' + path + ')'}: "
                     f"{'; '.join(errors)} (left as they are)")
    status = ("dry-run" if dry_run else "partial" if failed and done else "failed" if failed else "set")
    if not parts:
        text = extra.pop(0) if extra else ""
    return Outcome(knob, status, f"{verb}: {text}" if parts else text, extra)


def _items(knob: str, items: list[str], limit: int = 8) -> str:
    items = [i for i in items if i]
    if not items:
        return ""
    if knob == "irq":
        irqs = [i for i in items if i != "default"]
        shown = ", ".join(irqs[:limit]) + (f", ... ({len(irqs)} IRQs)" if len(irqs) > limit else "")
        return (" (default" + (", IRQ " + shown if irqs else "") + ")") if "default" in items else f" (IRQ {shown})"
    return f" (CPU {format_cpulist([int(i) for i in items])})"


def path_pattern(paths: list[str]) -> str:
    """The files changed, numbers as N: /proc/irq/N/smp_affinity_list."""
    import re

    shown = dict.fromkeys("/" + re.sub(r"(?<=/)(cpu|policy)?\d+(?=/)", r"\1N", p.lstrip("/")) for p in paths)
    return ", ".join(shown)
