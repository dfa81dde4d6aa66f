
# ---- results store: a real PostgreSQL server for tests (engineer C) -------------------------
import os as _pg_os
import pwd as _pg_pwd
import shutil as _pg_shutil
import socket as _pg_socket
import subprocess as _pg_subprocess
import tempfile as _pg_tempfile

import pytest as _pg_pytest

PG_BIN = _pg_os.environ.get("PERFLAB_PG_BIN", "/usr/lib/postgresql/15/bin")


def _pg_free_port() -> int:
    with _pg_socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@_pg_pytest.fixture(scope="session")
def postgres_server():
    """Start a throw-away PostgreSQL 15 server on 127.0.0.1; yield its base URL (no database).

    initdb refuses to run as root, so the cluster belongs to the `postgres` system user; the data
    and socket directory live in a fresh /tmp dir that user owns. fsync is off: it is scratch.
    """
    if not _pg_os.path.exists(_pg_os.path.join(PG_BIN, "initdb")):
        _pg_pytest.skip(f"PostgreSQL server binaries not found in {PG_BIN} "
                        "(scripts/install-system-packages.sh installs postgresql)")
    try:
        import psycopg  # noqa: F401
    except ImportError:
        _pg_pytest.skip("psycopg 3 not installed: pip install 'perflab[postgres]'")
    prefix: list[str] = []
    if _pg_os.geteuid() == 0:
        try:
            _pg_pwd.getpwnam("postgres")
        except KeyError:
            _pg_subprocess.run(["useradd", "--system", "--no-create-home", "postgres"], check=True)
        prefix = ["runuser", "-u", "postgres", "--"]
    base = _pg_tempfile.mkdtemp(prefix="perflab-pg-")
    if prefix:
        _pg_shutil.chown(base, "postgres")
    data = _pg_os.path.join(base, "data")
    port = _pg_free_port()
    run = lambda *cmd: _pg_subprocess.run(  # noqa: E731
        prefix + list(cmd), check=True, capture_output=True, text=True, timeout=120)
    try:
        run(f"{PG_BIN}/initdb", "-D", data, "-U", "postgres", "--auth=trust", "--no-sync",
            "-E", "UTF8", "--locale=C")
        run(f"{PG_BIN}/pg_ctl", "-D", data, "-l", _pg_os.path.join(base, "log"), "-w", "-t", "60",
            "-o", f"-p {port} -k {base} -c listen_addresses=127.0.0.1 -c fsync=off "
                  "-c full_page_writes=off -c max_connections=50",
            "start")
    except _pg_subprocess.CalledProcessError as exc:
        log = ""
        try:
            log = open(_pg_os.path.join(base, "log")).read()[-2000:]
        except OSError:
            pass
        _pg_pytest.fail(f"could not start PostgreSQL: {exc.stderr}\n{log}")
    try:
        yield f"postgresql://postgres@127.0.0.1:{port}"
    finally:
        _pg_subprocess.run(prefix + [f"{PG_BIN}/pg_ctl", "-D", data, "-m", "immediate", "-w", "stop"],
                           capture_output=True, timeout=60)
        _pg_shutil.rmtree(base, ignore_errors=True)


@_pg_pytest.fixture
def postgres_url(postgres_server, request):
    """A fresh, empty database on the session's server, one per test."""
    import psycopg

    name = "t_" + "".join(c if c.isalnum() else "_" for c in request.node.name.lower())[-50:]
    with psycopg.connect(f"{postgres_server}/postgres", autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}"')
        conn.execute(f'CREATE DATABASE "{name}"')
    return f"{postgres_server}/{name}"


@_pg_pytest.fixture(params=["sqlite", _pg_pytest.param("postgresql", marks=_pg_pytest.mark.postgres)])
def store_url(request, tmp_path):
    """A results store URL on each backend: a SQLite file in tmp_path, and a real PostgreSQL."""
    if request.param == "sqlite":
        return str(tmp_path / "perflab.db")
    return request.getfixturevalue("postgres_url")
# ---- end of results store block ---------------------------------------------------------------


# ---- machine topology trees (engineer B) ------------------------------------------------------
# `topology_root(name) -> Root` extracts ../shared/topologies/<name>.tar.bz2 once per session
# (tarfile filter="data") and returns a Root at the tarball's single top directory; `name` is
# the tarball name without .tar.bz2, e.g. topology_root("64amd64-4s2n4ca2co").
# `TOPOLOGY_NAMES` lists the tarballs present. PERFLAB_TOPOLOGIES overrides the directory.
import pathlib as _topo_pathlib
import re as _pg_re


def _topologies_dir() -> _topo_pathlib.Path:
    env = _pg_os.environ.get("PERFLAB_TOPOLOGIES")
    if env:
        return _topo_pathlib.Path(env)
    here = _topo_pathlib.Path(__file__).resolve().parents[2] / "shared" / "topologies"
    return here if here.is_dir() else _topo_pathlib.Path("/work/shared/topologies")


TOPOLOGY_NAMES = sorted(p.name[: -len(".tar.bz2")] for p in _topologies_dir().glob("*.tar.bz2"))


# Members no topology/metadata reader looks at, skipped to keep extraction fast (40intel64 holds
# 4096 dangling nodeN/memoryM links and a PCI tree: half a minute on a loaded 2-CPU machine).
_TOPOLOGY_SKIP = _pg_re.compile(
    r"[^/]+/(sys/devices/system/node/node\d+/memory\d+|sys/devices/system/memory/|"
    r"sys/devices/pci|sys/bus/pci/|sys/class/block/|dev/)"
)


def _topology_filter(member, path):
    import tarfile

    if _TOPOLOGY_SKIP.match(member.name):
        return None
    return tarfile.data_filter(member, path)


@_pg_pytest.fixture(scope="session")
def topology_root(tmp_path_factory):
    """name -> perflab.platform.sysfs.Root of that unpacked fixture tree (extracted once)."""
    import tarfile

    from perflab.platform.sysfs import Root

    src = _topologies_dir()
    base = tmp_path_factory.mktemp("topologies")
    roots: dict[str, Root] = {}

    def get(name: str) -> Root:
        if name not in roots:
            tarball = src / f"{name}.tar.bz2"
            if not tarball.exists():
                _pg_pytest.skip(f"topology fixture {tarball} not found")
            dest = base / name
            dest.mkdir()
            with tarfile.open(tarball) as tf:
                tf.extractall(dest, filter=_topology_filter)
            (top,) = [p for p in dest.iterdir() if p.is_dir()]
            roots[name] = Root(str(top))
        return roots[name]

    return get
# ---- end of topology block --------------------------------------------------------------------
