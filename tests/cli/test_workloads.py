"""Workloads run: perflab.toml commands and builds, named workloads' arguments, the CLI (parsing
and resolution without a process: tests/unit/test_workloads.py)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

from perflab.workloads import resolve
from tests.unit.test_workloads import write

C_SOURCE = r"""
#include <stdio.h>
#include <stdlib.h>
int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 1000;
    double s = 0;
    for (long i = 0; i < n; ++i) s += i * 0.5;
    printf("items: %ld\nrate: %.1f items/s\n", n, s > 0 ? 1234.5 : 0.0);
    return 0;
}
"""


def test_toml_workload_with_command_list_and_metrics(tmp_path):
    (tmp_path / "run").mkdir()
    p = write(tmp_path, r"""
        [workload.echoer]
        command = ["echo", "events/s: 42.5"]
        metrics = ['events/s: (?P<events_per_s>[\d.]+)']
        primary_metric = "events_per_s"
        higher_is_better = true
        env = { OMP_NUM_THREADS = "1", N = 3 }
        cwd = "run"
        description = "a test"
    """)
    wl = resolve("echoer", (), config_path=str(p))
    assert wl.argv == ("echo", "events/s: 42.5")
    assert wl.primary_metric == "events_per_s"
    assert wl.env == {"OMP_NUM_THREADS": "1", "N": "3"}
    assert wl.cwd == str((tmp_path / "run").resolve())
    assert wl.source == str(p.resolve())
    from perflab.measure.metrics import extract

    out = subprocess.run(wl.argv, capture_output=True, text=True).stdout
    assert extract(wl.metrics, out, "") == {"events_per_s": 42.5}


def test_toml_build_recipe_goes_through_the_cache(tmp_path):
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "count.c").write_text(C_SOURCE)
    p = write(tmp_path, r"""
        [workload.count]
        command = ["{binary}", "5000"]
        metrics = ['(?m)^items: (?P<items>\d+)$', 'stdout:rate: (?P<rate>[\d.]+)']
        primary_metric = "rate"
        [workload.count.build]
        sources = ["src/count.c"]
        cflags = "-O1 -g"
        language = "c"
    """)
    wl = resolve("count", (), config_path=str(p))
    assert wl.build is not None and wl.build.cflags == ("-O1", "-g")
    assert wl.argv[0].endswith("/count") and wl.argv[1] == "5000"
    out = subprocess.run(wl.argv, capture_output=True, text=True, check=True).stdout
    from perflab.measure.metrics import extract

    assert extract(wl.metrics, out, "") == {"items": 5000.0, "rate": 1234.5}
    # a second resolve does not rebuild
    from perflab.workloads import build_toml_workload, load_config

    assert build_toml_workload(load_config(str(p))["count"]).cached


def perflab(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "perflab", *args], capture_output=True, text=True, cwd=cwd)


def test_cli_list_build_path_and_errors(tmp_path):
    (tmp_path / "count.c").write_text(C_SOURCE)
    write(tmp_path, '[workload.count]\n[workload.count.build]\nsources = ["count.c"]\nlanguage = "c"\n')
    out = perflab("workload", "list", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert "minihlt" in out.stdout and "count" in out.stdout

    first = perflab("workload", "build", "count", "--cflags", "-O0", cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    second = perflab("workload", "build", "count", "--cflags", "-O0", cwd=tmp_path)
    assert "cached:  yes" in second.stdout
    key = [ln for ln in second.stdout.splitlines() if ln.startswith("key:")]
    assert key and key[0] in first.stdout
    path = perflab("workload", "path", "count", "--cflags", "-O0", cwd=tmp_path).stdout.strip()
    assert second.stdout.splitlines()[0] == f"path:    {path}"

    bad = perflab("workload", "path", "nope", cwd=tmp_path)
    assert bad.returncode == 2
    assert bad.stderr.strip().count("\n") == 0
    assert bad.stderr.startswith("perflab: error: unknown workload 'nope'")

    (tmp_path / "perflab.toml").write_text("[workload.x\ncommand = 1\n")
    broken = perflab("workload", "list", cwd=tmp_path)
    assert broken.returncode == 2
    assert broken.stderr.startswith("perflab: error: perflab.toml: ") and "(line 1)" in broken.stderr
    assert "Traceback" not in broken.stderr


def test_named_workload_takes_arguments_after_dashdash(tmp_path):
    (tmp_path / "perflab.toml").write_text(textwrap.dedent("""
        [workload.echoer]
        command = ["printf", "%s\\n"]
        [workload.sh]
        command = "printf '%s|'"
        shell = true
    """))
    cfg = str(tmp_path / "perflab.toml")
    w = resolve("echoer", ("--", "a b", "c;d"), config_path=cfg)
    assert w.argv == ("printf", "%s\n", "a b", "c;d") and w.name == "echoer 'a b' 'c;d'"
    sh = resolve("sh", ("a b", "$(x)"), config_path=cfg)
    out = subprocess.run(["sh", "-c", sh.argv[0]], capture_output=True, text=True).stdout
    assert out == "a b|$(x)|"  # passed through the shell as given, never expanded


def test_cli_named_workload_with_args_runs_them(tmp_path):
    (tmp_path / "perflab.toml").write_text('[workload.echoer]\ncommand = ["sh", "-c", "echo args=$#", "sh"]\n')
    p = subprocess.run([sys.executable, "-m", "perflab", "footprint", "--config", str(tmp_path / "perflab.toml"),
                        "-w", "echoer", "--db", str(tmp_path / "s.db"), "--", "x", "y", "z"],
                       capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    from perflab.store import open_store

    with open_store(str(tmp_path / "s.db")) as store:
        (camp,) = store.campaigns()
        labels = {m.label for m in store.measurements(camp.id)}
    assert labels == {"echoer x y z"}


def test_metric_aggregate_from_toml_with_a_real_process(tmp_path):
    from perflab.measure.executor import RealExecutor

    (tmp_path / "perflab.toml").write_text(textwrap.dedent(r"""
        [workload.enc]
        command = "printf 'fps=  0\rfps= 12\rfps= 44\n' >&2"
        shell = true
        metrics = [{ regex = 'fps=\s*(?P<fps>\d+)', aggregate = "max", stream = "stderr" },
                   { regex = 'fps=\s*(?P<updates>\d+)', aggregate = "count" }]
        primary_metric = "fps"
    """))
    w = resolve("enc", (), config_path=str(tmp_path / "perflab.toml"))
    with RealExecutor() as ex:
        r = ex.run(w.spec())
    assert r.ok and r.metrics == {"fps": 44.0, "updates": 3.0}
