"""Does `perflab cores` find a planted slow CPU, name it alone, and stay quiet otherwise, on
machines as unkind as real ones?

Simulated scans at the study's default settings (sequential, adaptive stop, up to 30 rounds) of
16 CPUs (8 cores x 2 SMT threads): the real ``cores.execute`` and ``cores.analyse`` over the
MockExecutor, with every run's time drawn from a checks.noise campaign (quiet, shift, two-speed,
skewed, loaded: drift, skew, two speeds, and for 'loaded' a background burst on one CPU, chosen
per scan, in the rounds ``burst_hits`` says). Cases, each under every model:
- cores-persistent-MODEL: one CPU 5 % slower in every run. detection = the share of scans that
  call it slow and name no other CPU (slow or intermittent); false_positive = the share of scans
  without a planted effect (same model) that name any CPU.
- cores-transient-MODEL: one CPU 30 % slower in 3 consecutive rounds of 20. false_positive = the
  share of scans that name any CPU; detection = the share that report it disturbed in those
  rounds, or as contention in the block that holds them.
and cores-competitor-loaded: on the loaded machine, a 40 % duty-cycle competitor on one CPU in
each round with probability 0.8, slowing that CPU's runs by 25 % x log-normal(0, 5 %) (what one
did to a real CPU here: ratio 1.244); detection = it is named (slow, or intermittent with its
rounds) and no other CPU is; false_positive = the loaded null's.
Under checks.noise's TIMED_MODELS (vcpu-states: every vCPU at one of two speeds and a level
of its own, each holding for seconds and moving; a flat 16-vCPU guest), sequential and
concurrent scans at the defaults (30 rounds, 3 blocks over 60 s), with each run's factor drawn
at its CPU and start time on the executor's clock:
- cores-persistent-vcpu-states-MODE: one CPU 5 % slower in every run; false_positive = the share
  of scans without it that call any CPU slow; detection = that CPU slow and no other slow.
- cores-competitor-vcpu-states-MODE: a 40 % duty competitor on one CPU for the whole scan, as on
  the recorded guest (its runs 1.25x x log-normal(0, 5 %) slower); detection = it slow alone.
- cores-first-third-vcpu-states-MODE: that competitor on one CPU only during the first third of
  the scan (its first 10 rounds, the first block); false_positive = any CPU called slow;
  detection = it reported as contention.
Prints `verdict-check: NAME false_positive=X detection=Y runs=N`; goal: false_positive <= 0.05,
detection >= 0.90. ``checks(runs)`` is what bench/verdicts.py and the tests call.
"""

from __future__ import annotations

import random
from dataclasses import replace

from perflab.checks import until
from perflab.checks.noise import MODELS, TIMED_MODELS
from perflab.measure.executor import MockExecutor
from perflab.model import Workload
from perflab.platform.machine import Machine
from perflab.platform.topology import Core, Cpu, Node, Topology
from perflab.studies.cores import study as cores

# verdicts that claim a CPU is slower over the scan (contention names a stretch, not the CPU)
CLAIMS = ("slow", "unresolved", "intermittent")

COMPETITOR = (0.8, 1.25, 0.05)  # share of rounds, slowdown, its log-normal SD


def flat_box(n: int = 16) -> Topology:
    """One socket, n cores of one thread each (the 16-vCPU KVM guest)."""
    cpus = tuple(Cpu(c, c, 0, 0, (c,)) for c in range(n))
    return Topology(cpus, tuple(Core(c, 0, 0, (c,)) for c in range(n)), (0,), (Node(0, tuple(range(n))),))


def smt_box(n_cores: int = 8) -> Topology:
    """One socket, n_cores cores x 2 threads: CPU k and k + n_cores are siblings."""
    cpus = tuple(Cpu(c, c % n_cores, 0, 0, (c % n_cores, c % n_cores + n_cores)) for c in range(2 * n_cores))
    core_list = tuple(Core(k, 0, 0, (k, k + n_cores)) for k in range(n_cores))
    return Topology(cpus, core_list, (0,), (Node(0, tuple(range(2 * n_cores))),))


class _Bare:
    """The part of a Session that execute uses, without a store: the harness needs no resume."""

    def __init__(self, executor: MockExecutor) -> None:
        self.executor = executor

    def warmup(self, spec):
        return self.executor.run(spec)

    def run(self, spec, rep: int = 0):
        return self.executor.run(spec)

    def run_concurrent(self, specs, rep: int = 0):
        return self.executor.run_concurrent(specs)

    def say(self, message: str) -> None:
        pass


def campaign(seed: int, slow: dict[int, float], burst: tuple[int, int, float] | None = None,
             rounds: int | None = None, model: str = "quiet",
             competitor: int | None = None, **settings) -> cores.CoresResult:
    """One simulated scan: slow = {cpu: factor}; burst = (cpu, first round, size) for 3 rounds;
    model: a checks.noise model; competitor: the CPU a 40 % duty competitor comes and goes on."""
    rng = random.Random(seed)
    topo = smt_box(8)
    camp = MODELS[model].campaign(rng)
    burst_cpu = rng.randrange(16)  # the loaded model's background burst lands here
    hits: dict[int, float] = {}
    present: dict[int, bool] = {}

    def factor(spec) -> float:
        cpu, rnd = spec.cpus[0], spec.params["round"]
        x = camp.factor() * slow.get(cpu, 1.0)
        if rnd not in hits:
            hits[rnd] = camp.burst_hits()
            present[rnd] = rng.random() < COMPETITOR[0]
        if cpu == burst_cpu:
            x *= hits[rnd]
        if burst and cpu == burst[0] and burst[1] <= rnd < burst[1] + 3:
            x *= 1 + burst[2]
        if cpu == competitor and present[rnd]:
            x *= COMPETITOR[1] * rng.lognormvariate(0, COMPETITOR[2])
        return 0.05 * x

    config = cores.CoresConfig(Workload("sim", ("sim",)), seed=seed, **settings)
    if rounds is not None:
        config = replace(config, rounds=rounds, min_rounds=rounds)
    machine = Machine(topo, {"loadavg": [0.0]})
    return cores.execute(config, _Bare(MockExecutor(factor)), machine)


def timed_campaign(seed: int, model: str = "vcpu-states", concurrent: bool = False, slow: dict[int, float] | None = None,
                   competitor: int | None = None, first_third: int | None = None, **settings) -> cores.CoresResult:
    """One simulated scan of a flat 16-vCPU guest under a TIMED_MODELS model, at the defaults:
    slow = {cpu: factor}; competitor: a CPU with a 40 % duty competitor for the whole scan;
    first_third: a CPU with it in the first 10 of the 30 rounds only (the first block);
    settings: CoresConfig fields other than the defaults (blocks, span, rounds)."""
    rng = random.Random(seed)
    camp = TIMED_MODELS[model].campaign(rng)
    ex = MockExecutor()

    def factor(spec) -> float:
        cpu, t = spec.cpus[0], ex.clock_ns / 1e9
        x = camp.factor_at(cpu, t) * (slow or {}).get(cpu, 1.0)
        if cpu == competitor or (cpu == first_third and spec.params["round"] < 10):
            x *= COMPETITOR[1] * rng.lognormvariate(0, COMPETITOR[2])
        return 0.2 * x

    ex.model = factor
    config = cores.CoresConfig(Workload("sim", ("sim",)), seed=seed, concurrent=concurrent, **settings)
    return cores.execute(config, _Bare(ex), Machine(flat_box(16), {"loadavg": [0.0]}))


def _contention_at(res: cores.CoresResult, cpu: int, rnd: int) -> bool:
    """Is cpu reported as contention in the block that holds round rnd?"""
    tl, row = res.timeline, res.cpus[cpu]
    return row.verdict == "contention" and tl is not None and any(
        tl.blocks[b].rounds[0] <= rnd <= tl.blocks[b].rounds[1] for b in row.slow_blocks)


def _slow(res: cores.CoresResult) -> set[int]:
    return {r.cpu for r in res.cpus if r.verdict == "slow"}


def timed_checks(runs: int, seed: int, model: str, concurrent: bool,
                 cases: tuple[str, ...] = ("persistent", "competitor", "first-third")) -> list[tuple[str, float, float, int]]:
    """[(name, false_positive, detection, runs)] for one TIMED_MODELS model and mode (docstring)."""
    rng = random.Random(f"{seed}:{model}:{concurrent}")
    mode = "concurrent" if concurrent else "sequential"
    out = []
    nulls = [bool(_slow(timed_campaign(rng.randrange(1 << 30), model, concurrent))) for _ in range(runs)]
    fp = sum(nulls) / runs
    for case in cases:
        det = false = 0
        for _ in range(runs):
            target, s = rng.randrange(16), rng.randrange(1 << 30)
            if case == "persistent":
                det += _slow(timed_campaign(s, model, concurrent, slow={target: 1.05})) == {target}
            elif case == "competitor":
                det += _slow(timed_campaign(s, model, concurrent, competitor=target)) == {target}
            else:
                res = timed_campaign(s, model, concurrent, first_third=target)
                false += bool(_slow(res))
                det += res.cpus[target].verdict == "contention"
        out.append((f"cores-{case}-{model}-{mode}", false / runs if case == "first-third" else fp, det / runs, runs))
    return out


def named(res: cores.CoresResult) -> dict[int, str]:
    """CPU -> verdict for every CPU the scan claims is slower over the scan (CLAIMS)."""
    return {r.cpu: r.verdict for r in res.cpus if r.verdict in CLAIMS}


def _alone(res: cores.CoresResult, cpu: int, verdicts: tuple[str, ...]) -> bool:
    """Is cpu named with one of verdicts, and no other CPU named?"""
    return named(res) in ({cpu: v} for v in verdicts)


def checks(runs: int = 200, seed: int = 0, models: tuple[str, ...] | None = None,
           cases: tuple[str, ...] = ("persistent", "transient", "competitor", "first-third")) -> list[tuple[str, float, float, int]]:
    """[(name, false_positive, detection, runs)] per case and model (module docstring)."""
    out = []
    chosen = models or (*MODELS, *TIMED_MODELS)
    timed = [m for m in chosen if m in TIMED_MODELS]
    for model in (m for m in chosen if m in MODELS):
        rng = random.Random(f"{seed}:{model}")
        nulls: list[bool] = []
        if "persistent" in cases:
            det = 0
            for _ in range(runs):
                target = rng.randrange(16)
                det += _alone(campaign(rng.randrange(1 << 30), {target: 1.05}, model=model), target, ("slow",))
                nulls.append(bool(named(campaign(rng.randrange(1 << 30), {}, model=model))))
            out.append((f"cores-persistent-{model}", sum(nulls) / runs, det / runs, runs))
        if "transient" in cases:
            fp = det = 0
            for _ in range(runs):
                target, start = rng.randrange(16), rng.randrange(0, 18)
                res = campaign(rng.randrange(1 << 30), {}, burst=(target, start, 0.3), rounds=20, model=model)
                fp += bool(named(res))
                det += any(x.cpu == target and set(range(start, start + 3)) <= set(x.rounds)
                           for x in res.disturbances) or _contention_at(res, target, start)
            out.append((f"cores-transient-{model}", fp / runs, det / runs, runs))
        if "competitor" in cases and MODELS[model].burst:
            det = 0
            for _ in range(runs):
                target = rng.randrange(16)
                det += _alone(campaign(rng.randrange(1 << 30), {}, model=model, competitor=target), target,
                              ("slow", "intermittent"))
                if "persistent" not in cases:
                    nulls.append(bool(named(campaign(rng.randrange(1 << 30), {}, model=model))))
            out.append((f"cores-competitor-{model}", sum(nulls) / len(nulls), det / runs, runs))
    for model in timed:
        for concurrent in (False, True):
            out += timed_checks(runs, seed, model, concurrent,
                                tuple(c for c in ("persistent", "competitor", "first-third") if c in cases))
    return out


def verdict_lines(runs: int = 200, seed: int = 0, models: tuple[str, ...] | None = None) -> list[str]:
    """The lines bench/verdicts.py prints (``models``: those of MODELS and TIMED_MODELS only)."""
    return [f"verdict-check: {name} false_positive={fp:.3f} detection={det:.3f} runs={n}"
            for name, fp, det, n in checks(runs, seed, models)]


def until_decided_campaign(model: str, slow: dict[int, float], seed: int, max_runs: int | None = None) -> cores.CoresResult:
    """One `perflab cores --until-decided` scan at the defaults otherwise: campaign's machine under
    a MODELS model, timed_campaign's under a TIMED_MODELS one."""
    if model in TIMED_MODELS:
        return timed_campaign(seed, model, slow=slow, until_decided=True, max_runs=max_runs)
    return campaign(seed, slow, model=model, until_decided=True, max_runs=max_runs)


def rates_until_decided(model: str, trials: int, seed: int = 0) -> dict[str, float]:
    """--until-decided under ``model``: false positives over all looks (any CPU called slow, or
    named intermittent or unresolved, on null scans), detection (the planted 5 % slower CPU called
    slow and no other named), the nulls ruled out, the planted scans left undecided, the rounds."""
    rng = random.Random(f"{seed}:{model}:until-decided")
    nulls = [until_decided_campaign(model, {}, rng.randrange(1 << 30)) for _ in range(trials)]
    targets = [rng.randrange(16) for _ in range(trials)]
    found = [until_decided_campaign(model, {t: 1.05}, rng.randrange(1 << 30)) for t in targets]
    hits = {id(r): t for r, t in zip(found, targets)}
    return until.rates(nulls, found, [r.rounds for r in nulls + found], lambda r: bool(named(r)),
                       lambda r: _alone(r, hits[id(r)], ("slow",)),
                       lambda r: r.sequential["decided"] and not named(r))


def until_decided_lines(runs: int = 20, seed: int = 0) -> list[str]:
    """The --until-decided rows: every noise model of the cores harness."""
    return [until.line(f"cores-until-decided-{name}", rates_until_decided(name, runs, seed), runs)
            for name in (*MODELS, *TIMED_MODELS)]
