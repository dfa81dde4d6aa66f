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
import io
import json
import os
import shlex
import shutil
import stat as stat_mod
import subprocess
import tarfile
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any, Iterable

from perflab.model import Workload
from perflab.errors import PerflabError
from perflab.model import MetricPattern, RunResult
from perflab.studies import footprint as fp

MANIFEST = "perflab-bundle.json"
RUNNER = "run.sh"
ROOT = "root"
FORMAT = 1
ISOLATIONS = ("bwrap", "unshare", "chroot")


class UnsafeArchive(PerflabError):
    """An archive member would write outside the target directory."""


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


# --- running with captured output ------------------------------------------------------------

def run_captured(argv: list[str], cwd: str | None = None, env: dict | None = None,
                 timeout: float | None = None) -> tuple[RunResult, str, str]:
    """Run argv, keeping all of stdout (to compare outputs) and rusage from wait4."""
    full_env = None if env is None else {**os.environ, **env}
    try:
        p = subprocess.Popen(argv, cwd=cwd, env=full_env, stdin=subprocess.DEVNULL,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    except OSError as exc:
        raise PerflabError(f"cannot run {argv[0]}: {exc.strerror}; check the command") from None
    start = time.monotonic_ns()
    chunks: dict[str, bytes] = {}

    def drain(name: str, stream: Any) -> None:
        chunks[name] = stream.read()

    threads = [threading.Thread(target=drain, args=(n, s)) for n, s in (("out", p.stdout), ("err", p.stderr))]
    for t in threads:
        t.start()
    timed_out = False
    deadline = None if timeout is None else time.monotonic() + timeout
    while True:
        pid, status, ru = os.wait4(p.pid, os.WNOHANG)
        if pid:
            break
        if deadline is not None and time.monotonic() > deadline:
            p.kill()
            timed_out = True
        time.sleep(0.002)
    end = time.monotonic_ns()
    p.returncode = 0  # reaped by wait4 above; keep Popen from waiting again
    for t in threads:
        t.join()
    out = chunks.get("out", b"").decode(errors="replace")
    err = chunks.get("err", b"").decode(errors="replace")
    code = os.waitstatus_to_exitcode(status)
    result = RunResult(
        wall_ns=end - start, user_s=ru.ru_utime, sys_s=ru.ru_stime, maxrss_kb=ru.ru_maxrss,
        minflt=ru.ru_minflt, majflt=ru.ru_majflt, nvcsw=ru.ru_nvcsw, nivcsw=ru.ru_nivcsw,
        exit_code=code if code >= 0 else None, signal=-code if code < 0 else None, timed_out=timed_out,
        start_ns=start, end_ns=end,
        stdout_tail="\n".join(out.splitlines()[-5:]), stderr_tail="\n".join(err.splitlines()[-20:]),
    )
    return result, out, err


def _extract(patterns: Iterable[dict], out: str, err: str) -> dict[str, float]:
    from perflab.measure.metrics import extract

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


# --- isolation -------------------------------------------------------------------------------

def isolation_available() -> str | None:
    """The isolation run.sh would pick on this machine."""
    if shutil.which("bwrap"):
        try:
            if subprocess.run(["bwrap", "--bind", "/", "/", "--unshare-all", "true"],
                              capture_output=True, timeout=20).returncode == 0:
                return "bwrap"
        except (OSError, subprocess.TimeoutExpired):
            pass
    if os.geteuid() == 0 and shutil.which("unshare"):
        return "unshare"
    if os.geteuid() == 0 and shutil.which("chroot"):
        return "chroot"
    return None


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
            dirs.add(fp.resolve_links(p)[0])
        else:
            extra.append(p)
    for p in extra:
        real, chain = fp.resolve_links(p)
        for link, target in chain:
            links[link] = _rel_target(link, target)
        if os.path.isfile(real):
            files[real] = os.path.getsize(real)
    if cwd:
        dirs.add(fp.resolve_links(cwd)[0])
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
        found = shutil.which(exe)
        if not found:
            raise PerflabError(f"command {exe!r} not found on PATH: give its path")
        argv[0] = found
    elif not exe.startswith("/"):
        argv[0] = os.path.normpath(os.path.join(cwd, exe))
    return argv


def run_bundle(config: BundleConfig, executor: Any, store: Any, console: Any = None) -> BundleResult:
    """Trace the workload, pack what it used with run.sh and a manifest into a tar.gz."""
    wl = config.workload
    cwd = os.path.abspath(wl.cwd or os.getcwd())
    argv = _bundle_argv(wl, cwd)
    cpu = config.cpu if config.cpu is not None else fp.default_cpu()
    seccomp = config.seccomp and fp.strace.seccomp_bpf_supported()
    campaign = store.start_campaign("bundle", {
        "workload": wl.name, "argv": argv, "cwd": cwd, "output": os.path.abspath(config.output),
        "budget_bytes": config.budget_bytes, "include": list(config.include), "cpu": cpu,
    })
    tmpdir = tempfile.mkdtemp(prefix="perflab-bundle-")
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
            tops = ", ".join(f"{t.top} {fp._size(t.bytes)}" for t in trace_result.by_top[:4])
            raise PerflabError(
                f"bundle needs {fp._size(unpacked)} ({len(files)} files: {tops}), over the budget of "
                f"{fp._size(config.budget_bytes)}; raise --budget or slim the workload"
            )
        # The reference output, kept in the manifest for a verify where the original is gone.
        ref_res, out, err = run_captured(argv, cwd=cwd, env=dict(wl.env) or None, timeout=config.timeout)
        store.add_measurement(campaign, ref_res, {"mode": "reference"}, label=wl.name)
        patterns = [{"regex": m.regex, "stream": m.stream} for m in wl.metrics]
        reference = {"exit_code": ref_res.exit_code, "stdout_sha256": _sha(out),
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
        _write_archive(config.output, manifest, runner_script(argv, cwd, dict(wl.env), wl.name))
        size = os.path.getsize(config.output)
        store.add_artifact(campaign, "bundle", config.output, {"files": len(files), "unpacked_bytes": unpacked})
        result = BundleResult(
            output=os.path.abspath(config.output), files=len(files), links=len(links), dirs=len(dirs),
            unpacked_bytes=unpacked, archive_bytes=size, isolation_here=isolation_available(),
            reference=reference, campaign_id=campaign, by_top=[t.__dict__ for t in trace_result.by_top],
        )
        summary = dict(result.__dict__)
        summary["verdict"] = (f"{len(files)} files, {fp._size(unpacked)} unpacked, "
                              f"{fp._size(size)} archive: {result.output}")
        store.finish_campaign(campaign, "done", summary)
        return result
    except KeyboardInterrupt:
        store.finish_campaign(campaign, "interrupted")
        raise
    except BaseException as exc:
        store.finish_campaign(campaign, "failed", {"error": str(exc)})
        raise
    finally:
        shutil.rmtree(tmpdir, ignore_errors=True)


def _write_archive(output: str, manifest: dict, script: str) -> None:
    out = Path(output)
    if not out.parent.is_dir():
        raise PerflabError(f"cannot write {output}: directory {out.parent} does not exist")
    partial = out.with_name(out.name + ".partial")

    def add_bytes(tar: tarfile.TarFile, name: str, data: bytes, mode: int) -> None:
        info = tarfile.TarInfo(name)
        info.size, info.mode, info.mtime = len(data), mode, int(time.time())
        tar.addfile(info, io.BytesIO(data))

    def norm(info: tarfile.TarInfo) -> tarfile.TarInfo:
        info.uid = info.gid = 0
        info.uname = info.gname = "root"
        info.mode &= 0o755 if info.isdir() or info.mode & 0o111 else 0o644
        return info

    try:
        _pack(partial, manifest, script, add_bytes, norm)
        os.replace(partial, out)
    except OSError as exc:
        partial.unlink(missing_ok=True)
        raise PerflabError(f"cannot write {output}: {exc.strerror or exc}; nothing was written "
                           "(choose another --output)") from None


def _pack(partial: Path, manifest: dict, script: str, add_bytes: Any, norm: Any) -> None:
    with tarfile.open(partial, "w:gz", compresslevel=6) as tar:
        add_bytes(tar, RUNNER, script.encode(), 0o755)
        add_bytes(tar, MANIFEST, json.dumps(manifest, indent=1, sort_keys=True).encode(), 0o644)
        for d in sorted({"proc", "dev", "tmp", *(x.lstrip("/") for x in manifest["dirs"])}):
            info = tarfile.TarInfo(f"{ROOT}/{d}")
            info.type, info.mode, info.mtime = tarfile.DIRTYPE, 0o755, int(time.time())
            tar.addfile(info)
        for f in manifest["files"]:
            tar.add(f["path"], arcname=f"{ROOT}{f['path']}", recursive=False, filter=norm)
        for link in manifest["links"]:
            info = tarfile.TarInfo(f"{ROOT}{link['path']}")
            info.type, info.linkname, info.mode = tarfile.SYMTYPE, link["target"], 0o777
            tar.addfile(info)


# --- safe unpacking --------------------------------------------------------------------------

def _parts(name: str) -> tuple[str, ...]:
    return tuple(p for p in PurePosixPath(name).parts if p not in (".", ""))


def check_members(members: list[tarfile.TarInfo]) -> None:
    """Raise UnsafeArchive unless every member stays inside the target directory."""
    links: dict[tuple[str, ...], str] = {}
    seen: set[tuple[str, ...]] = set()
    for m in members:
        name = m.name
        if name.startswith("/") or (len(name) > 1 and name[1] == ":"):
            raise UnsafeArchive(f"archive member {name!r} has an absolute path: refusing to unpack")
        parts = _parts(name)
        if ".." in parts:
            raise UnsafeArchive(f"archive member {name!r} contains '..': refusing to unpack")
        if "\0" in name:
            raise UnsafeArchive(f"archive member {name!r} contains a NUL byte: refusing to unpack")
        if not (m.isreg() or m.isdir() or m.issym()):
            kind = ("hard link" if m.islnk() else "device" if (m.ischr() or m.isblk())
                    else "FIFO" if m.isfifo() else "special file")
            raise UnsafeArchive(f"archive member {name!r} is a {kind}: refusing to unpack")
        if parts in seen and not m.isdir():
            raise UnsafeArchive(f"archive member {name!r} appears twice: refusing to unpack")
        seen.add(parts)
        if m.issym():
            if not m.linkname or m.linkname.startswith("/"):
                raise UnsafeArchive(
                    f"archive symlink {name!r} -> {m.linkname!r} is absolute (points outside): refusing to unpack")
            links[parts] = m.linkname
    for m in members:
        parts = _parts(m.name)
        for i in range(1, len(parts)):
            if parts[:i] in links:
                raise UnsafeArchive(
                    f"archive member {m.name!r} lies under symlink {'/'.join(parts[:i])!r}: refusing to unpack")
        if m.issym():
            _check_link(parts, m.linkname, links)


def _check_link(parts: tuple[str, ...], target: str, links: dict[tuple[str, ...], str]) -> None:
    """Follow a symlink through the archive's own links; it must never climb above the root."""
    stack = list(parts[:-1])
    todo = [p for p in target.split("/") if p not in ("", ".")]
    hops = 0
    while todo:
        comp = todo.pop(0)
        if comp == "..":
            if not stack:
                raise UnsafeArchive(
                    f"archive symlink {'/'.join(parts)!r} -> {target!r} points outside the target: refusing to unpack")
            stack.pop()
            continue
        stack.append(comp)
        key = tuple(stack)
        if key in links:
            hops += 1
            if hops > 40:
                raise UnsafeArchive(f"archive symlink {'/'.join(parts)!r} loops: refusing to unpack")
            inner = links[key]
            if inner.startswith("/"):
                raise UnsafeArchive(f"archive symlink {'/'.join(key)!r} is absolute: refusing to unpack")
            stack.pop()
            todo = [p for p in inner.split("/") if p not in ("", ".")] + todo


def safe_unpack(archive: str, dest: str) -> list[str]:
    """Unpack a tar archive into an empty `dest`, checking every member first."""
    try:
        tar = tarfile.open(archive, "r:*")
    except (OSError, tarfile.TarError) as exc:
        raise PerflabError(f"cannot read bundle {archive}: {exc}; give a .tar.gz made by perflab bundle") from None
    with tar:
        members = tar.getmembers()
        check_members(members)  # everything is checked before the first byte is written
        d = Path(dest)
        if d.exists() and any(d.iterdir()):
            raise PerflabError(f"{dest} is not empty: unpack into a fresh directory")
        d.mkdir(parents=True, exist_ok=True)
        real_dest = os.path.realpath(d)
        names = []
        symlinks = []
        for m in members:
            parts = _parts(m.name)
            if not parts:
                continue
            target = os.path.join(real_dest, *parts)
            if m.isdir():
                os.makedirs(target, exist_ok=True)
                os.chmod(target, 0o755)
            elif m.isreg():
                os.makedirs(os.path.dirname(target), exist_ok=True)
                if os.path.realpath(os.path.dirname(target)) != os.path.dirname(target):
                    raise UnsafeArchive(f"archive member {m.name!r} would be written through a link")
                src = tar.extractfile(m)
                fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
                with os.fdopen(fd, "wb") as out, src:
                    shutil.copyfileobj(src, out)
                # no setuid/setgid/sticky from an archive
                os.chmod(target, m.mode & 0o777)
            elif m.issym():
                symlinks.append((m.linkname, target))
            names.append(m.name)
        # links last, so no file is ever written through one
        for linkname, target in symlinks:
            os.makedirs(os.path.dirname(target), exist_ok=True)
            os.symlink(linkname, target)
        return names


# --- verify ----------------------------------------------------------------------------------

def run_verify(config: VerifyConfig, store: Any, console: Any = None) -> VerifyResult:
    """Unpack into a fresh directory, run it isolated, compare with a normal run."""
    workdir = config.workdir or tempfile.mkdtemp(prefix="perflab-verify-")
    campaign = store.start_campaign("bundle-verify", {
        "archive": os.path.abspath(config.archive), "workdir": workdir, "isolation": config.isolation})
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
            normal = {"stdout_sha256": _sha(n_out), "metrics": _extract(patterns, n_out, n_err)}
            source = "normal run on this machine"
        else:
            normal = manifest["reference"]
            source = "reference recorded at bundle time"
        b_metrics = _extract(patterns, b_out, b_err)
        checksum = manifest.get("checksum_metric")
        if checksum and checksum in normal.get("metrics", {}):
            compared = f"checksum metric {checksum}"
            bv, nv = b_metrics.get(checksum), normal["metrics"][checksum]
        else:
            compared = "stdout (sha256)"
            bv, nv = _sha(b_out), normal["stdout_sha256"]
        result = VerifyResult(
            archive=os.path.abspath(config.archive), workdir=workdir, isolation=how, compared=compared,
            bundle_value=str(bv), normal_value=str(nv), normal_source=source, same=bv == nv,
            bundle_wall_s=b_res.wall_s, normal_wall_s=n_res.wall_s if n_res else None,
            campaign_id=campaign,
        )
        summary = dict(result.__dict__)
        summary["verdict"] = (f"bundle output {'matches' if result.same else 'DIFFERS from'} the "
                              f"{source} ({compared}; isolated with {how})")
        store.finish_campaign(campaign, "done", summary)
        return result
    except KeyboardInterrupt:
        store.finish_campaign(campaign, "interrupted")
        raise
    except BaseException as exc:
        store.finish_campaign(campaign, "failed", {"error": str(exc)})
        raise
    finally:
        if not config.keep and not config.workdir:
            shutil.rmtree(workdir, ignore_errors=True)
