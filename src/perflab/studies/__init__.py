"""Studies: one package per question perflab answers, each of one of two kinds.

**Measuring studies** (``STUDIES``: run, cores, instances, variants, frontend, micro, profile,
lab, score, footprint, bundle, bundle-verify) start processes, and only through a Session. A
module exposes ``NAME``, a frozen ``Config`` (``as_dict``/``from_dict``), ``plan(config,
machine) -> runs`` (pure), ``execute(config, session, machine) -> Result`` (every run through
the Session, which stores it as it completes and, on a resumed campaign, answers a stored run
from the store) and ``analyse(...) -> Result`` (pure), with a ``Result`` that has
``as_dict``/``from_dict`` (``studies.base.MeasuringStudy``). ``run_study`` opens the campaign
around a study; ``resume_study`` re-plans a stored one, so every measuring study resumes.

**Reading studies** (``READING``: compare, gate, cost) read what measuring studies stored and
never measure: no executor, no Session, no process. A module exposes ``NAME``, a frozen
``Config`` naming the campaigns (a baseline, fleets) to read and ``read(config, store) ->
Result`` (``studies.base.ReadingStudy``); cost keeps its result as a campaign without runs.
report/ reads the store the same way for the HTML and Markdown report (tests/test_layout.py
holds both to it).

Studies print nothing: every output is rendered in report/ from the Result.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import TYPE_CHECKING, Any, Callable

from perflab.errors import PerflabError
from perflab import kernels, platform
from perflab.platform import owner
from perflab.platform.machine import Machine
from perflab.studies.session import Session, _quiet

if TYPE_CHECKING:
    from perflab.store import Store
    from perflab.studies.base import MeasuringStudy, ReadingStudy
    from perflab.studies.bundle import study as _bundle, verify as _bundle_verify
    from perflab.studies.compare import study as _compare
    from perflab.studies.cores import study as _cores
    from perflab.studies.cost import study as _cost
    from perflab.studies.footprint import study as _footprint
    from perflab.studies.frontend import study as _frontend
    from perflab.studies.gate import study as _gate
    from perflab.studies.instances import study as _instances
    from perflab.studies.lab import study as _lab
    from perflab.studies.micro import study as _micro
    from perflab.studies.profile import study as _profile
    from perflab.studies.run import study as _run
    from perflab.studies.score import study as _score
    from perflab.studies.variants import study as _variants

    # The type checker holds each module to its kind's shape (nothing is imported at run time).
    _MEASURING: tuple[MeasuringStudy, ...] = (
        _run, _cores, _instances, _variants, _frontend, _micro, _profile, _lab, _score, _footprint, _bundle,
        _bundle_verify)
    _READING: tuple[ReadingStudy, ...] = (_compare, _gate, _cost)

# Study name -> module: the measuring studies, which `perflab resume` re-plans from a stored config.
STUDIES = {
    **{name: f"perflab.studies.{name}.study"
       for name in ("run", "cores", "instances", "variants", "frontend", "micro", "profile", "lab", "score",
                    "footprint", "bundle")},
    "bundle-verify": "perflab.studies.bundle.verify",
}

# Study name -> module: the studies that read stored campaigns and never measure.
READING = {name: f"perflab.studies.{name}.study" for name in ("compare", "gate", "cost")}


def study_module(name: str) -> ModuleType:
    if name not in STUDIES:
        raise PerflabError(f"campaigns of study '{name}' cannot be resumed; rerun the study instead")
    module = importlib.import_module(STUDIES[name])
    if not hasattr(module, "execute"):
        raise PerflabError(f"study '{name}' cannot resume yet; rerun it")
    return module


def with_abi_probes(machine: Machine) -> Machine:
    """What this machine can build and run belongs to its record too (cached per process; a
    capture cached for the boot already holds them)."""
    probes = machine.metadata.get("probes")
    if probes is not None and not set(kernels.ABI_PROBE_NAMES) <= set(probes):
        machine.metadata["probes"].update(
            {k: {"available": p.available, "reason": p.reason} for k, p in kernels.abi.abi_probes().items()})
    return machine


def run_study(
    module: ModuleType, config: Any, store: Store, executor: Any, machine: Machine | None = None,
    progress: Callable[[str], None] = _quiet, parent_id: int | None = None, resume: int | None = None,
    name: str = "", energy: Any = None, monitor: Any = None,
) -> Any:
    """Capture the host, open the campaign, execute the study through a Session, keep its result.

    ``executor``: an Executor, or for a profile its WindowRecorder (the profile study puts the
    executor its Session needs around it), hence not typed Executor here.

    ``monitor`` (measure.monitor.Monitor): samples the machine into the campaign for the whole
    study, with its idle phases before and after (none after a study that failed).

    ``machine`` may be a capture still running (an object with ``result()``, e.g. a Future: perflab
    run's start-up): the study then gets no Machine, and the host is recorded when it ends.
    """
    pending: Any = machine if callable(getattr(machine, "result", None)) else None  # a Future
    if pending is not None:
        machine, host_id = None, None
    else:
        machine = with_abi_probes(machine if machine is not None else platform.capture())
        host_id = store.add_host(*machine.record())
    with store.open_campaign(module.NAME, config.as_dict(), host_id=host_id, parent_id=parent_id,
                        name=name, resume=resume) as camp:
        session = Session(executor, store, camp.id, progress, resumed=camp.resumed, energy=energy)
        if monitor is not None:
            monitor.start(lambda rows, cid=camp.id: store.add_monitor_samples(cid, rows))
        try:
            if monitor is not None:
                monitor.idle(phase="idle-before")
                monitor.set_phase("study")
            result = module.execute(config, session, machine)
            if monitor is not None:
                monitor.idle(phase="idle-after")
        finally:
            session.close()
            if monitor is not None:
                monitor.stop()
        result.campaign_id = camp.id
        camp.summary = result.as_dict()
        if pending is not None:
            store.set_campaign_host(camp.id, store.add_host(*with_abi_probes(pending.result()).record()))
    return result


def resumable(store: Store, campaign_id: int | None) -> Any:
    """The campaign ``perflab resume [ID]`` would finish (default: the newest unfinished one whose
    perflab is not still measuring it), or a PerflabError saying why there is none."""
    if campaign_id is None:
        # A campaign whose perflab still runs is not interrupted: it is someone's measurement.
        found = [c for c in store.campaigns() if c.status in ("interrupted", "running", "failed")
                 and c.parent_id is None and not (c.status == "running" and owner.alive(c.labels.get("owner")))]
        if not found:
            raise PerflabError(f"no interrupted campaign in {store.display}; nothing to resume")
        campaign_id = found[-1].id
    camp = store.campaign(campaign_id)
    if camp.status == "done":
        raise PerflabError(f"campaign {camp.id} ({camp.study}) is already done; nothing to resume")
    if camp.status == "running" and owner.alive(camp.labels.get("owner")):
        pid = camp.labels["owner"]["pid"]
        raise PerflabError(f"campaign {camp.id} ({camp.study}) is still being measured by perflab pid {pid}; "
                           f"wait for it, or stop it (kill {pid}: it closes as interrupted) and resume then")
    return camp


def resume_study(store: Store, campaign_id: int | None, executor: Any,
                 progress: Callable[[str], None] = _quiet, energy: Any = None,
                 monitor: Any = None) -> tuple[str, Any]:
    """Finish an interrupted campaign (default: the newest one): (study name, its result)."""
    camp = resumable(store, campaign_id)
    module = study_module(camp.study)
    try:
        config = module.Config.from_dict(camp.config)
    except (TypeError, ValueError, KeyError, AttributeError):
        # a config another perflab version stored (e.g. a footprint naming its workload only)
        raise PerflabError(f"campaign {camp.id} ({camp.study}) holds a config this perflab cannot plan "
                           "again; rerun the study instead") from None
    return camp.study, run_study(module, config, store, executor, progress=progress,
                                 parent_id=camp.parent_id, resume=camp.id, energy=energy, monitor=monitor)
