"""perflab cost: numbers computed by hand, the choice, campaign throughput, bad input, the plot
(through the command line: tests/cli/test_cost.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from perflab.errors import PerflabError
from perflab.report.terminal.cost import render
from perflab.store import open_store
from perflab.studies.cost.study import load_platforms, run_cost

TOML = """
[requirement]
target_events_per_s = 10000
power_envelope_kw = 5
currency = "EUR"

[[platform]]
name = "A"
sockets = 2
tdp_w = 100
throughput_per_node = 300
prices = { board = 500, memory = 300, psu = 100, cpu = 1000, chassis = 100 }

[[platform]]
name = "B"
sockets = 1
tdp_w = 50
throughput_per_node = 120
measured_power_w = 70
prices = { board = 300, memory = 200, psu = 50, cpu = 400, chassis = 50 }

[[platform]]
name = "C"
sockets = 2
tdp_w = 150
throughput_from_campaign = 1
prices = { board = 500, memory = 600, psu = 100, cpu = 2000, chassis = 100 }
"""


def test_costs_by_hand(tmp_path):
    f = tmp_path / "p.toml"
    f.write_text(TOML)
    with open_store(str(tmp_path / "s.db")) as store:
        inst = store.start_campaign("instances", {})
        store.finish_campaign(inst, "done", {"optimum_throughput": 1000.0})
        res = run_cost(load_platforms(str(f)), store)
        c = {p.name: p for p in res.platforms}
        # A: ceil(10000/300) = 34 nodes; node 500+300+100+100 + 2*1000 = 3000 -> 102,000
        #    power 1.6*100*2 = 320 W -> 34*320 = 10.88 kW > 5 kW
        assert c["A"].nodes == 34 and c["A"].node_price == 3000 and c["A"].total_cost == 102_000
        assert c["A"].node_power_w == pytest.approx(320) and c["A"].total_power_kw == pytest.approx(10.88)
        assert not c["A"].fits_power and c["A"].power_source.startswith("1.6")
        # B: ceil(10000/120) = 84 nodes; node 300+200+50+50+400 = 1000 -> 84,000; 84*70 W = 5.88 kW
        assert c["B"].nodes == 84 and c["B"].total_cost == 84_000
        assert c["B"].total_power_kw == pytest.approx(5.88) and not c["B"].fits_power
        assert c["B"].power_source == "measured"
        assert c["B"].cost_per_event_s == pytest.approx(8.4) and c["B"].watts_per_event_s == pytest.approx(0.588)
        # C: throughput 1000 from the instances campaign: 10 nodes; node 1300 + 2*2000 = 5300 -> 53,000;
        #    power 1.6*150*2 = 480 W -> 4.8 kW: fits, and it is the only one that does
        assert c["C"].throughput_source == "campaign 1" and c["C"].nodes == 10
        assert c["C"].total_cost == 53_000 and c["C"].total_power_kw == pytest.approx(4.8) and c["C"].fits_power
        assert res.best == "C"
        assert "A needs 10.9 kW > 5 kW" in res.why and "B needs 5.9 kW > 5 kW" in res.why
        camp = store.campaign(res.campaign_id)
        assert camp.status == "done" and camp.summary["best"] == "C"


def test_cheapest_inside_envelope_and_budget(tmp_path):
    f = tmp_path / "p.toml"
    f.write_text(TOML.replace("power_envelope_kw = 5", "power_envelope_kw = 20\nbudget = 60000")
                 .replace("throughput_from_campaign = 1", "throughput_per_node = 1000"))
    with open_store(str(tmp_path / "s.db")) as store:
        res = run_cost(load_platforms(str(f)), store)
    c = {p.name: p for p in res.platforms}
    assert all(p.fits_power for p in res.platforms)
    # B (84,000) and A (102,000) are over the 60,000 budget; C (53,000) is not
    assert not c["A"].fits_budget and not c["B"].fits_budget and res.best == "C"


def test_no_platform_fits(tmp_path):
    f = tmp_path / "p.toml"
    f.write_text(TOML.replace("power_envelope_kw = 5", "power_envelope_kw = 1")
                 .replace("throughput_from_campaign = 1", "throughput_per_node = 1000"))
    with open_store(str(tmp_path / "s.db")) as store:
        res = run_cost(load_platforms(str(f)), store)
    assert res.best is None and res.why.startswith("no platform fits: the least power-hungry, C, needs 4.8 kW")
    from rich.console import Console

    console = Console(record=True, width=200)
    render(res, console)
    assert console.export_text().count("no platform fits") == 1  # said once, not "fits. no platform fits"


@pytest.mark.parametrize("text,message", [
    ("[[platform]]\nname='x'", "no \\[requirement\\] table"),
    ("[requirement]\ntarget_events_per_s=1\npower_envelope_kw=1\n[[platform]]\nname='x'\nsockets=1\ntdp_w=1",
     "missing 'throughput_per_node'"),
    ("[requirement]\ntarget_events_per_s=-1\npower_envelope_kw=1", "must be positive"),
    ("[requirement\n", "not valid TOML"),
    ("[requirement]\ntarget_events_per_s=1\npower_envelope_kw=1\n[[platform]]\nname='x'\nsockets=1\ntdp_w=1\n"
     "throughput_per_node=1\nprices={gpu=1}", "unknown price 'gpu'"),
])
def test_bad_platform_files(tmp_path, text, message):
    f = tmp_path / "p.toml"
    f.write_text(text)
    with pytest.raises(PerflabError, match=message):
        load_platforms(str(f))


def test_campaign_must_be_instances(tmp_path):
    f = tmp_path / "p.toml"
    f.write_text(TOML)
    with open_store(str(tmp_path / "s.db")) as store:
        store.start_campaign("cores", {})
        with pytest.raises(PerflabError, match="is a 'cores' campaign, not 'instances'"):
            run_cost(load_platforms(str(f)), store)


def test_report_cost_plot_reads_the_stored_summary(tmp_path):
    """The envelope line and the red/green marks come from the keys the study really stores."""
    from perflab.report.html.cost import cost_points
    from perflab.store import open_store
    from perflab.studies.cost.study import CostResult, load_platforms, run_cost

    example = Path(__file__).resolve().parents[2] / "src/perflab/examples/trigger-farm-platforms.toml"
    with open_store(str(tmp_path / "s.db")) as store:
        result = run_cost(load_platforms(str(example)), store)
        summary = store.campaign(result.campaign_id).summary
    pts, env = cost_points(CostResult.from_dict(summary))
    assert env == result.requirement.power_envelope_kw
    fits = {name: ok for name, _, _, ok in pts}
    assert fits == {p.name: p.fits_power and p.fits_budget for p in result.platforms}
    assert not all(fits.values())  # the seed's envelope rules some platforms out


def _instances_campaign(store, watts_at_opt: float | None) -> int:
    """An instances campaign as the study stores it: copies per batch, energy on the first copy."""
    from perflab.model import RunResult

    cid = store.start_campaign("instances", {})
    for n in (1, 2):
        for rnd in range(3):
            for copy in range(n):
                energy = {}
                if copy == 0 and watts_at_opt is not None:
                    energy = {"ipmi:node": (watts_at_opt if n == 2 else 150.0) * 2.0}
                r = RunResult(wall_ns=2 * 10**9, user_s=2, sys_s=0, maxrss_kb=1, minflt=0, majflt=0, nvcsw=0,
                              nivcsw=0, exit_code=0, start_ns=rnd * 10**10, end_ns=rnd * 10**10 + 2 * 10**9,
                              energy=energy)
                store.add_measurement(cid, r, {"policy": "compact", "n": n, "copy": copy, "round": rnd}, rep=rnd)
    store.finish_campaign(cid, "done", {"optimum_n": 2, "optimum_policy": "compact", "optimum_throughput": 40.0})
    return cid


def _platforms(tmp_path, platforms: str):
    """A platforms file: 400 events/s inside 10 kW, then the given [[platform]] tables."""
    toml = tmp_path / "p.toml"
    toml.write_text("[requirement]\ntarget_events_per_s = 400\npower_envelope_kw = 10\n" + platforms)
    return toml


def test_power_from_campaign_takes_the_measured_watts_at_the_optimum(tmp_path):
    with open_store(str(tmp_path / "s.db")) as store:
        cid = _instances_campaign(store, 300.0)
        toml = _platforms(tmp_path, f"""
[[platform]]
name = "measured"
sockets = 2
tdp_w = 100
prices = {{ board = 1000 }}
throughput_from_campaign = {cid}
power_from_campaign = {cid}
[[platform]]
name = "estimated"
sockets = 2
tdp_w = 100
prices = {{ board = 1000 }}
throughput_per_node = 40
""")
        result = run_cost(load_platforms(str(toml)), store)
    by = {p.name: p for p in result.platforms}
    assert by["measured"].node_power_w == pytest.approx(300.0)
    assert by["measured"].power_source == f"campaign {cid}: node meter"
    assert by["estimated"].power_source == "1.6 x TDP x sockets" and by["estimated"].node_power_w == 320.0
