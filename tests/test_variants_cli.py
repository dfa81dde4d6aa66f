"""End-to-end `perflab variants` runs: seed 003's link-order trap and minihlt builds."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

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
