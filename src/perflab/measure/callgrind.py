"""The callgrind instrument of `perflab profile`: per-function exclusive and inclusive counts
(Ir, and with --cache-sim the simulated cache misses), of a whole run or of a marker window.

A recording is ``env -i PATH=... LC_ALL=C valgrind --tool=callgrind CMD`` in cachegrind.py's
stable environment, the program reached through a fixed-length link (the environment's size and
the program's path move the counts; see cachegrind.py), children followed. A window is cut out of
a whole run: at each marker every Valgrind process of the recording gets the monitor command
``dump window-start`` / ``dump window-stop`` through ``vgdb`` (a dump writes the counts so far
and zeroes them), so the part between the two dumps is the window and the sum of all parts the
whole run, from one recording. Why this mechanism, measured here (Valgrind 3.19):
- ``--toggle-collect=FUNC`` toggles on a function's entry, so it cannot pick event N of a loop;
- ``--collect-atstart=no`` has no command to switch collection on from outside;
- ``--instr-atstart=no`` with ``instrumentation on|off`` runs the part before the window at
  nulgrind's speed (minihlt 2.4 s against 4.0 s), but the uninstrumented program runs so fast
  that the 4-10 ms the command takes swallowed a 6.9-million-instruction event whole in one
  recording of two (1,695 instructions counted); instrumented, the same milliseconds are ~50x
  less work, and the whole run comes with the window;
- ``callgrind_control --dump PID`` sends the same command, through Perl and vgdb's default
  100 ms wait before it forces the command in: 105-130 ms from the marker, against 4-20 ms for
  ``vgdb --max-invoke-ms=1`` called directly;
- stopping the program (SIGSTOP) while the command is sent would pin the window's edge, but vgdb
  cannot deliver a command to a stopped process (it hung).
The program runs on while the command travels, so a window's edges are not deterministic: its
counts vary by the work done in those milliseconds, which the study measures as the run-to-run
spread. The whole run is deterministic where the program is.
"""

from __future__ import annotations

import os
import re
import select
import signal
import subprocess
import time
from dataclasses import dataclass, field
from typing import Any

from perflab.errors import PerflabError
from perflab.measure.cachegrind import INSTALL, STABLE_ENV, _program, valgrind
from perflab.measure.spawn import base_argv
from perflab.measure.window import Window, WindowRecording
from perflab.model import RunSpec
from perflab.platform.cache_model import CacheModel
from perflab.startup import which

NAME = "callgrind"
OUT_PREFIX = "callgrind.out."
_COST_START = frozenset("0123456789+-*")
CALLERS = 40  # callers kept per context: deeper chains are cut at their 40th caller
START, STOP = "window-start", "window-stop"  # the dumps' descriptions
_FIFO = re.compile(r"-from-vgdb-to-(\d+)-by-")


@dataclass
class FunctionCounts:
    """One function's exclusive (self) and inclusive counts, one number per event."""

    name: str
    obj: str
    self_: list[float]
    incl: list[float]


@dataclass
class Counts:
    """A recording's events, totals and functions (summed over its processes)."""

    events: list[str] = field(default_factory=list)
    totals: list[float] = field(default_factory=list)
    functions: dict[str, FunctionCounts] = field(default_factory=dict)
    processes: int = 0
    # exclusive first-event cost per call context (--separate-callers: "f'caller'caller2...")
    contexts: dict[str, float] = field(default_factory=dict)


def _add(into: list[float], costs: list[float]) -> None:
    if len(into) < len(costs):
        into.extend([0.0] * (len(costs) - len(into)))
    for i, c in enumerate(costs):
        into[i] += c


def context_frames(name: str) -> list[str]:
    """A --separate-callers name, "f'2'caller'caller2", as frames, callee first: ["f'2", "caller",
    "caller2"]; a number is the recursion level of the frame before it (Callgrind's "f'2")."""
    frames: list[str] = []
    for part in name.split("'"):
        if part.isdigit() and frames:
            frames[-1] += "'" + part
        else:
            frames.append(part)
    return frames


def parse(text: str) -> Counts:
    """One callgrind.out file (Callgrind's format, name compression and all) -> Counts.

    Exclusive cost: a function's cost lines; inclusive: those plus the cost line after each of
    its ``calls=`` lines (the callee's inclusive cost from that call site). Calls of a function
    to itself are left out of its inclusive cost, which recursion would otherwise count twice.
    """
    names: dict[tuple[str, str], str] = {}
    out = Counts(processes=1)
    npos, fn, obj, callee, after_calls, ctx = 1, None, "", None, False, ""

    def name(kind: str, value: str) -> str:
        value = value.strip()
        m = re.match(r"\((\d+)\)\s*(.*)", value)
        if not m:
            return value
        if m.group(2):
            names[(kind, m.group(1))] = m.group(2)
        return names.get((kind, m.group(1)), value)

    for line in text.splitlines():
        if not line:
            continue
        if line[0] in _COST_START:
            parts = line.split()
            costs = [float(x) for x in parts[npos:]]
            if fn is not None:
                if after_calls:
                    if callee != fn.name:
                        _add(fn.incl, costs)
                else:
                    _add(fn.self_, costs)
                    _add(fn.incl, costs)
                    if costs:
                        out.contexts[ctx] = out.contexts.get(ctx, 0.0) + costs[0]
            after_calls = False
            continue
        key, _, value = line.partition("=")
        if key == "fn":
            ctx = name("fn", value)
            nm = context_frames(ctx)[0]
            fn = out.functions.setdefault(nm, FunctionCounts(nm, obj, [], []))
        elif key == "ob":
            obj = name("ob", value)
        elif key == "cfn":  # the callee without its callers: recursion is a call to the same name
            callee = context_frames(name("fn", value))[0]
        elif key == "cob":
            name("ob", value)
        elif key in ("fl", "fi", "fe", "cfi", "cfl"):
            name("fl", value)
        elif key == "calls":
            after_calls = True
        elif line.startswith("positions:"):
            npos = len(line.split()) - 1
        elif line.startswith("events:"):
            out.events = line.split()[1:]
        elif line.startswith("totals:"):
            out.totals = [float(x) for x in line.split()[1:]]
    n = len(out.events)
    for f in out.functions.values():  # a function seen only as a caller has no cost line
        _add(f.self_, [0.0] * n)
        _add(f.incl, [0.0] * n)
    if not out.totals:
        out.totals = [0.0] * n
        for f in out.functions.values():
            _add(out.totals, f.self_)
    return out


def executable() -> str:
    """Valgrind (cachegrind's lookup), or one line naming this instrument and how to install it."""
    if which("valgrind") is None:
        raise PerflabError(f"--instrument {NAME} needs Valgrind, which is not installed: {INSTALL}")
    return valgrind()


def _trigger(text: str) -> str:
    m = re.search(r"^desc: Trigger: (.*)$", text[:4000], re.M)
    return m.group(1).strip() if m else ""


def collect(outdir: str, window: bool = False) -> Counts:
    """Every counts file in ``outdir`` summed function by function (processes and parts); with
    ``window``, only the parts between each process's window-start and window-stop dumps."""
    texts = {}
    for name in sorted(os.listdir(outdir)):
        if name.startswith(OUT_PREFIX):
            with open(os.path.join(outdir, name), encoding="utf-8", errors="replace") as fh:
                texts[name] = fh.read()
    if window:
        # callgrind.out.PID.N are the dumps, callgrind.out.PID what was left at the exit
        pids = {n[len(OUT_PREFIX):].split(".")[0] for n in texts}
        keep = {}
        for pid in pids:
            parts = {n: t for n, t in texts.items() if n[len(OUT_PREFIX):].split(".")[0] == pid}
            trig = {n: _trigger(t) for n, t in parts.items()}
            stopped = any(STOP in v for v in trig.values())
            keep.update({n: t for n, t in parts.items()
                         if START not in trig[n] and not (stopped and n == OUT_PREFIX + pid)})
        texts = keep
    total = Counts()
    for name, text in texts.items():
        one = parse(text)
        if total.events and one.events != total.events:
            raise PerflabError(f"{name} counts {one.events}, not {total.events}: one recording per folder")
        total.events = one.events
        _add(total.totals, one.totals)
        for k, f in one.functions.items():
            have = total.functions.setdefault(k, FunctionCounts(k, f.obj, [], []))
            _add(have.self_, f.self_)
            _add(have.incl, f.incl)
        for k, v in one.contexts.items():
            total.contexts[k] = total.contexts.get(k, 0.0) + v
    total.processes = len({n[len(OUT_PREFIX):].split(".")[0] for n in texts})
    return total


@dataclass(frozen=True)
class CallgrindRequest:
    """One recording: where its files go, the window, and what to simulate."""

    outdir: str
    window: Window = Window()
    output_log: str | None = None
    use_pty: bool = True
    timeout: float | None = None
    cache_model: CacheModel | None = None  # None: instructions only (--cache-sim=no)


def callgrind_argv(exe: str, req: CallgrindRequest, program: tuple[str, ...],
                   env: dict[str, str]) -> list[str]:
    """valgrind --tool=callgrind in the stable environment (instrumentation off for a window)."""
    argv = [which("env") or "/usr/bin/env", "-i", *(f"{k}={v}" for k, v in env.items()), exe,
            "--tool=callgrind", "--trace-children=yes", f"--vgdb-prefix={req.outdir}/vgdb",
            f"--callgrind-out-file={req.outdir}/{OUT_PREFIX}%p", f"--log-file={req.outdir}/vg.%p.log",
            # each function's cost per chain of callers (exact stacks for the flame graph); the
            # counts are the program's, so they do not move (minihlt: no slower in one run each,
            # 2.8x the callgrind.out file)
            f"--separate-callers={CALLERS}"]
    if req.cache_model is not None:
        argv += ["--cache-sim=yes", *req.cache_model.valgrind_options()]
    return argv + list(program)


def link_program(root: str, argv: tuple[str, ...], cwd: str | None) -> tuple[str, ...]:
    """argv whose program, where given by a path, is reached through a link of fixed length
    (root/bin/NAME, as cachegrind's executor does), so a checkout's place does not move counts."""
    if "/" not in argv[0]:
        return _program(argv)
    real = os.path.realpath(os.path.join(cwd or os.getcwd(), argv[0]))
    folder = os.path.join(root, "bin")
    os.makedirs(folder, exist_ok=True)
    link = os.path.join(folder, os.path.basename(real))
    if os.path.islink(link) and os.readlink(link) != real:
        os.unlink(link)
    if not os.path.islink(link):
        os.symlink(real, link)
    return (link, *argv[1:])


def _dump(outdir: str, what: str) -> int | None:
    """Dump (and zero) the counts of every Valgrind process of the recording; when it was done."""
    vgdb = which("vgdb")
    if vgdb is None:
        raise PerflabError("a callgrind window needs vgdb (part of Valgrind): install valgrind")
    pids = sorted({m.group(1) for n in os.listdir(outdir) if (m := _FIFO.search(n))})
    done = None
    for pid in pids:
        res = subprocess.run([vgdb, f"--vgdb-prefix={outdir}/vgdb", f"--pid={pid}", "--max-invoke-ms=1",
                              f"dump {what}"], capture_output=True, text=True, timeout=30)
        if res.returncode == 0:
            done = time.monotonic_ns()
    return done


def record(spec: RunSpec, req: CallgrindRequest, root: str) -> tuple[WindowRecording, Counts, Counts]:
    """Run ``spec`` under callgrind, dumping at the window's markers: (recording, window, whole)."""
    exe = executable()
    os.makedirs(req.outdir, exist_ok=True)
    for n in os.listdir(req.outdir):
        if n.startswith((OUT_PREFIX, "vg.")):
            os.unlink(os.path.join(req.outdir, n))
    env = dict(STABLE_ENV)
    env.update(spec.env or {})
    program = link_program(root, base_argv(spec), spec.cwd)
    if spec.cpus:
        program = (which("taskset") or "taskset", "-c", ",".join(map(str, spec.cpus)), *program)
    argv = callgrind_argv(exe, req, program, env)
    w = req.window
    start_re = re.compile(w.start) if w.start else None
    stop_re = re.compile(w.stop) if w.stop else None
    if req.use_pty:
        import pty
        import tty

        master, slave = pty.openpty()
        tty.setraw(slave)
    else:
        master, slave = os.pipe()
    launch = time.monotonic_ns()
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=slave, stderr=slave, cwd=spec.cwd,
                            start_new_session=True)
    os.close(slave)
    rec = WindowRecording(perf_data=req.outdir, exit_code=None, launch_ns=launch, end_ns=0)
    state = {"open": w.whole_run, "closed": False}
    if w.whole_run:
        rec.enable_sent_ns = rec.enabled_ns = launch
        rec.closed_by = "end of run"
    out_fh = open(req.output_log, "w") if req.output_log else None
    deadline = launch + int(req.timeout * 1e9) if req.timeout else None
    buf = b""

    def lines(chunk: list[str], t_read: int) -> None:
        for line in chunk:
            if out_fh:
                out_fh.write(line + "\n")
            rec.output_tail.append(line)
            del rec.output_tail[:-40]
            if state["closed"]:
                continue
            if not state["open"] and start_re is not None and start_re.search(line):
                rec.start_marker_ns, rec.start_line = t_read, line
                rec.enable_sent_ns = time.monotonic_ns()
                rec.enabled_ns = _dump(req.outdir, START)
                state["open"] = rec.enabled_ns is not None
                state["closed"] = not state["open"]
            elif state["open"] and stop_re is not None and stop_re.search(line):
                rec.stop_marker_ns, rec.stop_line = t_read, line
                rec.disabled_ns = _dump(req.outdir, STOP) or time.monotonic_ns()
                rec.closed_by = "stop marker"
                state["open"], state["closed"] = False, True

    try:
        while True:
            if deadline and time.monotonic_ns() > deadline:
                rec.timed_out = True
                os.killpg(proc.pid, signal.SIGKILL)
                deadline = None
            r, _, _ = select.select([master], [], [], 0.05)
            if not r:
                continue
            try:
                data = os.read(master, 65536)
            except OSError:  # EIO: every holder of the pty has exited
                data = b""
            t_read = time.monotonic_ns()
            if not data:
                if buf:
                    lines([buf.decode(errors="replace").rstrip("\r")], t_read)
                break
            *done, buf = (buf + data).split(b"\n")
            lines([d.decode(errors="replace").rstrip("\r") for d in done], t_read)
        rec.exit_code = proc.wait()
    except BaseException:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        raise
    finally:
        os.close(master)
        if out_fh:
            out_fh.close()
    rec.end_ns = time.monotonic_ns()
    if state["open"]:
        rec.disabled_ns, rec.closed_by = rec.end_ns, rec.closed_by or "end of run"
    whole = collect(req.outdir)
    if not whole.processes and rec.exit_code == 0:
        raise PerflabError(f"callgrind wrote no counts in {req.outdir} ({log_tail(req.outdir) or 'no log'})")
    return rec, (whole if w.whole_run else collect(req.outdir, window=True)), whole


def log_tail(outdir: str) -> str:
    """The last lines Valgrind logged, for a one-line error."""
    found: list[str] = []
    for name in sorted(os.listdir(outdir)):
        if name.startswith("vg."):
            with open(os.path.join(outdir, name), encoding="utf-8", errors="replace") as fh:
                found += [ln for ln in fh.read().splitlines() if ln.strip("=-0123456789 ")]
    return "; ".join(ln.split(" ", 1)[-1].strip() for ln in found[-3:])


def counts_to_dict(c: Counts, keep: int = 200) -> dict[str, Any]:
    """What a stored run keeps: events, totals, and the ``keep`` functions highest in inclusive
    or exclusive first event (a diff needs both the callers and the leaves)."""
    by_self = sorted(c.functions.values(), key=lambda f: -(f.self_[0] if f.self_ else 0))[:keep]
    by_incl = sorted(c.functions.values(), key=lambda f: -(f.incl[0] if f.incl else 0))[:keep // 4]
    chosen = {f.name: f for f in [*by_self, *by_incl]}
    return {"events": list(c.events), "totals": list(c.totals), "processes": c.processes,
            "functions": {k: {"obj": f.obj, "self": f.self_, "incl": f.incl} for k, f in chosen.items()}}


def counts_from_dict(d: dict[str, Any]) -> Counts:
    return Counts(list(d.get("events") or []), list(d.get("totals") or []),
                  {k: FunctionCounts(k, f["obj"], list(f["self"]), list(f["incl"]))
                   for k, f in (d.get("functions") or {}).items()}, int(d.get("processes") or 0))
