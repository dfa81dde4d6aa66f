"""Workload names without a process: built-ins, perflab.toml parsing and its errors, `-- CMD`
resolution, metric aggregates (the CLI and workloads run: tests/cli/test_workloads.py)."""

from __future__ import annotations

import textwrap

import pytest

from perflab.errors import PerflabError
from perflab.workloads import list_workloads, load_config, resolve


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


def test_toml_string_command_is_split_like_a_shell(tmp_path):
    p = write(tmp_path, """
        [workload.s]
        command = "printf '%s' 'a b'"
    """)
    assert resolve("s", (), config_path=str(p)).argv == ("printf", "%s", "a b")


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
