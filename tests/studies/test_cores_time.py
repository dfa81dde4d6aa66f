"""perflab cores on what two real 16-vCPU KVM guests did (tests/data/kvm16): runs compared within
a speed, time blocks, how long a CPU's slowness holds, and what the verdict then claims."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np

from perflab.checks.cores import flat_box
from perflab.checks.noise import TIMED_MODELS
from perflab.model import RunResult, Workload
from perflab.studies.cores import speeds, timeline
from perflab.studies.cores.result import CpuRow
from perflab.studies.cores.study import CoresConfig, analyse

DATA = Path(__file__).parents[1] / "data" / "kvm16" / "cores-runs.csv"
WL = Workload("minihlt-quick", ("minihlt",), primary_metric="events_per_s", unit="events/s")


def _runs(guest: str, campaign: int) -> list[tuple[dict, RunResult]]:
    out = []
    with DATA.open() as f:
        for r in csv.DictReader(f):
            if r["guest"] == guest and int(r["campaign"]) == campaign:
                start = int(r["start_ms"]) * 10**6 + 1
                out.append(({"cpu": int(r["cpu"]), "round": int(r["round"])},
                            RunResult(wall_ns=2 * 10**8, user_s=0.2, sys_s=0, maxrss_kb=1, minflt=0, majflt=0,
                                      nvcsw=0, nivcsw=0, exit_code=0, start_ns=start, end_ns=start + 2 * 10**8,
                                      metrics={"events_per_s": float(r["events_per_s"])})))
    return out


def _scan(guest: str, campaign: int, concurrent: bool):
    return analyse(CoresConfig(WL, concurrent=concurrent, rounds=150), _runs(guest, campaign), flat_box(16))


def test_sequential_competitor_on_a_two_speed_guest_is_found_at_12_rounds():
    # Mixed speeds: "-21.5 %, not significant, smallest detectable slowdown 130.7 %". Within a speed:
    res = _scan("A", 2, concurrent=False)
    assert [s.cpus for s in res.slow] == [(5,)]
    row = res.cpus[5]
    assert -0.25 < row.change < -0.15 and all(v is not None and v > 0.1 for v in row.block_levels)
    # 12 rounds show no state that holds (round-to-round correlation 0.14, not significant over
    # 144 pairs): the sign test over rounds decides, and its detectable slowdown is the round rule's
    assert res.modes["normalised"] and res.block_margin is False and res.mde < 0.3  # not 130 %
    assert any("below the" in n for n in res.notes) if res.mde > -row.change else True
    assert res.timeline.tells and res.timeline.span_s > 45
    assert {r.cpu for r in res.cpus if r.verdict in ("slow", "unresolved")} == {5}


def test_a_ten_second_concurrent_scan_names_no_slow_core_and_says_to_scan_longer():
    # The scans that named CPUs 14, 1, 0 (no competitor) and CPUs 8, 0 beside the competitor's 5.
    for campaign in (3, 4):
        res = _scan("A", campaign, concurrent=True)
        assert res.slow == [], res.verdict
        tl = res.timeline
        assert not tl.tells and tl.held and tl.span_s < 15 and "scan longer (--span" in tl.why
        assert "or scan again later" in res.verdict or campaign == 4
        assert res.mde < 0.15  # within a speed: not the 70-77 % of the mixed speeds
    res = _scan("A", 3, concurrent=True)
    assert res.cpus[5].verdict == "unresolved" and "CPU 5 (events_per_s -1" in res.verdict
    assert {r.cpu for r in res.cpus if r.verdict == "unresolved"} == {5}


def test_no_competitor_sequential_and_the_fast_changing_guest_name_nothing():
    for guest, campaign, concurrent in (("A", 1, False), ("B", 1, True)):
        res = _scan(guest, campaign, concurrent)
        assert not [r for r in res.cpus if r.verdict in ("slow", "unresolved", "intermittent")], res.verdict
        assert "no CPU is persistently slower" in res.verdict
    res = _scan("B", 1, concurrent=True)
    assert res.timeline.tells and res.timeline.block_corr is not None and not res.timeline.held


def test_speeds_are_a_finding_on_their_own_never_a_verdict_on_the_others():
    res = _scan("A", 4, concurrent=True)
    assert res.modes["multimodal"] and res.modes["normalised"]
    centres = sorted(1 / m["center"] for m in res.modes["modes"])
    assert 115 < centres[0] < 135 and 185 < centres[1] < 210  # events/s: the two speeds
    never = [r.cpu for r in res.cpus if r.mode_shares and r.mode_shares[0] == 0]
    assert never and "at the slower one for nearly the whole scan" in res.speeds and res.speeds in res.verdict
    assert all(res.cpus[c].verdict not in ("slow", "unresolved") for c in never)


def test_relabel_takes_each_cpus_level_out_before_the_nearest_speed():
    # CPU 2 is 25 % slower than the rest: its fast runs sit halfway between the speeds in log time
    rng = np.random.default_rng(1)
    fast = rng.random((8, 40)) < 0.4
    cost = np.where(fast, 1.0, 1.57) * np.exp(rng.normal(0, 0.02, (8, 40)))
    cost[2] *= 1.25
    rows = [CpuRow(c, 0, c, 0, (c,)) for c in range(8)]
    normed, info = speeds.normalise(cost, rows)
    assert info["normalised"]
    ratio = np.median(normed[2] / np.median(normed[[0, 1, 3, 4, 5, 6, 7]], axis=0))
    assert 1.2 < ratio < 1.3 and abs(rows[2].mode_shares[0] - fast[2].mean()) < 0.05


def test_hold_is_read_off_round_and_block_correlation():
    rng = np.random.default_rng(2)
    blocks = [b for b in range(3) for _ in range(10)]
    times = np.array([30.0 * b + 0.3 * (i % 10) for i, b in enumerate(blocks)])
    # states that hold a whole scan: every CPU keeps its level in all three blocks
    d = rng.normal(0, 0.03, (16, 1)) + rng.normal(0, 0.01, (16, 30))
    lv = timeline.levels(d, blocks)
    tl = timeline.hold(d, blocks, times, lv, [], list(range(30)))
    assert tl.held and not tl.tells and tl.block_corr > 0.7 and "scan longer" in tl.why
    # states that change between blocks: new levels each block, held inside it
    d = np.concatenate([rng.normal(0, 0.03, (16, 1)) + rng.normal(0, 0.01, (16, 10)) for _ in range(3)], axis=1)
    tl = timeline.hold(d, blocks, times, timeline.levels(d, blocks), [], list(range(30)))
    assert not tl.held and tl.tells and tl.round_corr > 0.5 and 0.3 < tl.hold_s < 30
    # one block only: never tells
    one = [0] * 30
    tl = timeline.hold(d, one, times, timeline.levels(d, one), [], list(range(30)))
    assert not tl.tells and "one block" in tl.why


def test_block_test_p_values_hold_their_level_on_independent_noise():
    rng = np.random.default_rng(3)
    ps = []
    for _ in range(300):
        d = rng.normal(0, 0.02, (16, 30))
        blocks = [i * 3 // 30 for i in range(30)]
        p, _, _, _ = timeline.block_test(timeline.levels(d, blocks), d, blocks)
        ps += p
    ps = np.array(ps)
    assert 0.03 < (ps < 0.05).mean() < 0.07 and (ps < 0.01).mean() < 0.015


def test_the_vcpu_model_reproduces_the_recorded_holding_times():
    camp = TIMED_MODELS["vcpu-states"].campaign(__import__("random").Random(0))
    t = np.arange(0, 600, 0.33)
    fast = np.array([[camp._state(c, x)[0] for x in t] for c in range(16)])
    share = fast.mean()
    stretches = [len(s) for row in fast for s in "".join("F" if f else "." for f in row).split(".") if s]
    assert 0.18 < share < 0.32 and 0.6 < np.mean(stretches) * 0.33 < 2.5  # recorded: 0.16-0.33, 0.8-1.1 s
    assert max(stretches) * 0.33 > 5  # a vCPU fast for a whole 5-10 s scan, as recorded


def test_the_block_test_is_the_test_only_where_states_hold():
    from perflab.checks.cores import campaign, timed_campaign

    # a skewed single-speed machine: rounds are independent, the round rule's sign test decides
    flat = campaign(4, {}, model="skewed")
    assert flat.block_margin is False and not flat.timeline.held and flat.timeline.hold_s is None
    # the vCPU guest: a CPU's level holds from round to round, the block test decides
    guest = timed_campaign(4, concurrent=True)
    assert guest.block_margin is True and guest.timeline.hold_s is not None
    assert not [r.cpu for r in guest.cpus if r.verdict == "slow"]


def test_a_5pct_slow_cpu_on_a_skewed_machine_is_found_by_the_sign_test():
    from perflab.checks.cores import campaign, named

    found = [campaign(s, {3: 1.05}, model="skewed") for s in range(10)]
    assert sum(named(r) == {3: "slow"} for r in found) >= 8
    assert all("sign test over rounds" in r.verdict for r in found if named(r) == {3: "slow"})
    assert not any(named(campaign(100 + s, {}, model="skewed")) for s in range(5))
