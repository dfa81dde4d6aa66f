"""The codebase's shape, enforced: imports run one way, no package cycles, files stay small.

Direction (a package may import only packages of a lower rank, or itself):
    __main__ -> cli -> report -> checks -> studies -> fleet -> workloads -> measure, store -> kernels
        -> stats, platform
        -> model, errors -> startup (the lazy-name loader, which imports nothing of perflab's)
"""

from __future__ import annotations

import ast
import functools
import inspect
import tomllib
from pathlib import Path

from tests.conftest import TIERS

SRC = Path(__file__).resolve().parents[2] / "src" / "perflab"

RANK = {
    "startup": -1, "__init__": 0, "model": 0, "errors": 0,
    "stats": 1, "platform": 1,
    "kernels": 2,
    "measure": 3, "store": 3,
    "workloads": 4,
    "fleet": 4.5,
    "studies": 5,
    "checks": 6,
    "report": 7,
    "cli": 8, "__main__": 9,
}
# A smoke alarm, not a shape: a file is split where it holds two ideas (STYLE), never to get under
# a number (a 400-line cap produced squeezed splits); past 600 lines, hyperfine's largest, a
# file almost always holds two.
MAX_LINES = 600
# Heavy third-party libraries may be imported inside functions (start-up time); perflab's own
# modules may not, except where the CLI loads a subcommand or a study by name.
LAZY_OK = {"numpy", "scipy", "matplotlib", "sqlalchemy", "rich", "jinja2", "psycopg", "tomllib",
           "hypothesis", "importlib"}


def _package(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


@functools.cache
def _modules() -> tuple[tuple[str, Path, ast.Module], ...]:
    # Parsed once for all the checks below (each walks every module; parsing ~300 files each time
    # cost about 0.6 s a check).
    out = []
    for path in sorted(SRC.rglob("*.py")):
        rel = path.relative_to(SRC.parent).with_suffix("")
        name = ".".join(rel.parts).removesuffix(".__init__")
        out.append((name, path, ast.parse(path.read_text(), str(path))))
    return tuple(out)


def _perflab_imports(tree: ast.AST):
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module == "perflab":
                for alias in node.names:
                    yield node, f"perflab.{alias.name}"
            elif node.module.startswith("perflab."):
                yield node, node.module
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("perflab."):
                    yield node, alias.name


def test_imports_run_one_way():
    wrong = []
    for name, path, tree in _modules():
        src = _package(name)
        for node, target in _perflab_imports(tree):
            dst = _package(target)
            if dst == src or dst == "__version__":
                continue
            if dst not in RANK or src not in RANK or RANK[dst] >= RANK[src]:
                wrong.append(f"{path.relative_to(SRC)}:{node.lineno}: {src} imports {dst}")
    assert not wrong, "imports against the direction:\n" + "\n".join(wrong)


def test_no_package_cycles():
    edges: dict[str, set[str]] = {}
    for name, _, tree in _modules():
        for _, target in _perflab_imports(tree):
            if _package(target) != _package(name):
                edges.setdefault(_package(name), set()).add(_package(target))
    _assert_acyclic(edges, "package cycle")


def _assert_acyclic(edges: dict[str, set[str]], what: str) -> None:
    """Depth-first search; the first cycle found fails the test, named node by node."""
    seen: dict[str, int] = {}

    def visit(node: str, stack: list[str]) -> None:
        seen[node] = 1
        for nxt in sorted(edges.get(node, ())):
            assert seen.get(nxt) != 1, f"{what}: " + " -> ".join(stack + [node, nxt])
            if nxt not in seen:
                visit(nxt, stack + [node])
        seen[node] = 2

    for node in sorted(edges):
        if node not in seen:
            visit(node, [])


def test_no_file_over_600_lines():
    big = [f"{p.relative_to(SRC)}: {n}" for _, p, _ in _modules()
           if (n := len(p.read_text().splitlines())) > MAX_LINES]
    assert not big, f"files over {MAX_LINES} lines (split where they hold two ideas):\n" + "\n".join(big)


def test_perflab_imports_at_module_top():
    hidden = []
    for name, path, tree in _modules():
        if name.startswith("perflab.cli"):
            continue  # the CLI loads subcommands and their studies on demand (perflab --help speed)
        for func in ast.walk(tree):
            if not isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for node, target in _perflab_imports(func):
                if target != "perflab.__version__" and not target.startswith("perflab.__"):
                    hidden.append(f"{path.relative_to(SRC)}:{node.lineno}: {target}")
    assert not hidden, "perflab imports hidden in functions:\n" + "\n".join(hidden)


def _module_edges(package: str) -> dict[str, set[str]]:
    """Imports between the modules of one package (type-checking imports count too)."""
    mods = {name for name, _, _ in _modules() if _package(name) == package}
    edges: dict[str, set[str]] = {}
    for name, _, tree in _modules():
        if name not in mods:
            continue
        for node in ast.walk(tree):
            targets = []
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                targets = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
            elif isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            edges.setdefault(name, set()).update(
                t for t in targets if t in mods and t != name and t != f"perflab.{package}")
    return edges


def test_no_module_cycles_in_measure():
    # The start barrier once imported the real executor that imports it (for a type only).
    edges = _module_edges("measure")
    assert "perflab.measure.barrier" in edges and "perflab.measure.real" in edges
    seen: dict[str, int] = {}
    cycles: list[str] = []

    def visit(node: str, stack: list[str]) -> None:
        seen[node] = 1
        for nxt in sorted(edges.get(node, ())):
            if seen.get(nxt) == 1:
                cycles.append(" -> ".join(stack[stack.index(nxt):] + [node, nxt])
                              if nxt in stack else f"{node} -> {nxt}")
            elif nxt not in seen:
                visit(nxt, stack + [node])
        seen[node] = 2

    for node in sorted(edges):
        if node not in seen:
            visit(node, [])
    assert not cycles, "module cycles in measure/:\n" + "\n".join(cycles)


STUDIES = SRC / "studies"
SHARED_STUDY_MODULES = {"__init__.py", "base.py", "session.py", "instrument.py", "monitor.py"}


def _study_package(module: str) -> str | None:
    parts = module.split(".")
    return parts[2] if len(parts) > 3 and parts[1] == "studies" else None


def test_studies_holds_one_package_per_study_and_the_shared_modules():
    files = {p.name for p in STUDIES.iterdir() if p.is_file() and p.suffix == ".py"}
    assert files == SHARED_STUDY_MODULES, f"studies/ should hold packages and {SHARED_STUDY_MODULES}: {files}"
    for pkg in (p for p in STUDIES.iterdir() if p.is_dir() and p.name != "__pycache__"):
        assert (pkg / "__init__.py").exists() and (pkg / "study.py").exists(), pkg.name


def test_study_packages_import_each_other_one_way():
    # e.g. gate/ uses compare/ and never the reverse: the judging both use lives in stats/
    edges: dict[str, set[str]] = {}
    for name, _, tree in _modules():
        src = _study_package(name)
        for _, target in _perflab_imports(tree):
            dst = _study_package(target)
            if src and dst and src != dst:
                edges.setdefault(src, set()).add(dst)
    _assert_acyclic(edges, "study package cycle")


def test_renderers_take_what_they_print_from_the_study_not_the_instrument():
    reach = [f"{path.relative_to(SRC)}:{node.lineno}: {target}" for name, path, tree in _modules()
             if name.startswith("perflab.report") for node, target in _perflab_imports(tree)
             if _package(target) == "measure"]
    assert not reach, "report/ reaching down to measure/:\n" + "\n".join(reach)


# common.py refolds any rich table for a pipe's width (the console's plumbing), building none.
TABLES_OUTSIDE_REPORT_OK = {"cli/common.py"}


def _output_calls(tree: ast.AST):
    """(line, what) for every rich or report table, Markdown table or print a module holds (a
    progress bar is no table: cli/run.py and cli/lab.py show one while they measure)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and (
                node.module == "rich.table" or node.module == "perflab.report.model"
                or (node.module == "perflab.report.render" and any(a.name == "table_to_markdown" for a in node.names))):
            yield node.lineno, f"from {node.module} import {', '.join(a.name for a in node.names)}"
        elif isinstance(node, ast.Call):
            f = node.func
            name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""
            owner = f.value.id if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) else ""
            if name == "print" and (owner in ("", "console") or owner.endswith("console")):
                yield node.lineno, f"{owner + '.' if owner else ''}print(...)"
            elif (owner, name) == ("click", "echo"):
                yield node.lineno, "click.echo(...)"


def test_no_study_or_cli_module_builds_a_study_table():
    """A study's table, lines and Markdown are rendered in report/ from its typed result: no study
    prints at all, and no cli module builds a table (the sentence, the table and the JSON come
    from one value)."""
    found = []
    for name, path, tree in _modules():
        rel = str(path.relative_to(SRC))
        if name.startswith("perflab.studies"):
            found += [f"{rel}:{line}: {what}" for line, what in _output_calls(tree)]
        elif name.startswith("perflab.cli") and rel not in TABLES_OUTSIDE_REPORT_OK:
            found += [f"{rel}:{line}: {what}" for line, what in _output_calls(tree)
                      if what.startswith("from ")]
    assert not found, "output built outside report/:\n" + "\n".join(found)


def test_the_output_check_sees_a_table_built_in_a_cli_module():
    """The check above is no grep that cannot fail: a cli module building compare's table is caught."""
    tree = ast.parse("from rich.table import Table as RTable\nfrom perflab.report.model import Table\n"
                     "def f(console):\n    console.print('x')\n    click.echo('y')\n")
    assert sorted(w for _, w in _output_calls(tree)) == [
        "click.echo(...)", "console.print(...)", "from perflab.report.model import Table",
        "from rich.table import Table"]


# What a study that measures uses to start processes: a reading study names none of it.
RUNNERS = {"perflab.studies.session", "perflab.measure.executor", "perflab.measure.real",
           "perflab.measure.mock", "perflab.measure.interface", "perflab.measure.spawn",
           "perflab.measure.server", "perflab.measure.capture"}


def _measuring_uses(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, what) for each way a module could measure: importing a runner or a Session, a name
    from measure/ that is not a constant (UPPER_CASE), a measure/ module used for more than its
    constants, or a parameter named executor or session."""
    found: list[tuple[int, str]] = []
    modules: set[str] = set()  # local names bound to measure/ modules
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module in RUNNERS:
                found.append((node.lineno, f"from {node.module} import ..."))
            elif node.module == "perflab.measure":
                modules.update(a.asname or a.name for a in node.names)
                found += [(node.lineno, f"from perflab.measure import {a.name}") for a in node.names
                          if f"perflab.measure.{a.name}" in RUNNERS]
            elif node.module.startswith("perflab.measure."):
                found += [(node.lineno, f"from {node.module} import {a.name}") for a in node.names
                          if not a.name.isupper()]
        elif isinstance(node, ast.Import):
            found += [(node.lineno, f"import {a.name}") for a in node.names
                      if a.name in RUNNERS or a.name.startswith("perflab.measure")]
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            found += [(node.lineno, f"{node.name}({a.arg}=...)") for a in node.args.args + node.args.kwonlyargs
                      if a.arg in ("executor", "session")]
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in modules \
                and not node.attr.isupper():
            found.append((node.lineno, f"{node.value.id}.{node.attr}"))
    return found


def test_reading_studies_and_the_report_never_measure():
    """compare, gate and cost (studies.READING) and report/ read stored campaigns: none names an
    executor, a Session or a runner of measure/ (a constant of it, like cachegrind.NAME, is a name)."""
    import importlib

    from perflab.studies import READING

    packages = {f"perflab.studies.{name}" for name in READING} | {"perflab.report"}
    found = [f"{path.relative_to(SRC)}:{line}: {what}" for name, path, tree in _modules()
             if any(name == p or name.startswith(p + ".") for p in packages) for line, what in _measuring_uses(tree)]
    assert not found, "a reading study or the report reaching for a way to measure:\n" + "\n".join(found)
    for name, module in READING.items():
        mod = importlib.import_module(module)
        params = list(inspect.signature(mod.read).parameters)
        assert mod.NAME == name and params[:2] == ["config", "store"] and isinstance(mod.Config, type), name


def test_the_reading_check_sees_a_study_that_measures():
    tree = ast.parse("from perflab.measure import cachegrind, real\nfrom perflab.measure.capture import run_captured\n"
                     "from perflab.measure.cachegrind import NAME\nfrom perflab.studies.session import Session\n"
                     "def read(config, store, executor=None):\n    cachegrind.run(x)\n    return cachegrind.NAME\n")
    assert sorted(w for _, w in _measuring_uses(tree)) == [
        "cachegrind.run", "from perflab.measure import real", "from perflab.measure.capture import ...",
        "from perflab.studies.session import ...", "read(executor=...)"]


def test_measuring_studies_have_the_shape_and_resume():
    """Every measuring study (studies.STUDIES, which `perflab resume` re-plans) has NAME, a Config
    that reads its stored form back, a plan, an execute through the Session and an analyse."""
    import importlib

    from perflab.studies import STUDIES

    for name, module in STUDIES.items():
        mod = importlib.import_module(module)
        assert mod.NAME == name and callable(getattr(mod.Config, "from_dict", None)), name
        assert list(inspect.signature(mod.execute).parameters)[:3] == ["config", "session", "machine"], name
        assert callable(getattr(mod, "plan", None)), name
        # the lab runs other studies, each in a child campaign: their analyses are its findings
        assert name == "lab" or callable(getattr(mod, "analyse", None)), name


def test_every_test_file_sits_in_its_tier():
    """tests/ holds the shared helpers at its top and the tests one tier down: the folder sets the
    marker (tests/conftest.py), so a test file elsewhere would run under no tier's marker."""
    tests = Path(__file__).resolve().parents[1]
    top = sorted(p.name for p in tests.glob("test_*.py"))
    assert not top, f"test files at the top of tests/ (move each into tests/{'|'.join(TIERS)}): {top}"
    stray = sorted(str(p.relative_to(tests)) for p in tests.rglob("test_*.py")
                   if len(p.relative_to(tests).parts) != 2 or p.relative_to(tests).parts[0] not in TIERS)
    assert not stray, f"test files outside the tiers' folders: {stray}"
    # a package each, so two tiers may hold files of one name (tests/studies/test_cores.py and
    # tests/real/test_cores.py import as two modules)
    assert [t for t in TIERS if not (tests / t / "__init__.py").exists()] == []


def test_each_tier_is_a_declared_marker():
    with open(SRC.parents[1] / "pyproject.toml", "rb") as fh:
        declared = {m.split(":")[0] for m in tomllib.load(fh)["tool"]["pytest"]["ini_options"]["markers"]}
    assert set(TIERS) <= declared, set(TIERS) - declared


def _affinity_reads(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, what) for each read of a process's affinity mask: ``os.sched_getaffinity`` called or
    named, or imported from os."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr == "sched_getaffinity":
            found.append((node.lineno, "os.sched_getaffinity"))
        elif isinstance(node, ast.ImportFrom) and node.module == "os":
            found += [(node.lineno, f"from os import {a.name}") for a in node.names if a.name == "sched_getaffinity"]
    return found


def test_the_usable_cpus_are_asked_of_platform_only():
    """Which CPUs this process may use is one rule (platform.affinity.usable_cpus, root-aware, so a
    fixture tree stands in for the machine): no module outside platform/ reads the mask itself.
    (platform/cpuset.py reads other tasks' masks: a different question, asked there.)"""
    found = [f"{path.relative_to(SRC)}:{line}: {what}" for name, path, tree in _modules()
             if not name.startswith("perflab.platform") for line, what in _affinity_reads(tree)]
    assert not found, "an affinity read outside platform/ (call platform.affinity.usable_cpus):\n" + "\n".join(found)


def test_the_affinity_check_sees_a_direct_read():
    tree = ast.parse("import os\nfrom os import sched_getaffinity\nn = len(os.sched_getaffinity(0))\n")
    assert sorted(w for _, w in _affinity_reads(tree)) == ["from os import sched_getaffinity", "os.sched_getaffinity"]


TESTS = SRC.parents[1] / "tests"
# Names that start perflab or another process: a unit or studies test uses none of them.
PROCESS_MODULES = {"subprocess", "multiprocessing", "tests.forkcli"}
PROCESS_CALLS = {"system", "popen", "fork", "posix_spawn", "posix_spawnp", "execv", "execvp", "spawnv"}


def _process_uses(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, what) for each way a test file could start a process: subprocess or forkcli imported,
    perflab's own entry point (perflab.cli's main or cli, perflab.__main__, tests.helpers' PERFLAB
    and perflab), the name PERFLAB, or os.system/fork/exec/spawn."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, f"import {a.name}") for a in node.names
                      if a.name in PROCESS_MODULES or a.name == "perflab.__main__"]
        elif isinstance(node, ast.ImportFrom) and node.module:
            if node.module in PROCESS_MODULES or node.module == "perflab.__main__":
                found.append((node.lineno, f"from {node.module} import ..."))
            elif node.module == "tests" and any(a.name == "forkcli" for a in node.names):
                found.append((node.lineno, "from tests import forkcli"))
            elif node.module == "perflab.cli":
                found += [(node.lineno, f"from perflab.cli import {a.name}") for a in node.names
                          if a.name in ("main", "cli")]
            elif node.module == "tests.helpers":
                found += [(node.lineno, f"from tests.helpers import {a.name}") for a in node.names
                          if a.name in ("PERFLAB", "perflab")]
        elif isinstance(node, ast.Name) and node.id == "PERFLAB":
            found.append((node.lineno, "PERFLAB"))
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "os" \
                and node.attr in PROCESS_CALLS:
            found.append((node.lineno, f"os.{node.attr}"))
    return found


def test_unit_and_studies_tests_start_no_process():
    """tests/unit and tests/studies run in-process (pure functions, fixture trees, the mock
    executor): a test that starts perflab or any other process belongs in tests/real or tests/cli."""
    found = [f"{p.relative_to(TESTS)}:{line}: {what}" for tier in ("unit", "studies")
             for p in sorted((TESTS / tier).glob("*.py")) for line, what in _process_uses(ast.parse(p.read_text()))]
    assert not found, "a process started in tests/unit or tests/studies (move the test to real/ or cli/):\n" \
        + "\n".join(found)


def test_the_process_check_sees_a_process():
    tree = ast.parse("import subprocess\nfrom tests.forkcli import run\nfrom perflab.cli import main, options\n"
                     "from tests.helpers import PERFLAB, XSD\nimport os\nos.system(PERFLAB)\nos.environ\n")
    assert sorted(w for _, w in _process_uses(tree)) == [
        "PERFLAB", "from perflab.cli import main", "from tests.forkcli import ...", "from tests.helpers import PERFLAB",
        "import subprocess", "os.system"]


def _tier_imports(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, tier) for each import from a tier's folder (tests.<tier>...)."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        names = ([node.module] if isinstance(node, ast.ImportFrom) and node.module and node.level == 0
                 else [a.name for a in node.names] if isinstance(node, ast.Import) else [])
        for name in names:
            parts = name.split(".")
            if len(parts) > 1 and parts[0] == "tests" and parts[1] in TIERS:
                found.append((node.lineno, parts[1]))
    return found


def test_no_test_file_imports_from_a_higher_tier():
    """Tiers in order (tests/conftest.py TIERS: unit, studies, real, cli, docs): a file imports
    helpers from its own tier, a lower one or the top of tests/, so a lower tier runs alone."""
    rank = {t: i for i, t in enumerate(TIERS)}
    found = [f"{p.relative_to(TESTS)}:{line}: imports from tests/{tier}" for here in TIERS
             for p in sorted((TESTS / here).glob("*.py")) for line, tier in _tier_imports(ast.parse(p.read_text()))
             if rank[tier] > rank[here]]
    assert not found, "an import from a higher tier (move the helper to tests/helpers.py or the lower tier):\n" \
        + "\n".join(found)


def test_the_tier_check_sees_an_import():
    tree = ast.parse("from tests.real.test_gate import XSD\nimport tests.cli.test_run\nfrom tests.helpers import x\n"
                     "from tests.conftest import TIERS\n")
    assert [t for _, t in _tier_imports(tree)] == ["real", "cli"]
