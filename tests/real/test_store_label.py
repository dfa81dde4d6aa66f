"""A run's label is text of any length on both backends (schema v5), and a v4 PostgreSQL store is
migrated to it."""

from __future__ import annotations

import pytest

from perflab.model import RunResult
from perflab.store import SCHEMA_VERSION, open_store
from perflab.store.schema import MIGRATIONS


def _result() -> RunResult:
    return RunResult(wall_ns=1000, user_s=0, sys_s=0, maxrss_kb=1, minflt=0, majflt=0, nvcsw=0,
                     nivcsw=0, exit_code=0)


# A command line as a label: longer than the VARCHAR(255) of schema v1-v4.
LONG = "sh -c " + "'x=1; " * 80 + "'"


def test_a_label_longer_than_255_characters_is_stored(store_url):
    assert len(LONG) > 255
    with open_store(store_url) as store:
        cid = store.start_campaign("run", {})
        store.add_measurement(cid, _result(), {"i": 0}, label=LONG)
        assert [m.label for m in store.measurements(cid)] == [LONG]


@pytest.mark.postgres
def test_a_v4_postgresql_store_is_migrated_to_text_labels(postgres_url):
    import sqlalchemy as sa

    with open_store(postgres_url) as store:
        with store.engine.begin() as conn:  # back to v4 as perflab left it: VARCHAR(255) labels
            conn.execute(sa.text("ALTER TABLE measurements ALTER COLUMN label TYPE VARCHAR(255)"))
            conn.execute(sa.text("DROP TABLE run_summaries"))  # v6
            conn.execute(sa.text("DELETE FROM schema_version WHERE version >= 5"))
        assert store.schema_version() == 4 and SCHEMA_VERSION >= 6 and 5 in MIGRATIONS
        cid = store.start_campaign("run", {})
        with pytest.raises(sa.exc.DataError):  # what a v4 store does with a long label
            with store.engine.begin() as conn:
                conn.execute(store.t["measurements"].insert(), store._row(cid, _result(), {}, 0, LONG))
    with open_store(postgres_url) as store:  # reopening applies migrations 5 and 6
        assert store.schema_version() == SCHEMA_VERSION
        store.add_measurement(cid, _result(), {"i": 1}, label=LONG)
        assert [m.label for m in store.measurements(cid)] == [LONG]


def test_a_campaign_name_too_long_for_its_column_is_one_line(store_url):
    from perflab.errors import PerflabError

    with open_store(store_url) as store:
        with pytest.raises(PerflabError, match="has 201 characters: give one of at most 200"):
            store.start_campaign("fleet", {}, name="f" * 201)
        assert store.start_campaign("fleet", {}, name="f" * 200) > 0
