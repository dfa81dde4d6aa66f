"""Bundle study: pack a workload's traced footprint with a one-touch runner; verify it elsewhere.

Seed 004 shipped the trigger to vendors on a live DVD: strace found the few files it needed,
and a wrapper script ran it. Here the bundle is a tar.gz holding ``root/`` (the needed files at
their real paths, symlinks recreated with relative targets), ``perflab-bundle.json`` (the
manifest: command, checksums, reference output) and ``run.sh``, which runs the workload with
``root/`` as its whole file system (bubblewrap, else unshare, else chroot).

The study's shape is a measuring study's: ``BundleConfig``, ``plan`` (the traced run and the
reference run), ``execute`` through the Session (each run stored as it completes with what the
archive needs in its health, so ``perflab resume`` packs from the stored runs) and ``analyse``
-> ``BundleResult``. ``verify.py`` is the second study of the package (``bundle-verify``).

Unpacking checks every member before writing anything: no absolute names, no ``..``, no
symlink that resolves (through other symlinks of the archive) outside the target, no hard
links, devices or FIFOs.
"""

from __future__ import annotations

import hashlib
import os
import shlex
import shutil
import tempfile
from dataclasses import dataclass, field, replace
from typing import Any, Iterable

from perflab.errors import PerflabError
from perflab.model import MetricPattern, RunResult, RunSpec, Workload
from perflab.measure.metrics import extract
from perflab.measure.capture import isolation_available, run_captured
from perflab.platform import strace
from perflab.platform.files import resolve_links
from perflab.platform.sysfs import format_size
from perflab.studies.base import StudyConfig, VerdictResult
from perflab.studies.footprint.files import VIRTUAL_ROOTS, FileUse, TopDir, by_top_dir, needed
from perflab.studies.footprint.study import argv_of, default_cpu
from perflab.studies.footprint.tracing import TRACED, Tracing, strace_missing, trace_of
from perflab.studies.bundle.archive import ROOT, write_archive
from perflab.studies.session import Session
from perflab.startup import which

NAME = "bundle"
REFERENCE = "reference"
FORMAT = 1
ISOLATIONS = ("bwrap", "unshare", "chroot")


@dataclass(frozen=True)
class BundleConfig(StudyConfig):
    workload: Workload
    output: str
    budget_bytes: int | None = None  # unpacked size limit (the DVD's free space)
    cpu: int | None = None
    seccomp: bool = True
    include: tuple[str, ...] = ()  # extra files or directories to carry
    timeout: float | None = 600.0

    decoders = {"workload": Workload.from_dict}

    def __post_init__(self) -> None:
        # where the workload runs is part of what was asked (a resume elsewhere packs the same)
        if self.workload.cwd is None:
            object.__setattr__(self, "workload", replace(self.workload, cwd=os.getcwd()))


Config = BundleConfig


@dataclass(kw_only=True)
class BundleResult(VerdictResult):
    output: str
    files: int
    links: int
    dirs: int
    unpacked_bytes: int
    archive_bytes: int
    isolation_here: str | None
    reference: dict
    by_top: list[TopDir] = field(default_factory=list)
    given_output: str = ""  # the path as the command named it, which the how-to lines repeat
    budget_bytes: int | None = None

    @property
    def verdict(self) -> str:
        return (f"{self.files} files, {format_size(self.unpacked_bytes)} unpacked, "
                f"{format_size(self.archive_bytes)} archive: {self.output}")


REFERENCE_LINES = 200  # stdout lines kept in the manifest, to show a mismatch where the original is gone


def metrics_of(patterns: Iterable[dict], out: str, err: str) -> dict[str, float]:
    """The workload's metrics (its patterns as the manifest stores them) from a run's output."""
    pats = tuple(MetricPattern(**p) for p in patterns)
    return extract(pats, out, err) if pats else {}


def sha256_of(text: str) -> str:
    """How two outputs are compared without keeping either whole."""
    return hashlib.sha256(text.encode()).hexdigest()


def _file_sha(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def runner_script(argv: list[str], cwd: str, env: dict[str, str], name: str) -> str:
    """The one-touch run.sh: the workload with root/ as its whole file system."""
    q = shlex.quote
    cmd = " ".join(q(a) for a in argv)
    envs_bwrap = " ".join(f"--setenv {q(k)} {q(v)}" for k, v in sorted(env.items()))
    envs_plain = " ".join(q(f"{k}={v}") for k, v in sorted(env.items()))
    return f"""#!/bin/sh
# One-touch runner written by perflab bundle for workload {name!r}.
# Runs: {cmd}  (in {cwd}) with this bundle's root/ as the whole file system.
# Usage: ./run.sh [extra arguments]
# Isolation: bubblewrap if it works here, else unshare (root), else chroot (root);
# force one with PERFLAB_ISOLATION=bwrap|unshare|chroot. chroot starts in / (not {cwd}).
set -e
here=$(cd "$(dirname "$0")" && pwd)
root="$here/{ROOT}"
how="${{PERFLAB_ISOLATION:-}}"
if [ -z "$how" ]; then
  if command -v bwrap >/dev/null 2>&1 && bwrap --bind / / --unshare-all true >/dev/null 2>&1; then how=bwrap
  elif [ "$(id -u)" = 0 ] && command -v unshare >/dev/null 2>&1; then how=unshare
  elif [ "$(id -u)" = 0 ] && command -v chroot >/dev/null 2>&1; then how=chroot
  else echo "run.sh: cannot isolate: install bubblewrap (bwrap) or run as root" >&2; exit 2
  fi
fi
echo "run.sh: isolating with $how" >&2
base_env="PATH=/usr/local/bin:/usr/bin:/bin HOME=/ LANG=C"
case "$how" in
  bwrap)
    exec bwrap --bind "$root" / --dev /dev --proc /proc --unshare-all \\
      --die-with-parent --clearenv --setenv PATH /usr/local/bin:/usr/bin:/bin --setenv HOME / \\
      --setenv LANG C {envs_bwrap} --chdir {q(cwd)} -- {cmd} "$@" ;;
  unshare)
    tool=$(command -v unshare)
    exec env -i $base_env {envs_plain} "$tool" --mount --uts --ipc --pid --fork \\
      --root="$root" --wd={q(cwd)} {cmd} "$@" ;;
  chroot)
    tool=$(command -v chroot)
    exec env -i $base_env {envs_plain} "$tool" "$root" {cmd} "$@" ;;
  *) echo "run.sh: unknown PERFLAB_ISOLATION=$how (bwrap, unshare or chroot)" >&2; exit 2 ;;
esac
"""


# --- the needed set --------------------------------------------------------------------------


def _rel_target(link: str, target: str) -> str:
    """A link's target made relative to its directory, so it never points outside the bundle."""
    if not target.startswith("/"):
        return target
    return os.path.relpath(os.path.normpath(target), os.path.dirname(link))


def needed_set(used: list[FileUse], include: Iterable[str] = (), cwd: str | None = None
               ) -> tuple[dict[str, int], dict[str, str], set[str]]:
    """(real file -> size, link -> relative target, directories) a bundle must recreate."""
    files: dict[str, int] = {}
    links: dict[str, str] = {}
    dirs: set[str] = set()
    carried = needed(used)
    for f in used:
        if f.kind == "virtual":
            continue
        for link, target in f.links:
            if not any(link == r or link.startswith(r + "/") for r in VIRTUAL_ROOTS):
                links[link] = _rel_target(link, target)
        if f in carried:
            files[f.real_path] = f.size
        elif f.kind == "dir":
            dirs.add(f.real_path)
    extra: list[str] = []
    for inc in include:
        p = os.path.abspath(inc)
        if not os.path.exists(p):
            raise PerflabError(f"--include {inc}: no such file or directory")
        if os.path.isdir(p):
            for d, _sub, names in os.walk(p):
                extra.extend(os.path.join(d, n) for n in names)
            dirs.add(resolve_links(p)[0])
        else:
            extra.append(p)
    for p in extra:
        real, chain = resolve_links(p)
        for link, target in chain:
            links[link] = _rel_target(link, target)
        if os.path.isfile(real):
            files[real] = os.path.getsize(real)
    if cwd:
        dirs.add(resolve_links(cwd)[0])
    # every parent directory of what we carry, created as a real directory
    for p in [*files, *links, *list(dirs)]:
        parent = os.path.dirname(p)
        while parent not in ("/", ""):
            dirs.add(parent)
            parent = os.path.dirname(parent)
    dirs.discard("/")
    for link in links:
        dirs.discard(link)
    return files, links, dirs


def _bundle_argv(wl: Workload, cwd: str) -> list[str]:
    argv = list(argv_of(wl))
    exe = argv[0]
    if "/" not in exe:
        found = which(exe)
        if not found:
            raise PerflabError(f"command {exe!r} not found on PATH: give its path")
        argv[0] = found
    elif not exe.startswith("/"):
        argv[0] = os.path.normpath(os.path.join(cwd, exe))
    return argv


class _Packing(Tracing):
    """The bundle's Executor: the traced run as footprint's; the reference run with all of its
    stdout read (run_captured), its checksum, first lines and metrics kept in health: what the
    manifest records, so a resumed campaign packs from the stored runs."""

    def __init__(self, executor: Any, seccomp: bool, tmpdir: str, patterns: list[dict]) -> None:
        super().__init__(executor, seccomp, tmpdir)
        self.patterns = patterns

    def run(self, spec: RunSpec) -> RunResult:
        if (spec.params or {}).get("mode") != REFERENCE:
            return super().run(spec)
        result, out, err = run_captured(list(spec.argv), cwd=spec.cwd, env=dict(spec.env or {}) or None,
                                        timeout=spec.timeout)
        result.health[REFERENCE] = {"exit_code": result.exit_code, "stdout_sha256": sha256_of(out),
                                    "stdout_head": out.splitlines()[:REFERENCE_LINES],
                                    "metrics": metrics_of(self.patterns, out, err), "wall_s": result.wall_s}
        return result


def plan(config: BundleConfig, machine: Any = None) -> list[RunSpec]:
    """One traced run (pinned, as footprint traces) and one reference run of the command as the
    bundle's run.sh will run it (its output kept in the manifest)."""
    wl = config.workload
    cpu = config.cpu if config.cpu is not None else default_cpu()
    argv = _bundle_argv(wl, os.path.abspath(wl.cwd or os.getcwd()))
    return [wl.spec(argv=argv_of(wl), shell=False, cpus=(cpu,), timeout=config.timeout,
                    params={"mode": TRACED, "cpu": cpu}),
            wl.spec(argv=tuple(argv), shell=False, timeout=config.timeout, params={"mode": REFERENCE})]


@dataclass
class Packed:
    """What went into the archive."""

    files: int
    links: int
    dirs: int
    unpacked_bytes: int
    archive_bytes: int


def execute(config: BundleConfig, session: Session, machine: Any = None) -> BundleResult:
    """Trace the workload, check the budget, run it for the reference output, pack what it used
    with run.sh and a manifest into a tar.gz; the runs through the session (a resume replays them)."""
    if strace.strace_path() is None:
        raise strace_missing()
    wl = config.workload
    cwd = os.path.abspath(wl.cwd or os.getcwd())
    traced_spec, reference_spec = plan(config, machine)
    patterns = [{"regex": m.regex, "stream": m.stream} for m in wl.metrics]
    tmpdir = tempfile.mkdtemp(prefix="perflab-bundle-")
    packing = _Packing(session.executor, config.seccomp and strace.seccomp_bpf_supported(), tmpdir, patterns)
    runs = Session(packing, session.store, session.campaign_id, session.progress, resumed=session.resumed)
    try:
        traced = runs.run(traced_spec)
        if not traced.ok:
            raise PerflabError(f"traced run of {wl.name} failed (exit {traced.exit_code}): "
                               f"{(traced.stderr_tail or '').strip()[-200:]}; check that it runs on its own")
        used, failed, _ = trace_of(traced)
        files, links, dirs = needed_set(used, config.include, cwd)
        unpacked = sum(files.values())
        if config.budget_bytes is not None and unpacked > config.budget_bytes:
            tops = ", ".join(f"{t.top} {format_size(t.bytes)}" for t in by_top_dir(used)[:4])
            raise PerflabError(
                f"bundle needs {format_size(unpacked)} ({len(files)} files: {tops}), over the budget of "
                f"{format_size(config.budget_bytes)}; raise --budget or slim the workload"
            )
        reference = runs.run(reference_spec)
    finally:
        session.executed += runs.executed
        session.replayed += runs.replayed
        shutil.rmtree(tmpdir, ignore_errors=True)
    argv = list(reference_spec.argv)
    manifest = {
        "format": FORMAT, "workload": wl.name, "argv": argv, "cwd": cwd, "env": dict(wl.env),
        "metrics": patterns, "checksum_metric": wl.checksum_metric,
        "primary_metric": wl.primary_metric,
        "files": [{"path": p, "size": s, "sha256": _file_sha(p)} for p, s in sorted(files.items())],
        "links": [{"path": p, "target": t} for p, t in sorted(links.items())],
        "dirs": sorted(dirs), "reference": reference.health[REFERENCE],
        "failed_lookups": [f.path for f in failed],
        "unpacked_bytes": unpacked,
    }
    write_archive(config.output, manifest, runner_script(argv, cwd, dict(wl.env), wl.name))
    if not any(a.kind == "bundle" for a in session.store.artifacts(session.campaign_id)):
        session.store.add_artifact(session.campaign_id, "bundle", config.output,
                                   {"files": len(files), "unpacked_bytes": unpacked})
    packed = Packed(len(files), len(links), len(dirs), unpacked, os.path.getsize(config.output))
    return analyse(config, [traced, reference], packed, isolation_available())


def analyse(config: BundleConfig, runs: list[RunResult], packed: Packed, isolation_here: str | None) -> BundleResult:
    """The bundle's result from its two runs (traced, reference) and what was packed."""
    traced, reference = runs
    return BundleResult(
        output=os.path.abspath(config.output), files=packed.files, links=packed.links, dirs=packed.dirs,
        unpacked_bytes=packed.unpacked_bytes, archive_bytes=packed.archive_bytes, isolation_here=isolation_here,
        reference=reference.health[REFERENCE], by_top=by_top_dir(trace_of(traced)[0]),
        given_output=config.output, budget_bytes=config.budget_bytes, runs=len(runs),
    )
