"""Noise as unkind as real machines, one model for every harness in perflab.checks.

A harness that draws independent, symmetric noise inside one campaign proves what a shared VM
then refutes. Each model below is a factor on the true run time, built from what was measured:

- ``sigma``: log-normal run-to-run noise (skewed by construction: run times are multiplicative).
- ``shift``: a level shift between campaigns, log-normal with this SD (another day, another
  runner state: this VM moved one binary +21 % and then -45 %; a few per cent is common).
  No number of runs inside one campaign averages it out.
- ``two_speed``: (factor, share): a share of the runs at ``factor`` times the time, as on the
  16-vCPU KVM guest that switches between 190 and 128 events/s (factor 1.48, CV 17 %). The
  speed holds for a stretch of runs (``speed_run``), as a host's co-tenant comes and goes.
- ``tail``: an exponential tail on top (mean ``tail`` of the time): a minimum plus interference.
- ``drift``: a slow sine drift inside a campaign of this amplitude.
- ``burst``: (probability, slowdown): some rounds a background burst hits one CPU (the harness
  decides which CPU; ``burst_hits`` says whether this round is hit).

``MODELS`` names the whole-machine ones; ``STUDY_MODELS`` adds the per-vCPU guest in time
(``VcpuStatesModel``), and is what bench/verdicts.py runs every study under; a harness asks for a
``Campaign`` (one campaign's level and state) and draws ``factor()`` per run.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass


@dataclass(frozen=True)
class NoiseModel:
    """One kind of machine, as factors on the true run time (see the module docstring)."""

    name: str
    sigma: float = 0.02
    shift: float = 0.0
    two_speed: tuple[float, float] | None = None
    speed_run: int = 5  # mean number of consecutive runs at one speed
    tail: float = 0.0
    drift: float = 0.0
    burst: tuple[float, float] | None = None

    def campaign(self, rng: random.Random) -> "Campaign":
        return Campaign(self, rng)


MODELS: dict[str, NoiseModel] = {
    "quiet": NoiseModel("quiet", sigma=0.02),
    # Another campaign on another day: 3 % SD between campaigns (this VM: several per cent).
    "shift": NoiseModel("shift", sigma=0.02, shift=0.03),
    # The 16-vCPU guest: two speeds 1.48x apart, about half the runs at each.
    "two-speed": NoiseModel("two-speed", sigma=0.03, two_speed=(1.48, 0.4)),
    # Skewed single speed: a floor plus an exponential tail of interference.
    "skewed": NoiseModel("skewed", sigma=0.01, tail=0.05),
    # A busy shared machine: drift, a tail, and bursts of load on one CPU in some rounds.
    "loaded": NoiseModel("loaded", sigma=0.03, drift=0.02, tail=0.03, burst=(0.15, 0.3)),
}


class Campaign:
    """One campaign under a model: its level, its current speed, its clock."""

    def __init__(self, model: NoiseModel, rng: random.Random) -> None:
        self.model = model
        self.rng = rng
        self.level = rng.lognormvariate(0.0, model.shift) if model.shift else 1.0
        self.runs = 0
        self.slow = model.two_speed is not None and rng.random() < model.two_speed[1]

    def _speed(self) -> float:
        m = self.model
        if not m.two_speed:
            return 1.0
        factor, share = m.two_speed
        # A two-state Markov chain whose stationary share of slow runs is ``share`` and whose
        # mean stretch at one speed is about ``speed_run`` runs.
        leave_fast = share / max(m.speed_run * (1 - share), 1e-9)
        leave_slow = 1.0 / m.speed_run
        if self.rng.random() < (leave_slow if self.slow else min(leave_fast, 1.0)):
            self.slow = not self.slow
        return factor if self.slow else 1.0

    def factor(self) -> float:
        """The factor on the true time of the next run of this campaign."""
        m = self.model
        self.runs += 1
        x = self.level * self._speed() * self.rng.lognormvariate(0.0, m.sigma)
        if m.drift:
            x *= 1 + m.drift * math.sin(self.runs / 25)
        if m.tail:
            x *= 1 + self.rng.expovariate(1.0 / m.tail)
        return x

    def burst_hits(self) -> float:
        """The slowdown of a round's burst on the harness's chosen CPU (1.0 when none)."""
        b = self.model.burst
        return 1 + b[1] if b and self.rng.random() < b[0] else 1.0


@dataclass(frozen=True)
class VcpuStatesModel:
    """A KVM guest whose vCPUs each switch speed for seconds at a time (per CPU, in time).

    The whole-machine models above draw one factor per run; on a real 16-vCPU guest each vCPU is
    in its own state of the host, for seconds, and the states move. Calibrated on perflab's
    stores of two 16-vCPU KVM guests (Intel Xeon, one socket, no SMT, minihlt-quick, 2026-11-26;
    tests/data/kvm16/README.md has the extract and its provenance):

    - two speeds per vCPU, 1.57-1.59x apart (124 and 193-197 events/s; the other guest 1.51x);
    - the faster speed in 16-17 % of the runs of 10 s concurrent scans and 25-33 % of 50 s
      sequential ones (the other guest: 53 %): ``fast_share`` 0.25;
    - a fast stretch held 0.8-1.1 s on average, but on one or two vCPUs per scan 5-7 s (14-20
      rounds of 0.33 s), a slow stretch 3.2-3.5 s (the other guest: 1.1 and 1.0 s): fast
      states hold ``fast_hold`` 0.8 s (exponential), one in ``long_share`` 0.15 ``long_hold`` 6 s;
    - within a speed, a vCPU's level spread 2-2.5 % SD between vCPUs (medians over a 10 s scan),
      held from third to third of the scan (correlation 0.67-0.97 of the vCPUs' levels between
      3 s thirds) and was gone 13 s later (the next scan: correlation -0.32): ``offset_sd``
      0.025, redrawn after ``offset_hold`` 10 s on average (exponential);
    - run-to-run noise within a speed 3.4-4.7 % robust SD of the ratios (two runs): ``sigma`` 0.03.

    ``campaign(rng).factor_at(cpu, t)`` is the factor on the true time of a run on ``cpu``
    starting at ``t`` seconds (times per CPU must not go back); ``factor()`` alone runs CPU 0 on
    an internal clock (0.2 s a run), so a harness written for the whole-machine models runs too.
    """

    name: str = "vcpu-states"
    sigma: float = 0.03
    fast: float = 1.57  # a slow state's time over a fast state's
    fast_share: float = 0.25
    fast_hold: float = 0.8
    long_share: float = 0.15
    long_hold: float = 6.0
    offset_sd: float = 0.025
    offset_hold: float = 10.0
    shift: float = 0.0
    burst: tuple[float, float] | None = None

    @property
    def slow_hold(self) -> float:
        """Mean seconds in the slow state, for the stationary share ``fast_share`` fast."""
        mean_fast = (1 - self.long_share) * self.fast_hold + self.long_share * self.long_hold
        return mean_fast * (1 - self.fast_share) / self.fast_share

    def campaign(self, rng: random.Random) -> "VcpuCampaign":
        return VcpuCampaign(self, rng)


class VcpuCampaign:
    """One scan under VcpuStatesModel: every vCPU's speed state and level, moving in time."""

    def __init__(self, model: VcpuStatesModel, rng: random.Random) -> None:
        self.model = model
        self.rng = rng
        self.cpus: dict[int, list[float]] = {}  # cpu -> [fast?, next switch, offset, next redraw]
        self.clock = 0.0

    def _fast_hold(self) -> float:
        m = self.model
        mean = m.long_hold if self.rng.random() < m.long_share else m.fast_hold
        return self.rng.expovariate(1.0 / mean)

    def _state(self, cpu: int, t: float) -> list[float]:
        m, rng = self.model, self.rng
        st = self.cpus.get(cpu)
        if st is None:  # start in the stationary distribution (exponential holds: memoryless)
            fast = rng.random() < m.fast_share
            st = [float(fast), t + (self._fast_hold() if fast else rng.expovariate(1.0 / m.slow_hold)),
                  rng.gauss(0.0, m.offset_sd), t + rng.expovariate(1.0 / m.offset_hold)]
            self.cpus[cpu] = st
        while t >= st[1]:
            st[0] = 1.0 - st[0]
            st[1] += self._fast_hold() if st[0] else rng.expovariate(1.0 / m.slow_hold)
        while t >= st[3]:
            st[2] = rng.gauss(0.0, m.offset_sd)
            st[3] += rng.expovariate(1.0 / m.offset_hold)
        return st

    def factor_at(self, cpu: int, t: float) -> float:
        """The factor on the true time of a run on ``cpu`` that starts at ``t`` seconds."""
        st = self._state(cpu, t)
        speed = 1.0 if st[0] else self.model.fast
        return speed * math.exp(st[2]) * self.rng.lognormvariate(0.0, self.model.sigma)

    def factor(self) -> float:
        self.clock += 0.2
        return self.factor_at(0, self.clock)

    def burst_hits(self) -> float:
        return 1.0


# Models with per-CPU states in time: harnesses that know each run's CPU and start time use them.
TIMED_MODELS: dict[str, VcpuStatesModel] = {"vcpu-states": VcpuStatesModel()}

# Every model a study's harness runs under: the whole-machine ones, and the guest of vcpu-states
# as one vCPU sees it in time (``factor()``: CPU 0, 0.2 s a run), the machine a run, compare,
# gate, variants or instances campaign on such a guest gets when it is not spread over CPUs.
StudyModel = NoiseModel | VcpuStatesModel  # what a study's harness runs under
STUDY_MODELS: dict[str, StudyModel] = {**MODELS, **TIMED_MODELS}
