"""Does the fork-master verdict find a planted NUMA gain and stay quiet without one? Does the
optimum N stay at the CPU count on a machine that gains nothing past it, and move past it where
copies really gain from running together?

**The optimum** (``optimum_check``): simulated campaigns at the default settings on a one-node
2-CPU box like this VM (policies none and compact, N = 1..4, 5 rounds), through the
MockExecutor, under each noise model of ``checks.noise`` (quiet, shift, two-speed, skewed,
loaded): every copy's time is multiplied by the campaign's ``factor()`` and, in a round its
burst hits, one copy of the point by ``burst_hits()``. Null: a CPU-bound copy; N copies take
max(1, N / 2) times as long, so throughput is flat past 2 CPUs and the true optimum is N = 2;
a false positive is an optimum above 2. Planted: each copy waits (I/O) 1/6 of its time alone,
so N copies take max(1, N (1 - 1/6) / 2): throughput gains 20 % at N = 3 (the true optimum);
detection is an optimum above 2. At two speeds, where a campaign finds no gain past the CPU count
its output asks for the rounds that would compare within the speeds (studies/instances/power.py);
``rates_asked`` is the user who then reruns with them (``instances-MODEL-asked``: an optimum above
2 in either campaign of the null, detection of the planted gain).

**The fork-master verdict** (``verdict_check``): simulated campaigns of the instances study at
its default settings, through the MockExecutor on a 2-node fixture topology (2 sockets x 4
cores, one NUMA node each), under each noise model of ``checks.noise``: one ``factor()`` and
``burst_hits()`` per concurrent point (the machine's state, shared by its processes). Both fork modes do the same
events with the same workers; the planted effect makes NUMA-bound masters process events 8 %
faster. ``verdict_check`` returns the false-positive rate (null: any verdict of a difference)
and the detection rate (planted: a verdict of a gain), and prints the line bench/verdicts.py
collects.
"""

from __future__ import annotations

import random
from typing import Any

from perflab.checks import until
from perflab.checks.noise import STUDY_MODELS, Campaign, VcpuCampaign
from perflab.measure.executor import MockExecutor
from perflab.model import MetricPattern, RunResult, RunSpec, Workload
from perflab.platform.machine import Machine
from perflab.platform.topology import Core, Cpu, Node, Topology
from perflab.studies.instances import study as instances
from perflab.studies.instances.result import ForkVerdict

PLANTED_GAIN = 0.08
WAIT = 1 / 6  # planted: the share of a lone copy's time spent waiting, so 3 copies on 2 CPUs gain 20 %
BOX_CPUS = 2
FORK_MODEL = "loaded"  # the fork verdict's machine: drift, a tail and bursts (checks.noise)
# 240 events split evenly per worker at every default N (1, 2, 3, 4, 6, 8, 12, 16 on 2 nodes of 4):
# with 200, N = 3 gave 67 + 33 events to 2 + 1 workers, a real 0.5 % loss of the NUMA mode that
# pushed the null's false positives to 6.5 % under the shift model.
EVENTS = 240
EVENT_S = 0.01
LOAD_S = 0.2
ASKED_MODELS = ("two-speed", "vcpu-states")  # the models at two speeds, where the output asks for rounds
FORK_ASKED_MODELS = ("two-speed", "loaded")  # where the fork verdict's detection at 5 rounds falls short


def two_node_topology(cores_per_node: int = 4) -> Topology:
    """2 sockets = 2 NUMA nodes, ``cores_per_node`` cores each, no SMT."""
    k = cores_per_node
    cpus = tuple(Cpu(c, c, c // k, c // k, (c,)) for c in range(2 * k))
    cores = tuple(Core(c, c // k, c // k, (c,)) for c in range(2 * k))
    nodes = (Node(0, tuple(range(k))), Node(1, tuple(range(k, 2 * k))))
    return Topology(cpus, cores, (0, 1), nodes)


def sim_workload() -> Workload:
    return Workload(
        "sim", ("sim", "--events", str(EVENTS)),
        metrics=(MetricPattern(r"events: (?P<events>\d+)"), MetricPattern(r"events/s: (?P<events_per_s>[\d.]+)")),
        primary_metric="events_per_s", fork_arg=("--fork", "{n}", "--first", "{first}", "--events", "{events}"),
    )


class _Memory:
    """A session that keeps nothing: the check needs the study's decisions, not a store."""

    def __init__(self, executor: MockExecutor) -> None:
        self.executor = executor

    def run_concurrent(self, specs, rep: int = 0, together: bool = True):
        return self.executor.run_concurrent(specs, together=together)

    def say(self, message: str) -> None:
        pass


def _arg(argv: tuple[str, ...], name: str, default: int) -> int:
    found = [argv[i + 1] for i, a in enumerate(argv[:-1]) if a == name]
    return int(found[-1]) if found else default


def _executor(gain: float, campaign: Campaign | VcpuCampaign, ncpu: int) -> MockExecutor:
    common: dict[tuple, float] = {}
    ex = MockExecutor()

    def model(spec: RunSpec) -> RunResult:
        key = (spec.params["round"], spec.label)
        if key not in common:
            # the machine's state while a point runs, shared by its processes
            common[key] = campaign.factor() * campaign.burst_hits()
        events = _arg(spec.argv, "--events", EVENTS)
        workers = _arg(spec.argv, "--fork", 1)
        n = int(spec.params["n"])
        per_event = EVENT_S * max(1.0, n / ncpu)
        if spec.mem_node is not None and "mode" in spec.params:
            per_event /= 1 + gain
        wall = (LOAD_S + events / workers * per_event) * common[key]
        wall_ns = round(wall * 1e9)
        return RunResult(wall_ns=wall_ns, user_s=wall, sys_s=0.0, maxrss_kb=1024, minflt=0, majflt=0,
                         nvcsw=0, nivcsw=0, exit_code=0, start_ns=ex.clock_ns, end_ns=ex.clock_ns + wall_ns,
                         metrics={"events": float(events), "events_per_s": events / wall})

    ex.model = model
    return ex


def simulate(gain: float, seed: int, config: instances.InstancesConfig | None = None,
             model: str = FORK_MODEL) -> ForkVerdict:
    """One simulated campaign at the default settings (plus --fork-master); its fork verdict."""
    topology = two_node_topology()
    machine = Machine(topology=topology, metadata={"hostname": "sim"})
    cfg = config or instances.InstancesConfig(sim_workload(), fork_master=True, seed=seed)
    campaign = STUDY_MODELS[model].campaign(random.Random(seed * 7919 + 1))
    ex = _executor(gain, campaign, len(topology.cpus))
    result = instances.execute(cfg, _Memory(ex), machine)
    assert result.fork_verdict is not None
    return result.fork_verdict


def fork_found_asked(gain: float, seed: int, model: str) -> tuple[bool, bool, int | None]:
    """(a verdict of a difference, a verdict of a gain, rounds asked) of a default fork campaign
    and, where it gave none and asked for rounds (--reps N), of a fresh one at those rounds."""
    first = simulate(gain, seed, model=model)
    if first.significant or first.rounds_needed is None:
        return first.significant, first.significant and (first.gain or 0) > 1, None
    cfg = instances.InstancesConfig(sim_workload(), fork_master=True, seed=seed, reps=first.rounds_needed)
    again = simulate(gain, seed + 100_003, cfg, model=model)
    return again.significant, again.significant and (again.gain or 0) > 1, first.rounds_needed


def fork_rates_asked(model: str, runs: int, seed: int = 0) -> tuple[float, float, int]:
    """The user who reruns the fork comparison with the rounds asked: (a difference called on the
    null in either campaign, the planted gain found, the median of the rounds asked)."""
    nulls = [fork_found_asked(0.0, seed + i, model) for i in range(runs)]
    planted = [fork_found_asked(PLANTED_GAIN, seed + runs + i, model) for i in range(runs)]
    asked = sorted(r for *_, r in nulls + planted if r is not None)
    return (sum(x[0] for x in nulls) / runs, sum(x[1] for x in planted) / runs,
            asked[len(asked) // 2] if asked else 0)


def verdict_check(runs: int = 200, seed: int = 0, gain: float = PLANTED_GAIN, quiet: bool = False,
                  model: str = FORK_MODEL) -> tuple[float, float]:
    """(false-positive rate, detection rate) over ``runs`` simulated campaigns each; prints the line."""
    false_pos = sum(simulate(0.0, seed + i, model=model).significant for i in range(runs))
    detected = 0
    for i in range(runs):
        v = simulate(gain, seed + runs + i, model=model)
        detected += bool(v.significant and v.gain is not None and v.gain > 1)
    fp, det = false_pos / runs, detected / runs
    if not quiet:
        print(f"verdict-check: instances-fork-{model} false_positive={fp:.3f} detection={det:.3f} runs={runs}",
              flush=True)
    return fp, det

def one_node_box(ncpu: int = BOX_CPUS) -> Topology:
    """One socket, one NUMA node, ``ncpu`` cores without SMT."""
    cpus = tuple(Cpu(c, c, 0, 0, (c,)) for c in range(ncpu))
    cores = tuple(Core(c, 0, 0, (c,)) for c in range(ncpu))
    return Topology(cpus, cores, (0,), (Node(0, tuple(range(ncpu))),))


def simulate_optimum(model: str, wait: float, seed: int, ncpu: int = BOX_CPUS) -> int | None:
    """One simulated default campaign on an ``ncpu`` box under a noise model; its optimum N."""
    return optimum_campaign(model, wait, seed, ncpu).optimum_n


def optimum_campaign(model: str, wait: float, seed: int, ncpu: int = BOX_CPUS, reps: int | None = None,
                     salt: int = 17, **options: Any) -> instances.InstancesResult:
    """One simulated campaign (default rounds, or ``reps``; ``options``: more InstancesConfig
    fields, e.g. until_decided) on an ``ncpu`` box; its result."""
    rng = random.Random(seed * 7919 + salt)
    campaign = STUDY_MODELS[model].campaign(rng)
    ex = MockExecutor()
    hit: dict[tuple, float] = {}

    def copy_time(spec: RunSpec) -> float:
        n = int(spec.params["n"])
        key = (spec.params["round"], spec.label)
        if key not in hit:
            hit[key] = campaign.burst_hits()  # a burst on one CPU slows one copy of the point
        burst = hit[key] if spec.params["copy"] == 0 else 1.0
        return max(1.0, n * (1 - wait) / ncpu) * campaign.factor() * burst

    ex.model = copy_time
    machine = Machine(topology=one_node_box(ncpu), metadata={"hostname": "sim"})
    if reps:
        options["reps"] = reps
    cfg = instances.InstancesConfig(Workload("sim", ("sim",)), seed=seed, **options)
    return instances.execute(cfg, _Memory(ex), machine)


def optimum_check(model: str, runs: int = 200, seed: int = 0) -> tuple[float, float]:
    """(false 'optimum above the CPU count' on a flat machine, detection of a 20 % gain past it)."""
    fp = sum((simulate_optimum(model, 0.0, seed + i) or 0) > BOX_CPUS for i in range(runs)) / runs
    det = sum((simulate_optimum(model, WAIT, seed + runs + i) or 0) > BOX_CPUS for i in range(runs)) / runs
    return fp, det


def found_asked(model: str, wait: float, seed: int) -> tuple[bool, int | None]:
    """(an optimum above the CPU count in either campaign, rounds asked) of a default campaign
    and, where it found none and asked for rounds (--reps N), of a fresh one at those rounds."""
    first = optimum_campaign(model, wait, seed)
    if (first.optimum_n or 0) > BOX_CPUS or first.rounds_needed is None:
        return (first.optimum_n or 0) > BOX_CPUS, None
    again = optimum_campaign(model, wait, seed, reps=first.rounds_needed, salt=29)
    return (again.optimum_n or 0) > BOX_CPUS, first.rounds_needed


def rates_asked(model: str, runs: int, seed: int = 0) -> tuple[float, float, float]:
    """The user who reruns with the rounds the output asks for: (false 'above the CPU count' over
    both campaigns, detection of the 20 % gain, the median of the rounds asked)."""
    nulls = [found_asked(model, 0.0, seed + i) for i in range(runs)]
    planted = [found_asked(model, WAIT, seed + runs + i) for i in range(runs)]
    asked = sorted(r for _, r in nulls + planted if r is not None)
    mid = asked[len(asked) // 2] if asked else 0
    return (sum(f for f, _ in nulls) / runs, sum(f for f, _ in planted) / runs, mid)


def verdict_lines(runs: int = 200, seed: int = 0) -> list[str]:
    """The lines bench/verdicts.py prints: the optimum, then, at two speeds, the user who reruns
    with the rounds asked for (half the trials: a rerun is 10-40 rounds), then the fork verdict,
    under every model."""
    lines = []
    for model in STUDY_MODELS:
        fp, det = optimum_check(model, runs, seed)
        lines.append(f"verdict-check: instances-{model} false_positive={fp:.3f} detection={det:.3f} runs={runs}")
    for model in ASKED_MODELS:
        few = max(1, runs // 2)
        fp, det, mid = rates_asked(model, few, seed)
        lines.append(f"verdict-check: instances-{model}-asked false_positive={fp:.3f} detection={det:.3f} "
                     f"median_reps_asked={mid} runs={few}")
    for model in STUDY_MODELS:
        fp, det = verdict_check(runs, seed, quiet=True, model=model)
        lines.append(f"verdict-check: instances-fork-{model} false_positive={fp:.3f} detection={det:.3f} "
                     f"runs={runs}")
    lines += fork_asked_lines(max(1, runs // 2), seed)
    return lines


def fork_asked_lines(runs: int, seed: int = 0) -> list[str]:
    """The fork comparison's user who reruns with the rounds asked, where detection falls short."""
    lines = []
    for model in FORK_ASKED_MODELS:
        fp, det, mid = fork_rates_asked(model, runs, seed)
        lines.append(f"verdict-check: instances-fork-{model}-asked false_positive={fp:.3f} detection={det:.3f} "
                     f"median_reps_asked={mid} runs={runs}")
    return lines


def until_decided_campaign(model: str, wait: float, seed: int, max_runs: int | None = None) -> instances.InstancesResult:
    """One `perflab instances --until-decided` campaign on the 2-CPU box (as optimum_campaign)."""
    return optimum_campaign(model, wait, seed, salt=41, until_decided=True, max_runs=max_runs)


def rates_until_decided(model: str, trials: int, seed: int = 0) -> dict[str, float]:
    """--until-decided under ``model``: false 'optimum above the CPU count' on the flat machine
    over all looks, detection of the 20 % gain past it, the share of null campaigns that ruled
    out a gain of 5 % at every N past the CPUs, of planted ones left undecided, and the median
    and 90th percentile of the rounds taken (null and planted together)."""
    nulls = [until_decided_campaign(model, 0.0, seed + i) for i in range(trials)]
    found = [until_decided_campaign(model, WAIT, seed + trials + i) for i in range(trials)]
    past = lambda r: [s for scan in r.scans for s in scan.steps if s.kind == "past"]  # noqa: E731  (a one-line predicate, named)
    return until.rates(nulls, found, [r.reps for r in nulls + found], lambda r: (r.optimum_n or 0) > BOX_CPUS,
                       lambda r: (r.optimum_n or 0) > BOX_CPUS,
                       lambda r: past(r) and all(s.decision == "no gain" for s in past(r)))


def until_decided_lines(runs: int = 40, seed: int = 0) -> list[str]:
    """The --until-decided rows of the optimum: every noise model."""
    lines = []
    for name in STUDY_MODELS:
        lines.append(until.line(f"instances-until-decided-{name}", rates_until_decided(name, runs, seed), runs))
    return lines
