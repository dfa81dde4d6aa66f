"""A node's power under full load, as an `instances` campaign measured it at its optimum.

The instances study reads an energy meter around every batch of concurrent copies and stores the
batch's joules with its first copy; watts are those joules over the batch's makespan (first start
to last finish). A node meter (IPMI DCMI) measures the whole node; RAPL and perf's power events
cover only the CPU packages and DRAM, so the cost table says the figure undercounts the node.
"""

from __future__ import annotations

from typing import Any

from perflab.errors import PerflabError
from perflab.store import canonical_params
from perflab.studies.cost.energy import run_joules


def campaign_power(store: Any, campaign_id: int, name: str) -> tuple[float, str]:
    """(median watts over the optimum's batches, where they come from) of an instances campaign."""
    camp = store.campaign(campaign_id)
    if camp.study != "instances":
        raise PerflabError(f"platform {name}: power_from_campaign {campaign_id} is a '{camp.study}' campaign, "
                           "not 'instances'; give the id of a 'perflab instances' campaign")
    summary = camp.summary or {}
    n, policy = summary.get("optimum_n"), summary.get("optimum_policy")
    if n is None:
        raise PerflabError(f"platform {name}: campaign {campaign_id} has no optimum (status {camp.status}); "
                           "finish the instances scan first")
    batches: dict[str, list] = {}
    for m in store.measurements(campaign_id):
        p = dict(m.params)
        if p.get("n") != n or (policy is not None and p.get("policy") != policy):
            continue
        p.pop("copy", None)
        batches.setdefault(canonical_params(p) + f"#{m.rep}", []).append(m.result)
    watts, kinds = [], set()
    for results in batches.values():
        measured = [r for r in results if r.energy]
        joules = run_joules(measured[0]) if measured else None
        span_ns = max(r.end_ns for r in results) - min(r.start_ns for r in results)
        if joules is not None and span_ns > 0 and all(r.ok for r in results):
            watts.append(joules / (span_ns / 1e9))
            kinds.add("node meter" if "ipmi:node" in measured[0].energy else "RAPL only, undercounts the node")
    if not watts:
        raise PerflabError(f"platform {name}: campaign {campaign_id} measured no energy at its optimum "
                           f"({n} cop{'y' if n == 1 else 'ies'}); rerun perflab instances where an energy source exists "
                           "(--energy), or give measured_power_w")
    watts.sort()
    mid = len(watts) // 2
    median = watts[mid] if len(watts) % 2 else (watts[mid - 1] + watts[mid]) / 2
    return median, f"campaign {campaign_id}: {'; '.join(sorted(kinds))}"
