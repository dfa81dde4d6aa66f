"""The fleet report at scale: the store's run summaries, the medians test, and its agreement with
the runs test (bench/fleet_scale.py times it at 1,800 to 100,000 hosts)."""

from __future__ import annotations

import numpy as np
import pytest

from perflab.fleet import headline, state
from perflab.fleet.render import report_html
from perflab.fleet.report import build
from perflab.model import RunResult
from perflab.stats.peer_medians import MemberSummary, sign_test, slow_by_medians
from perflab.stats.peers import median_ci
from perflab.store import open_store
from perflab.store.summaries import ALL, RUNS_PER_S

CPUS = ["EPYC 7742", "Xeon 6248", "Xeon E5-2630"]


def _result(rate: float, ok: bool = True) -> RunResult:
    return RunResult(wall_ns=int(1e9 / rate), user_s=0.1, sys_s=0.0, maxrss_kb=1000, minflt=0, majflt=0,
                     nvcsw=0, nivcsw=0, exit_code=0 if ok else 1, metrics={"events_per_s": rate})


class _NoBatch:
    name = "none"

    def status(self, jobs):
        return {}

    def log_path(self, log_dir, job_name, job):
        return log_dir / f"{job_name}-{job}.out"


def _farm(store, tmp_path, per: int, runs: int, seed: int, plant: bool) -> list[str]:
    """per hosts on each of 3 platforms; host effects sd 0.5%, run noise sd 3% with a slow tail
    (a run in 20 at 85%: background load), one host per platform 8% slow when planted."""
    rng = np.random.default_rng(seed)
    name = "big"
    state.create(store, name, {"study": "run", "slots": [str(i) for i in range(per * len(CPUS))],
                       "log_dir": str(tmp_path), "job_name": "j", "shards": False})
    planted, slot, opened = [], 0, []
    for p, cpu in enumerate(CPUS):
        slow_at = int(rng.integers(per)) if plant else -1
        for h in range(per):
            host = f"p{p}n{h:03d}"
            hid = store.add_host({"hostname": host, "cpu_model": cpu, "mem_total_bytes": 64 * 2**30},
                                 {"sockets": [0], "cores": list(range(16))})
            cid = store.start_campaign("run", {}, host_id=hid,
                                       labels={"fleet": name, "fleet_slot": str(slot), "slurm_node": host})
            factor = 0.92 if h == slow_at else 1.0 + 0.005 * rng.standard_normal()
            if h == slow_at:
                planted.append(host)
            rates = 1000.0 * (1 + p) * factor * (1 + 0.03 * rng.standard_normal(runs))
            rates[rng.random(runs) < 0.05] *= 0.85
            store.add_measurements(cid, [(_result(float(r)), {}, i, "w") for i, r in enumerate(rates)]
                                   + [(_result(1.0, ok=False), {}, runs, "w")])  # a failed run: left out
            opened.append(cid)
            slot += 1
    # every host measured at once, as a fleet submitted together: the windows overlap
    for cid in opened:
        store.finish_campaign(cid, "done", summary={"benchmarks": [{"command": "w"}]})
    return planted


def test_runs_and_medians_reports_agree(store_url, tmp_path):
    # each backend and each case once (80 hosts x 60 runs a farm): planted on SQLite, null on
    # PostgreSQL
    plant = "://" not in store_url
    with open_store(store_url) as store:
        planted = _farm(store, tmp_path, 80, 60, seed=4 if plant else 5, plant=plant)
        fleet = state.load(store, "big")
        old = build(store, fleet, _NoBatch(), method="runs")
        new = build(store, fleet, _NoBatch(), method="medians")
    assert sorted(s["host"] for s in old["slow_hosts"]) == sorted(planted)
    assert sorted(s["host"] for s in new["slow_hosts"]) == sorted(planted)
    assert [h["headline"] for h in old["hosts"]] == [h["headline"] for h in new["hosts"]]
    for a, b in zip(old["platforms"], new["platforms"]):
        assert (a["median"], a["ci"], a["spread"], a["not_tested"]) == (b["median"], b["ci"], b["spread"],
                                                                       b["not_tested"])
    for s_old, s_new in zip(old["slow_hosts"], new["slow_hosts"]):
        assert s_new["correction"] == "Bonferroni" and s_old["correction"] == "Holm"
        assert s_new["ratio"] == pytest.approx(s_old["ratio"], abs=0.01)
        assert s_new["ci"]["high"] < 1 and s_new["ci"]["level"] >= 0.95 and s_new["p_adjusted"] < 1e-6


def test_medians_test_reads_back_only_the_candidates(tmp_path, monkeypatch):
    read = []
    real = headline.campaign_runs

    def counting(store, camp, metric, labels):
        read.append(camp.id)
        return real(store, camp, metric, labels)

    monkeypatch.setattr("perflab.fleet.report.campaign_runs", counting)
    with open_store(str(tmp_path / "f.db")) as store:
        planted = _farm(store, tmp_path, 40, 30, seed=7, plant=True)
        rep = build(store, state.load(store, "big"), _NoBatch(), method="medians")
    assert sorted(s["host"] for s in rep["slow_hosts"]) == sorted(planted)
    assert len(read) == len(planted)


def test_store_summaries_are_the_order_statistics_numpy_finds(store_url):
    rng = np.random.default_rng(1)
    with open_store(store_url) as store:
        expect = {}
        for n in (1, 2, 3, 7, 20, 101, 400):
            cid = store.start_campaign("run", {})
            xs = rng.lognormal(3.0, 0.3, n)
            xs[: n // 3] = xs[0]  # ties
            runs = [(_result(float(x)), {}, i, "a" if i % 2 else "b") for i, x in enumerate(xs)]
            store.add_measurements(cid, runs + [(_result(5.0, ok=False), {}, n, "a")])
            store.finish_campaign(cid, "done")  # summarises as it closes
            expect[cid] = (xs, {lab: np.array([x for i, x in enumerate(xs) if "ba"[i % 2] == lab])
                                for lab in "ab"})
        got = store.run_summaries(list(expect), "events_per_s")
        assert store.headline_quantity(next(iter(expect))) == "events_per_s"
        walls = {s.campaign_id: s for s in store.summarise_runs(list(expect), RUNS_PER_S, keep=False)
                 if s.label is ALL}
    for cid, (xs, by_label) in expect.items():
        for lab, vals in [(ALL, xs), *by_label.items()]:
            if not vals.size:
                assert (cid, lab) not in got
                continue
            s = got[(cid, lab)]
            assert s.n == vals.size and s.median == float(np.median(vals))
            if vals.size >= 2:
                assert s.ci95 == median_ci(vals, 0.95)[:2] and s.ci975 == median_ci(vals, 0.975)[:2]
            else:
                assert s.ci95 is None and s.ci975 is None
        per_s = 1e9 / np.array([int(1e9 / x) for x in xs], dtype=float)
        assert walls[cid].median == float(np.median(per_s))


def test_sign_test_exact_numbers():
    from scipy.stats import binomtest

    assert sign_test([1, 2, 3, 4, 5], 3.5)[0] == pytest.approx(1.0)
    assert sign_test([1.0] * 10, 2.0) == (pytest.approx(2 * 0.5 ** 10), 10, 10)
    xs = [1, 2, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]
    p, below, n = sign_test(xs, 2.0)  # the two values equal to the reference are dropped
    assert (below, n) == (1, 10) and p == pytest.approx(binomtest(1, 10).pvalue)
    p, _, _ = sign_test(np.linspace(0, 1, 1000), 0.999)  # 999 below, 1 above: p near 2^-990
    assert 0 < p < 1e-290


def test_medians_test_small_groups_and_levels():
    groups = {"a": {f"h{i}": MemberSummary(50, 100.0 + i * 0.1, 99.0 + i * 0.1, 101.0 + i * 0.1) for i in range(9)}}
    groups["a"]["slow"] = MemberSummary(50, 80.0, 79.0, 81.0)
    groups["a"]["one"] = MemberSummary(1, 50.0, None, None)
    groups["b"] = {"x": MemberSummary(10, 1.0, 0.9, 1.1), "y": MemberSummary(10, 0.5, 0.4, 0.6)}
    tests = {t.member: t for t in slow_by_medians(groups, lambda g, m: [79.5] * 50)}
    assert tests["slow"].slow and tests["slow"].level >= 0.95 and tests["slow"].p_adjusted < 1e-10
    assert tests["one"].level is None and tests["x"].level is None  # one value; one peer
    assert not any(t.slow for name, t in tests.items() if name != "slow")
    # the peers' median of "slow": the median of the 10 others' medians ("one", untested, is a peer)
    assert tests["slow"].peers_median == pytest.approx((100.3 + 100.4) / 2)


def test_html_at_scale_draws_distributions_not_rows(tmp_path):
    with open_store(str(tmp_path / "f.db")) as store:
        planted = _farm(store, tmp_path, 60, 20, seed=3, plant=True)
        rep = build(store, state.load(store, "big"), _NoBatch(), method="medians")
    page = report_html(rep)
    assert page.count("<svg") == len(CPUS)
    for host in planted:
        assert host in page
    assert "p0n001" not in page or "p0n001" in planted  # an unremarkable host: no row of its own
    assert page.count("<tr") < 40


def test_peers_median_and_interval_leave_the_member_out():
    rng = np.random.default_rng(8)
    meds = np.round(rng.normal(100, 1, 31), 1)  # rounded: ties among the medians
    members = {f"h{i}": MemberSummary(40, float(m), float(m) - 1, float(m) + 1) for i, m in enumerate(meds)}
    for t in slow_by_medians({"g": members}, lambda g, m: []):
        others = np.delete(meds, int(t.member[1:]))
        lo, hi, _ = median_ci(others, 0.975)
        assert t.peers_median == float(np.median(others))
        assert (t.low, t.high) == (members[t.member].low / hi, members[t.member].high / lo)


def _unkind_platform(rng, hosts: int, runs: int, slow: int | None, host_sd: float = 0.005) -> dict[str, np.ndarray]:
    """Hosts alike in law, not in luck: a host effect (sd 0.5%), skewed run noise (lognormal),
    two speeds 5% apart (a run in 3 on the slow one), background load (a run in 10 at 80%), and a
    farm-wide drift of 2% over the campaigns, which run at the same time on every host; one host
    at 90% when planted."""
    drift = 1 - 0.02 * np.linspace(0, 1, runs)
    out = {}
    for h in range(hosts):
        x = 1000.0 * (1 + host_sd * rng.standard_normal()) * rng.lognormal(0.0, 0.03, runs) * drift
        x[rng.random(runs) < 1 / 3] *= 0.95
        x[rng.random(runs) < 0.1] *= 0.8
        out[f"h{h}"] = x * (0.9 if h == slow else 1.0)
    return out


def _flagged(runs: dict[str, np.ndarray], min_effect: float) -> list[str]:
    groups = {"p": {}}
    for h, x in runs.items():
        lo, hi, _ = median_ci(x, 0.975)
        groups["p"][h] = MemberSummary(x.size, float(np.median(x)), lo, hi)
    return [t.member for t in slow_by_medians(groups, lambda g, m: runs[m], min_effect=min_effect) if t.slow]


def test_medians_test_finds_a_planted_host_and_stays_quiet_under_unkind_noise():
    found = false_alarms = 0
    for seed in range(12):
        rng = np.random.default_rng(200 + seed)
        planted = seed % 2 == 0
        flagged = _flagged(_unkind_platform(rng, 150, 80, 17 if planted else None), 0.03)
        found += planted and "h17" in flagged
        false_alarms += len([f for f in flagged if f != "h17" or not planted])
    assert found == 6 and false_alarms == 0


def test_medians_test_keeps_its_error_rate_without_a_minimum_effect():
    """Identical hosts and no minimum effect: only the sign test and Bonferroni stand between
    noise and a verdict; a fleet with any host flagged should be rare (alpha 0.05 per fleet)."""
    alarmed = 0
    for seed in range(20):
        rng = np.random.default_rng(300 + seed)
        alarmed += bool(_flagged(_unkind_platform(rng, 100, 60, None, host_sd=0.0), 0.0))
    assert alarmed <= 3
