"""Piped output fits 100 columns by wrapping and folding, never by cutting; a terminal
keeps rich's layout. Real commands, their stdout read as a file would get it."""

from __future__ import annotations

import json
import os
import shlex
import re
import shutil
import subprocess
import sys

import pytest

from perflab.cli.common import PIPE_WIDTH, make_console

# A cell rich cut short ends in its ellipsis at the cell's edge (run's "min…max" is a separator).
CUT = re.compile(r"…\s*[│┃]|…\s*$", re.M)


def perflab(*args: str, tmp_path, env: dict | None = None) -> str:
    base = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    p = subprocess.run([sys.executable, "-m", "perflab", *args], capture_output=True, text=True,
                       timeout=300, cwd=tmp_path, env={**base, **(env or {})})
    assert p.returncode == 0, p.stderr
    return p.stdout


def assert_fits(text: str) -> None:
    long = [line for line in text.splitlines() if len(line) > PIPE_WIDTH]
    assert not long, f"{len(long)} lines over {PIPE_WIDTH} columns, e.g. {long[0]!r}"
    assert not CUT.search(text), CUT.search(text).group(0)


def column_texts(text: str) -> list[str]:
    """Each table column's cells run together (word wraps and folds undone), table by table."""
    out: list[str] = []
    columns: list[list[str]] = []
    for line in text.splitlines():
        if line[:1] in "┏┌":
            columns = []
        elif line[:1] in "│┃":
            cells = re.split(r"[│┃]", line)[1:-1]
            columns += [[] for _ in range(len(cells) - len(columns))]
            for col, cell in zip(columns, cells):
                col.append(cell.strip())
        elif line[:1] in "└" and columns:
            out += ["".join(c).replace(" ", "") for c in columns]
    return out


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("pipe")
    # Two quoted commands, hyperfine-style (after -- the words would be one command).
    texts = [perflab("run", "--runs", "3", "--db", "p.db", "true", "sleep 0.01", tmp_path=tmp)
             for _ in range(2)]
    return tmp, texts


def test_run_piped_fits_and_keeps_every_cell(two_runs):
    _, texts = two_runs
    for text in texts:
        assert_fits(text)
        # A cell may fold between words; read each column with its folds undone.
        names = next(c for c in column_texts(text) if c.startswith("command"))
        assert "true" in names and "sleep0.01" in names, names


def test_compare_piped_fits_and_keeps_every_number(two_runs):
    tmp, _ = two_runs
    text = perflab("compare", "1", "2", "--db", "p.db", tmp_path=tmp)
    assert_fits(text)
    rows = json.loads(perflab("compare", "1", "2", "--db", "p.db", "--json", "-", tmp_path=tmp))["result"]["rows"]
    assert rows
    cells = column_texts(text)
    for r in rows:
        for number in (f"{r['ratio']:.4f}", f"[{r['ci']['low']:.4f},{r['ci']['high']:.4f}]{100 * r['ci']['level']:.0f}%"):
            assert any(number in c for c in cells), number
    assert "verdict:" in text and "(--min-effect)" in text  # plain lines wrapped, not dropped


def test_cores_and_instances_piped_fit(tmp_path):
    assert_fits(perflab("cores", "--rounds", "2", "--min-rounds", "2", "--db", "c.db", "--", "true",
                        tmp_path=tmp_path))
    assert_fits(perflab("instances", "--n", "1,2", "--reps", "1", "--policy", "none", "--db", "c.db",
                        "--", "true", tmp_path=tmp_path))


def test_lab_piped_fits(tmp_path):
    # The run study alone: the whole --quick lab takes over a minute on a shared 2-CPU VM.
    text = perflab("lab", "--quick", "--studies", "run", "--db", "l.db", "--out", "lab", tmp_path=tmp_path)
    assert_fits(text)
    assert "minihlt" in text


def test_columns_widen_a_pipe_and_a_terminal_keeps_its_width(two_runs):
    tmp, _ = two_runs
    assert_fits(perflab("compare", "1", "2", "--db", "p.db", tmp_path=tmp, env={"COLUMNS": "100"}))
    wide = perflab("compare", "1", "2", "--db", "p.db", tmp_path=tmp, env={"COLUMNS": "160"})
    assert max(len(line) for line in wide.splitlines()) > PIPE_WIDTH
    if shutil.which("script") is None:
        pytest.skip("no script(1) to give the command a terminal")
    p = subprocess.run(["script", "-qec", f"{shlex.quote(sys.executable)} -m perflab compare 1 2 --db p.db", "/dev/null"],
                       capture_output=True, text=True, timeout=120, cwd=tmp,
                       env={**os.environ, "COLUMNS": "160", "TERM": "xterm"})
    assert p.returncode == 0, p.stdout
    plain = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", p.stdout)
    row = next(line for line in plain.splitlines() if "wall time" in line)
    assert "wall time [s]" in row and len(row) > PIPE_WIDTH  # one line per row, as rich lays it out


def test_pipe_console_folds_a_table_without_changing_it():
    from rich.table import Table

    t = Table("name", "value")
    t.add_column("n", no_wrap=True, overflow="ellipsis")
    t.add_row("x" * 150, "1234567890" * 12, "3.14159265358979")
    import io

    console = make_console(file=io.StringIO())
    assert console.width == PIPE_WIDTH or os.environ.get("COLUMNS")
    console.print(t)
    text = console.file.getvalue()
    assert "".join(column_texts(text)[1]) == "value" + "1234567890" * 12
    assert "3.14159265358979" in "".join(column_texts(text)[2])
    assert t.columns[2].no_wrap and t.columns[2].overflow == "ellipsis"  # the caller's table is untouched
