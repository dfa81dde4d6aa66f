"""Bundle verify: unpack a bundle into a fresh directory, run it isolated, and compare its output
with a normal run of the original (or, where the original is gone, with the reference the
manifest recorded at bundle time)."""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generator, Sequence

from perflab.errors import PerflabError
from perflab.measure.capture import run_captured
from perflab.measure.interface import ConcurrentResult, RealClock
from perflab.model import RunResult, RunSpec
from perflab.studies.base import StudyConfig, VerdictResult
from perflab.studies.bundle.archive import MANIFEST, RUNNER, safe_unpack
from perflab.studies.bundle.mismatch import mismatch_hint, output_differences
from perflab.studies.bundle.study import metrics_of, sha256_of
from perflab.studies.session import Session

if TYPE_CHECKING:
    from perflab.measure.journal import Journal

NAME = "bundle-verify"
# The stdout a run keeps in its stored health, to show the lines that differ: a longer output is
# still compared whole (its checksum), only a difference past this point goes unshown.
KEPT_STDOUT = 1 << 20


@dataclass(frozen=True)
class VerifyConfig(StudyConfig):
    archive: str
    workdir: str | None = None  # where to unpack (must be empty or absent); default: a temp dir
    isolation: str | None = None  # force bwrap/unshare/chroot
    timeout: float | None = 600.0
    keep: bool = False  # relative paths are read from where perflab runs (a resume's directory too)


Config = VerifyConfig


@dataclass(kw_only=True)
class VerifyResult(VerdictResult):
    archive: str
    workdir: str
    isolation: str
    compared: str  # "checksum metric NAME", "stdout"
    bundle_value: str
    normal_value: str
    normal_source: str  # "normal run on this machine" or "reference recorded at bundle time"
    same: bool
    bundle_wall_s: float
    normal_wall_s: float | None
    differences: list[str] = field(default_factory=list)  # the first lines that differ, when known
    hint: str = ""  # what to compare instead, when the output differs
    removed: bool = False  # the unpacked directory was a temporary one, removed at the end

    @property
    def verdict(self) -> str:
        return (f"bundle output {'matches' if self.same else 'DIFFERS from'} the {self.normal_source} "
                f"({self.compared}; isolated with {self.isolation})")



class _Captured(RealClock):
    """The Executor verify's Session runs: each run with all of its stdout read (run_captured),
    its checksum, its metrics and its first MiB kept, so a stored run can be compared again."""

    live = True

    def __init__(self, patterns: list[dict]) -> None:
        self.patterns = patterns

    def run(self, spec: RunSpec) -> RunResult:
        result, out, err = run_captured(list(spec.argv), cwd=spec.cwd, env=dict(spec.env) if spec.env else None,
                                        timeout=spec.timeout)
        how = "unknown"
        for line in err.splitlines():
            if line.startswith("run.sh: isolating with "):
                how = line.rsplit(" ", 1)[-1]
        result.metrics = metrics_of(self.patterns, out, err)
        result.health["output"] = {"stdout_sha256": sha256_of(out), "stdout": out[:KEPT_STDOUT], "isolation": how,
                                   "stderr_end": " ".join(err.strip().splitlines()[-2:])}
        return result

    def capture(self, spec: RunSpec) -> tuple[RunResult, str]:
        raise ValueError("verify keeps each run's output in its health: use run")

    def run_concurrent(self, specs: Sequence[RunSpec], together: bool = True) -> ConcurrentResult:
        raise ValueError("verify runs one process at a time")

    def can_batch(self, spec: RunSpec) -> bool:
        return False

    def run_batch(self, spec: RunSpec, count: int, journal: Journal | None = None,
                  key: tuple[int, str, dict, int] | None = None) -> Generator[list[RunResult], None, None]:
        raise ValueError("verify runs one at a time: can_batch is always False")


def plan(config: VerifyConfig, machine: Any, manifest: dict, workdir: str) -> list[RunSpec]:
    """The bundle's run.sh, isolated; then the original command where it is still here."""
    label = manifest["workload"]
    env = {"PERFLAB_ISOLATION": config.isolation} if config.isolation else None
    specs = [RunSpec(argv=("/bin/sh", os.path.join(workdir, RUNNER)), env=env, timeout=config.timeout,
                     label=label, params={"mode": "bundle"})]
    argv, cwd = manifest["argv"], manifest["cwd"]
    if os.path.exists(argv[0]) and os.path.isdir(cwd):
        specs.append(RunSpec(argv=tuple(argv), cwd=cwd, env=manifest.get("env") or None, timeout=config.timeout,
                             label=label, params={"mode": "normal"}))
    return specs


def execute(config: VerifyConfig, session: Session, machine: Any = None) -> VerifyResult:
    """Unpack into a fresh directory, run it isolated, compare with a normal run (each run stored
    as it completes; a resume unpacks again and replays the stored runs)."""
    workdir = config.workdir or tempfile.mkdtemp(prefix="perflab-verify-")
    if session.resumed and config.workdir and os.path.isdir(workdir) and os.listdir(workdir):
        # what the interrupted verify unpacked there may be partial: unpacked again, never reused
        raise PerflabError(f"{workdir} holds what the interrupted verify unpacked: remove it "
                           f"(rm -r {workdir}) and resume again")
    try:
        safe_unpack(config.archive, workdir)
        try:
            manifest = json.loads(Path(workdir, MANIFEST).read_text())
        except (OSError, ValueError):
            raise PerflabError(f"{config.archive} has no readable {MANIFEST}: not a perflab bundle") from None
        runs = Session(_Captured(manifest.get("metrics", [])), session.store, session.campaign_id,
                       session.progress, resumed=session.resumed)
        done = []
        for spec in plan(config, machine, manifest, workdir):
            result = runs.run(spec)
            if spec.params["mode"] == "bundle" and not result.ok:
                out = result.health.get("output", {})
                raise PerflabError(f"the bundle failed to run isolated ({out.get('isolation', 'unknown')}, "
                                   f"exit {result.exit_code}): {out.get('stderr_end', '')}")
            done.append(result)
        session.executed += runs.executed
        session.replayed += runs.replayed
        return analyse(config, manifest, done, workdir)
    finally:
        if not config.keep and not config.workdir:
            shutil.rmtree(workdir, ignore_errors=True)


def analyse(config: VerifyConfig, manifest: dict, runs: list[RunResult], workdir: str) -> VerifyResult:
    """The bundle's output against the normal run's (or the manifest's reference): by the
    checksum metric where the workload names one, else by stdout's sha256; where they differ, the
    first lines that do and what to compare instead."""
    bundle, normal_run = runs[0], (runs[1] if len(runs) > 1 else None)
    b_out = bundle.health["output"]
    patterns = manifest.get("metrics", [])
    if normal_run is not None:
        n_out = normal_run.health["output"]
        normal: dict[str, Any] = {"stdout_sha256": n_out["stdout_sha256"], "metrics": normal_run.metrics}
        source = "normal run on this machine"
    else:
        normal = manifest["reference"]
        source = "reference recorded at bundle time"
    checksum = manifest.get("checksum_metric")
    bv: object
    nv: object
    if checksum and checksum in normal.get("metrics", {}):
        compared = f"checksum metric {checksum}"
        bv, nv = bundle.metrics.get(checksum), normal["metrics"][checksum]
    else:
        compared = "stdout (sha256)"
        bv, nv = b_out["stdout_sha256"], normal["stdout_sha256"]
    differences: list[str] = []
    hint = ""
    if bv != nv and not compared.startswith("checksum"):
        n_text = n_out["stdout"] if normal_run is not None else "\n".join(normal.get("stdout_head") or [])
        if normal_run is not None or normal.get("stdout_head"):
            differences = output_differences(b_out["stdout"], n_text)
        names = [n for m in patterns for n in re.compile(m["regex"]).groupindex]
        hint = mismatch_hint(differences, names)
    return VerifyResult(
        archive=os.path.abspath(config.archive), workdir=workdir, isolation=b_out["isolation"], compared=compared,
        bundle_value=str(bv), normal_value=str(nv), normal_source=source, same=bv == nv,
        bundle_wall_s=bundle.wall_s, normal_wall_s=normal_run.wall_s if normal_run else None,
        differences=differences, hint=hint, removed=not config.keep and not config.workdir, runs=len(runs),
    )
