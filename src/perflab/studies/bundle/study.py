"""Bundle study: pack a workload's traced footprint with a one-touch runner; verify it elsewhere.

Seed 004 shipped the trigger to vendors on a live DVD: strace found the few files it needed,
and a wrapper script ran it. Here the bundle is a tar.gz holding ``root/`` (the needed files at
their real paths, symlinks recreated with relative targets), ``perflab-bundle.json`` (the
manifest: command, checksums, reference output) and ``run.sh``, which runs the workload with
``root/`` as its whole file system (bubblewrap, else unshare, else chroot).

Unpacking checks every member before writing anything: no absolute names, no ``..``, no
symlink that resolves (through other symlinks of the archive) outside the target, no hard
links, devices or FIFOs.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from perflab.errors import PerflabError
from perflab.model import MetricPattern, Workload
from perflab.measure.metrics import extract
from perflab.measure.capture import isolation_available, run_captured
from perflab.measure.interface import Executor
from perflab.platform.files import resolve_links
from perflab.platform.sysfs import format_size
from perflab.studies.footprint import study as fp
from perflab.studies.bundle.mismatch import mismatch_hint, output_differences
from perflab.studies.bundle.archive import MANIFEST, ROOT, RUNNER, safe_unpack, write_archive
from perflab.startup import which

FORMAT = 1
ISOLATIONS = ("bwrap", "unshare", "chroot")


@dataclass(frozen=True)


class BundleConfig:
    workload: Workload
    output: str
    budget_bytes: int | None = None  # unpacked size limit (the DVD's free space)
    cpu: int | None = None
    seccomp: bool = True
    include: tuple[str, ...] = ()  # extra files or directories to carry
    timeout: float | None = 600.0


@dataclass


class BundleResult:
    output: str
    files: int
    links: int
    dirs: int
    unpacked_bytes: int
    archive_bytes: int
    isolation_here: str | None
    reference: dict
    campaign_id: int | None = None
    by_top: list = field(default_factory=list)

    @property
    def verdict(self) -> str:
        return (f"{self.files} files, {format_size(self.unpacked_bytes)} unpacked, "
                f"{format_size(self.archive_bytes)} archive: {self.output}")


@dataclass(frozen=True)


class VerifyConfig:
    archive: str
    workdir: str | None = None  # where to unpack (must be empty or absent); default: a temp dir
    isolation: str | None = None  # force bwrap/unshare/chroot
    timeout: float | None = 600.0
    keep: bool = False


@dataclass


class VerifyResult:
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
    campaign_id: int | None = None
    differences: list[str] = field(default_factory=list)  # the first lines that differ, when known
    hint: str = ""  # what to compare instead, when the output differs

    @property
    def verdict(self) -> str:
        return (f"bundle output {'matches' if self.same else 'DIFFERS from'} the {self.normal_source} "
                f"({self.compared}; isolated with {self.isolation})")


REFERENCE_LINES = 200  # stdout lines kept in the manifest, to show a mismatch where the original is gone


def _summary(result: BundleResult | VerifyResult) -> dict[str, Any]:
    """What the campaign keeps: the result's fields and its verdict."""
    return {**result.__dict__, "verdict": result.verdict}


def _extract(patterns: Iterable[dict], out: str, err: str) -> dict[str, float]:
    pats = tuple(MetricPattern(**p) for p in patterns)
    return extract(pats, out, err) if pats else {}


def _sha(text: str) -> str:
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


def needed_set(result: fp.FootprintResult, include: Iterable[str] = (), cwd: str | None = None
               ) -> tuple[dict[str, int], dict[str, str], set[str]]:
    """(real file -> size, link -> relative target, directories) a bundle must recreate."""
    files: dict[str, int] = {}
    links: dict[str, str] = {}
    dirs: set[str] = set()
    for f in result.files:
        if f.kind == "virtual":
            continue
        for link, target in f.links:
            if not any(link == r or link.startswith(r + "/") for r in fp.VIRTUAL_ROOTS):
                links[link] = _rel_target(link, target)
        if f in result.needed():
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
    argv = list(fp._argv(wl))
    exe = argv[0]
    if "/" not in exe:
        found = which(exe)
        if not found:
            raise PerflabError(f"command {exe!r} not found on PATH: give its path")
        argv[0] = found
    elif not exe.startswith("/"):
        argv[0] = os.path.normpath(os.path.join(cwd, exe))
    return argv


def run_bundle(config: BundleConfig, executor: Executor, store: Any, console: Any = None) -> BundleResult:
    """Trace the workload, pack what it used with run.sh and a manifest into a tar.gz."""
    wl = config.workload
    cwd = os.path.abspath(wl.cwd or os.getcwd())
    argv = _bundle_argv(wl, cwd)
    cpu = config.cpu if config.cpu is not None else fp.default_cpu()
    seccomp = config.seccomp and fp.strace.seccomp_bpf_supported()
    tmpdir = tempfile.mkdtemp(prefix="perflab-bundle-")
    with store.open_campaign("bundle", {
        "workload": wl.name, "argv": argv, "cwd": cwd, "output": os.path.abspath(config.output),
        "budget_bytes": config.budget_bytes, "include": list(config.include), "cpu": cpu,
    }) as camp:
        campaign = camp.id
        try:
            res, calls = fp.trace(wl, executor, cpu, seccomp, os.path.join(tmpdir, "trace.txt"), config.timeout)
            store.add_measurement(campaign, res, {"mode": "traced", "cpu": cpu}, label=wl.name)
            if not res.ok:
                raise PerflabError(f"traced run of {wl.name} failed (exit {res.exit_code}): "
                                   f"{(res.stderr_tail or '').strip()[-200:]}; check that it runs on its own")
            files_used, failed = fp.analyse(calls, cwd)
            trace_result = fp.FootprintResult(
                workload=wl.name, argv=tuple(argv), cwd=cwd, cpu=cpu, seccomp=seccomp, files=files_used,
                failed=failed, by_top=fp.by_top_dir(files_used), total_files=0, total_bytes=0)
            files, links, dirs = needed_set(trace_result, config.include, cwd)
            unpacked = sum(files.values())
            if config.budget_bytes is not None and unpacked > config.budget_bytes:
                tops = ", ".join(f"{t.top} {format_size(t.bytes)}" for t in trace_result.by_top[:4])
                raise PerflabError(
                    f"bundle needs {format_size(unpacked)} ({len(files)} files: {tops}), over the budget of "
                    f"{format_size(config.budget_bytes)}; raise --budget or slim the workload"
                )
            # The reference output, kept in the manifest for a verify where the original is gone.
            ref_res, out, err = run_captured(argv, cwd=cwd, env=dict(wl.env) or None, timeout=config.timeout)
            store.add_measurement(campaign, ref_res, {"mode": "reference"}, label=wl.name)
            patterns = [{"regex": m.regex, "stream": m.stream} for m in wl.metrics]
            reference = {"exit_code": ref_res.exit_code, "stdout_sha256": _sha(out),
                         "stdout_head": out.splitlines()[:REFERENCE_LINES],
                         "metrics": _extract(patterns, out, err), "wall_s": ref_res.wall_s}
            manifest = {
                "format": FORMAT, "workload": wl.name, "argv": argv, "cwd": cwd, "env": dict(wl.env),
                "metrics": patterns, "checksum_metric": wl.checksum_metric,
                "primary_metric": wl.primary_metric,
                "files": [{"path": p, "size": s, "sha256": _file_sha(p)} for p, s in sorted(files.items())],
                "links": [{"path": p, "target": t} for p, t in sorted(links.items())],
                "dirs": sorted(dirs), "reference": reference,
                "failed_lookups": [f.path for f in failed],
                "unpacked_bytes": unpacked,
            }
            write_archive(config.output, manifest, runner_script(argv, cwd, dict(wl.env), wl.name))
            size = os.path.getsize(config.output)
            store.add_artifact(campaign, "bundle", config.output, {"files": len(files), "unpacked_bytes": unpacked})
            result = BundleResult(
                output=os.path.abspath(config.output), files=len(files), links=len(links), dirs=len(dirs),
                unpacked_bytes=unpacked, archive_bytes=size, isolation_here=isolation_available(),
                reference=reference, campaign_id=campaign, by_top=[t.__dict__ for t in trace_result.by_top],
            )
            camp.summary = _summary(result)
            return result
        finally:
            shutil.rmtree(tmpdir, ignore_errors=True)


# --- verify ----------------------------------------------------------------------------------


def run_verify(config: VerifyConfig, store: Any, console: Any = None) -> VerifyResult:
    """Unpack into a fresh directory, run it isolated, compare with a normal run."""
    workdir = config.workdir or tempfile.mkdtemp(prefix="perflab-verify-")
    with store.open_campaign("bundle-verify", {
        "archive": os.path.abspath(config.archive), "workdir": workdir, "isolation": config.isolation}) as camp:
        campaign = camp.id
        try:
            safe_unpack(config.archive, workdir)
            try:
                manifest = json.loads(Path(workdir, MANIFEST).read_text())
            except (OSError, ValueError):
                raise PerflabError(f"{config.archive} has no readable {MANIFEST}: not a perflab bundle") from None
            env = {"PERFLAB_ISOLATION": config.isolation} if config.isolation else None
            b_res, b_out, b_err = run_captured(["/bin/sh", os.path.join(workdir, RUNNER)], env=env,
                                               timeout=config.timeout)
            store.add_measurement(campaign, b_res, {"mode": "bundle"}, label=manifest["workload"])
            how = "unknown"
            for line in b_err.splitlines():
                if line.startswith("run.sh: isolating with "):
                    how = line.rsplit(" ", 1)[-1]
            if not b_res.ok:
                tail = " ".join(b_err.strip().splitlines()[-2:])
                raise PerflabError(f"the bundle failed to run isolated ({how}, exit {b_res.exit_code}): {tail}")
            argv, cwd = manifest["argv"], manifest["cwd"]
            patterns = manifest.get("metrics", [])
            n_res = None
            if os.path.exists(argv[0]) and os.path.isdir(cwd):
                n_res, n_out, n_err = run_captured(argv, cwd=cwd, env=manifest.get("env") or None,
                                                   timeout=config.timeout)
                store.add_measurement(campaign, n_res, {"mode": "normal"}, label=manifest["workload"])
                normal: dict[str, Any] = {"stdout_sha256": _sha(n_out), "metrics": _extract(patterns, n_out, n_err)}
                source = "normal run on this machine"
            else:
                normal = manifest["reference"]
                source = "reference recorded at bundle time"
            b_metrics = _extract(patterns, b_out, b_err)
            checksum = manifest.get("checksum_metric")
            if checksum and checksum in normal.get("metrics", {}):
                compared = f"checksum metric {checksum}"
                bv: object
                nv: object
                bv, nv = b_metrics.get(checksum), normal["metrics"][checksum]
            else:
                compared = "stdout (sha256)"
                bv, nv = _sha(b_out), normal["stdout_sha256"]
            differences, hint = [], ""
            if bv != nv and not compared.startswith("checksum"):
                n_text = n_out if n_res is not None else "\n".join(normal.get("stdout_head") or [])
                if n_res is not None or normal.get("stdout_head"):
                    differences = output_differences(b_out, n_text)
                names = [n for m in patterns for n in re.compile(m["regex"]).groupindex]
                hint = mismatch_hint(differences, names)
            result = VerifyResult(
                archive=os.path.abspath(config.archive), workdir=workdir, isolation=how, compared=compared,
                bundle_value=str(bv), normal_value=str(nv), normal_source=source, same=bv == nv,
                bundle_wall_s=b_res.wall_s, normal_wall_s=n_res.wall_s if n_res else None,
                campaign_id=campaign, differences=differences, hint=hint,
            )
            camp.summary = _summary(result)
            return result
        finally:
            if not config.keep and not config.workdir:
                shutil.rmtree(workdir, ignore_errors=True)
