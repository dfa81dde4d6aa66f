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

``MODELS`` names the ones bench/verdicts.py runs every study under; a harness asks for a
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
        self.slow = bool(model.two_speed) and rng.random() < model.two_speed[1]

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
