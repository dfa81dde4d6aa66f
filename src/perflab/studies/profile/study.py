"""Where the time of one window of a run goes (`perflab profile`): seed 001's slow event.

Seed 001 profiled one slow event by watching the log with inotify and attaching perf late, which
loses the start of the window. Here perf records with its events disabled and is switched on and
off through its control fifo when the start / stop markers appear (measure/window.py), either
around a run it launches or attached to a job already running (``--pid``). Each recording is one
stored run whose health carries the window's figures and the folded profile, so the analysis
needs neither perf nor the perf.data files, and a resumed campaign records only what is missing.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from perflab.errors import PerflabError
from perflab.measure.metrics import extract
from perflab.measure.window import Window, WindowRecorder, WindowRequest, perf_failure_hint
from perflab.measure.window_perf import PerfWindowRecorder
from perflab.model import BuildRecipe, MetricPattern, RunResult, RunSpec, Workload, known_fields
from perflab.platform.machine import Machine
from perflab.studies.profile.parse import (
    Annotation, Profile, TopRow, aggregate, annotate, merge, parse_script, profile_from_dict,
    profile_to_dict, top_functions, unknown_share, SCRIPT_FIELDS,
)
from perflab.studies.profile.stacks import Flame, cap, flame, fold, merge_stacks, parse_stacks
from perflab.studies.profile.counts import (
    NAME_CALLGRIND, CountRow, OneRecordingAtATime, analyse_counted, execute_counted,
)
from perflab.studies.profile.window import (
    attach_targets, check_log_dir, choose_event, compile_marker, window_figures,
)
from perflab.studies.base import decode
from perflab.studies.session import Session

NAME = "profile"
DEFAULT_OUT = "perflab-out/profiles"
UNKNOWN_MOST = 0.5  # above this share of unnamed samples the table cannot say where time goes
BROKEN_STACKS = 0.5  # above this share of stacks rooted in an unnamed frame the tree hides the callers
UNKNOWN_NOTE = 0.1  # above this share the ranking of named functions is incomplete: say so


@dataclass(frozen=True)
class ProfileConfig:
    workload: Workload | None = None  # what to launch; None when attaching to --pid
    window: Window = Window()
    event: str | None = None  # None: cycles where the PMU counts them, else cpu-clock
    freq: int = 4000
    call_graph: str | None = None  # e.g. "fp", "dwarf", "lbr"
    cpu: int | None = None  # pin the workload (taskset) to this CPU
    repeat: int = 1
    threshold: float = 0.01
    annotate_top: int = 5
    hint_share: float = 0.30
    log_file: str | None = None  # watch this file for the markers instead of the output
    use_pty: bool = True
    out_dir: str = DEFAULT_OUT
    timeout: float | None = None
    pid: int | None = None  # attach to this running process instead of launching
    children: bool = False  # with pid: its descendants too
    instrument: str = "perf"  # or "callgrind": counted per function (counts.py)
    cache_model: str = ""  # callgrind: simulate these caches (--cache-sim); "" counts Ir only

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "ProfileConfig":
        kw = known_fields(cls, d)
        kw["window"] = Window(**(kw.get("window") or {}))
        if kw.get("workload"):
            kw["workload"] = workload_from_dict(kw["workload"])
        return cls(**kw)


Config = ProfileConfig


def workload_from_dict(d: dict[str, Any]) -> Workload:
    """The inverse of dataclasses.asdict(Workload): tuples and nested types restored."""
    kw = dict(d)
    kw["argv"] = tuple(kw["argv"])
    kw["metrics"] = tuple(MetricPattern(**m) for m in kw.get("metrics") or ())
    kw["series"] = tuple(MetricPattern(**m) for m in kw.get("series") or ())
    kw["env"] = dict(kw.get("env") or {})
    for key in ("fork_arg", "event_arg"):
        if kw.get(key) is not None:
            kw[key] = tuple(kw[key])
    if kw.get("build"):
        b = kw["build"]
        kw["build"] = BuildRecipe(**{k: tuple(v) if isinstance(v, list) else v for k, v in b.items()})
    return Workload(**kw)


@dataclass
class ProfileResult:
    event: str = ""
    event_reason: str = ""
    window: str = ""  # the window as asked: markers, a time window, or "whole run"
    whole_run: bool = False
    recordings: list[dict[str, Any]] = field(default_factory=list)
    top: list[TopRow] = field(default_factory=list)
    annotations: list[Annotation] = field(default_factory=list)
    opened: bool = False
    message: str = ""
    samples: int = 0
    unknown_share: float = 0.0
    symbol_hint: str = ""  # how to get names when most samples have none
    failed: list[str] = field(default_factory=list)  # why each failed recording failed
    perf_data: list[str] = field(default_factory=list)
    instrument: str = "perf"
    cache_model: str = ""  # callgrind with --cache-sim: the caches simulated
    count_events: list[str] = field(default_factory=list)  # callgrind: Ir, I1mr, ...
    count_totals: list[float] = field(default_factory=list)  # mean per recording, per event
    count_spread: list[float] = field(default_factory=list)  # of the totals over recordings
    count_top: list[CountRow] = field(default_factory=list)
    # with --call-graph: the windows' folded stacks (summed) and their call tree
    stacks: dict[str, int] = field(default_factory=dict)
    flame: Flame | None = None
    campaign_id: int | None = None

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["top"] = [t.as_dict() for t in self.top]
        d["annotations"] = [a.as_dict() for a in self.annotations]
        d["count_top"] = [r.as_dict() for r in self.count_top]
        d["flame"] = self.flame.as_dict() if self.flame else None
        # the keys the HTML report reads
        d["verdict"] = self.message
        d["window_opened"] = self.opened
        d["enable_latency_us"] = self.enable_latency_us
        d["front_end_hints"] = [a.symbol for a in self.annotations if a.front_end_hint]
        return d

    @property
    def enable_latency_us(self) -> list[float]:
        """Marker to enabled sampling, per recording that measured it."""
        return [r["enable_latency_us"] for r in self.recordings if r.get("enable_latency_us") is not None]

    def window_sentence(self) -> str:
        """The finding in one line with the window named by the output lines that opened and
        closed it (the lines a reader knows), not by the patterns that matched them: the report's
        sentence (the terminal prints each recording's window on a line of its own)."""
        if not self.opened or not self.top:
            return self.message or "the window never opened"
        recs = [r for r in self.recordings if r.get("opened")]
        if self.whole_run or not recs:
            where = "over the whole run" if self.whole_run else ""
        else:
            r = recs[0]
            n = len(recs)
            where = (f"in {n} window{'s' * (n != 1)} from the line '{r.get('start_line', '?')}' "
                     f"to '{r.get('stop_line') or r.get('closed_by') or 'the end'}'")
        t = self.top[0]
        samples = f"{self.samples:,} sample" + "s" * (self.samples != 1)
        return (f"{samples} ({self.event}) {where}; the top function "
                f"is {t.symbol} with {100 * (t.share or 0):.1f} % of them.").replace("  ", " ")

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "ProfileResult":
        if "top" not in d:  # a failed campaign's summary, its error alone: no profile to read
            raise KeyError("top")
        # the flame graph and the annotations are stored in forms of their own (short keys, hex
        # addresses: Flame.as_dict, Annotation.as_dict), read by their own code
        result = decode(cls, {k: v for k, v in d.items() if k not in ("flame", "annotations")})
        result.flame = Flame.from_dict(d.get("flame"))
        result.annotations = [Annotation(
            symbol=a["symbol"], dso=a["dso"], samples=a["samples"], head_share=a["head_share"],
            head_desc=a["head"], front_end_hint=a["front_end_hint"],
            instructions=[(int(i["addr"], 16), i["insn"], i["share"]) for i in a["instructions"]],
        ) for a in d.get("annotations") or []]
        return result


def validate(config: ProfileConfig) -> None:
    """Bad input in one line, before anything is started or stored."""
    compile_marker(config.window.start, "--start")
    compile_marker(config.window.stop, "--stop")
    if config.repeat < 1:
        raise PerflabError(f"--repeat {config.repeat}: give at least 1")
    if config.instrument == "callgrind":
        # vgdb switches a launched Valgrind: no attach, and markers come from the output
        for bad, why in ((config.pid is not None, "--pid"), (config.log_file, "--log FILE"),
                         (config.window.after is not None or config.window.duration is not None,
                          "a time window (--after/--duration)"),
                         (config.event, "--perf-event"), (config.call_graph, "--call-graph")):
            if bad:
                raise PerflabError(f"--instrument callgrind takes no {why}: it counts a run it launches, "
                                   "windowed by markers in its output (--event N or --start/--stop)")
    check_log_dir(config.log_file)
    if config.pid is not None:
        if config.workload is not None:
            raise PerflabError("give --pid PID or a workload to launch, not both")
        attach_targets(config.pid, config.children)
        if config.log_file is None and config.window.start is not None:
            raise PerflabError("--pid needs --log FILE: the markers of a running job come from its log")
    elif config.workload is None:
        raise PerflabError("nothing to profile: give --workload NAME, -- CMD, or --pid PID")


def plan(config: ProfileConfig, machine: Machine) -> list[RunSpec]:
    """One run per recording of the window; params: the recording index and the perf event."""
    event = NAME_CALLGRIND if config.instrument == NAME_CALLGRIND else choose_event(config.event, machine)[0]
    specs = []
    for k in range(config.repeat):
        params = {"recording": k, "event": event}
        if config.pid is not None:
            specs.append(RunSpec(argv=(), label=f"pid {config.pid}", timeout=config.timeout,
                                 params={**params, "pid": config.pid}))
        else:
            assert config.workload is not None
            specs.append(config.workload.spec(
                cpus=(config.cpu,) if config.cpu is not None else None, timeout=config.timeout,
                params=params if config.cpu is None else {**params, "cpu": config.cpu}))
    return specs


class _Recordings(OneRecordingAtATime):
    """Executor-style adapter: each run is one window recorded by the recorder, folded at once."""

    def __init__(self, recorder: WindowRecorder, config: ProfileConfig, out: Path, event: str,
                 reason: str) -> None:
        self.recorder, self.config, self.out, self.event, self.reason = recorder, config, out, event, reason

    def request(self, k: int) -> WindowRequest:
        c = self.config
        return WindowRequest(
            perf_data=str(self.out / f"perf-{k}.data"), window=c.window, event=self.event, freq=c.freq,
            call_graph=c.call_graph, log_file=c.log_file, use_pty=c.use_pty,
            output_log=None if c.pid is not None else str(self.out / f"output-{k}.log"),
            timeout=c.timeout, inherit=c.children,
            attach=attach_targets(c.pid, c.children) if c.pid is not None else (),
        )

    def run(self, spec: RunSpec) -> RunResult:
        req = self.request(int(spec.params["recording"]))
        rec = self.recorder.record_window(spec, req)
        perf_failed = not Path(req.perf_data).exists() and isinstance(self.recorder, PerfWindowRecorder)
        if perf_failed:
            hint = perf_failure_hint(rec.output_tail + rec.perf_messages)
            raise PerflabError(hint or f"perf record wrote no {req.perf_data}: "
                               + " | ".join(rec.output_tail[-3:]))
        samples = parse_script(self.recorder.perf_script(req.perf_data, SCRIPT_FIELDS)) if rec.opened else []
        prof = aggregate(samples) if rec.opened else Profile(0, 0, {})
        health_stacks = {}
        if rec.opened and self.config.call_graph:
            # the same samples again, each with its call chain, folded root first
            chains = parse_stacks(self.recorder.perf_script(req.perf_data, SCRIPT_FIELDS, chains=True))
            health_stacks = {"stacks": cap(fold(chains))}
        bounds = rec.sample_bounds
        outside = 0 if bounds is None else sum(1 for s in samples if not bounds[0] <= s.time_ns <= bounds[1])
        metrics: dict[str, float] = {"samples": float(prof.samples)}
        if rec.enable_latency_ns is not None:
            metrics["enable_latency_us"] = rec.enable_latency_ns / 1e3
        if spec.metrics:
            log = Path(req.output_log) if req.output_log else None
            text = log.read_text(errors="replace") if log and log.exists() else "\n".join(rec.output_tail)
            metrics.update(extract(spec.metrics, text, ""))
        rc = rec.exit_code
        # perf passes the workload's status through; a negative one is a signal (Popen's spelling)
        exit_code, signal = (rc, None) if rc is None or rc >= 0 else (None, -rc)
        return RunResult(
            wall_ns=rec.end_ns - rec.launch_ns, user_s=0.0, sys_s=0.0, maxrss_kb=0, minflt=0,
            majflt=0, nvcsw=0, nivcsw=0, exit_code=exit_code, signal=signal, start_ns=rec.launch_ns,
            timed_out=rec.timed_out and not req.attach,
            end_ns=rec.end_ns, metrics=metrics, stdout_tail="\n".join(rec.output_tail[-10:]),
            health={"event": self.event, "event_reason": self.reason,
                    "window": window_figures(rec, prof.first_ns, outside),
                    "profile": profile_to_dict(prof), **health_stacks},
        )


def execute(config: ProfileConfig, session: Session, machine: Machine) -> ProfileResult:
    """Record the window K times (stored one by one), analyse, annotate the hottest functions."""
    validate(config)
    if config.instrument == NAME_CALLGRIND:
        return analyse(config, execute_counted(config, session, plan(config, machine)))
    event, reason = choose_event(config.event, machine)
    recorder: WindowRecorder = session.executor if isinstance(session.executor, WindowRecorder) \
        else PerfWindowRecorder()
    out = Path(config.out_dir) / str(session.campaign_id)
    out.mkdir(parents=True, exist_ok=True)
    adapter = _Recordings(recorder, config, out, event, reason)
    runs = Session(adapter, session.store, session.campaign_id, session.progress,
                   resumed=session.resumed)
    results = []
    # A kill between a recording's row and its artifact rows leaves the row alone: its resume
    # replays the recording and adds what is missing.
    filed = ({a.meta.get("rep") for a in session.store.artifacts(session.campaign_id) if a.kind == "perf.data"}
             if session.resumed else set())
    for k, spec in enumerate(plan(config, machine)):
        before = runs.executed
        r = runs.run(spec, rep=k)
        results.append(r)
        w = r.health.get("window", {})
        if runs.executed > before or k not in filed:
            session.store.add_artifact(session.campaign_id, "perf.data", w.get("perf_data", ""), meta={"rep": k})
            if config.pid is None:
                session.store.add_artifact(session.campaign_id, "log", str(out / f"output-{k}.log"),
                                           meta={"rep": k})
        session.say(_progress(k, config.repeat, r, runs.executed == before))
    session.executed += runs.executed
    session.replayed += runs.replayed
    result = analyse(config, results)
    if result.opened and config.annotate_top:
        result.annotations = _annotations(config, results, recorder)
        hints = [a for a in result.annotations if a.front_end_hint]
        if hints:
            result.message += "; front-end hint: " + ", ".join(
                f"{a.symbol} has {a.head_share:.0%} of its samples on its {a.head_desc}" for a in hints)
    return result


def _progress(k: int, n: int, r: RunResult, replayed: bool) -> str:
    head = f"recording {k + 1}/{n}" + (" was stored: not recorded again" if replayed else " stored")
    if not r.ok:
        return f"{head} (failed: {r.failure})"
    return f"{head} ({int(r.metrics.get('samples', 0))} samples)"


def _annotations(config: ProfileConfig, runs: list[RunResult], recorder: WindowRecorder) -> list[Annotation]:
    ok = [r for r in runs if r.ok and r.health.get("window", {}).get("opened")]
    best = max(ok, key=lambda r: r.metrics.get("samples", 0))
    perf_data = best.health["window"]["perf_data"]
    merged = merge([profile_from_dict(r.health["profile"]) for r in ok])
    if isinstance(recorder, PerfWindowRecorder) and not Path(perf_data).exists():
        return []
    top = top_functions(merged, config.threshold)
    return [annotate(perf_data, merged.functions[t.symbol], recorder, hint_share=config.hint_share)
            for t in top[: config.annotate_top]
            if not t.symbol.startswith("[") and not merged.functions[t.symbol].dso.startswith("[kernel")]


def analyse(config: ProfileConfig, runs: list[RunResult]) -> ProfileResult:
    """Top functions of the merged windows; what the window was; failed recordings left out."""
    failed = [r.failure or "failed" for r in runs if not r.ok]
    ok = [r for r in runs if r.ok]
    first = runs[0].health if runs else {}
    res = ProfileResult(event=first.get("event", config.event or ""), event_reason=first.get("event_reason", ""),
                        window=config.window.describe(), whole_run=config.window.whole_run,
                        recordings=[r.health.get("window", {}) for r in runs], failed=failed,
                        perf_data=[r.health.get("window", {}).get("perf_data", "") for r in runs])
    if not ok:
        res.message = (f"all {len(runs)} recording(s) failed ({'; '.join(sorted(set(failed)))}): "
                       "no profile" if runs else "nothing recorded")
        return res
    shut = [r.health.get("window", {}) for r in ok if not r.health.get("window", {}).get("opened")]
    if shut:
        seen = [w for w in shut if w.get("start_marker_ns") is not None]
        if seen:
            # The marker was read and `enable` sent, but perf acknowledged it only after the run
            # had ended: saying "not seen" would blame the marker for perf's latency.
            what = (f"start marker /{config.window.start}/ seen, but the "
                    f"{seen[0].get('closed_by') or 'run ended before perf acknowledged enable'}, in "
                    f"{len(seen)} of {len(shut)} recording(s) that did not open: the rest of the run was "
                    "shorter than perf's enable here; a longer run or a less loaded machine opens it")
        else:
            what = f"start marker /{config.window.start}/ not seen" if config.window.start else "run ended first"
        res.message = f"the window never opened ({what})"
        return res
    if config.instrument == NAME_CALLGRIND:
        return analyse_counted(config, runs, res)
    res.opened = True
    merged = merge([profile_from_dict(r.health["profile"]) for r in ok])
    res.samples = merged.samples
    res.top = top_functions(merged, config.threshold)
    res.unknown_share = unknown_share(merged)
    per = [r.health["stacks"] for r in ok if "stacks" in r.health]
    if per and len(per) == len(ok):
        res.stacks = merge_stacks(per)
        res.flame = flame(per)
    scope = ("the whole run (no event markers: give --start/--stop or --event N to profile one event)"
             if config.window.whole_run else f"{len(ok)} window(s) {config.window.describe()}")
    msg = f"{merged.samples} samples ({res.event}) in {scope}"
    named = [t for t in res.top if not t.symbol.startswith("[unknown]")]
    if not merged.samples:
        msg += "; no samples: what perf recorded did not run on a CPU in the window"
        if config.pid is not None and not config.children:
            msg += " (a forking master waits while its workers work: add --children)"
    else:
        if res.unknown_share >= UNKNOWN_NOTE:
            res.symbol_hint = _symbol_hint(merged, res.unknown_share)
        if res.unknown_share > UNKNOWN_MOST:
            msg += f"; most samples ({res.unknown_share:.0%}) have no symbol, so no top function can be named"
            if named:
                msg += f" (largest named: {named[0].symbol} {named[0].share:.1%})"
        elif named:
            msg += f"; top: {named[0].symbol} {named[0].share:.1%}"
            if res.unknown_share >= UNKNOWN_NOTE:
                msg += (f", but {res.unknown_share:.0%} of the samples have no symbol: the ranking "
                        "is incomplete")
        else:
            msg += f"; no function above {config.threshold:.0%}"
    msg += _broken_stacks(res.stacks, config.call_graph)
    if failed:
        msg += f"; {len(failed)} of {len(runs)} recording(s) failed and are left out ({'; '.join(sorted(set(failed)))})"
    res.message = msg
    return res


def _broken_stacks(stacks: dict[str, int], call_graph: str | None) -> str:
    """Stacks whose root perf could not name were cut short: frame-pointer walks stop where code
    was built without frame pointers (gcc -O2 omits them), so the callers above are lost."""
    total = sum(stacks.values())
    cut = sum(v for k, v in stacks.items() if k.startswith("[unknown]"))
    if not total or cut / total < BROKEN_STACKS:
        return ""
    fix = ("rebuild with -fno-omit-frame-pointer or record with --call-graph dwarf" if call_graph == "fp"
           else "the unwinder lost the callers")
    return f"; {cut / total:.0%} of the call stacks start at an unnamed frame, not at main: {fix}"


def _symbol_hint(merged: Profile, share: float) -> str:
    """How to get names for the samples perf could not name, naming the objects they fell in."""
    dsos = sorted({f.dso_name for k, f in merged.functions.items()
                   if k.startswith("[unknown]") and f.period >= 0.05 * merged.period})
    return (f"{share:.0%} of the samples have no symbol (in {', '.join(dsos) or 'several objects'}): "
            "the binary is stripped or has no symbol table. Install the distribution's debug-symbol "
            "package (e.g. apt-get install PKG-dbgsym), rebuild with -g (and without -s), or record "
            "with --call-graph dwarf to see which named callers the unnamed code runs under")
