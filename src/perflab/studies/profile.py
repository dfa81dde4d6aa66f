"""Windowed profiling (`perflab profile`) and profile diffs (`perflab profile diff`).

Seed 001 profiled one slow event by watching the log with inotify and attaching perf late, which
loses the start of the window. Here perf runs from the start with its events disabled and is
switched on and off through its control fifo when the workload prints the window's markers
(see profile_window); the samples are then folded into tables (see profile_parse).
"""

from __future__ import annotations

import os
import shutil
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from perflab.model import Workload
from perflab.errors import PerflabError
from perflab.model import RunResult
from perflab.studies.profile_parse import (
    Annotation,
    DiffRow,
    Profile,
    TopRow,
    aggregate,
    annotate,
    diff_profiles,
    read_samples,
    top_functions,
)
from perflab.studies.profile_window import (
    Window,
    WindowRecording,
    compile_marker,
    perf_failure_hint,
    record_window,
)

DEFAULT_OUT = "perflab-out/profiles"


@dataclass(frozen=True)
class ProfileConfig:
    workload: Workload
    window: Window = Window()
    event: str | None = None  # None: cycles where hardware counters exist, else cpu-clock
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


@dataclass
class ProfileResult:
    campaign_id: int | None
    event: str
    event_reason: str
    recordings: list[dict[str, Any]]
    top: list[TopRow]
    annotations: list[Annotation]
    opened: bool
    message: str = ""
    perf_data: list[str] = field(default_factory=list)

    def summary(self) -> dict[str, Any]:
        lat = [r["enable_latency_us"] for r in self.recordings if r.get("enable_latency_us") is not None]
        return {
            "verdict": self.message,
            "event": self.event,
            "event_reason": self.event_reason,
            "window_opened": self.opened,
            "enable_latency_us": lat,
            "recordings": self.recordings,
            "top": [r.as_dict() for r in self.top],
            "annotations": [a.as_dict() for a in self.annotations],
            "front_end_hints": [a.symbol for a in self.annotations if a.front_end_hint],
            "perf_data": self.perf_data,
        }


def choose_event(requested: str | None) -> tuple[str, str]:
    """(event, one-line reason): hardware cycles where the machine counts them, else cpu-clock."""
    if requested:
        return requested, f"event {requested} (as asked)"
    try:
        from perflab.platform.probes import hw_counters

        probe = hw_counters()
        if probe.available:
            return "cycles", "event cycles (hardware counters available)"
        return "cpu-clock", f"event cpu-clock: no hardware cycles counter ({probe.reason})"
    except ImportError:
        return "cpu-clock", "event cpu-clock (hardware counter probe unavailable)"


def check_perf(perf: str = "perf") -> None:
    """Raise a one-line PerflabError when perf is missing or not permitted."""
    if shutil.which(perf) is None:
        raise PerflabError("perf is not installed: install linux-perf (Debian) or linux-tools-$(uname -r) (Ubuntu)")
    try:
        from perflab.platform.probes import perf_status

        probe = perf_status()
    except ImportError:
        return
    if not probe.available:
        raise PerflabError(
            f"perf cannot record here ({probe.reason}): run 'sysctl kernel.perf_event_paranoid=1' "
            "or run as root / with CAP_PERFMON")


def _workload_argv(config: ProfileConfig) -> list[str]:
    argv = list(config.workload.argv)
    if config.workload.shell:
        argv = ["/bin/sh", "-c", " ".join(argv)]
    if config.cpu is not None:
        argv = ["taskset", "-c", str(config.cpu), *argv]
    return argv


def _as_run_result(rec: WindowRecording, output: str, config: ProfileConfig) -> RunResult:
    metrics: dict[str, float] = {}
    if config.workload.metrics:
        from perflab.measure.metrics import extract

        metrics = extract(config.workload.metrics, output, "")
    return RunResult(
        wall_ns=rec.end_ns - rec.launch_ns, user_s=0.0, sys_s=0.0, maxrss_kb=0, minflt=0,
        majflt=0, nvcsw=0, nivcsw=0, exit_code=rec.exit_code, start_ns=rec.launch_ns,
        end_ns=rec.end_ns, metrics=metrics, stdout_tail="\n".join(rec.output_tail[-10:]),
    )


def recording_row(rec: WindowRecording, profile: Profile) -> dict[str, Any]:
    """What one recording's window was, and how many samples fell outside it (should be 0)."""
    row: dict[str, Any] = {
        "perf_data": rec.perf_data, "exit_code": rec.exit_code, "opened": rec.opened,
        "start_line": rec.start_line, "stop_line": rec.stop_line, "closed_by": rec.closed_by,
        "samples": profile.samples,
        "enable_latency_us": (rec.enable_latency_ns / 1e3) if rec.enable_latency_ns is not None else None,
        "disable_latency_us": (rec.disable_latency_ns / 1e3) if rec.disable_latency_ns is not None else None,
        "enabled_ns": rec.enabled_ns, "disabled_ns": rec.disabled_ns,
        "start_marker_ns": rec.start_marker_ns, "stop_marker_ns": rec.stop_marker_ns,
    }
    if rec.enabled_ns is not None and rec.disabled_ns is not None:
        row["window_ms"] = (rec.disabled_ns - rec.enabled_ns) / 1e6
    if rec.start_marker_ns is not None and profile.first_ns is not None:
        # perf enables before it acknowledges; the first sample shows when it really started.
        row["first_sample_us"] = (profile.first_ns - rec.start_marker_ns) / 1e3
    row["enable_sent_ns"] = rec.enable_sent_ns
    return row


def run_profile(config: ProfileConfig, executor: Any = None, store: Any = None, console: Any = None) -> ProfileResult:
    """Record the window K times, then tabulate top functions and annotate the hottest ones.

    The executor is unused: perf record itself must be the workload's parent so that the
    window can be switched on without attaching late.
    """
    compile_marker(config.window.start, "--start")
    compile_marker(config.window.stop, "--stop")
    if config.repeat < 1:
        raise PerflabError(f"--repeat {config.repeat}: give at least 1")
    check_perf()
    event, reason = choose_event(config.event)
    say = console.print if console is not None else (lambda *a, **k: None)
    say(reason)

    cid = None
    if store is not None:
        cfg = asdict(config)
        cfg["workload"] = {"name": config.workload.name, "argv": list(config.workload.argv)}
        cid = store.start_campaign("profile", cfg, host_id=_host_id(store))
    out = Path(config.out_dir) / (str(cid) if cid is not None else time.strftime("%Y%m%d-%H%M%S"))
    out.mkdir(parents=True, exist_ok=True)
    recs: list[WindowRecording] = []
    profiles: list[Profile] = []
    rows: list[dict[str, Any]] = []
    status = "failed"
    try:
        for rep in range(config.repeat):
            name = "perf.data" if config.repeat == 1 else f"perf-{rep}.data"
            data = str(out / name)
            log = str(out / (f"output-{rep}.log" if config.repeat > 1 else "output.log"))
            rec = record_window(
                _workload_argv(config), data, config.window, event=event, freq=config.freq,
                call_graph=config.call_graph, env=dict(config.workload.env) or None,
                cwd=config.workload.cwd, log_file=config.log_file, use_pty=config.use_pty,
                timeout=config.timeout, output_log=log,
            )
            if not Path(data).exists():
                hint = perf_failure_hint(rec.output_tail + rec.perf_messages)
                tail = " | ".join(rec.output_tail[-3:])
                raise PerflabError(hint or f"perf record wrote no {data}: {tail}")
            prof = aggregate(read_samples(data)) if rec.opened else Profile(0, 0, {})
            recs.append(rec)
            profiles.append(prof)
            row = recording_row(rec, prof)
            row["outside_window"] = _outside(data, rec) if rec.opened else 0
            rows.append(row)
            if store is not None and cid is not None:
                output = Path(log).read_text(errors="replace") if Path(log).exists() else ""
                store.add_measurement(cid, _as_run_result(rec, output, config),
                                      {"cpu": config.cpu, "event": event}, rep=rep, label=config.workload.name)
                store.add_artifact(cid, "perf.data", data, meta={k: v for k, v in row.items()})
                store.add_artifact(cid, "log", log, meta={"rep": rep})
            if rec.opened:
                say(f"recording {rep + 1}/{config.repeat}: window opened at {rec.start_line!r} "
                    f"(marker -> acknowledged enable {row['enable_latency_us']:.0f} us, "
                    f"first sample {row.get('first_sample_us', float('nan')):.0f} us)"
                    if rec.start_marker_ns and rec.start_line
                    else f"recording {rep + 1}/{config.repeat}: window opened")
                say(f"  closed by {rec.closed_by}; {row.get('window_ms', 0):.1f} ms, {prof.samples} samples, "
                    f"{row['outside_window']} outside the window")
        opened = all(r.opened for r in recs)
        if not opened:
            what = f"start marker /{config.window.start}/ not seen" if config.window.start else "run ended first"
            message = f"the window never opened ({what})"
            result = ProfileResult(cid, event, reason, rows, [], [], False, message,
                                   [r.perf_data for r in recs])
        else:
            merged = _merge(profiles)
            top = top_functions(merged, config.threshold)
            best = max(range(len(recs)), key=lambda i: profiles[i].samples)
            anns = [annotate(recs[best].perf_data, merged.functions[t.symbol], hint_share=config.hint_share)
                    for t in top[: config.annotate_top] if not t.symbol.startswith("[unknown]")
                    and not merged.functions[t.symbol].dso.startswith("[kernel")]
            hints = [a for a in anns if a.front_end_hint]
            message = (f"{merged.samples} samples in {len(recs)} window(s); top: {top[0].symbol} "
                       f"{top[0].share:.1%}" if top else f"{merged.samples} samples; no function above "
                       f"{config.threshold:.0%}")
            if hints:
                message += ("; front-end hint: " + ", ".join(
                    f"{a.symbol} has {a.head_share:.0%} of its samples on its {a.head_desc}" for a in hints))
            result = ProfileResult(cid, event, reason, rows, top, anns, True, message,
                                   [r.perf_data for r in recs])
        status = "done"
    except KeyboardInterrupt:
        status = "interrupted"
        raise
    finally:
        if store is not None and cid is not None:
            store.finish_campaign(cid, status, result.summary() if status == "done" else None)
    if console is not None:
        render_profile(result, console)
    return result


def _host_id(store: Any) -> int | None:
    try:
        from perflab.platform.metadata import collect

        return store.add_host(collect())
    except ImportError:
        return None


def _outside(perf_data: str, rec: WindowRecording) -> int:
    bounds = rec.sample_bounds
    assert bounds is not None
    return sum(1 for s in read_samples(perf_data) if not bounds[0] <= s.time_ns <= bounds[1])


def _merge(profiles: list[Profile]) -> Profile:
    """Sum several recordings of the same window into one profile."""
    from collections import Counter

    from perflab.studies.profile_parse import Function

    funcs: dict[str, Function] = {}
    for p in profiles:
        for k, f in p.functions.items():
            g = funcs.setdefault(k, Function(key=k, dso=f.dso, offsets=Counter()))
            g.samples += f.samples
            g.period += f.period
            g.raw_names |= f.raw_names
            g.offsets.update(f.offsets)
    return Profile(sum(p.samples for p in profiles), sum(p.period for p in profiles), funcs)


def render_profile(result: ProfileResult, console: Any) -> None:
    from rich.markup import escape
    from rich.table import Table

    if not result.opened:
        console.print(f"perflab: {result.message}")
        return
    t = Table(title=f"top functions ({result.event}, >= threshold)")
    for col in ("share", "samples", "symbol", "shared object"):
        t.add_column(col, justify="right" if col in ("share", "samples") else "left")
    for r in result.top:
        t.add_row(f"{r.share:.2%}", str(r.samples), escape(r.symbol), escape(r.dso))
    console.print(t)
    for a in result.annotations:
        hot = sorted(a.instructions, key=lambda x: -x[2])[:3]
        hot_txt = escape("; ".join(f"{' '.join(i.split())} {s:.0%}" for _, i, s in hot))
        flag = "  <- front-end hint" if a.front_end_hint else ""
        console.print(f"  {escape(a.symbol)}: {a.head_share:.0%} on its {a.head_desc}{flag}; hottest: {hot_txt}")
    console.print(result.message)


# --- diff ------------------------------------------------------------------------------------

@dataclass(frozen=True)
class ProfileDiffConfig:
    a: str  # perf.data path or stored profile campaign id
    b: str
    threshold: float = 0.01  # of the extra
    top: int = 15


@dataclass
class ProfileDiffResult:
    campaign_id: int | None
    a_label: str
    b_label: str
    a_period: int
    b_period: int
    swapped: bool
    rows: list[DiffRow]
    n_recordings: tuple[int, int]

    def summary(self) -> dict[str, Any]:
        return {
            "verdict": (f"{self.b_label} has {self.extra_fraction:.1%} more samples' period than "
                        f"{self.a_label}; top contributor "
                        + (f"{self.rows[0].symbol} ({self.rows[0].share_of_extra:.1%} of the extra)"
                           if self.rows else "none")),
            "a": self.a_label, "b": self.b_label, "swapped": self.swapped,
            "a_period": self.a_period, "b_period": self.b_period,
            "extra_fraction": self.extra_fraction,
            "n_recordings": list(self.n_recordings),
            "contributors": [r.as_dict() for r in self.rows],
        }

    @property
    def extra_fraction(self) -> float:
        return (self.b_period - self.a_period) / self.a_period if self.a_period else 0.0


def resolve_profiles(ref: str, store: Any) -> list[str]:
    """A perf.data path, or a stored profile campaign id -> its perf.data paths."""
    if os.path.exists(ref):
        return [ref]
    if ref.isdigit() and store is not None:
        try:
            arts = store.artifacts(int(ref))
        except Exception:
            arts = []
        paths = [a.path for a in arts if a.kind == "perf.data"]
        if paths:
            missing = [p for p in paths if not os.path.exists(p)]
            if missing:
                raise PerflabError(f"campaign {ref}'s perf.data {missing[0]} is gone; record it again")
            return paths
        raise PerflabError(f"campaign {ref} has no perf.data artifacts in {store.display}; "
                           "give a perf.data path or the id of a 'perflab profile' campaign")
    raise PerflabError(f"{ref}: neither a perf.data file nor a stored campaign id")


def run_profile_diff(config: ProfileDiffConfig, executor: Any = None, store: Any = None,
                     console: Any = None) -> ProfileDiffResult:
    """Which functions account for the extra samples of the slower profile over the faster."""
    pa, pb = resolve_profiles(config.a, store), resolve_profiles(config.b, store)
    profs_a = [aggregate(read_samples(p)) for p in pa]
    profs_b = [aggregate(read_samples(p)) for p in pb]
    la, lb = config.a, config.b
    ma, mb = _merge(profs_a), _merge(profs_b)
    # Average over recordings so that K recordings of A and K' of B compare per window.
    per_a = ma.period / len(profs_a)
    per_b = mb.period / len(profs_b)
    swapped = per_a > per_b
    if swapped:
        profs_a, profs_b, la, lb = profs_b, profs_a, lb, la
    ma, mb = _mean_profile(profs_a), _mean_profile(profs_b)
    rows = diff_profiles(ma, mb)
    pairs = min(len(profs_a), len(profs_b))
    if pairs >= 2:
        from perflab.stats import bootstrap_median_ci

        per_pair = [{r.symbol: r.share_of_extra for r in diff_profiles(profs_a[i], profs_b[i])}
                    for i in range(pairs)]
        rows = [DiffRow(**{**r.as_dict(), **dict(zip(("lo", "hi"), bootstrap_median_ci(
            [pp.get(r.symbol, 0.0) for pp in per_pair])))}) for r in rows]
    rows = [r for r in rows if r.share_of_extra >= config.threshold][: config.top]
    result = ProfileDiffResult(None, la, lb, ma.period, mb.period, swapped, rows,
                               (len(profs_a), len(profs_b)))
    if store is not None:
        cid = store.start_campaign("profile_diff", asdict(config))
        store.finish_campaign(cid, "done", result.summary())
        result.campaign_id = cid
    if console is not None:
        render_diff(result, console)
    return result


def _mean_profile(profiles: list[Profile]) -> Profile:
    """The per-recording mean (period and samples divided by K), for unequal K."""
    m = _merge(profiles)
    k = len(profiles)
    for f in m.functions.values():
        f.period = f.period / k  # type: ignore[assignment]
        f.samples = f.samples / k  # type: ignore[assignment]
    return Profile(m.samples / k, m.period / k, m.functions)  # type: ignore[arg-type]


def render_diff(result: ProfileDiffResult, console: Any) -> None:
    from rich.markup import escape
    from rich.table import Table

    if result.swapped:
        console.print(f"(A is the slower profile: showing what {result.b_label} spends beyond {result.a_label})")
    t = Table(title=f"major contributors to the extra samples of {result.b_label} over {result.a_label} "
                    f"(+{result.extra_fraction:.1%})")
    ci = any(r.lo is not None for r in result.rows)
    cols = ["share of extra"] + (["95% CI"] if ci else []) + ["extra ms", "A samples", "B samples", "symbol", "shared object"]
    for c in cols:
        t.add_column(c, justify="left" if c in ("symbol", "shared object") else "right")
    for r in result.rows:
        cells = [f"{r.share_of_extra:.2%}"]
        if ci:
            cells.append(f"[{r.lo:.1%}, {r.hi:.1%}]" if r.lo is not None else "")
        cells += [f"{r.extra_ms:.1f}", f"{r.a_samples:.1f}", f"{r.b_samples:.1f}", escape(r.symbol), escape(r.dso)]
        t.add_row(*cells)
    console.print(t)
    if result.n_recordings[0] > 1 or result.n_recordings[1] > 1:
        console.print(f"samples are means per recording ({result.n_recordings[0]} and "
                      f"{result.n_recordings[1]} recordings); CI: bootstrap over recording pairs")
    if abs(result.extra_fraction) < 0.05:
        console.print(f"warning: the profiles differ by only {result.extra_fraction:.1%}: shares of so "
                      "small an extra are dominated by sampling noise (record longer windows or --repeat)")
    console.print(result.summary()["verdict"])
