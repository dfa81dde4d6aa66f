"""End-to-end `perflab variants` runs: seed 003's link-order trap and minihlt builds."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from perflab.cli import main
from perflab.store import open_store


def _perflab(args, tmp_path, capsys):
    with pytest.raises(SystemExit) as exc:
        main(args)
    return exc.value.code, capsys.readouterr()


def test_link_order_demo_end_to_end(tmp_path, capsys, monkeypatch):
    """The misordered line is detected and the libm sin is measurably slower than the archive's."""
    monkeypatch.setenv("PERFLAB_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("COLUMNS", "400")  # rich would wrap the one-line notes at 80 columns
    out = tmp_path / "v.json"
    main(["variants", "--link-order-demo", "--rounds", "5", "--db", str(tmp_path / "v.db"),
          "--json", str(out)])
    err = " ".join(capsys.readouterr().err.split())
    assert "archive-first: built" in err and "libmopt.a, an archive) comes before sinloop.c" in err
    data = json.loads(out.read_text())
    rows = {r["name"]: r for r in data["variants"]}
    bad = rows["archive-first"]
    assert data["baseline"] == "objects-first"
    assert any("link order" in n for n in bad["notes"])
    # glibc's sin is slower than the archive's polynomial (about 1.5x here); assert the direction
    assert bad["time_ratio"][0] > 1.0, bad
    st = open_store(str(tmp_path / "v.db"))
    assert len(st.measurements(data["campaign_id"])) == 10
    # a rerun measures without rebuilding
    main(["variants", "--link-order-demo", "--rounds", "2", "--warmup", "0", "--db", str(tmp_path / "v.db")])
    err = " ".join(capsys.readouterr().err.split())
    assert "archive-first: cached" in err and "objects-first: cached" in err


def test_bad_matrix_is_one_line_exit_2(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "perflab", "variants", "--source", __file__,
                           "--matrix", "abi=m128", "--db", str(tmp_path / "x.db")],
                          capture_output=True, text=True)
    assert proc.returncode == 2
    assert proc.stderr.startswith("perflab: error: unknown value 'm128' for matrix axis 'abi'")
    assert "Traceback" not in proc.stderr


@pytest.fixture(scope="module")
def shared_cache(tmp_path_factory):
    return tmp_path_factory.mktemp("minihlt-variants-cache")


def test_minihlt_abi_matrix_end_to_end(tmp_path, capsys, monkeypatch, shared_cache):
    """`perflab variants --workload minihlt --matrix abi=m64,m32,mx32`: m32 needs less memory,
    time gets a verdict, x32 is skipped in one line because this kernel refuses it."""
    monkeypatch.setenv("PERFLAB_CACHE", str(shared_cache))
    monkeypatch.setenv("COLUMNS", "400")
    out = tmp_path / "abi.json"
    main(["variants", "--workload", "minihlt", "--matrix", "abi=m64,m32,mx32", "--events", "8",
          "--static-mb", "40", "--rounds", "4", "--warmup", "0", "--db", str(tmp_path / "v.db"),
          "--json", str(out)])
    err = " ".join(capsys.readouterr().err.split())
    assert "mx32: skipped: cannot run -mx32: exec format error: x32 is not supported by this kernel" in err
    data = json.loads(out.read_text())
    rows = {r["name"]: r for r in data["variants"]}
    assert data["baseline"] == "m64" and data["skipped"] == ["mx32"]
    m32 = rows["m32"]
    ratio = m32["rss_ratio"][0]
    print(f"m32/m64 max RSS ratio {ratio:.3f}, time ratio {m32['time_ratio'][0]:.3f}")
    assert ratio < 0.9  # pointer-rich static data: 4-byte pointers need clearly less memory
    assert m32["time_significant"] in (True, False) and "elapsed" in m32["verdict"]
    assert m32["checksum_ok"] is True  # SSE maths on -m32: same physics output as -m64
    assert m32["text"] > 0 and m32["bss"] is not None


def test_minihlt_pgo_variant_gets_a_verdict(tmp_path, capsys, monkeypatch, shared_cache):
    monkeypatch.setenv("PERFLAB_CACHE", str(shared_cache))
    out = tmp_path / "pgo.json"
    main(["variants", "--workload", "minihlt", "--variant", "pgo=-O2 pgo",
          "--events", "6", "--static-mb", "20", "--rounds", "3", "--warmup", "0",
          "--db", str(tmp_path / "v.db"), "--json", str(out)])
    data = json.loads(out.read_text())
    rows = {r["name"]: r for r in data["variants"]}
    assert data["baseline"] == "base" and rows["base"]["status"] == "measured"
    for name in ("pgo",):
        r = rows[name]
        assert r["status"] == "measured" and r["time_significant"] in (True, False)
        assert r["checksum_ok"] is True
    assert not [n for n in rows["pgo"]["notes"] if "did not apply" in n], rows["pgo"]["notes"]
