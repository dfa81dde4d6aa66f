"""A fleet's collection into a real PostgreSQL store, run twice."""

from __future__ import annotations

import pytest

from perflab.fleet.collect import collect
from perflab.store import open_store
from tests.studies.test_fleet_units import _result, _task


@pytest.mark.postgres
def test_collect_is_idempotent(tmp_path, postgres_url):
    shards = tmp_path / "shards"
    shards.mkdir()
    for slot in range(3):
        with open_store(str(shards / f"farm.{slot}.job1.db")) as s:
            _task(s, "farm", slot, f"n{slot}", "EPYC", [100.0 + slot] * 5,
                  status="running" if slot == 2 else "done")
            _task(s, "other", slot, f"n{slot}", "EPYC", [1.0] * 2)  # another fleet: not collected
    with open_store(postgres_url) as target:
        first = collect("farm", shards, target)
        assert (first.shards, first.copied, first.measurements) == (3, 3, 15)
        again = collect("farm", shards, target)
        assert (again.copied, again.updated, again.unchanged) == (0, 0, 3)
        with open_store(str(shards / "farm.2.job1.db")) as s:  # the running one finishes
            cid = s.campaigns()[0].id
            s.add_measurement(cid, _result(102.0), {}, rep=5, label="w")
            s.finish_campaign(cid, "done")
        third = collect("farm", shards, target)
        assert (third.copied, third.updated, third.unchanged) == (0, 1, 2)
        camps = [c for c in target.campaigns() if c.labels.get("fleet") == "farm"]
        assert len(camps) == 3 and {c.status for c in camps} == {"done"}
        assert sorted(c.n_measurements for c in camps) == [5, 5, 6]
        assert len({c.host_id for c in camps}) == 3
