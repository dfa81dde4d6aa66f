"""Shared fixtures: real PostgreSQL servers started by the tests, real machines' sysfs trees, and
holds that stop a study at a known point for kill -9 tests (Hold, kill_then_resume)."""

from __future__ import annotations

import atexit
import functools
import os
import pathlib
import pwd
import re
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import tarfile
import tempfile
import time

import pytest

PG_BIN = os.environ.get("PERFLAB_PG_BIN", "/usr/lib/postgresql/15/bin")

# Every temporary file of the session, the tests' and their commands', lives in one directory
# under the user's TMPDIR, removed at exit: a perflab a test kills with kill -9 cannot remove its
# perf fifos (perflab-ctl-*), headless Chromium leaves its singleton socket directory, and each
# session made a tune state directory; /tmp held 371 of those and 43 of Chromium's after a day
# of runs. A session itself killed leaves its directory, removed by the next session (its pid is
# gone). xdist's workers inherit TMPDIR and so share their controller's directory. pytest's own
# tmp_path stays where pytest keeps it (the user's TMPDIR, its last three sessions).
USER_TMP = tempfile.gettempdir()
_PREFIX = "perflab-tests-"
if not os.environ.get("PERFLAB_TESTS_TMP") or os.environ["PERFLAB_TESTS_TMP"] != os.environ.get("TMPDIR"):
    for stale in pathlib.Path(USER_TMP).glob(f"{_PREFIX}*-*"):
        pid = stale.name[len(_PREFIX):].split("-")[0]
        try:
            mine = stale.lstat().st_uid == os.geteuid()
        except OSError:  # another session removed it first
            continue
        if mine and pid.isdigit() and not os.path.exists(f"/proc/{pid}"):
            shutil.rmtree(stale, ignore_errors=True)
    _session_tmp = tempfile.mkdtemp(prefix=f"{_PREFIX}{os.getpid()}-")
    atexit.register(shutil.rmtree, _session_tmp, True)
    os.environ.setdefault("PYTEST_DEBUG_TEMPROOT", USER_TMP)
    os.environ["TMPDIR"] = os.environ["PERFLAB_TESTS_TMP"] = tempfile.tempdir = _session_tmp

# Tests never read nor write the machine's real tune state (/run/perflab): what `perflab machine
# tune` and a study's --tune record in a test stays in a directory of this session.
os.environ["PERFLAB_STATE_DIR"] = tempfile.mkdtemp(prefix="perflab-state-")


def shared_tmp() -> str:
    """A temporary directory another user can enter: TMPDIR where every directory above it lets
    others through, else /tmp or /var/tmp (a TMPDIR under a home of mode 700 would keep the
    `postgres` user, or any user a test runs a command as, out of its own files)."""
    for d in (USER_TMP, "/tmp", "/var/tmp"):
        p = pathlib.Path(d).resolve()
        if p.is_dir() and all(q.stat().st_mode & 0o001 for q in (p, *p.parents)):
            return str(p)
    return USER_TMP


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class PgServer:
    """A throw-away PostgreSQL server on 127.0.0.1 (initdb, pg_ctl); restartable for fault tests.

    initdb refuses to run as root, so the cluster belongs to the `postgres` system user; the data
    and socket directory live in a fresh /tmp dir that user owns. fsync is off: it is scratch.
    """

    def __init__(self) -> None:
        if not os.path.exists(os.path.join(PG_BIN, "initdb")):
            pytest.skip(f"PostgreSQL server binaries not found in {PG_BIN} "
                        "(scripts/install-system-packages.sh installs postgresql)")
        try:
            import psycopg  # noqa: F401 - imported only to find whether it is installed
        except ImportError:
            pytest.skip("psycopg 3 not installed: pip install -e '.[postgres]'")
        self.prefix: list[str] = []
        if os.geteuid() == 0:
            try:
                pwd.getpwnam("postgres")
            except KeyError:
                subprocess.run(["useradd", "--system", "--no-create-home", "postgres"], check=True)
            self.prefix = ["runuser", "-u", "postgres", "--"]
        where = shared_tmp() if self.prefix else USER_TMP
        self._stop_stale(where)
        self.base = tempfile.mkdtemp(prefix=f"perflab-pg-{os.getpid()}-", dir=where)
        if self.prefix:
            shutil.chown(self.base, "postgres")
        self.data = os.path.join(self.base, "data")
        self.port = _free_port()
        self._run(f"{PG_BIN}/initdb", "-D", self.data, "-U", "postgres", "--auth=trust", "--no-sync",
                  "-E", "UTF8", "--locale=C")
        self.start()

    def _stop_stale(self, where: str) -> None:
        """Stop and remove the servers of sessions that were killed (their pid is gone): a killed
        session runs no teardown, and its server would run on, holding its port and memory."""
        owner = pwd.getpwnam("postgres").pw_uid if self.prefix else os.geteuid()
        for stale in pathlib.Path(where).glob("perflab-pg-*-*"):
            pid = stale.name.split("-")[2]
            try:
                theirs = stale.lstat().st_uid != owner  # another user's: not ours to stop
            except OSError:  # another session removed it first
                continue
            if theirs or not pid.isdigit() or os.path.exists(f"/proc/{pid}"):
                continue
            if (stale / "data" / "postmaster.pid").exists():
                subprocess.run(self.prefix + [f"{PG_BIN}/pg_ctl", "-D", str(stale / "data"), "-m", "immediate",
                                              "-w", "stop"], capture_output=True, timeout=60)
            shutil.rmtree(stale, ignore_errors=True)

    @property
    def url(self) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}"

    def _run(self, *cmd: str) -> None:
        try:
            subprocess.run(self.prefix + list(cmd), check=True, capture_output=True, text=True, timeout=120)
        except subprocess.CalledProcessError as exc:
            log = ""
            try:
                log = open(os.path.join(self.base, "log")).read()[-2000:]
            except OSError:
                pass
            pytest.fail(f"PostgreSQL: {' '.join(cmd[:2])} failed: {exc.stderr}\n{log}")

    def start(self) -> None:
        self._run(f"{PG_BIN}/pg_ctl", "-D", self.data, "-l", os.path.join(self.base, "log"), "-w", "-t", "60",
                  "-o", f"-p {self.port} -k {self.base} -c listen_addresses=127.0.0.1 -c fsync=off "
                        "-c full_page_writes=off -c max_connections=60", "start")

    def stop(self, mode: str = "fast") -> None:
        subprocess.run(self.prefix + [f"{PG_BIN}/pg_ctl", "-D", self.data, "-m", mode, "-w", "stop"],
                       capture_output=True, timeout=60)

    def create_db(self, name: str) -> str:
        import psycopg

        with psycopg.connect(f"{self.url}/postgres", autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}"')
            conn.execute(f'CREATE DATABASE "{name}"')
        return f"{self.url}/{name}"

    def destroy(self) -> None:
        self.stop("immediate")
        shutil.rmtree(self.base, ignore_errors=True)


@pytest.fixture(scope="session")
def pg_server():
    server = PgServer()
    yield server
    server.destroy()


@pytest.fixture(scope="session")
def postgres_server(pg_server):
    """The session's PostgreSQL server: its base URL (no database)."""
    return pg_server.url


@pytest.fixture
def postgres_url(pg_server, request):
    """A fresh, empty database on the session's server, one per test."""
    name = "t_" + "".join(c if c.isalnum() else "_" for c in request.node.name.lower())[-50:]
    return pg_server.create_db(name)


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def store_url(request, tmp_path):
    """A results store URL on each backend: a SQLite file in tmp_path, and a real PostgreSQL."""
    if request.param == "sqlite":
        return str(tmp_path / "perflab.db")
    return request.getfixturevalue("postgres_url")


# ---- real machines' /sys and /proc trees (hwloc's test data; provenance in the README) ----------
# `topology_root(name) -> Root` extracts tests/data/topologies/<name>.tar.bz2 once per session
# (tarfile filter="data") and returns a Root at the tarball's single top directory, e.g.
# topology_root("64amd64-4s2n4ca2co"). PERFLAB_TOPOLOGIES overrides the directory.
TOPOLOGIES = pathlib.Path(os.environ.get("PERFLAB_TOPOLOGIES")
                          or pathlib.Path(__file__).resolve().parent / "data" / "topologies")
TOPOLOGY_NAMES = sorted(p.name[: -len(".tar.bz2")] for p in TOPOLOGIES.glob("*.tar.bz2"))

# Members no topology/metadata reader looks at, skipped to keep extraction fast (40intel64 holds
# 4096 dangling nodeN/memoryM links and a PCI tree: half a minute on a loaded 2-CPU machine).
_TOPOLOGY_SKIP = re.compile(
    r"[^/]+/(sys/devices/system/node/node\d+/memory\d+|sys/devices/system/memory/|"
    r"sys/devices/pci|sys/bus/pci/|sys/class/block/|dev/)"
)


def _topology_filter(member, path):
    if _TOPOLOGY_SKIP.match(member.name):
        return None
    return tarfile.data_filter(member, path)


def _topology_members(tf: tarfile.TarFile):
    """The members to extract where tarfile has no extraction filters (Debian 12's Python 3.11.2;
    they came in 3.11.4): what filter="data" would refuse is refused here too."""
    for m in tf:
        if _TOPOLOGY_SKIP.match(m.name):
            continue
        if m.name.startswith("/") or ".." in m.name.split("/") or not (m.isreg() or m.isdir() or m.issym()):
            raise tarfile.TarError(f"{tf.name}: {m.name} is not a plain file, directory or link below the top")
        if m.issym() and (m.linkname.startswith("/") or os.path.normpath(
                os.path.join(os.path.dirname(m.name), m.linkname)).startswith("..")):
            raise tarfile.TarError(f"{tf.name}: {m.name} links outside the tree ({m.linkname})")
        yield m


@pytest.fixture(scope="session")
def topology_root(tmp_path_factory):
    """name -> perflab.platform.sysfs.Root of that unpacked fixture tree (extracted once)."""
    from perflab.platform.sysfs import Root

    base = tmp_path_factory.mktemp("topologies")
    roots: dict[str, Root] = {}

    def get(name: str) -> Root:
        if name not in roots:
            tarball = TOPOLOGIES / f"{name}.tar.bz2"
            if not tarball.exists():
                pytest.fail(f"topology fixture {tarball} not found")
            dest = base / name
            dest.mkdir()
            with tarfile.open(tarball) as tf:
                if hasattr(tarfile, "data_filter"):
                    tf.extractall(dest, filter=_topology_filter)
                else:
                    tf.extractall(dest, members=_topology_members(tf))
            (top,) = [p for p in dest.iterdir() if p.is_dir()]
            roots[name] = Root(str(top))
        return roots[name]

    return get


class Hold:
    """Holds a command's executions after the first `free` until the test releases them.

    wrap(argv) runs argv through sh: each execution claims the next index with mkdir (atomic, so
    concurrent copies get distinct ones) and leaves its pid there; index `free` and later wait
    for the release file. A kill -9 test waits until `held()`, kills, then releases: the study
    cannot have finished before the kill, however fast or slow the machine (a fixed number of
    short runs could)."""

    def __init__(self, tmp_path: pathlib.Path, free: int) -> None:
        self.claims, self.release_file, self.free = tmp_path / "hold-claims", tmp_path / "hold-release", free
        self.claims.mkdir()

    def script(self) -> str:
        """The sh prefix that claims an index and waits where it must; ends in `exec "$@"`."""
        return (f'i=0; while ! mkdir "{self.claims}/$i" 2>/dev/null; do i=$((i+1)); done; '
                f'echo $$ > "{self.claims}/$i/pid"; '
                # at most ~10 minutes: a failed test that never releases leaves no loop behind
                f'n=0; [ $i -lt {self.free} ] || while [ ! -e "{self.release_file}" ] && [ $n -lt 60000 ]; '
                'do sleep 0.01; n=$((n+1)); done; '
                'exec "$@"')

    def wrap(self, argv: list[str]) -> list[str]:
        return ["sh", "-c", self.script(), "sh", *argv]

    def started(self) -> int:
        return sum(1 for _ in self.claims.iterdir())

    def _held_pids(self) -> list[int]:
        pids = []
        for d in self.claims.iterdir():
            text = (d / "pid").read_text().strip() if (d / "pid").exists() else ""
            if int(d.name) >= self.free and text:
                pids.append(int(text))
        return pids

    def held(self) -> bool:
        return bool(self._held_pids())

    def wait_held(self, proc: subprocess.Popen | None, timeout: float = 120) -> None:
        """Until an execution waits at the hold; fails if the study (proc) ends or stalls first."""
        deadline = time.monotonic() + timeout
        while not self.held():
            assert proc is None or proc.poll() is None, \
                f"the study ended after {self.started()} executions, before the hold"
            assert time.monotonic() < deadline, f"no execution reached the hold in {timeout:g} s"
            time.sleep(0.02)

    def release(self) -> None:
        """Let later executions pass, once every held one still waiting is SIGKILLed: the run in
        flight at the kill never runs its command afterwards (a killed perflab takes its
        copies and its spawn server's command with it, but not at once)."""
        for pid in self._held_pids():
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as fh:
                    ours = str(self.claims).encode() in fh.read()  # not a reused pid
                if ours:
                    os.kill(pid, signal.SIGKILL)
            except (FileNotFoundError, ProcessLookupError):
                pass
        self.release_file.touch()


def _stored_runs(db: pathlib.Path) -> int:
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=1) as conn:
            return conn.execute("select count(*) from measurements").fetchone()[0]
    except sqlite3.Error:
        return 0


# A trigger that holds perflab's insert of stored run n + 1 in a query that never ends (a
# cross join of 10^12 rows): the store cannot pass n runs, so the campaign cannot finish.
_HOLD_TRIGGER = """
CREATE TABLE hold_rows(x);
WITH RECURSIVE r(x) AS (VALUES(1) UNION ALL SELECT x + 1 FROM r WHERE x < 1000)
INSERT INTO hold_rows SELECT x FROM r;
CREATE TRIGGER hold_after_n AFTER INSERT ON measurements
WHEN (SELECT count(*) FROM measurements) > {n}
BEGIN SELECT count(*) FROM hold_rows a, hold_rows b, hold_rows c, hold_rows d; END;
"""


def kill_then_resume(argv: list[str], tmp_path: pathlib.Path, n: int) -> tuple[object, dict, str, dict]:
    """`perflab ARGV` SIGKILLed (its whole process group) with exactly n runs stored, then
    `perflab resume --json`: (the campaign as it was after the kill, its stored runs by
    (label, params, rep) -> id, resume's stdout, resume's JSON result).

    The store is made first and given a trigger that stalls the insert of run n + 1 until the
    kill, so the study stops at n stored runs on any machine; the trigger goes before resume."""
    import json

    from perflab.store import open_store

    db = tmp_path / "k.db"
    open_store(str(db)).close()
    with sqlite3.connect(db) as conn:
        conn.executescript(_HOLD_TRIGGER.format(n=int(n)))
    env = {**os.environ, "PYTHONPATH": str(pathlib.Path(__file__).resolve().parents[1] / "src")}
    proc = subprocess.Popen([sys.executable, "-m", "perflab", *argv, "--db", str(db)], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + 120
    while _stored_runs(db) < n:
        assert proc.poll() is None, f"perflab exited with {_stored_runs(db)} of {n} runs stored"
        assert time.monotonic() < deadline, f"{_stored_runs(db)} of {n} runs stored in 120 s"
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    assert _stored_runs(db) == n
    with sqlite3.connect(db) as conn:
        conn.executescript("DROP TRIGGER hold_after_n; DROP TABLE hold_rows;")
    with open_store(str(db)) as store:
        camp = store.campaigns()[-1]
        before = {(m.label, str(m.params), m.rep): m.id for m in store.measurements(camp.id)}
    out = subprocess.run([sys.executable, "-m", "perflab", "resume", "--db", str(db), "--json",
                          str(tmp_path / "r.json")], env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    return camp, before, out.stdout, json.loads((tmp_path / "r.json").read_text())["result"]


# The files that take longest (each test's wall time on this VM, summed per file), slowest
# first, by their path under tests/. `make test` runs whole files on three workers in the order collected
# (--no-loadscope-reorder): the longest go first and the short ones fill in around them, so no
# worker is left running one long file at the end while the other idles (xdist's own order, most
# tests first, put these few-test files last). A file missing here only runs later; a stale order
# costs time, never a result.
SLOWEST_FILES = (
    "real/test_fleet_farm.py", "real/test_lab.py", "real/test_variants_cli.py", "real/test_fleet.py",
    "unit/test_modes.py", "real/test_profile_callgrind.py", "real/test_profile_window.py",
    "real/test_flame_browser.py", "real/test_concurrent_writers.py", "studies/test_run_verdicts.py",
    "cli/test_bad_input.py", "cli/test_gate.py", "studies/test_variants.py", "cli/test_monitor.py",
    "cli/test_compare_verdicts.py", "unit/test_layout.py", "cli/test_metric_options_cli.py",
    "studies/test_fleet_scale.py", "cli/test_pipe_width.py", "real/test_frontend_cachegrind.py",
    "studies/test_checks.py", "studies/test_run_until_decided.py", "real/test_compare_counted.py",
    "real/test_profile_resume.py", "real/test_profile_attach.py", "studies/test_series.py", "cli/test_series.py",
    "unit/test_gate_rules.py", "studies/test_instances_optimum.py", "studies/test_cores_verdicts.py",
    "real/test_quiet_start.py", "real/test_store_faults.py", "real/test_cachegrind.py", "studies/test_instances.py",
    "real/test_run_until_decided.py", "cli/test_report.py", "unit/test_report_agreement.py",
    "studies/test_fleet_nodes.py", "cli/test_compare_kinds.py", "studies/test_cores.py", "studies/test_gate.py",
    "real/test_footprint_bundle.py", "real/test_owner.py",
)

# The folder sets the marker: every test under tests/<tier>/ is marked <tier>, so `-m real` or
# `-m "not real"` picks a tier across the folders as `pytest tests/unit` picks one by path.
TIERS = ("unit", "studies", "real", "cli", "docs")
TESTS = pathlib.Path(__file__).resolve().parent


@functools.cache
def _under_tests(path: pathlib.Path) -> str:
    try:
        return path.resolve().relative_to(TESTS).as_posix()
    except ValueError:  # a test file given from outside tests/
        return path.name


def pytest_collection_modifyitems(config, items):
    for item in items:
        tier = _under_tests(item.path).split("/")[0]
        if tier in TIERS:
            item.add_marker(getattr(pytest.mark, tier))
    rank = {name: i for i, name in enumerate(SLOWEST_FILES)}
    items.sort(key=lambda item: rank.get(_under_tests(item.path), len(rank)))  # stable: file order kept within


# perflab's default outputs, relative to where it runs: a test that forgets --out/--db, run from
# the checkout as the suite is, writes them there (an empty perflab-out/profiles/1 was found
# there after full runs)
_DEFAULT_OUTPUTS = ("perflab-out", "perflab-lab", "perflab-results", "perflab.db", "perf.data", "report.md",
                    "report.html")


def _default_outputs() -> set[str]:
    return {name for name in _DEFAULT_OUTPUTS if os.path.lexists(TESTS.parent / name)}


@pytest.fixture(autouse=True)
def _no_output_in_the_checkout():
    before = _default_outputs()
    yield
    new = _default_outputs() - before
    if new:
        pytest.fail(f"this test (or one running beside it) wrote {', '.join(sorted(new))} into the checkout: "
                    "give it a path under tmp_path")
