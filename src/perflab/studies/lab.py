"""The main job: capture the machine, build the workload, run the default studies, report.

Each study runs as a child campaign of one ``lab`` campaign. Every executed run is journaled
(measure/journal.py), so ``--resume`` after Ctrl-C or a kill re-enters the interrupted study with
the same seed and gets every finished run back from the journal instead of repeating it; studies
already done are skipped outright.
"""

from __future__ import annotations

import os
import signal
import time
import traceback
from dataclasses import asdict, dataclass, field
from typing import Any, Callable

from perflab.errors import PerflabError, Unsupported

DEFAULT_OUT = "perflab-lab"


@dataclass(frozen=True)
class LabConfig:
    workload: str | None = None  # a workload name or a perflab.toml path; None -> minihlt
    config_path: str | None = None
    quick: bool = False
    out_dir: str = DEFAULT_OUT
    resume: bool = False
    studies: tuple[str, ...] = ()  # empty -> the default set
    seed: int = 1


@dataclass
class LabContext:
    config: LabConfig
    store: Any
    executor: Any
    console: Any
    host_id: int | None
    lab_id: int
    workload: Any = None  # resolved Workload
    minihlt: bool = False
    notes: list[str] = field(default_factory=list)

    def say(self, text: str) -> None:
        if self.console is not None:
            self.console.print(text)


class ParentedStore:
    """Passes everything to the real store, but opens campaigns as children of the lab."""

    def __init__(self, store: Any, ctx: LabContext, step: str) -> None:
        self._store, self._ctx, self._step = store, ctx, step
        self.started: list[int] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    def start_campaign(self, study: str, config: dict, host_id: int | None = None,
                       parent_id: int | None = None, name: str = "") -> int:
        cid = self._store.start_campaign(study, config, host_id=host_id or self._ctx.host_id,
                                         parent_id=self._ctx.lab_id, name=name or self._step)
        self.started.append(cid)
        return cid


Step = Callable[[LabContext, Any], None]  # (ctx, store proxy)
STEPS: dict[str, Step] = {}
DEFAULT_ORDER = ("run", "cores", "instances", "variants", "profile", "frontend", "micro")


def step(name: str) -> Callable[[Step], Step]:
    def deco(fn: Step) -> Step:
        STEPS[name] = fn
        return fn

    return deco


def _sigterm_to_interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


def run_lab(config: LabConfig, store: Any, executor: Any, console: Any = None) -> dict:
    """Run the default studies as children of one lab campaign; returns the lab summary."""
    from perflab.measure.journal import JournalExecutor
    from perflab.studies import lab_steps  # noqa: F401  (registers the steps)

    order = config.studies or DEFAULT_ORDER
    unknown = [s for s in order if s not in STEPS]
    if unknown:
        raise PerflabError(f"unknown study {unknown[0]!r} for lab: choose from {', '.join(STEPS)}")

    lab_id, out_dir = _open_lab(config, store)
    os.makedirs(out_dir, exist_ok=True)
    journal = JournalExecutor(executor, os.path.join(out_dir, "journal.jsonl"), replay=config.resume)
    host_id = _capture_host(store)
    ctx = LabContext(config, store, journal, console, host_id, lab_id)
    summary: dict = {"order": list(order), "out_dir": out_dir, "steps": {}, "quick": config.quick}
    old = signal.signal(signal.SIGTERM, _sigterm_to_interrupt)
    t0 = time.monotonic()
    status = "done"
    try:
        from perflab.studies.lab_steps import prepare

        prepare(ctx)
        done = _done_steps(store, lab_id) if config.resume else {}
        progress = _Progress(console, order)
        for name in order:
            if name in done:
                summary["steps"][name] = {"campaign": done[name], "status": "done", "resumed": True}
                progress.skip(name)
                continue
            proxy = ParentedStore(store, ctx, name)
            progress.start(name)
            s0 = time.monotonic()
            try:
                STEPS[name](ctx, proxy)
                st = "done"
            except Unsupported as exc:
                ctx.say(f"[yellow]{name}: skipped: {exc}[/]")
                st = f"skipped: {exc}"
            except PerflabError as exc:
                ctx.say(f"[red]{name}: failed: {exc}[/]")
                st = f"failed: {exc}"
            except (KeyboardInterrupt, SystemExit):
                raise
            except Exception as exc:  # noqa: BLE001 - one broken study must not cost the others
                log = os.path.join(out_dir, "lab-errors.log")
                with open(log, "a", encoding="utf-8") as fh:
                    fh.write(f"--- {name}\n{traceback.format_exc()}\n")
                ctx.say(f"[red]{name}: failed: {type(exc).__name__}: {exc} (traceback in {log})[/]")
                st = f"failed: {type(exc).__name__}: {exc}"
            summary["steps"][name] = {"campaigns": proxy.started, "status": st,
                                      "seconds": round(time.monotonic() - s0, 1)}
            store.finish_campaign(lab_id, "running", summary)
            progress.finish(name)
        summary["seconds"] = round(time.monotonic() - t0, 1)
        summary["replayed_runs"] = journal.replayed
        summary["executed_runs"] = journal.executed
        summary["verdict"] = _verdict(summary)
    except KeyboardInterrupt:
        status = "interrupted"
        summary["verdict"] = "lab interrupted; resume with perflab lab --resume"
        raise
    except Exception:
        status = "failed"
        raise
    finally:
        signal.signal(signal.SIGTERM, old)
        journal.close()
        store.finish_campaign(lab_id, status, summary)
    return {"lab_id": lab_id, **summary}


def _verdict(summary: dict) -> str:
    steps = summary["steps"]
    ok = [n for n, s in steps.items() if s["status"] == "done"]
    skipped = [n for n, s in steps.items() if s["status"].startswith("skipped")]
    failed = [n for n, s in steps.items() if s["status"].startswith("failed")]
    text = f"{len(ok)} studies done in {summary['seconds']:.0f} s"
    if skipped:
        text += f"; skipped: {', '.join(skipped)}"
    if failed:
        text += f"; FAILED: {', '.join(failed)}"
    return text + "."


def _open_lab(config: LabConfig, store: Any) -> tuple[int, str]:
    if config.resume:
        labs = [c for c in store.campaigns(study="lab") if c.status != "done"]
        if not labs:
            raise PerflabError(f"nothing to resume in {store.display}: start one with perflab lab")
        lab = labs[-1]
        store.resume_campaign(lab.id)
        return lab.id, (lab.config or {}).get("out_dir", config.out_dir)
    return store.start_campaign("lab", asdict(config), name="lab"), config.out_dir


def _done_steps(store: Any, lab_id: int) -> dict[str, int]:
    """Steps whose every child campaign finished; an interrupted one is run again (replayed)."""
    by_step: dict[str, list[Any]] = {}
    for c in store.campaigns(parent_id=lab_id):
        by_step.setdefault(c.name or c.study, []).append(c)
    lab = store.campaign(lab_id)
    recorded = ((lab.summary or {}).get("steps") or {})
    done = {}
    for name, info in recorded.items():
        if info.get("status") == "done" and all(
                store.campaign(i).status == "done" for i in info.get("campaigns", [])):
            done[name] = info.get("campaigns", [None])[-1] if info.get("campaigns") else None
    return done


def _capture_host(store: Any) -> int | None:
    from perflab.platform.metadata import collect
    from perflab.platform.topology import read_topology
    from perflab.platform.sysfs import Root
    from perflab.studies.lab_steps import topology_dict

    from perflab.platform.probes import all_probes

    root = Root("/")
    metadata = collect(root)
    metadata["probes"] = {k: {"available": p.available, "reason": p.reason} for k, p in all_probes().items()}
    return store.add_host(metadata, topology_dict(read_topology(root)))


class _Progress:
    """Overall and per-study progress on the terminal (rich), with elapsed time and ETA."""

    def __init__(self, console: Any, order: tuple[str, ...]) -> None:
        self.console, self.order, self.t0 = console, order, time.monotonic()
        self.done = 0
        self.step_t0 = 0.0

    def _eta(self) -> str:
        if not self.done:
            return "?"
        per = (time.monotonic() - self.t0) / self.done
        return f"{per * (len(self.order) - self.done):.0f} s"

    def start(self, name: str) -> None:
        self.step_t0 = time.monotonic()
        if self.console is not None:
            self.console.rule(f"[bold]{name}[/] ({self.done + 1}/{len(self.order)}, "
                              f"elapsed {time.monotonic() - self.t0:.0f} s, ETA {self._eta()})")

    def finish(self, name: str) -> None:
        self.done += 1
        if self.console is not None:
            self.console.print(f"[green]{name} done in {time.monotonic() - self.step_t0:.1f} s[/]")

    def skip(self, name: str) -> None:
        self.done += 1
        if self.console is not None:
            self.console.print(f"[dim]{name}: already done (resumed)[/]")
