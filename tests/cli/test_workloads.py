"""Workload names: built-ins, perflab.toml parsing and its errors, `-- CMD` resolution, the CLI."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from perflab.errors import PerflabError
from perflab.workloads import list_workloads, load_config, resolve

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


def write(tmp_path, toml: str, name="perflab.toml"):
    p = tmp_path / name
    p.write_text(textwrap.dedent(toml).lstrip())
    return p


def error_of(tmp_path, toml: str, name="x") -> str:
    p = write(tmp_path, toml)
    with pytest.raises(PerflabError) as exc:
        resolve(name, (), config_path=str(p))
    return str(exc.value)


def test_builtin_names_listed_without_building(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # no perflab.toml here
    names = [w.name for w in list_workloads()]
    assert names[:2] == ["minihlt", "minihlt-quick"]
    assert all(w.source == "builtin" for w in list_workloads())


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


def test_toml_string_command_is_split_like_a_shell(tmp_path):
    p = write(tmp_path, """
        [workload.s]
        command = "printf '%s' 'a b'"
    """)
    assert resolve("s", (), config_path=str(p)).argv == ("printf", "%s", "a b")


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


def test_toml_shadows_builtin_and_is_listed(tmp_path, monkeypatch):
    write(tmp_path, """
        [workload.minihlt]
        command = ["true"]
        [workload.other]
        command = ["true"]
        description = "mine"
    """)
    monkeypatch.chdir(tmp_path)  # ./perflab.toml is read by default
    assert resolve("minihlt", ()).argv == ("true",)
    listed = {w.name: w for w in list_workloads()}
    assert listed["other"].description == "mine"
    assert listed["minihlt"].source.endswith("perflab.toml")


@pytest.mark.parametrize(
    "toml, fragment, line",
    [
        ("[workload.x]\ncommand = [\"true\"\n", "perflab.toml: ", None),  # syntax: line from tomllib
        ("[workload.x]\ncommand = [\"true\"]\nmetric = ['a']\n", "unknown key 'metric'", 3),
        ("[workload.x]\ncommand = [\"true\"]\nmetrics = ['(?P<a>[']\n", "does not compile", 3),
        ("[workload.x]\ncommand = [\"true\"]\nmetrics = ['rate: ([0-9]+)']\n", "has no named group", 3),
        ("[workload.x]\ncommand = [\"true\"]\nmetrics = ['(?P<r>\\d+)']\n\nprimary_metric = \"q\"\n",
         "primary_metric 'q' is not a named group", 5),
        ("[workload.x]\ncommand = 42\n", "command must be a list of strings", 2),
        ("# c\n[workload.x]\ndescription = \"no command\"\n", "has no command", 2),
        ("[workload.x]\ncommand = [\"{binary}\"]\n", "no [workload.x.build]", 2),
        ("[workload.x]\ncommand = [\"true\"]\nhigher_is_better = \"yes\"\n", "true or false", 3),
        ("[workload.x]\n[workload.x.build]\nsources = [\"missing.c\"]\n", "'missing.c' not found", 3),
        ("[workload.x]\n[workload.x.build]\nsources = [\"a.c\"]\nopt = 1\n", "unknown build key 'opt'", 4),
        ("[workload.x]\ncwd = \"nowhere\"\ncommand = [\"true\"]\n", "cwd 'nowhere' is not a directory", 2),
    ],
)
def test_malformed_toml_gives_one_line_with_line_number(tmp_path, toml, fragment, line):
    (tmp_path / "a.c").write_text("int main(){return 0;}\n")
    msg = error_of(tmp_path, toml)
    assert msg.startswith("perflab.toml: ")
    assert fragment in msg
    assert "\n" not in msg
    if line is not None:
        assert msg.endswith(f"(line {line})")
    else:
        assert msg.endswith("(line 2)") or msg.endswith("(line 3)")


def test_unknown_workload_lists_known_names(tmp_path):
    p = write(tmp_path, '[workload.mine]\ncommand = ["true"]\n')
    with pytest.raises(PerflabError, match=r"unknown workload 'nope': known workloads are minihlt, minihlt-quick, mine"):
        resolve("nope", (), config_path=str(p))


def test_missing_config_file(tmp_path):
    with pytest.raises(PerflabError, match="not found: check the --config path"):
        load_config(str(tmp_path / "absent.toml"))


def test_command_resolution(tmp_path):
    (tmp_path / "plain").write_text("echo hi\n")
    wl = resolve(None, ("--", "true", "x"))
    assert wl.argv == ("true", "x") and wl.source == "command" and not wl.shell
    with pytest.raises(PerflabError, match=r"command 'no-such-prog-xyz' not found"):
        resolve(None, ("no-such-prog-xyz", "a"))
    with pytest.raises(PerflabError, match=r"command './nope' not found"):
        resolve(None, ("./nope",))
    with pytest.raises(PerflabError, match="is not executable"):
        resolve(None, (str(tmp_path / "plain"),))
    sh = resolve(None, ("echo a | wc -c",), shell=True)
    assert sh.shell and sh.argv == ("echo a | wc -c",)
    with pytest.raises(PerflabError, match="nothing to run"):
        resolve(None, ())


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


def test_metric_aggregates_and_carriage_returns():
    from perflab.measure.metrics import compile_patterns, extract

    out = "frame=1 fps=  0 q=1\rframe=2 fps= 40 q=1\rframe=3 fps= 44 q=1\nsummary\n"
    pats = compile_patterns(["fps=\\s*(?P<fps>[\\d.]+)"])
    assert extract(pats, out, "") == {"fps": 44.0}  # last, with \r as a line end
    for agg, want in (("last", 44.0), ("first", 0.0), ("max", 44.0), ("min", 0.0), ("sum", 84.0),
                      ("count", 3.0)):
        # Either order of the prefixes, and an explicit 'last:' too, is consumed, never left in the regex.
        for text in (f"stdout:{agg}:fps=\\s*(?P<fps>[\\d.]+)", f"{agg}:stdout:fps=\\s*(?P<fps>[\\d.]+)"):
            pats = compile_patterns([text])
            assert pats[0].aggregate == agg and pats[0].stream == "stdout", text
            assert pats[0].regex.startswith("fps="), text
            assert extract(pats, out, "") == {"fps": want}, text


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


@pytest.mark.parametrize("metric, fragment", [
    ('{ regex = "x" }', "no named group"),
    ('{ regex = "(?P<a>1)", aggregate = "median" }', "aggregate 'median' is unknown"),
    ('{ regex = "(?P<a>1)", colour = "red" }', "unknown key colour"),
    ('{ aggregate = "max" }', "needs regex"),
])
def test_bad_metric_tables(tmp_path, metric, fragment):
    (tmp_path / "perflab.toml").write_text(f'[workload.w]\ncommand = ["true"]\nmetrics = [{metric}]\n')
    with pytest.raises(PerflabError) as err:
        resolve("w", (), config_path=str(tmp_path / "perflab.toml"))
    assert fragment in str(err.value) and "\n" not in str(err.value)
