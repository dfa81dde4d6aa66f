"""--primary-metric / --higher-is-better / --lower-is-better in compare, variants and lab, and
metric hygiene in variants and lab: real commands that print a metric, no mocks."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

FPS_C = r"""
#include <stdio.h>
int main(void) {
#ifdef __OPTIMIZE__
    printf("fps=150\n");
#else
    printf("fps=100\n");
#endif
    return 0;
}
"""


def perflab(tmp_path, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    return subprocess.run([sys.executable, "-m", "perflab", *args], capture_output=True, text=True,
                          cwd=tmp_path, timeout=300, env=env)


def one_line_error(p: subprocess.CompletedProcess, *words: str) -> None:
    lines = p.stderr.strip().splitlines()
    assert p.returncode == 2 and len(lines) == 1 and lines[0].startswith("perflab: error:"), p.stderr
    assert all(w in lines[0] for w in words), lines[0]


@pytest.fixture(scope="module")
def fps_campaigns(tmp_path_factory):
    """Campaigns 1 (fps 100) and 2 (fps 150) of `perflab run`, which records no direction for fps."""
    tmp = tmp_path_factory.mktemp("fps")
    for fps in (100, 150):
        p = perflab(tmp, "run", "--db", "f.db", "--runs", "5", "--shell", "--metric", r"fps=(?P<fps>\d+)",
                    "--", f"echo fps={fps}")
        assert p.returncode == 0, p.stderr
    return tmp


def _fps_row(tmp, *flags: str) -> dict:
    p = perflab(tmp, "compare", "1", "2", "--db", "f.db", "--json", "-", *flags)
    assert p.returncode == 0, p.stderr
    result = json.loads(p.stdout)["result"]
    return result, next(r for r in result["rows"] if r["measure"] == "metric:fps")


def test_compare_direction_from_the_command_line(fps_campaigns):
    result, row = _fps_row(fps_campaigns)
    assert row["higher_is_better"] is None and "better" not in row["verdict"]  # no direction recorded
    result, row = _fps_row(fps_campaigns, "--primary-metric", "fps", "--higher-is-better")
    assert result["primary"] == "metric:fps" and row["higher_is_better"] is True
    assert row["verdict"] == "B better"
    result, row = _fps_row(fps_campaigns, "--primary-metric", "fps", "--lower-is-better")
    assert row["higher_is_better"] is False and row["verdict"] == "A better"
    text = perflab(fps_campaigns, "compare", "1", "2", "--db", "f.db", "--primary-metric", "fps").stdout
    assert "B better" in text  # a named metric without a direction is higher-is-better


def test_compare_metric_options_refused_in_one_line(fps_campaigns):
    one_line_error(perflab(fps_campaigns, "compare", "1", "2", "--db", "f.db", "--primary-metric", "nps"),
                   "--primary-metric nps", "their metrics are fps")
    one_line_error(perflab(fps_campaigns, "compare", "1", "2", "--db", "f.db", "--higher-is-better"),
                   "--higher-is-better needs a metric")
    one_line_error(perflab(fps_campaigns, "compare", "--baseline", "main", "2", "--db", "f.db",
                           "--primary-metric", "fps"), "belong to 'perflab compare A B'")


@pytest.mark.parametrize("direction,leader", [("--higher-is-better", "o2"), ("--lower-is-better", None)])
def test_variants_source_takes_the_direction(tmp_path, direction, leader):
    (tmp_path / "fps.c").write_text(FPS_C)
    p = perflab(tmp_path, "variants", "--db", "v.db", "--source", "fps.c", "-V", "o0=-O0", "-V", "o2=-O2",
                "--baseline", "o0", "--rounds", "6", "--warmup", "0", "--metric", r"fps=(?P<fps>\d+)",
                "--metric", r"nps=(?P<nps>\d+)", "--primary-metric", "fps", direction, "--json", "v.json",
                "--", "{exe}")
    assert p.returncode == 0, p.stderr
    result = json.loads((tmp_path / "v.json").read_text())["result"]
    assert result["primary"] == "fps" and result["higher_is_better"] is (direction == "--higher-is-better")
    assert result["fastest"] == leader  # fps 150 against 100 in every round: better only upwards
    assert r"warning: metric regex 'nps=(?P<nps>\d+)' matched in none of 12 runs" in " ".join(p.stdout.split())


def test_variants_minihlt_checks_the_metric_before_building(tmp_path):
    one_line_error(perflab(tmp_path, "variants", "-w", "minihlt", "-V", "o3=-O3", "--primary-metric", "fps"),
                   "--primary-metric fps", "events_per_s")


def test_lab_sets_the_workloads_metric_and_warns_of_a_dead_regex(tmp_path):
    (tmp_path / "perflab.toml").write_text(textwrap.dedent(r"""
        [workload.enc]
        command = ["sh", "-c", "echo fps=181 frames=100"]
        metrics = ['fps=(?P<fps>\d+)', 'frames=(?P<frames>\d+)', 'dropped=(?P<dropped>\d+)']
        primary_metric = "frames"
    """))
    p = perflab(tmp_path, "lab", "-w", "enc", "--quick", "--studies", "run", "--db", "l.db", "--out", "lab",
                "--primary-metric", "fps", "--lower-is-better")
    assert p.returncode == 0, p.stderr
    assert "warning: metric regex 'dropped=(?P<dropped>\\d+)' matched in none of" in " ".join(p.stdout.split())
    from perflab.store import open_store

    with open_store(str(tmp_path / "l.db")) as store:
        run = next(c for c in store.campaigns() if c.study == "run")
        assert (run.config["primary_metric"], run.config["higher_is_better"]) == ("fps", False)


def test_lab_refuses_a_metric_its_workload_lacks(tmp_path):
    one_line_error(perflab(tmp_path, "lab", "--quick", "--db", "l.db", "--out", "lab", "--primary-metric", "fps"),
                   "--primary-metric fps", "events_per_s")
    assert not (tmp_path / "l.db").exists()  # refused before the store was opened
