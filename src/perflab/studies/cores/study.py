"""Is one CPU of this machine persistently slower than the others? (seed 001: one core 12% slower)

Design: rounds in time blocks. Sequential (default, seed 001's method): the workload runs pinned
to each CPU in turn, in an order shuffled anew each round. Concurrent (``concurrent``): one copy
on every CPU at once per round, released by a gate, as a farm node runs. Each round is a block
of the comparison: every CPU's cost (wall seconds, or 1/metric for a higher-is-better metric) is
divided by the median of the other CPUs in the same round, so drift between rounds cancels.
Where run times have two speeds that alternate within CPUs (a vCPU's host state), each cost is
first divided by its speed mode's factor (speeds.py), so CPUs are compared within a speed.
The rounds are spread over time in ``blocks`` (default 3) whose starts are at least ``span``
seconds apart first to last (default 60 s; the scan waits between blocks where the rounds take
less): a vCPU's speed is a state that holds for seconds, and only blocks further apart than it
holds are independent evidence (timeline.py).
Analysis (analysis.py): per CPU a t-test of its block levels (each block's median ratio) against
log(1 + min_effect) with the block-to-block spread pooled over the CPUs where the scan shows
CPU states that hold, else (and with one block) the one-sided sign test over rounds (timeline.py,
detect.py), Holm-corrected (one block: the one-sided
sign test over rounds, detect.py). Slow = significant, median ratio >= 1 + min_effect, slower in
every block (above the rest, and not below min_effect and clearly below its own mean level;
with many blocks, all but 1 - persistence of them), persistent over rounds (no more
than 1 - ``persistence`` of its rounds back at the others' level, detect.round_sets; those that
open a block after a pause are left out and named, timeline.leading), and the
scan spans more time than the machine's per-CPU slowness holds (round-to-round and
block-to-block correlation, timeline.hold); else *unresolved*, named with what to do. A CPU
clearly slow in some blocks only is *contention* in those stretches, with their times; a
significant CPU back at the others' level in many rounds is *intermittent*; outlier rounds are
*disturbance*. The smallest detectable slowdown is simulated under the scan's own noise with the
same test (detect.block_detectable). Adaptive stop in the first block after ceil(min_rounds /
blocks) rounds: every CPU's ratio CI within ``precision`` and the round rule's detectable
slowdown at most ``target`` (2 x min_effect); the other blocks then run as many rounds (equal
blocks weigh equally); else each block its share of ``rounds``, or max_time. ``until_decided``
(looks.py): blocks of rounds / blocks rounds until every CPU is shown slow or ruled out at
min_effect by its repeated interval, or the budget ends, in place of the adaptive stop. Medians are
shown in the workload's primary metric, in its own direction; the verdict is composed from the
rows (result.compose_verdict).
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Sequence

from perflab.errors import PerflabError
from perflab.model import RunResult, RunSpec, Workload
from perflab.platform.affinity import usable_cpus
from perflab.platform.machine import Machine
from perflab.platform.sysfs import format_cpulist
from perflab.platform.topology import Topology
from perflab.stats.blocked import loo_log_ratios
from perflab.studies.base import StudyConfig
from perflab.studies.cores import analysis, looks
from perflab.studies.cores.counters import COUNTER_EVENTS
from perflab.studies.cores.detect import row_cis
from perflab.studies.cores.result import CoresResult, compose_verdict

if TYPE_CHECKING:
    from perflab.studies.session import Session

NAME = "cores"


@dataclass(frozen=True)
class CoresConfig(StudyConfig):
    workload: Workload
    cpus: tuple[int, ...] | None = None  # None: every usable logical CPU
    physical: bool = False  # one thread per physical core
    concurrent: bool = False  # one copy on every CPU at once per round
    rounds: int = 30  # most rounds
    min_rounds: int = 5
    max_time: float = 600.0  # seconds of measuring, checked before each run (each round if concurrent)
    precision: float = 0.03  # stop when every CPU's ratio CI half-width <= precision
    min_effect: float = 0.02  # a slow CPU is at least this much slower than the rest
    alpha: float = 0.05  # family-wise, over the CPUs (Holm)
    persistence: float = 0.9  # a slow CPU is at its slow level in at least this share of rounds
    warmup: int = 1  # unrecorded runs before the first round (page cache, build)
    seed: int = 0
    timeout: float | None = None  # per run
    counters: bool = False  # perf stat cycles/instructions per run: IPC and effective GHz per CPU
    blocks: int = 3  # time blocks the rounds are spread over
    span: float = 60.0  # seconds from the first block's start to the last's, at least (waits if need be)
    # --until-decided: blocks until every CPU is decided at min_effect, or the budget ends (looks.py)
    until_decided: bool = False
    max_runs: int | None = None  # the budget in rounds (looks.DEFAULT_BUDGET where None)

    decoders = {"workload": Workload.from_dict}

    @property
    def target(self) -> float:
        """The slowdown the adaptive stop waits to be able to detect (module docstring)."""
        return 2 * self.min_effect

    @property
    def blocks_used(self) -> int:
        """--blocks, but no more than rounds / 2 (a block has at least 2 rounds)."""
        return max(1, min(self.blocks, self.rounds // 2))

    @property
    def span_used(self) -> float:
        """The span the scan waits for: --span, but at most 3/4 of --max-time."""
        return min(self.span, 0.75 * self.max_time)

    def __post_init__(self) -> None:
        if not 2 <= self.min_rounds <= self.rounds:
            raise PerflabError(f"need 2 <= --min-rounds ({self.min_rounds}) <= --rounds ({self.rounds})")
        if not 0.5 < self.persistence <= 1:
            raise PerflabError(f"persistence {self.persistence} must be in (0.5, 1]")
        if self.blocks < 1:
            raise PerflabError(f"--blocks {self.blocks} must be 1 or more")
        if not self.span >= 0:
            raise PerflabError(f"--span {self.span} must be 0 or more seconds")
        if self.max_runs is not None and not self.until_decided:
            raise PerflabError("--max-runs bounds --until-decided: add --until-decided, or drop it")
        if self.until_decided and self.blocks_used < 2:
            raise PerflabError(f"--until-decided looks at the end of blocks and needs 2 or more: --blocks 3 "
                               f"(the default) with --rounds 6 or more, not --blocks {self.blocks} --rounds {self.rounds}")
        if self.until_decided and self.max_runs is not None and self.max_runs < self.rounds:
            raise PerflabError(f"--max-runs {self.max_runs} is below the first look's --rounds {self.rounds}: "
                               "raise --max-runs")
        if self.until_decided and not 0 < self.min_effect < 1:
            raise PerflabError(f"--until-decided needs --min-effect between 0 and 1, not {self.min_effect:g}")


Config = CoresConfig


def plan(config: CoresConfig, machine: Machine, round_: int = 0, block: int = 0) -> list[RunSpec]:
    """One round: a run pinned to every scanned CPU, in this round's shuffled order."""
    order = select_cpus(machine.topology, config.cpus, config.physical)
    random.Random(f"{config.seed}:{round_}").shuffle(order)
    return [_spec(config, cpu, round_, block) for cpu in order]


def _spec(config: CoresConfig, cpu: int, round_: int, block: int = 0) -> RunSpec:
    params = {"cpu": cpu, "round": round_} if round_ < 0 else {"cpu": cpu, "round": round_, "block": block}
    return config.workload.spec(cpus=(cpu,), timeout=config.timeout, params=params,
                                perf_events=COUNTER_EVENTS if config.counters else None)


def _clock(session: Session) -> Callable[[], float]:
    """The executor's clock in seconds (virtual under the mock)."""
    now = session.executor.now_ns
    return lambda: now() / 1e9


def _wait(session: Session, seconds: float) -> None:
    session.executor.wait(seconds)


def execute(config: CoresConfig, session: Any, machine: Machine) -> CoresResult:
    """Run blocks of rounds until the verdict is precise enough, every run stored as it completes."""
    import numpy as np

    cpus = select_cpus(machine.topology, config.cpus, config.physical)
    for w in range(config.warmup):
        session.warmup(_spec(config, cpus[w % len(cpus)], -1))
    if config.until_decided:
        return _until_decided(config, session, machine, cpus)
    clock = _clock(session)
    started = clock()
    runs: list[tuple[dict, RunResult]] = []
    dcols: list = []  # per round: every CPU's log-ratio to the others (in `cpus` order), or NaN
    ok_any = False
    index = {c: i for i, c in enumerate(cpus)}
    stopped = "rounds"
    nb = config.blocks_used
    bounds = [round(config.rounds * b / nb) for b in range(nb + 1)]
    least = math.ceil(config.min_rounds / nb)
    rnd = 0
    per_block = config.rounds  # set by the first block: the blocks are equal, so equally weighed
    early = False  # the first block stopped on precision
    for blk in range(nb):
        first = rnd
        if blk and stopped == "rounds":
            # from the first run's own start, which the analysis measures the span from (a
            # spawn under load starts a few hundred ms after `started`: --span 10 gave 9.9 s)
            first_start = min((r.start_ns for _, r in runs if r.start_ns > 0), default=0) / 1e9
            due = (first_start or started) + blk * config.span_used / max(nb - 1, 1) - clock()
            replaying = getattr(session, "stored", lambda *a, **k: False)(_spec(config, cpus[0], rnd, blk), rnd)
            if due > 0 and not replaying:
                session.say(f"block {blk + 1} of {nb}: waiting {due:.0f} s so the blocks span "
                            f"{config.span_used:.0f} s (--span)")
                _wait(session, due)
        while stopped == "rounds" and rnd - first < min(bounds[blk + 1] - bounds[blk], per_block):
            specs = plan(config, machine, rnd, blk)
            done: list[tuple[RunSpec, RunResult]] = []
            if clock() - started > config.max_time:
                stopped = "max-time"
            elif config.concurrent:
                done = list(zip(specs, session.run_concurrent(specs, rep=rnd).results))
            else:
                for spec in specs:
                    if clock() - started > config.max_time:
                        stopped = "max-time"
                        break
                    done.append((spec, session.run(spec, rep=rnd)))
            column = np.full((len(cpus), 1), np.nan)
            for spec, res in done:
                runs.append((dict(spec.params), res))
                column[index[spec.params["cpu"]], 0] = cost_of(config.workload, res)[0] or np.nan
            if stopped == "max-time":
                break
            rnd += 1
            ok_any = ok_any or bool((~np.isnan(column)).any())
            dcols.append(loo_log_ratios(column)[:, 0])
            precise, mde = _progress(dcols, config)
            session.say(f"block {blk + 1}, round {rnd}: widest ratio CI half-width {_pct(precise)} (stop at "
                        f"{config.precision:.1%}), detectable slowdown {_pct(mde)} (stop at {config.target:.1%})")
            if rnd >= 2 and not ok_any:
                stopped = "failures"
            elif (blk == 0 and rnd >= least and precise <= config.precision and mde <= config.target):
                early = True
                break
        if blk == 0 and early:
            # only a first block cut short by precision sets the later ones' length: one that ran
            # its share (5 of --rounds 16) must not cap a longer later share (6), or the scan
            # runs 15 rounds and says it stopped at --rounds 16
            per_block = max(rnd, least)
    if stopped == "rounds" and early:
        stopped = "precision"
    result = analyse(config, runs, machine.topology)
    result.stopped, result.elapsed_s = stopped, clock() - started
    load = (machine.metadata or {}).get("loadavg") or [0.0]
    ncpu = len(machine.topology.cpus) or 1
    if load[0] > 0.5 * ncpu:
        result.notes.append(f"load average {load[0]:.1f} on {ncpu} CPUs at the start: other work competes, "
                            "and a CPU it is pinned to looks slow; rerun on a quiet machine to confirm")
    if config.blocks_used < config.blocks:
        result.notes.append(f"{config.blocks_used} blocks, not --blocks {config.blocks}: a block needs at least "
                            f"2 of the --rounds {config.rounds}")
    if config.span_used < config.span and nb > 1:
        result.notes.append(f"blocks spread over {config.span_used:.0f} s, not --span {config.span:g}: "
                            f"at most 3/4 of --max-time {config.max_time:g}")
    if stopped in ("rounds", "max-time") and (result.mde is None or result.mde > config.target):
        limit = f"--max-time {config.max_time:g}" if stopped == "max-time" else f"--rounds {config.rounds}"
        result.notes.append(f"stopped at {limit} before the scan could detect a {config.target:.1%} "
                            f"slowdown; raise {limit.split()[0]} or quiet the machine")
    return result


def _round(config: CoresConfig, session: Any, machine: Machine, rnd: int, blk: int) -> list[tuple[dict, RunResult]]:
    """One round of every CPU (at once where --concurrent), each run stored as it completes."""
    specs = plan(config, machine, rnd, blk)
    if config.concurrent:
        return [(dict(s.params), r) for s, r in zip(specs, session.run_concurrent(specs, rep=rnd).results)]
    return [(dict(s.params), session.run(s, rep=rnd)) for s in specs]


def _until_decided(config: CoresConfig, session: Any, machine: Machine, cpus: list[int]) -> CoresResult:
    """--until-decided: whole blocks, a look at the end of each block the design plans (looks.py),
    until every CPU is decided or the budget (--max-runs, --max-time at the first block's pace) ends."""
    clock = _clock(session)
    started = clock()
    runs: list[tuple[dict, RunResult]] = []
    per = looks.per_block(config)
    limit, blk, block_s = looks.first(config), 0, 0.0
    stopped, result = "budget", None
    while True:
        due = started + blk * looks.gap_s(config) - clock()
        if blk and clock() - started + max(due, 0.0) + block_s > config.max_time:
            stopped = "max-time"  # the next block would end past --max-time
            break
        if blk and due >= 0.5 and not getattr(session, "stored", lambda *a, **k: False)(
                _spec(config, cpus[0], blk * per, blk), blk * per):
            session.say(f"block {blk + 1}: waiting {due:.0f} s so blocks start {looks.gap_s(config):.0f} s apart")
            _wait(session, due)
        for r in range(blk * per, (blk + 1) * per):
            runs += _round(config, session, machine, r, blk)
        blk += 1
        if blk == 1:
            block_s = _first_block_s(runs)
            limit = looks.budget(config, block_s)
            if not any(cost_of(config.workload, res)[0] is not None for _, res in runs):
                stopped = "failures"
                break
        if blk >= limit or looks.due(config, blk, limit, len(cpus)):
            result = _look(config, runs, machine.topology, blk, limit, len(cpus), blk >= limit, block_s)
            seq = result.sequential or {}
            session.say(f"block {blk} of at most {limit}: look {len(seq['looks'])}, "
                        + ("every CPU decided" if seq["decided"] else "not decided yet"))
            if seq["decided"] or blk >= limit:
                stopped = "decided" if seq["decided"] else "budget"
                break
    if result is None or stopped in ("max-time", "failures"):
        result = _look(config, runs, machine.topology, blk, limit, len(cpus), True, block_s)
    result.stopped, result.elapsed_s = stopped, clock() - started
    return result


def _first_block_s(runs: Sequence[tuple[dict, RunResult]]) -> float:
    """The first block's time, from its runs' own start and wall times: the same figure when
    `perflab resume` replays stored runs in no time, so the budget it sets is the same."""
    first = [r for p, r in runs if int(p["round"]) >= 0 and int(p.get("block", 0)) == 0]
    return (max(r.start_ns + r.wall_ns for r in first) - min(r.start_ns for r in first)) / 1e9 if first else 0.0


def _look(config: CoresConfig, runs: Sequence[tuple[dict, RunResult]], topology: Topology | None, blocks: int,
          limit: int, m: int, final: bool, block_s: float) -> CoresResult:
    """The verdict at a look: every CPU's repeated interval at the look's level (looks.py)."""
    p = looks.plan_at(config, max(blocks, 2), limit, m, final)
    result = analysis.analyse(config, runs, topology, cost_of, unit_of(config.workload), p.level)
    decided = (result.sequential or {}).get("cpus", {})
    looks.settle(p, decided, blocks, any(r.verdict == "unresolved" for r in result.cpus), looks.per_block(config),
                 max(block_s, looks.gap_s(config)))
    result.sequential = looks.as_dict(p, decided, looks.per_block(config), config.alpha, config.min_effect)
    result.verdict = compose_verdict(result)
    return result


def _progress(dcols: list, config: CoresConfig) -> tuple[float, float]:
    """(widest ratio CI half-width, the round rule's smallest detectable slowdown) from the
    per-round log-ratio columns so far (each computed once, when its round ends)."""
    import numpy as np

    d = np.stack(dcols, axis=1)
    cis = row_cis(d)
    if any(c.level == 0 or math.isnan(c.low) for c in cis):
        return math.inf, math.inf
    widest = max((math.exp(c.high) - math.exp(c.low)) / 2 for c in cis)
    mde, _ = analysis.detectable_of(d, config)
    return widest, mde


def _pct(x: float) -> str:
    return f"{x:.1%}" if x != math.inf else "n/a"


def cost_of(workload: Workload, result: RunResult) -> tuple[float | None, str | None]:
    """(cost, None) with cost larger = slower: wall seconds or 1/metric; (None, why) if unusable."""
    if not result.ok:
        return None, result.failure
    metric = workload.primary_metric
    if metric is None:
        return (result.wall_s, None) if result.wall_ns > 0 else (None, "no wall time")
    if metric not in result.metrics:
        return None, f"printed no '{metric}'"
    value = float(result.metrics[metric])
    if not workload.higher_is_better:
        return (value, None) if value > 0 else (None, f"{metric} = {value:g}")
    return (1.0 / value, None) if value > 0 else (None, f"{metric} = {value:g}")


def unit_of(workload: Workload) -> str:
    """How the medians print: the workload's unit, its metric's name, or seconds."""
    if workload.primary_metric is None:
        return "s"
    return workload.unit or workload.primary_metric


def select_cpus(topology: Topology, cpus: tuple[int, ...] | None, physical: bool) -> list[int]:
    """The CPUs to scan: the requested list (checked) or all usable ones; one per core if asked."""
    usable = usable_cpus(topology)
    if cpus is None:
        chosen = list(usable)
    else:
        bad = sorted(set(cpus) - set(usable))
        if bad:
            raise PerflabError(f"CPU(s) {format_cpulist(bad)} are offline or not allowed here; usable CPUs: "
                               f"{format_cpulist(usable)} (fix --cpus)")
        chosen = sorted(set(cpus))
    if physical:
        by_core: dict[int, int] = {}
        for c in chosen:
            by_core.setdefault(topology.cpu(c).core, c)
        chosen = list(by_core.values())
    if len(chosen) < 2:
        raise PerflabError(f"need at least 2 CPUs to compare, got {format_cpulist(chosen) or 'none'} (fix --cpus)")
    return chosen


def analyse(config: CoresConfig, runs: Sequence[tuple[dict, RunResult]],
            topology: Topology | None = None) -> CoresResult:
    """The verdict from stored runs ((params, result) pairs): analysis.py; --until-decided: at the
    look of the blocks stored, the budget from the first block's time."""
    if config.until_decided:
        blocks = len({int(p.get("block", 0)) for p, _ in runs if int(p["round"]) >= 0})
        block_s = _first_block_s(runs)
        m = len({int(p["cpu"]) for p, _ in runs})
        limit = looks.budget(config, block_s)
        return _look(config, runs, topology, blocks, limit, m, blocks >= limit, block_s)
    return analysis.analyse(config, runs, topology, cost_of, unit_of(config.workload))
