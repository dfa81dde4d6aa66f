"""The results schema and its numbered migrations (same DDL on SQLite and PostgreSQL).

The schema is versioned like asv's ``api_version`` / SQLite ``PRAGMA user_version``: table
``schema_version`` holds one row per applied migration; opening a store applies the missing
ones in order, and refuses a store written by a newer perflab instead of corrupting it.
SQLAlchemy is imported by the caller and passed in, so importing this module stays cheap.
"""

from __future__ import annotations

from typing import Any, Callable

# Bump by appending a migration; never edit an applied one (old stores replay them).
SCHEMA_VERSION = 8


def _v1_metadata(sa: Any) -> Any:
    """The first released schema: hosts, campaigns, measurements."""
    md = sa.MetaData()
    sa.Table(
        "hosts", md,
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("hostname", sa.String(255), nullable=False),
        sa.Column("fingerprint", sa.String(64), nullable=False, unique=True),
        sa.Column("metadata", sa.JSON),
        sa.Column("topology", sa.JSON),
        sa.Column("created", sa.DateTime(timezone=True), nullable=False),
    )
    sa.Table(
        "campaigns", md,
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("study", sa.String(64), nullable=False, index=True),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("config", sa.JSON),
        sa.Column("summary", sa.JSON),
        sa.Column("host_id", sa.Integer, sa.ForeignKey("hosts.id")),
        sa.Column("started", sa.DateTime(timezone=True), nullable=False),
        sa.Column("finished", sa.DateTime(timezone=True)),
    )
    sa.Table(
        "measurements", md,
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("campaign_id", sa.Integer, sa.ForeignKey("campaigns.id", ondelete="CASCADE"),
                  nullable=False),
        sa.Column("label", sa.String(255), nullable=False, default=""),
        sa.Column("params", sa.Text, nullable=False),  # canonical JSON: the resume key
        sa.Column("rep", sa.Integer, nullable=False, default=0),
        sa.Column("wall_ns", sa.BigInteger, nullable=False),
        sa.Column("user_s", sa.Float, nullable=False),
        sa.Column("sys_s", sa.Float, nullable=False),
        sa.Column("maxrss_kb", sa.BigInteger, nullable=False),
        sa.Column("minflt", sa.BigInteger, nullable=False),
        sa.Column("majflt", sa.BigInteger, nullable=False),
        sa.Column("nvcsw", sa.BigInteger, nullable=False),
        sa.Column("nivcsw", sa.BigInteger, nullable=False),
        sa.Column("exit_code", sa.Integer),
        sa.Column("signal", sa.Integer),
        sa.Column("timed_out", sa.Boolean, nullable=False, default=False),
        sa.Column("start_ns", sa.BigInteger, nullable=False, default=0),
        sa.Column("end_ns", sa.BigInteger, nullable=False, default=0),
        sa.Column("metrics", sa.JSON),
        sa.Column("counters", sa.JSON),
        sa.Column("stdout_tail", sa.Text),
        sa.Column("stderr_tail", sa.Text),
        sa.Column("created", sa.DateTime(timezone=True), nullable=False),
    )
    return md


def _migrate_1(conn: Any, sa: Any) -> None:
    """Create the v1 tables."""
    _v1_metadata(sa).create_all(conn)


def _migrate_2(conn: Any, sa: Any) -> None:
    """v2: campaign names, parent campaigns (a lab run's child studies), artifacts."""
    conn.execute(sa.text("ALTER TABLE campaigns ADD COLUMN name VARCHAR(200) NOT NULL DEFAULT ''"))
    conn.execute(sa.text("ALTER TABLE campaigns ADD COLUMN parent_id INTEGER REFERENCES campaigns(id)"))
    conn.execute(sa.text("CREATE INDEX ix_measurements_campaign ON measurements (campaign_id)"))
    conn.execute(sa.text("CREATE INDEX ix_campaigns_parent ON campaigns (parent_id)"))
    md = sa.MetaData()
    sa.Table("campaigns", md, sa.Column("id", sa.Integer, primary_key=True))
    _artifacts_table(sa, md).create(conn)


def _artifacts_table(sa: Any, md: Any) -> Any:
    """A file a study produced (perf.data, a bundle, a report), by path and content hash."""
    return sa.Table(
        "artifacts", md,
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("campaign_id", sa.Integer, sa.ForeignKey("campaigns.id", ondelete="CASCADE"),
                  nullable=False, index=True),
        sa.Column("kind", sa.String(64), nullable=False),
        sa.Column("path", sa.Text, nullable=False),
        sa.Column("sha256", sa.String(64)),
        sa.Column("size", sa.BigInteger),
        sa.Column("meta", sa.JSON),
        sa.Column("created", sa.DateTime(timezone=True), nullable=False),
    )


def _migrate_3(conn: Any, sa: Any) -> None:
    """v3: campaign labels (fleet, batch job ids), named baselines, per-run health/energy/failure.

    One migration for several features so that parallel work never races on the numbering.
    """
    conn.execute(sa.text("ALTER TABLE campaigns ADD COLUMN labels JSON"))
    for col, ddl in (("health", "JSON"), ("energy", "JSON"), ("failure", "TEXT"),
                     ("suspect", "BOOLEAN NOT NULL DEFAULT FALSE")):
        conn.execute(sa.text(f"ALTER TABLE measurements ADD COLUMN {col} {ddl}"))
    md = sa.MetaData()
    sa.Table("campaigns", md, sa.Column("id", sa.Integer, primary_key=True))
    sa.Table("hosts", md, sa.Column("id", sa.Integer, primary_key=True))
    _baselines_table(sa, md).create(conn)


def _baselines_table(sa: Any, md: Any) -> Any:
    """A name for a campaign (perflab baseline set NAME CAMPAIGN), with the machine it ran on."""
    return sa.Table(
        "baselines", md,
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("name", sa.String(200), nullable=False, unique=True),
        sa.Column("campaign_id", sa.Integer, sa.ForeignKey("campaigns.id", ondelete="CASCADE"),
                  nullable=False),
        sa.Column("host_id", sa.Integer, sa.ForeignKey("hosts.id")),
        sa.Column("note", sa.Text),
        sa.Column("created", sa.DateTime(timezone=True), nullable=False),
    )


def _migrate_4(conn: Any, sa: Any) -> None:
    """v4: every save of a baseline name (its history), seeded with where each name points now."""
    md = sa.MetaData()
    sa.Table("campaigns", md, sa.Column("id", sa.Integer, primary_key=True))
    sa.Table("hosts", md, sa.Column("id", sa.Integer, primary_key=True))
    _baseline_saves_table(sa, md).create(conn)
    conn.execute(sa.text("INSERT INTO baseline_saves (name, campaign_id, host_id, created) "
                         "SELECT name, campaign_id, host_id, created FROM baselines"))


def _baseline_saves_table(sa: Any, md: Any) -> Any:
    """One row per save of a baseline name: the gate reads a name's drift and cumulative change."""
    return sa.Table(
        "baseline_saves", md,
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("name", sa.String(200), nullable=False, index=True),
        sa.Column("campaign_id", sa.Integer, sa.ForeignKey("campaigns.id", ondelete="CASCADE"),
                  nullable=False),
        sa.Column("host_id", sa.Integer, sa.ForeignKey("hosts.id")),
        sa.Column("created", sa.DateTime(timezone=True), nullable=False),
    )


def _migrate_5(conn: Any, sa: Any) -> None:
    """v5: a run's label is text of any length (a long command line as the label crashed the
    insert on PostgreSQL's VARCHAR(255); SQLite never enforced the length, so it has nothing to do)."""
    if conn.dialect.name == "postgresql":
        conn.execute(sa.text("ALTER TABLE measurements ALTER COLUMN label TYPE TEXT"))


def _run_summaries_table(sa: Any, md: Any) -> Any:
    """A campaign's runs of one quantity summarised by the store (store/summaries.py): count,
    median and the order statistics of its 95% and 97.5% intervals; label NULL: all labels."""
    return sa.Table(
        "run_summaries", md,
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("campaign_id", sa.Integer, sa.ForeignKey("campaigns.id", ondelete="CASCADE"),
                  nullable=False, index=True),
        sa.Column("quantity", sa.String(200), nullable=False),
        sa.Column("label", sa.Text),
        sa.Column("n", sa.Integer, nullable=False),
        sa.Column("median", sa.Float, nullable=False),
        sa.Column("ci95_low", sa.Float),
        sa.Column("ci95_high", sa.Float),
        sa.Column("ci975_low", sa.Float),
        sa.Column("ci975_high", sa.Float),
    )


def _migrate_6(conn: Any, sa: Any) -> None:
    """v6: per-campaign run summaries, so that a fleet report of 100,000 hosts reads 100,000
    rows instead of 100 million."""
    md = sa.MetaData()
    sa.Table("campaigns", md, sa.Column("id", sa.Integer, primary_key=True))
    _run_summaries_table(sa, md).create(conn)


def _monitor_samples_table(sa: Any, md: Any) -> Any:
    """The machine monitor's time series of a campaign (measure/monitor.py): one row a sample, its
    monotonic time (the clock of the runs' start_ns and end_ns, so the two line up), wall time, the
    phase (idle-before, study, idle-after; one 'sources' row says what was sampled and what the
    machine lacks) and the sample's values as JSON (about 0.2 KiB, 12 bytes more a CPU, 0.2 KiB a GPU)."""
    return sa.Table(
        "monitor_samples", md,
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("campaign_id", sa.Integer, sa.ForeignKey("campaigns.id", ondelete="CASCADE"),
                  nullable=False, index=True),
        sa.Column("t_ns", sa.BigInteger, nullable=False),
        sa.Column("wall", sa.Float, nullable=False),
        sa.Column("phase", sa.String(16), nullable=False),
        sa.Column("sample", sa.JSON),
    )


def _run_series_table(sa: Any, md: Any) -> Any:
    """A run's per-event series (measure/series.encode: zlib-compressed delta columns, about 2-3
    bytes an event), apart from its measurement row so that listing runs never reads them."""
    return sa.Table(
        "run_series", md,
        sa.Column("measurement_id", sa.Integer, sa.ForeignKey("measurements.id", ondelete="CASCADE"),
                  primary_key=True, autoincrement=False),
        sa.Column("campaign_id", sa.Integer, sa.ForeignKey("campaigns.id", ondelete="CASCADE"),
                  nullable=False, index=True),
        sa.Column("events", sa.Integer, nullable=False),
        sa.Column("data", sa.LargeBinary, nullable=False),
    )


def _migrate_7(conn: Any, sa: Any) -> None:
    """v7: the machine monitor's samples beside a campaign's runs."""
    md = sa.MetaData()
    sa.Table("campaigns", md, sa.Column("id", sa.Integer, primary_key=True))
    _monitor_samples_table(sa, md).create(conn, checkfirst=True)


def _migrate_8(conn: Any, sa: Any) -> None:
    """v8: per-event series of runs (a workload's event lines), one compact row per run."""
    md = sa.MetaData()
    sa.Table("campaigns", md, sa.Column("id", sa.Integer, primary_key=True))
    sa.Table("measurements", md, sa.Column("id", sa.Integer, primary_key=True))
    _run_series_table(sa, md).create(conn, checkfirst=True)


MIGRATIONS: dict[int, Callable[[Any, Any], None]] = {1: _migrate_1, 2: _migrate_2, 3: _migrate_3,
                                                     4: _migrate_4, 5: _migrate_5, 6: _migrate_6,
                                                     7: _migrate_7, 8: _migrate_8}
assert sorted(MIGRATIONS) == list(range(1, SCHEMA_VERSION + 1))


# The schema at SCHEMA_VERSION as SQLite holds it after MIGRATIONS (the ALTERed columns where the
# migrations appended them), applied to a new file by store/lite.py with the standard library's
# sqlite3: importing SQLAlchemy and replaying every migration cost a first `perflab run` ~110 ms.
# tests/real/test_store_lite.py checks that both give the same tables, columns, indexes and keys.
SQLITE_SCHEMA = (
    """CREATE TABLE schema_version (
    version INTEGER NOT NULL, applied DATETIME NOT NULL, perflab_version VARCHAR(32),
    PRIMARY KEY (version))""",
    """CREATE TABLE hosts (
    id INTEGER NOT NULL, hostname VARCHAR(255) NOT NULL, fingerprint VARCHAR(64) NOT NULL,
    metadata JSON, topology JSON, created DATETIME NOT NULL,
    PRIMARY KEY (id), UNIQUE (fingerprint))""",
    """CREATE TABLE campaigns (
    id INTEGER NOT NULL, study VARCHAR(64) NOT NULL, status VARCHAR(16) NOT NULL, config JSON,
    summary JSON, host_id INTEGER, started DATETIME NOT NULL, finished DATETIME,
    name VARCHAR(200) NOT NULL DEFAULT '', parent_id INTEGER REFERENCES campaigns(id), labels JSON,
    PRIMARY KEY (id), FOREIGN KEY(host_id) REFERENCES hosts (id))""",
    "CREATE INDEX ix_campaigns_study ON campaigns (study)",
    """CREATE TABLE measurements (
    id INTEGER NOT NULL, campaign_id INTEGER NOT NULL, label VARCHAR(255) NOT NULL,
    params TEXT NOT NULL, rep INTEGER NOT NULL, wall_ns BIGINT NOT NULL, user_s FLOAT NOT NULL,
    sys_s FLOAT NOT NULL, maxrss_kb BIGINT NOT NULL, minflt BIGINT NOT NULL,
    majflt BIGINT NOT NULL, nvcsw BIGINT NOT NULL, nivcsw BIGINT NOT NULL, exit_code INTEGER,
    signal INTEGER, timed_out BOOLEAN NOT NULL, start_ns BIGINT NOT NULL, end_ns BIGINT NOT NULL,
    metrics JSON, counters JSON, stdout_tail TEXT, stderr_tail TEXT, created DATETIME NOT NULL,
    health JSON, energy JSON, failure TEXT, suspect BOOLEAN NOT NULL DEFAULT FALSE,
    PRIMARY KEY (id), FOREIGN KEY(campaign_id) REFERENCES campaigns (id) ON DELETE CASCADE)""",
    "CREATE INDEX ix_measurements_campaign ON measurements (campaign_id)",
    "CREATE INDEX ix_campaigns_parent ON campaigns (parent_id)",
    """CREATE TABLE artifacts (
    id INTEGER NOT NULL, campaign_id INTEGER NOT NULL, kind VARCHAR(64) NOT NULL,
    path TEXT NOT NULL, sha256 VARCHAR(64), size BIGINT, meta JSON, created DATETIME NOT NULL,
    PRIMARY KEY (id), FOREIGN KEY(campaign_id) REFERENCES campaigns (id) ON DELETE CASCADE)""",
    "CREATE INDEX ix_artifacts_campaign_id ON artifacts (campaign_id)",
    """CREATE TABLE baselines (
    id INTEGER NOT NULL, name VARCHAR(200) NOT NULL, campaign_id INTEGER NOT NULL,
    host_id INTEGER, note TEXT, created DATETIME NOT NULL,
    PRIMARY KEY (id), UNIQUE (name),
    FOREIGN KEY(campaign_id) REFERENCES campaigns (id) ON DELETE CASCADE,
    FOREIGN KEY(host_id) REFERENCES hosts (id))""",
    """CREATE TABLE baseline_saves (
    id INTEGER NOT NULL, name VARCHAR(200) NOT NULL, campaign_id INTEGER NOT NULL,
    host_id INTEGER, created DATETIME NOT NULL,
    PRIMARY KEY (id),
    FOREIGN KEY(campaign_id) REFERENCES campaigns (id) ON DELETE CASCADE,
    FOREIGN KEY(host_id) REFERENCES hosts (id))""",
    "CREATE INDEX ix_baseline_saves_name ON baseline_saves (name)",
    """CREATE TABLE run_summaries (
    id INTEGER NOT NULL, campaign_id INTEGER NOT NULL, quantity VARCHAR(200) NOT NULL, label TEXT,
    n INTEGER NOT NULL, median FLOAT NOT NULL, ci95_low FLOAT, ci95_high FLOAT, ci975_low FLOAT,
    ci975_high FLOAT,
    PRIMARY KEY (id), FOREIGN KEY(campaign_id) REFERENCES campaigns (id) ON DELETE CASCADE)""",
    "CREATE INDEX ix_run_summaries_campaign_id ON run_summaries (campaign_id)",
    """CREATE TABLE monitor_samples (
    id INTEGER NOT NULL, campaign_id INTEGER NOT NULL, t_ns BIGINT NOT NULL, wall FLOAT NOT NULL,
    phase VARCHAR(16) NOT NULL, sample JSON,
    PRIMARY KEY (id), FOREIGN KEY(campaign_id) REFERENCES campaigns (id) ON DELETE CASCADE)""",
    "CREATE INDEX ix_monitor_samples_campaign_id ON monitor_samples (campaign_id)",
    """CREATE TABLE run_series (
    measurement_id INTEGER NOT NULL, campaign_id INTEGER NOT NULL, events INTEGER NOT NULL,
    data BLOB NOT NULL,
    PRIMARY KEY (measurement_id),
    FOREIGN KEY(measurement_id) REFERENCES measurements (id) ON DELETE CASCADE,
    FOREIGN KEY(campaign_id) REFERENCES campaigns (id) ON DELETE CASCADE)""",
    "CREATE INDEX ix_run_series_campaign_id ON run_series (campaign_id)",
)


def current_tables(sa: Any) -> dict[str, Any]:
    """Table objects describing the schema at SCHEMA_VERSION, for queries (not for DDL)."""
    md = _v1_metadata(sa)
    campaigns = md.tables["campaigns"]
    campaigns.append_column(sa.Column("name", sa.String(200), nullable=False, default=""))
    campaigns.append_column(sa.Column("parent_id", sa.Integer, sa.ForeignKey("campaigns.id")))
    campaigns.append_column(sa.Column("labels", sa.JSON))
    measurements = md.tables["measurements"]
    measurements.c.label.type = sa.Text()  # v5
    measurements.append_column(sa.Column("health", sa.JSON))
    measurements.append_column(sa.Column("energy", sa.JSON))
    measurements.append_column(sa.Column("failure", sa.Text))
    measurements.append_column(sa.Column("suspect", sa.Boolean, nullable=False, default=False))
    _baselines_table(sa, md)
    _baseline_saves_table(sa, md)
    _artifacts_table(sa, md)
    _run_summaries_table(sa, md)
    _monitor_samples_table(sa, md)
    _run_series_table(sa, md)
    version_table(sa, md)
    return dict(md.tables)


def version_table(sa: Any, md: Any = None) -> Any:
    """One row per applied migration (in ``md``, or a MetaData of its own)."""
    return sa.Table(
        "schema_version", sa.MetaData() if md is None else md,
        sa.Column("version", sa.Integer, primary_key=True, autoincrement=False),
        sa.Column("applied", sa.DateTime(timezone=True), nullable=False),
        sa.Column("perflab_version", sa.String(32)),
    )
