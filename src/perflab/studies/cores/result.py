"""The result of a per-core scan: per-CPU rows, slow cores, disturbances (JSON round trip), and
the verdict sentence composed from those rows alone, so the table, the sentence and the JSON
cannot disagree."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any, Callable, Sequence

from perflab.platform.sysfs import format_cpulist
from perflab.stats import CI
from perflab.studies.base import decode
from perflab.studies.cores import looks
from perflab.studies.cores.timeline import Timeline

NAMED = ("slow", "unresolved", "contention", "intermittent")  # verdicts the sentence names a CPU for


@dataclass
class CpuRow:
    cpu: int
    socket: int
    core: int
    node: int
    siblings: tuple[int, ...]
    runs: int = 0  # successful runs
    failed: int = 0
    median: float | None = None  # the workload's primary metric (or wall seconds), in the result's unit
    ci: CI | None = None
    ratio: float | None = None  # median over rounds of (cost / median of the other CPUs' costs)
    ratio_ci: CI | None = None
    change: float | None = None  # the metric against the rest, in its own direction: ratio as a change
    change_ci: CI | None = None
    rounds: int = 0  # rounds with a ratio
    slower_rounds: int = 0  # rounds in which its ratio was above 1
    p_value: float | None = None
    p_adjusted: float | None = None
    disturbed: tuple[int, ...] = ()  # rounds in which it was an outlier above its usual level
    normal: tuple[int, ...] = ()  # rounds back at the others' level, clearly below its own
    slow_rounds: tuple[int, ...] = ()  # rounds at (nearer) its slow level: an intermittent CPU's
    verdict: str = ""  # slow, unresolved, contention, intermittent, disturbed, uneven, failed, not significant
    block_levels: tuple[float | None, ...] = ()  # its ratio to the rest in each time block, as a cost change
    slow_blocks: tuple[int, ...] = ()  # blocks in which it was clearly slow on its own (contention)
    mode_shares: tuple[float, ...] = ()  # share of its runs in each run-time mode (when several)
    ipc: float | None = None  # median instructions per cycle (perf stat, where the PMU counts)
    ghz: float | None = None  # median effective frequency: cycles / task-clock
    pause_rounds: tuple[int, ...] = ()  # normal rounds opening a block after a pause, left out of persistence
    others_out: tuple[int, ...] = ()  # rounds left out: the others far above their own level, it at its own
    why: str = ""  # why a CPU slower by the test is not named slow (its own evidence; the scan's is timeline.why)


@dataclass
class SlowCore:
    """A physical core with at least one slow thread, reported once."""

    core: int
    socket: int
    node: int
    cpus: tuple[int, ...]  # the slow threads
    siblings: tuple[int, ...]  # all threads of the core
    ratio: float  # worst slow thread's
    ratio_ci: CI
    p_adjusted: float
    rounds: int
    slower_rounds: int


@dataclass
class Disturbance:
    """A CPU slower than the rest in some rounds only: interference, not a slow core."""

    cpu: int
    rounds: tuple[int, ...]
    ratio: float  # median ratio to the rest in those rounds
    intermittent: bool  # slower in most rounds but not in nearly all (else: a few rounds)


@dataclass
class CoresResult:
    campaign_id: int | None = None
    mode: str = "sequential"
    metric: str = "time"  # what the medians are: wall time or the workload's primary metric
    higher_is_better: bool = False
    unit: str = "s"
    rounds: int = 0
    stopped: str = ""
    elapsed_s: float = 0.0
    cpus: list[CpuRow] = field(default_factory=list)
    slow: list[SlowCore] = field(default_factory=list)
    disturbances: list[Disturbance] = field(default_factory=list)
    friedman: dict[str, Any] | None = None  # statistic, p_value (floats), rounds, cpus (counts)
    noise: float | None = None  # robust SD of the per-round log-ratios
    mde: float | None = None  # smallest slowdown detected in >= 90 % of simulated scans (fraction)
    mde_why: str = ""  # why there is no finite mde, when there is none
    modes: dict[str, Any] | None = None  # stats.modes.Modes.as_dict() of the run costs (+ "normalised")
    speeds: str = ""  # which CPUs stayed at one speed for the whole scan (speeds.finding)
    timeline: Timeline | None = None  # the blocks, and how long the machine's per-CPU slowness held
    # the test behind p: the block test, whose null is slower by min_effect at most (True: the
    # scan showed CPU states that hold), or the round rule's sign test over rounds (False: no
    # state held from round to round; slower in every block is still asked)
    block_margin: bool = True
    runs: int = 0
    failed: int = 0
    failures: dict[str, int] = field(default_factory=dict)
    verdict: str = ""
    notes: list[str] = field(default_factory=list)
    # --until-decided: the design, its looks, each CPU's repeated interval and decision (looks.py)
    sequential: dict[str, Any] | None = None

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        if d["sequential"] is None:  # a scan without looks stores what it always stored
            del d["sequential"]
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "CoresResult":
        if "cpus" not in d:  # a failed campaign's summary, its error alone: no scan to read
            raise KeyError("cpus")
        return decode(cls, d)


def slow_cores(rows: list[CpuRow]) -> list[SlowCore]:
    """Slow threads grouped by physical core: a slow core is reported once with its siblings."""
    out: dict[int, SlowCore] = {}
    for r in rows:
        if r.verdict != "slow":
            continue
        assert r.ratio is not None and r.p_adjusted is not None  # a slow verdict rests on both
        prev = out.get(r.core)
        if prev is None:
            out[r.core] = SlowCore(r.core, r.socket, r.node, (r.cpu,), r.siblings, r.ratio, r.ratio_ci,
                                   r.p_adjusted, r.rounds, r.slower_rounds)
            continue
        prev.cpus = tuple(sorted(prev.cpus + (r.cpu,)))
        prev.p_adjusted = min(prev.p_adjusted, r.p_adjusted)
        if r.ratio > prev.ratio:
            prev.ratio, prev.ratio_ci, prev.rounds, prev.slower_rounds = r.ratio, r.ratio_ci, r.rounds, r.slower_rounds
    return sorted(out.values(), key=lambda s: -s.ratio)


def as_change(ratio: float, higher_is_better: bool) -> float:
    """A cost ratio (> 1: slower) as the change of the metric in its own direction."""
    return 1.0 / ratio - 1.0 if higher_is_better else ratio - 1.0


def as_change_ci(ci: CI, higher_is_better: bool) -> CI:
    """A cost-ratio CI as the CI of the metric's change (bounds swap for a higher-is-better metric)."""
    if higher_is_better:
        return CI(1.0 / ci.high - 1.0, 1.0 / ci.low - 1.0, ci.level)
    return CI(ci.low - 1.0, ci.high - 1.0, ci.level)


def change_text(change: float, ci: CI | None, repeated: bool = False) -> str:
    """'+7.6% [+5.9%, +9.3%] (96% CI)': the change and its CI in one form; ``repeated``: a
    repeated interval, its level (99.x %) to two decimals."""
    if ci is None or ci.level <= 0:
        return f"{change:+.1%}"
    if repeated:
        return f"{change:+.1%} [{ci.low:+.1%}, {ci.high:+.1%}] ({level_text(ci.level)} repeated CI)"
    return f"{change:+.1%} [{ci.low:+.1%}, {ci.high:+.1%}] ({ci.level:.0%} CI)"


def level_text(level: float) -> str:
    """A level near 1 with the digits that tell it from 1: 0.9787 -> '97.87%', 0.99998 -> '99.998%'."""
    if level >= 1:
        return "100%"
    digits = max(2, math.ceil(-math.log10(1 - level)) - 2)
    return f"{100 * level:.{digits}f}%"


def rounds_text(rounds: tuple[int, ...]) -> str:
    return ("rounds " if len(rounds) > 1 else "round ") + format_cpulist(list(rounds))


def named(result: "CoresResult") -> dict[int, str]:
    """CPU -> verdict for every CPU the verdict sentence names (slow or intermittent)."""
    return {r.cpu: r.verdict for r in result.cpus if r.verdict in NAMED}


def compose_verdict(result: "CoresResult") -> str:
    """The verdict sentence, from the rows, slow cores and disturbances of the result alone."""
    if result.runs == 0:
        return "no run finished"
    if not any(r.runs for r in result.cpus):
        return f"every run failed ({', '.join(f'{k}: {v}' for k, v in result.failures.items())})"
    hib, metric, tl = result.higher_is_better, result.metric, result.timeline
    over = _over(tl)
    seq = result.sequential
    parts = [f"slow core {s.core} (CPUs {format_cpulist(list(s.cpus))}): {metric} "
             f"{change_text(as_change(s.ratio, hib), as_change_ci(s.ratio_ci, hib), seq is not None)} vs the rest, "
             + (f"p = {s.p_adjusted:.2g} ({_test_name(tl, result.block_margin)}, Holm)" if seq is None else
                "its interval above no change")
             + f", slower in {s.slower_rounds} of {s.rounds} rounds"
             + (f" and {over}" if over else "") for s in result.slow]
    unresolved = [r for r in result.cpus if r.verdict == "unresolved"]
    scan_why = tl.why if tl and tl.why else ""
    if seq is not None and "looks" in seq:
        # measured until decided: the CPUs not named are ruled out together or "cannot tell", with
        # what would decide them; never the fixed scan's "no CPU is slower" on undecided evidence
        if unresolved:
            which = ", ".join(f"CPU {r.cpu}" for r in unresolved)
            parts.append(f"cannot tell whether {which} {'is' if len(unresolved) == 1 else 'are'} persistently "
                         f"slower: slower {over or 'throughout'}, but "
                         + ("; ".join([scan_why] * bool(scan_why) + sorted({r.why for r in unresolved if r.why}))
                            or "the scan cannot tell"))
        parts.append(looks.sentence(seq, bool(result.slow or unresolved)))
    elif not result.slow and unresolved:
        own = sorted({r.why for r in unresolved if r.why})
        parts.append("cannot tell whether a CPU is persistently slower: " + ", ".join(
            f"CPU {r.cpu} ({metric} {as_change(r.ratio, hib):+.1%})" for r in unresolved)  # type: ignore[arg-type]  # a verdict comes with a ratio
            + f" slower than the rest {over or 'throughout'}, but "
            + ("; ".join([scan_why] * bool(scan_why) + own) or "the scan cannot tell"))
    elif not result.slow:
        if result.mde is not None and result.mde != float("inf"):
            parts.append(f"no CPU is persistently slower than the rest by {result.mde:.1%} or more, the "
                         "smallest slowdown this scan detects (>= 90% of simulated scans under its noise)")
        else:
            parts.append(f"cannot tell whether a CPU is persistently slower: {result.mde_why}")
    elif unresolved:
        own = sorted({r.why for r in unresolved if r.why})
        parts.append(", ".join(f"CPU {r.cpu}" for r in unresolved) + f" also slower {over or 'throughout'}, but "
                     + ("; ".join([scan_why] * bool(scan_why) + own) or "the scan cannot tell"))
    for r in result.cpus:
        if r.verdict == "contention" and tl is not None:
            lv = [v for v in (r.block_levels[b] for b in r.slow_blocks) if v is not None]
            there = f"; {metric} {as_change(1 + max(lv), hib):+.1%} there" if lv else ""
            parts.append(f"CPU {r.cpu} slower than the rest only in {tl.block_text(r.slow_blocks)}{there}: "
                         "contention in that stretch, not a slow core")
    rows = {r.cpu: r for r in result.cpus}
    for x in result.disturbances:
        if not x.intermittent:
            continue
        back = rows[x.cpu].normal
        parts.append(f"CPU {x.cpu} slower than the rest only in {rounds_text(x.rounds)} ({metric} "
                     f"{as_change(x.ratio, hib):+.1%} there)"
                     + (f", at the others' level in {rounds_text(back)} (its own {metric} changed there, "
                        "the others' did not)" if back else "")
                     + ": interference that came and went (another process, a co-tenant), not a slow core")
    failed = [r.cpu for r in result.cpus if r.verdict == "failed"]
    if failed:
        parts.append(f"CPUs {format_cpulist(failed)}: every run failed, not tested")
    if result.speeds:
        parts.append(result.speeds)
    return "; ".join(parts)


def _test_name(tl: Timeline | None, block: bool = True) -> str:
    """The test behind a slow verdict: the block test where the scan showed CPU states that hold,
    else the sign test over rounds."""
    if tl is None or len(tl.blocks) < 2:
        return "sign test"
    return f"t-test on its {len(tl.blocks)} block levels" if block else "sign test over rounds, no state held"


def _over(tl: Timeline | None) -> str:
    """'in each of 3 blocks over 64 s': the time a claim spans."""
    if tl is None or len(tl.blocks) < 2:
        return ""
    span = f" over {tl.span_s:.0f} s" if not math.isnan(tl.span_s) else ""
    return f"in each of {len(tl.blocks)} blocks{span}"


def with_disturbances(verdict: str, disturbances: Sequence[Disturbance], figure: Callable[[float], str]) -> str:
    """``verdict`` followed by every disturbance as a clause, the cost ratio written by ``figure``
    (the digits its reader needs): the sentence where one line holds the verdict and the rounds
    a CPU was disturbed in (the report; the terminal prints a disturbance on a line of its own)."""
    for x in disturbances:
        rounds = "round" if len(x.rounds) == 1 else "rounds"
        verdict += (f"; CPU {x.cpu} {'was slower only in' if x.intermittent else 'was disturbed in'} "
                    f"{rounds} {', '.join(map(str, x.rounds))} (cost ratio {figure(x.ratio)})")
    return verdict
