"""What a file path really is on this machine: symlinks resolved one component at a time, and
the interpreter the kernel opens to execute a file (ELF PT_INTERP or a script's #! line)."""

from __future__ import annotations

import os
import stat as stat_mod
from typing import Literal


def join_path(base: str, path: str) -> str:
    return os.path.normpath(os.path.join(base, path)) if not path.startswith("/") else os.path.normpath(path)


def resolve_links(path: str, limit: int = 40) -> tuple[str, list[tuple[str, str]]]:
    """Resolve every symlink of an absolute path component by component.

    Returns the real path and each (link, target text) met, where every link's parent is
    itself a real directory, so a bundle can recreate the links where they really are.
    """
    links: list[tuple[str, str]] = []
    parts = [p for p in path.split("/") if p]
    real = "/"
    hops = 0
    while parts:
        part = parts.pop(0)
        if part == ".":
            continue
        if part == "..":
            real = os.path.dirname(real) or "/"
            continue
        candidate = os.path.join(real, part)
        try:
            st = os.lstat(candidate)
        except OSError:
            # missing: keep the rest as written
            return os.path.normpath(os.path.join(candidate, *parts)), links
        if stat_mod.S_ISLNK(st.st_mode):
            hops += 1
            if hops > limit:
                return candidate, links
            target = os.readlink(candidate)
            if (candidate, target) not in links:
                links.append((candidate, target))
            new = [p for p in target.split("/") if p]
            if target.startswith("/"):
                real = "/"
            parts = new + parts
            continue
        real = candidate
    return real, links


def interpreters(path: str) -> list[str]:
    """Files the kernel itself opens to exec `path`: ELF PT_INTERP or a script's #! line."""
    try:
        with open(path, "rb") as f:
            head = f.read(4096)
            if head.startswith(b"#!"):
                line = head[2:].split(b"\n", 1)[0].strip()
                return [line.split()[0].decode(errors="replace")] if line else []
            if head[:4] != b"\x7fELF":
                return []
            is64 = head[4] == 2
            little = head[5] == 1
            order: Literal["little", "big"] = "little" if little else "big"
            num = lambda off, n: int.from_bytes(head[off:off + n], order)  # noqa: E731 - a one-line reader for the header fields below
            if is64:
                phoff, phentsize, phnum = num(32, 8), num(54, 2), num(56, 2)
            else:
                phoff, phentsize, phnum = num(28, 4), num(42, 2), num(44, 2)
            for i in range(phnum):
                f.seek(phoff + i * phentsize)
                ph = f.read(phentsize)
                p = lambda off, n: int.from_bytes(ph[off:off + n], order)  # noqa: E731 - as above, for the program headers
                if p(0, 4) != 3:  # PT_INTERP
                    continue
                off, size = (p(8, 8), p(32, 8)) if is64 else (p(4, 4), p(16, 4))
                f.seek(off)
                return [f.read(size).rstrip(b"\0").decode(errors="replace")]
    except OSError:
        return []
    return []
