"""The main job: build the workload, run the default studies as child campaigns, one verdict.

``perflab lab`` is a study like the others: its campaign is the parent of one child campaign per
study (opened by ``run_study`` with ``parent_id``), every run is stored as it completes, and
resuming the lab campaign resumes from the store: a child that is done is loaded from its stored
summary, an interrupted child is resumed (its stored runs are not repeated), the rest run.
Lab prints nothing; each child's result is rendered once by its report/terminal renderer.

A progress callback may also offer ``begin(name, index, total)`` and ``end(name, outcome)``
(see LabProgress): the CLI's live display uses them to show the current study and print each
result as it arrives.
"""

from __future__ import annotations

import os
import time
import traceback
import typing
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol

from perflab.errors import PerflabError, Unsupported
from perflab.model import RunSpec
from perflab.platform.machine import Machine
from perflab.studies import run_study, study_module
from perflab.studies.base import StudyConfig, decode
from perflab.studies.lab.budget import FULL_BUDGET
from perflab.studies.lab.steps import STEPS, LabContext, Step, prepare
from perflab.studies.session import Session

NAME = "lab"
DEFAULT_OUT = "perflab-lab"
DEFAULT_ORDER = ("run", "cores", "instances", "variants", "profile", "frontend", "micro")


@dataclass(frozen=True)
class LabConfig(StudyConfig):
    workload: str | None = None  # a workload name or a perflab.toml path; None -> minihlt
    config_path: str | None = None
    quick: bool = False
    out_dir: str = DEFAULT_OUT
    studies: tuple[str, ...] = ()  # empty -> the default set
    seed: int = 1
    workload_args: tuple[str, ...] = ()  # appended to the workload's argv (perflab lab -- ARGS)
    primary_metric: str | None = None  # --primary-metric over the workload's (checked by the CLI)
    higher_is_better: bool | None = None  # --higher-is-better / --lower-is-better
    budget: float | None = None  # the full lab's seconds for its studies (None: budget.FULL_BUDGET)

    @property
    def order(self) -> tuple[str, ...]:
        return self.studies or DEFAULT_ORDER


Config = LabConfig


@dataclass
class Outcome:
    """One study of the lab: its child campaign, how it ended, and its result object."""

    name: str
    status: str  # "done", "skipped: why", "failed: why"
    campaign: int | None = None
    seconds: float = 0.0
    runs: int = 0  # measurements in its campaign
    replayed: int = 0  # of which were stored before this lab invocation (resumed)
    earlier: bool = False  # done by an earlier invocation: loaded, not run
    note: str = ""  # how it made do with this machine (another instrument where a tool is missing)
    result: Any = field(default=None, repr=False)  # the study's Result (not serialised)

    def as_dict(self) -> dict:
        d = asdict(self)
        d.pop("result")
        return d


@dataclass
class LabResult:
    steps: list[Outcome] = field(default_factory=list)
    out_dir: str = DEFAULT_OUT
    seconds: float = 0.0
    workload: str = ""
    campaign_id: int | None = None

    @property
    def executed_runs(self) -> int:
        return sum(s.runs - s.replayed for s in self.steps if not s.earlier)

    @property
    def replayed_runs(self) -> int:
        return sum(s.replayed for s in self.steps if not s.earlier)

    def as_dict(self) -> dict:
        return dict(order=[s.name for s in self.steps], steps=[s.as_dict() for s in self.steps],
                    out_dir=self.out_dir, seconds=self.seconds, workload=self.workload,
                    executed_runs=self.executed_runs, replayed_runs=self.replayed_runs,
                    campaign_id=self.campaign_id, verdict=verdict(self))

    @classmethod
    def from_dict(cls, d: dict) -> "LabResult":
        # a step's result is its child campaign's, never stored with the lab's
        return decode(cls, {**d, "steps": [{k: v for k, v in s.items() if k != "result"} for s in d.get("steps", ())]})


Result = LabResult


class LabProgress(Protocol):
    def __call__(self, text: str) -> None: ...

    def begin(self, name: str, index: int, total: int) -> None: ...

    def end(self, name: str, outcome: Outcome) -> None: ...


def plan(config: LabConfig, machine: Machine | None = None) -> list[RunSpec]:
    """Lab's own runs: none up front (each study plans its own; profile's slowest-event run
    needs the built workload and is planned by steps.slowest_event)."""
    unknown = [s for s in config.order if s not in STEPS]
    if unknown:
        raise PerflabError(f"unknown study {unknown[0]!r} for lab: choose from {', '.join(STEPS)}")
    return []


def execute(config: LabConfig, session: Session, machine: Machine) -> LabResult:
    """Each study in turn as a child campaign; done children of a resumed lab are loaded."""
    plan(config, machine)
    os.makedirs(config.out_dir, exist_ok=True)
    ctx = LabContext(config, session, machine)
    prepare(ctx)
    assert ctx.workload is not None  # prepare() builds it or raises
    children = {c.name: c for c in session.store.campaigns(parent_id=session.campaign_id)}
    result = LabResult(out_dir=config.out_dir, workload=ctx.workload.name)
    t0 = time.monotonic()
    if not config.quick:
        # a resumed lab gives the studies still to run the whole budget again
        ctx.deadline = t0 + (config.budget if config.budget is not None else FULL_BUDGET)
    hooks = session.progress
    for index, name in enumerate(config.order):
        if hasattr(hooks, "begin"):
            hooks.begin(name, index, len(config.order))
        outcome = _child(ctx, name, children.get(name))
        result.steps.append(outcome)
        if name == "run" and ctx.seconds is None:
            ctx.seconds = _median_wall(outcome.result)
        if hasattr(hooks, "end"):
            hooks.end(name, outcome)
    result.seconds = round(time.monotonic() - t0, 1)
    return result


def _child(ctx: LabContext, name: str, child: Any) -> Outcome:
    """Run, resume or load one study; a broken study is reported, never costs the others."""
    store = ctx.session.store
    if child is not None and child.status == "done":
        return Outcome(name, "done", child.id, runs=child.n_measurements,
                       replayed=child.n_measurements, earlier=True, result=_load(name, child))
    s0 = time.monotonic()
    replayed = child.n_measurements if child is not None else 0
    said = len(ctx.notes)
    try:
        step: Step = STEPS[name](ctx)
        res = run_study(step.module, step.config, store, ctx.session.executor, machine=ctx.machine,
                        progress=ctx.session.progress, parent_id=ctx.session.campaign_id,
                        name=name, resume=child.id if child is not None else None)
        cid = res.campaign_id
        status = "done"
    except Unsupported as exc:
        res, cid, status = None, None, f"skipped: {exc}"
    except PerflabError as exc:
        res, cid, status = None, None, f"failed: {exc}"
    except (KeyboardInterrupt, SystemExit):
        raise
    except Exception as exc:  # noqa: BLE001 - one broken study must not cost the others
        log = os.path.join(ctx.config.out_dir, "lab-errors.log")
        with open(log, "a", encoding="utf-8") as fh:
            fh.write(f"--- {name}\n{traceback.format_exc()}\n")
        res, cid, status = None, None, f"failed: {type(exc).__name__}: {exc} (traceback in {log})"
    if cid is None:
        found = [c for c in store.campaigns(parent_id=ctx.session.campaign_id) if c.name == name]
        cid = found[-1].id if found else None
    runs = store.campaign(cid).n_measurements if cid is not None else 0
    return Outcome(name, status, cid, round(time.monotonic() - s0, 1), runs, replayed,
                   note="; ".join(ctx.notes[said:]), result=res)


def _median_wall(result: Any) -> float | None:
    """The run study's median wall seconds of the workload (None where it has none)."""
    benches = getattr(result, "benchmarks", None) or []
    summary = benches[0].summary if benches else None
    return summary["median"] if summary and summary.get("median") else None


def _load(name: str, child: Any) -> Any:
    """A done child's result from its stored summary (the study's Result.from_dict)."""
    try:
        module = study_module(name)
        # Result, else the class execute() is annotated to return (XResult)
        result_type = getattr(module, "Result", None) or typing.get_type_hints(module.execute)["return"]
        return result_type.from_dict({**(child.summary or {}), "campaign_id": child.id})
    except (PerflabError, AttributeError, KeyError, TypeError, NameError):
        return None  # a summary from an older perflab: it still feeds the report


def failed(result: LabResult) -> list[str]:
    """The studies that failed (a broken study, a build error), not those this machine cannot run."""
    return [s.name for s in result.steps if s.status.startswith("failed")]


def verdict(result: LabResult) -> str:
    """'N studies done in T s', then how many were skipped (cannot run here) and failed, by name."""
    ok = [s.name for s in result.steps if s.status == "done"]
    skipped = [s.name for s in result.steps if s.status.startswith("skipped")]
    text = f"{len(ok)} stud{'y' if len(ok) == 1 else 'ies'} done in {result.seconds:.0f} s"
    if skipped or failed(result):
        text += f", {len(skipped)} skipped" + (f" ({', '.join(skipped)})" if skipped else "")
        text += f", {len(failed(result))} FAILED" + (f" ({', '.join(failed(result))})" if failed(result) else "")
    return text + "."
