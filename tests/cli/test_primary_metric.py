"""The primary metric: perflab.toml's primary_metric / higher_is_better / unit and the shared
--primary-metric / --higher-is-better / --lower-is-better options that override them."""

from __future__ import annotations

import textwrap

import click
import pytest
from click.testing import CliRunner

from perflab.cli.common import resolve_target, target_options
from perflab.errors import PerflabError
from perflab.workloads import resolve

TOML = r"""
[workload.enc]
command = ["echo", "fps= 181.5 frames=100 size=3.2"]
metrics = ['fps=\s*(?P<fps>[\d.]+)', 'size=(?P<size>[\d.]+)']
primary_metric = "fps"
higher_is_better = true
unit = "frames/s"
"""


@pytest.fixture
def config(tmp_path):
    p = tmp_path / "perflab.toml"
    p.write_text(textwrap.dedent(TOML).lstrip())
    return str(p)


@click.command()
@target_options
def show(workload_name, command_args, shell, config_path, metric):
    wl = resolve_target(workload_name, command_args, shell, config_path, metric=metric)
    click.echo(f"{wl.primary_metric} {wl.higher_is_better} {wl.unit}")


def invoke(*args):
    return CliRunner().invoke(show, list(args), standalone_mode=False, catch_exceptions=True)


def test_toml_unit_is_read(config):
    wl = resolve("enc", (), config_path=config)
    assert (wl.primary_metric, wl.higher_is_better, wl.unit) == ("fps", True, "frames/s")
    assert wl.metric_names() == ("fps", "size")


def test_toml_unit_without_primary_metric_is_refused(tmp_path):
    p = tmp_path / "perflab.toml"
    p.write_text('[workload.x]\ncommand = "true"\nunit = "s"\n')
    with pytest.raises(PerflabError, match="unit belongs to primary_metric"):
        resolve("x", (), config_path=str(p))


def test_options_override_the_workload(config):
    assert invoke("-w", "enc", "--config", config).output == "fps True frames/s\n"
    # another metric: its unit is no longer the declared one
    out = invoke("-w", "enc", "--config", config, "--primary-metric", "size", "--lower-is-better")
    assert out.output == "size False None\n"
    out = invoke("-w", "enc", "--config", config, "--lower-is-better")
    assert out.output == "fps False frames/s\n"


def test_unknown_primary_metric_is_one_line(config):
    res = invoke("-w", "enc", "--config", config, "--primary-metric", "nps")
    assert isinstance(res.exception, PerflabError)
    assert "no metric of 'enc' is named nps (its metrics are fps, size)" in str(res.exception)


def test_direction_without_any_metric_is_refused():
    res = invoke("--higher-is-better", "--", "true")
    assert isinstance(res.exception, PerflabError)
    assert "needs a metric" in str(res.exception)


def test_bad_metric_name_is_a_usage_error():
    res = invoke("--primary-metric", "a b", "--", "true")
    assert isinstance(res.exception, click.BadParameter)


def test_real_cli_refuses_unknown_primary_metric(config, tmp_path):
    import subprocess
    import sys

    p = subprocess.run([sys.executable, "-m", "perflab", "footprint", "--config", config, "-w", "enc",
                        "--primary-metric", "nps"], capture_output=True, text=True, cwd=tmp_path)
    assert p.returncode == 2, p.stderr
    assert p.stderr.count("\n") == 1 and "--primary-metric nps" in p.stderr
