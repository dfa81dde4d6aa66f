"""variants under two speeds: where it named no fastest variant, the rounds that would see 2 %
(studies/variants/power.py), in the verdict and the result."""

from __future__ import annotations

import math
import random

from perflab.checks import variants as vc
from perflab.checks.noise import MODELS
from perflab.studies.variants import power


def test_rounds_needed_follow_the_paired_spread_and_the_kept_share():
    rng = random.Random(1)
    diffs = [[rng.gauss(0, 0.03) for _ in range(12)] for _ in range(3)]
    seen, need = power.seen_and_needed(diffs, [18, 18, 18], alpha=0.05)
    s = power._spread(diffs)
    z = power._z(0.05, 3)
    assert math.isclose(seen, math.expm1(z * s / math.sqrt(power.EFFICIENCY * 12)))
    assert need == math.ceil((z * s / math.log1p(0.02)) ** 2 / power.EFFICIENCY / (12 / 18))
    # half the rounds kept (12 of 24): the rounds asked for grow by 24 / 18 with the same spread
    _, half = power.seen_and_needed(diffs, [24, 24, 24], alpha=0.05)
    assert abs(half - need * 24 / 18) <= 1
    assert power.seen_and_needed([[0.01]], [18], alpha=0.05) is None


def test_a_two_speed_campaign_that_names_nothing_asks_for_rounds():
    rng = random.Random(2)
    asked = []
    for seed in range(4):
        res = vc.simulate(vc.sim_config(seed=seed), {"lto": vc.PLANTED}, rng, MODELS["two-speed"])
        if res.fastest is None:
            assert res.rounds_needed and res.rounds_needed > res.rounds
            assert f"(--rounds {res.rounds_needed}) would see 2%" in res.verdict
            asked.append(res.rounds_needed)
    assert asked
    quiet = vc.simulate(vc.sim_config(seed=0), {}, rng, MODELS["quiet"])
    assert quiet.rounds_needed is None and "--rounds" not in quiet.verdict
