"""A suite: the workloads a score runs, their weights and the reference machine's values.

In perflab.toml::

    [suite.farm]
    reference_machine = "the machine the references were measured on"
    scaling = 100            # the score of the reference machine itself
    repetitions = 3
    copies = "fill"          # or a number: copies per workload ("fill": usable CPUs / threads)
    threads_per_copy = 1
    tdp_w = 85               # optional: per socket, for the modelled power (1.6 x TDP x sockets)

    [[suite.farm.workload]]
    name = "sim"             # a workload: built in, or [workload.sim] of this file
    as = "sim-50"            # optional: its name in the suite (one workload twice, other args)
    args = ["--events", "50"]  # optional, appended to its command
    reference = 123.4        # the reference machine's node throughput, in the workload's unit
    weight = 1.0

Names in perflab.toml shadow the built-in suites (``BUILTIN``).
"""

from __future__ import annotations

import tomllib
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from perflab.errors import PerflabError

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
BUILTIN = {"minihlt": EXAMPLES / "score-minihlt.toml"}


@dataclass(frozen=True)
class SuiteWorkload:
    name: str  # the name in the suite and its reports
    workload: str  # the workload it runs (built in or perflab.toml)
    reference: float
    args: tuple[str, ...] = ()
    weight: float = 1.0


@dataclass(frozen=True)
class Suite:
    name: str
    workloads: tuple[SuiteWorkload, ...]
    reference_machine: str
    scaling: float = 100.0
    repetitions: int = 3
    copies: int | None = None  # None: fill the machine
    threads_per_copy: int = 1
    tdp_w: float | None = None
    source: str = ""

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Suite":
        wls = tuple(SuiteWorkload(w["name"], w["workload"], float(w["reference"]), tuple(w.get("args") or ()),
                                  float(w.get("weight", 1.0))) for w in d["workloads"])
        return cls(**{**d, "workloads": wls})


def _read(path: Path) -> dict[str, Any]:
    try:
        with open(path, "rb") as fh:
            return tomllib.load(fh)
    except OSError as exc:
        raise PerflabError(f"{path}: cannot read it ({exc.strerror}); give a readable perflab.toml") from None
    except tomllib.TOMLDecodeError as exc:
        raise PerflabError(f"{path}: not valid TOML ({exc}); fix the file") from None


def load_suite(name: str, config_path: str | None = None) -> Suite:
    """The suite ``name`` from perflab.toml (``config_path`` or ./perflab.toml), else a built-in one."""
    path = Path(config_path) if config_path else Path("perflab.toml")
    if config_path and not path.exists():
        raise PerflabError(f"{config_path}: no such file; give the perflab.toml that defines [suite.{name}]")
    table = (_read(path).get("suite") or {}) if path.exists() else {}
    if name in table:
        return parse_suite(name, table[name], str(path))
    if name in BUILTIN:
        return parse_suite(name, _read(BUILTIN[name])["suite"][name], "builtin")
    known = sorted(set(table) | set(BUILTIN))
    raise PerflabError(f"unknown suite '{name}': known suites are {', '.join(known)} "
                       "(define one in perflab.toml as [suite.NAME], docs/score.md)")


def parse_suite(name: str, t: dict[str, Any], source: str) -> Suite:
    """One [suite.NAME] table as a Suite; every mistake a one-line PerflabError naming the key."""
    where = f"[suite.{name}]"
    if not isinstance(t, dict):
        raise PerflabError(f"{where} must be a table; see docs/score.md")
    wls = t.get("workload")
    if not isinstance(wls, list) or not wls:
        raise PerflabError(f"{where} has no [[suite.{name}.workload]] entries; give at least one workload "
                           "with its reference value")
    out = []
    for i, w in enumerate(wls):
        if not isinstance(w, dict) or "name" not in w:
            raise PerflabError(f"{where} workload {i + 1}: give name = \"WORKLOAD\"")
        ref = w.get("reference")
        if not isinstance(ref, (int, float)) or isinstance(ref, bool) or not ref > 0:
            raise PerflabError(f"{where} workload '{w['name']}': reference must be a number > 0 (the "
                               "reference machine's throughput), got {ref!r}")
        weight = w.get("weight", 1.0)
        if not isinstance(weight, (int, float)) or not weight > 0:
            raise PerflabError(f"{where} workload '{w['name']}': weight must be a number > 0, got {weight!r}")
        args = w.get("args", [])
        if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
            raise PerflabError(f"{where} workload '{w['name']}': args must be a list of strings")
        out.append(SuiteWorkload(str(w.get("as", w["name"])), str(w["name"]), float(ref), tuple(args), float(weight)))
    if len({w.name for w in out}) != len(out):
        raise PerflabError(f"{where}: two workloads share a name; give one of them as = \"OTHER NAME\"")
    copies = t.get("copies", "fill")
    if copies != "fill" and (not isinstance(copies, int) or copies < 1):
        raise PerflabError(f"{where}: copies must be \"fill\" or a number >= 1, got {copies!r}")
    reps = t.get("repetitions", 3)
    threads = t.get("threads_per_copy", 1)
    for key, v in (("repetitions", reps), ("threads_per_copy", threads)):
        if not isinstance(v, int) or v < 1:
            raise PerflabError(f"{where}: {key} must be a whole number >= 1, got {v!r}")
    scaling = t.get("scaling", 100.0)
    if not isinstance(scaling, (int, float)) or not scaling > 0:
        raise PerflabError(f"{where}: scaling must be a number > 0, got {scaling!r}")
    tdp = t.get("tdp_w")
    if tdp is not None and (not isinstance(tdp, (int, float)) or not tdp > 0):
        raise PerflabError(f"{where}: tdp_w must be a number > 0 (watts per socket), got {tdp!r}")
    machine = t.get("reference_machine")
    if not isinstance(machine, str) or not machine.strip():
        raise PerflabError(f"{where}: name the machine the references were measured on: reference_machine = \"...\"")
    return Suite(name, tuple(out), machine, float(scaling), reps, None if copies == "fill" else copies, threads,
                 None if tdp is None else float(tdp), source)
