"""A bundle's archive: packed with normalised owners and modes, unpacked only when every member
is safe (no absolute names, no ``..``, no symlink that resolves outside the target, no hard
links, devices or FIFOs), checked before anything is written.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import tarfile
import time
import zlib
from pathlib import Path, PurePosixPath
from typing import Any

from perflab.errors import PerflabError

MANIFEST = "perflab-bundle.json"
RUNNER = "run.sh"
ROOT = "root"


class UnsafeArchive(PerflabError):
    """An archive member would write outside the target directory."""


def write_archive(output: str, manifest: dict, script: str) -> None:
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
        # A truncated gzip shows only when the members are read: EOFError or zlib.error.
        members = tar.getmembers()
    except (OSError, EOFError, zlib.error, tarfile.TarError) as exc:
        what = " ".join(str(exc).split()) or type(exc).__name__
        raise PerflabError(f"cannot read bundle {archive}: {what}; give a whole .tar.gz made by "
                           "perflab bundle") from None
    with tar:
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
                assert src is not None  # a regular member always has its data
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
