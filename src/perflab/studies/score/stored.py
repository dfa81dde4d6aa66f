"""Score campaigns in the store: an imported report kept as a campaign of the score study (its host
recorded like a measured one), a stored campaign read back, two compared."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from perflab.errors import PerflabError
from perflab.studies.score import method
from perflab.studies.score.analysis import raw_ratios
from perflab.studies.score.result import ScoreResult

if TYPE_CHECKING:
    from perflab.store import Store

NAME = "score"


def store_imported(store: Store, result: ScoreResult, path: str) -> ScoreResult:
    """Keep an imported result as a done campaign of the score study; its id set on the result."""
    host = result.host
    metadata = {"hostname": host.get("hostname") or f"unknown host ({path.rsplit('/', 1)[-1]})",
                "cpu_model": host.get("cpu_model"), "imported": True,
                **{k: v for k, v in host.items() if k not in ("hostname", "cpu_model")}}
    host_id = store.add_host(metadata, None)
    config = {"imported_from": path.rsplit("/", 1)[-1], "suite": result.suite, "source": result.source}
    with store.open_campaign(NAME, config, host_id=host_id, name=f"import {config['imported_from']}") as camp:
        result.campaign_id = camp.id
        camp.summary = result.as_dict()
    return result


def load_campaign(store: Store, campaign_id: int) -> ScoreResult:
    """A stored score campaign's result, or a one-line PerflabError."""
    camp = store.campaign(campaign_id)
    if camp.study != NAME:
        raise PerflabError(f"campaign {campaign_id} is a '{camp.study}' campaign, not a score; "
                           "give the id of a 'perflab score' or 'perflab import' campaign (perflab results)")
    if not camp.summary or "workloads" not in camp.summary:
        raise PerflabError(f"campaign {campaign_id} ({camp.status}) holds no score; run perflab resume "
                           f"{campaign_id} or run the suite again")
    result = ScoreResult.from_dict(camp.summary)
    result.campaign_id = camp.id
    return result


def difference(a: ScoreResult, b: ScoreResult, level: float = method.LEVEL) -> tuple[Any, str]:
    """(ratio b/a, low, high, p) on the same suite, or (None, why not and what would tell)."""
    names_a = [(w.name, tuple(sorted(w.references.items())), w.weight) for w in a.workloads]
    names_b = [(w.name, tuple(sorted(w.references.items())), w.weight) for w in b.workloads]
    if names_a != names_b:
        raise PerflabError("the two scores come from different suites (workloads, references or weights "
                           "differ); compare scores of one suite")
    lms_a = [method.log_mean(raw_ratios(w)) for w in a.workloads]
    lms_b = [method.log_mean(raw_ratios(w)) for w in b.workloads]
    if any(lm is None for lm in lms_a + lms_b):
        return None, ("a score without repetitions per workload has no spread to test against; "
                      "measure (or import HEPscore result files with) 3 repetitions on each host")
    return method.score_difference([lm for lm in lms_a if lm is not None], [lm for lm in lms_b if lm is not None],
                                   [w.weight for w in a.workloads], level), ""
