"""Undo `perflab machine tune` from its state file, and a study's ``--tune``: tune, run, reset.

Reset writes back the value each file had before perflab first changed it (the state file keeps
it, whatever ran since), SMT siblings first (the other values may name their CPUs), then the
cpusets, then the rest in the reverse order of the tune. Each value is read back: what could not
be restored stays in the state file and is named, so a second reset tries again.
"""

from __future__ import annotations

import os
import signal
import threading
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

from perflab.errors import PerflabError
from perflab.platform import cpuset
from perflab.platform.tune import state as tune_state
from perflab.platform.sysfs import Root, format_cpulist
from perflab.platform.tune.knobs import KNOBS, Outcome, TuneOptions, bracketed, check_root, new_session, path_pattern, tune


@dataclass
class ResetReport:
    """What reset did: one line per knob restored, problems, and whether perflab's state is gone."""

    tuned: bool
    lines: list[Outcome] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    note: str = ""


def _same(current: str | None, old: str) -> bool:
    return current == old or (current is not None and "[" in current and bracketed(current) == old)


def reset(session: str | None = None) -> ResetReport:
    """Restore what perflab tuned (only ``session``'s changes when given: a study's own)."""
    state = tune_state.load()
    if state is None:
        return ResetReport(False, note="this machine is not tuned by perflab: nothing to restore")
    root = Root(state.get("root", "/"))
    if tune_state.stale(state, root):
        tune_state.clear()
        return ResetReport(False, note=f"perflab's tune state is from an earlier boot (tuned {tune_state.since_text(state)}): "
                                       "the kernel forgot those values at the reboot; state file removed")
    check_root(root, "perflab machine reset")
    mine = [e for e in state["files"] if session is None or e.get("session") == session]
    rec = state.get("cpuset")
    undo_cpuset = rec is not None and (session is None or rec.get("session") == session)
    report = ResetReport(True)
    done: dict[str, list[tuple[str, str, str]]] = {}
    kept: list[dict] = []
    for e in mine:
        if e["knob"] == "smt":
            _restore(root, e, done, kept, report)
    cpuset_problems = cpuset.reset(root, rec) if undo_cpuset and rec is not None else []
    report.problems += cpuset_problems
    for e in reversed(mine):
        if e["knob"] != "smt":
            _restore(root, e, done, kept, report)
    for knob in KNOBS:
        if knob in done:
            pairs = done[knob]
            shown = sorted({f"{new} -> {old}" for _, new, old in pairs})
            files = f"{len(pairs)} files: " if len(pairs) > 1 else ""
            report.lines.append(Outcome(knob, "restored", f"{'; '.join(shown)} ({files}"
                                        f"{path_pattern([p for p, _, _ in pairs])})"))
        if knob == "cpuset" and undo_cpuset and rec is not None:
            report.lines.append(Outcome("cpuset", "restored", f"{cpuset.BENCH} and {cpuset.SYSTEM} removed, their "
                                        f"processes back in the root cpuset ({rec['mount']})"))
    state["files"] = [e for e in state["files"] if e not in mine] + kept
    if undo_cpuset and not cpuset_problems:
        state["cpuset"] = None
    left = {e.get("session") for e in state["files"]} | ({state["cpuset"].get("session")} if state.get("cpuset") else set())
    state["sessions"] = [s for s in state.get("sessions", []) if s["id"] in left]
    if state["files"] or state.get("cpuset"):
        tune_state.save(state)
    else:
        tune_state.clear()
    return report


def _restore(root: Root, e: dict, done: dict, kept: list, report: ResetReport) -> None:
    current = root.read(e["path"])
    if _same(current, e["old"]):
        return  # never changed, or changed back by someone else: nothing to restore
    try:
        root.write(e["path"], e["old"])
    except OSError as exc:
        report.problems.append(f"{e['knob']}: cannot write {e['old']!r} back to /{e['path']}: {exc.strerror}")
        kept.append(e)
        return
    after = root.read(e["path"])
    if not _same(after, e["old"]):
        report.problems.append(f"{e['knob']}: /{e['path']} reads {after!r} after writing {e['old']!r} back")
        kept.append(e)
        return
    done.setdefault(e["knob"], []).append(("/" + e["path"] if root.is_live else e["path"], current or "", e["old"]))


@contextmanager
def tuned(root: Root, opts: TuneOptions, command: str, say: Callable[[str], None]) -> Iterator[list[Outcome]]:
    """Tune for one study, run it inside perflab.bench, and reset what this study tuned when it
    ends, also on Ctrl-C, SIGTERM and errors (a kill -9 leaves the state file for reset)."""
    session = new_session(command, "study", opts)
    previous = None
    if threading.current_thread() is threading.main_thread():
        previous = signal.signal(signal.SIGTERM, _terminated)
    entered, back, rec = False, None, None
    try:
        lines = tune(root, opts, command, kind="study", session=session)
        for line in lines:
            if line.status in ("set", "partial", "failed", "check"):
                say(f"tune: {line.knob}: {line.text}")
        quiet = [f"{line.knob} ({line.status})" for line in lines if line.status in ("absent", "kept", "already")]
        if quiet:
            say(f"tune: unchanged: {', '.join(quiet)} ('perflab machine tune --dry-run' says why)")
        rec = (tune_state.load() or {}).get("cpuset")
        if rec and root.isdir(f"{rec['mount']}/{cpuset.BENCH}"):
            back = cpuset.enter(root, rec)
            entered = True
            say(f"tune: this study and its runs are in {cpuset.BENCH} (CPU {root.read(rec['mount'] + '/' + cpuset.BENCH + '/cpuset.cpus')})")
        yield lines
    finally:
        if entered and rec is not None:
            try:
                cpuset.leave(root, rec, back)
            except OSError:
                pass  # reset moves every process out of perflab's cpusets anyway
        report = reset(session=session["id"])
        if report.tuned:
            say("tune: reset: " + ("; ".join(f"{o.knob} {o.text}" for o in report.lines) or "nothing this study changed"))
        for p in report.problems:
            say(f"tune: reset: {p}")
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


@contextmanager
def in_bench(root: Root, cpus: Any, say: Callable[[str], None]) -> Iterator[None]:
    """On a machine perflab has tuned, a study without --tune runs inside perflab.bench too (its
    processes were moved off the benchmark CPUs with everyone else's); elsewhere, nothing."""
    state = tune_state.load() if os.path.exists(tune_state.state_path()) else None
    rec = state.get("cpuset") if state and not tune_state.stale(state, root) else None
    bench = f"{rec['mount']}/{cpuset.BENCH}" if rec else ""
    if not rec or not root.isdir(bench):
        yield
        return
    assert state is not None  # rec came from it
    mine = tuple(root.read_cpulist(f"{bench}/cpuset.cpus") or ())
    if os.geteuid() != 0:
        say(f"tune: the machine is tuned ({tune_state.since_text(state)}), but only root may move this study "
            f"into {cpuset.BENCH} (CPU {format_cpulist(mine)}): it runs where it is")
        yield
        return
    check_study_cpus(cpus, mine)
    back = cpuset.enter(root, rec)
    say(f"tune: the machine is tuned (since {tune_state.since_text(state)}): this study and its runs are in "
        f"{cpuset.BENCH} (CPU {format_cpulist(mine)})")
    try:
        yield
    finally:
        try:
            cpuset.leave(root, rec, back)
        except OSError:
            pass  # reset moved it out already


def _terminated(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt()


def check_study_cpus(cpus: Any, tuned_cpus: tuple[int, ...]) -> None:
    """A study's CPUs must lie in the tuned ones: its runs are confined to them."""
    if cpus:
        outside = sorted(set(cpus) - set(tuned_cpus))
        if outside:
            raise PerflabError(f"--cpus names CPU {format_cpulist(outside)}, outside the tuned CPUs "
                               f"{format_cpulist(tuned_cpus)} its runs are confined to: give --tune-cpus "
                               f"{format_cpulist(sorted(set(cpus)))} or --cpus within {format_cpulist(tuned_cpus)}")
