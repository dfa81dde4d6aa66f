"""strace as a tool: the command line to trace file and exec calls, and a parser for its output.

The parser copes with what ``strace -f -y -o FILE`` really writes: a pid before every line,
calls split across lines by other pids (``<unfinished ...>`` / ``<... NAME resumed>``), C-escaped
quoted strings (``\\"``, ``\\n``, octal ``\\NNN``, ``\\xHH``), ``fd</path>`` decorations, and
signal / exit lines to skip.
"""

from __future__ import annotations

import functools
import re
import subprocess
from dataclasses import dataclass

from perflab.startup import which

# Syscalls traced for a footprint: every call taking a file name (%file: open, stat, access,
# execve, readlink, chdir, ...) plus what keeps the per-process cwd right for relative paths.
TRACE_SET = "%file,fchdir,clone,clone3,fork,vfork"


@functools.lru_cache(maxsize=None)
def strace_path() -> str | None:
    return which("strace")


@functools.lru_cache(maxsize=None)
def seccomp_bpf_supported() -> bool:
    """strace >= 5.3 can filter with seccomp-bpf: untraced calls then cost nothing."""
    exe = strace_path()
    if exe is None:
        return False
    try:
        proc = subprocess.run([exe, "--seccomp-bpf", "-f", "-qq", "-o", "/dev/null", "-e",
                               "trace=execve", "true"], capture_output=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return proc.returncode == 0


def strace_argv(out_path: str, seccomp: bool = True) -> list[str]:
    """The strace prefix that writes a file+exec trace of a command and its children."""
    exe = strace_path() or "strace"
    argv = [exe, "-f", "-qq", "-y", "-s", "4096", "-e", f"trace={TRACE_SET}", "-e", "signal=none",
            "-o", out_path]
    if seccomp and seccomp_bpf_supported():
        argv.insert(1, "--seccomp-bpf")
    return argv + ["--"]


@dataclass(frozen=True)
class Syscall:
    """One completed system call as strace printed it."""

    pid: int
    name: str
    args: tuple[str, ...]  # raw argument texts, top-level split
    ret: str  # "3</etc/passwd>", "0", "-1", "?"
    errno: str | None  # "ENOENT" when it failed

    @property
    def failed(self) -> bool:
        return self.errno is not None or self.ret.startswith("-")

    def string_arg(self, index: int) -> str | None:
        """Argument `index` decoded as a C string, or None when it is not a string."""
        if index >= len(self.args):
            return None
        return decode_c_string(self.args[index])

    def fd_path(self, index: int) -> str | None:
        """The path strace -y printed for an fd argument (``3</usr/lib>``), or None."""
        if index >= len(self.args):
            return None
        return decorated_path(self.args[index])

    @property
    def ret_path(self) -> str | None:
        return decorated_path(self.ret)

    @property
    def ret_int(self) -> int | None:
        m = re.match(r"-?\d+", self.ret)
        return int(m.group(0)) if m else None


_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "v": "\v", "f": "\f", "a": "\a", "b": "\b",
            '"': '"', "\\": "\\", "'": "'", "?": "?"}


def decode_c_string(text: str) -> str | None:
    """Decode strace's quoted string (``"a\\"b\\n"``, maybe followed by ``...``) to str."""
    text = text.strip()
    if not text.startswith('"'):
        return None
    out = bytearray()
    i, n = 1, len(text)
    while i < n:
        c = text[i]
        if c == '"':
            return out.decode("utf-8", errors="surrogateescape")
        if c == "\\" and i + 1 < n:
            nxt = text[i + 1]
            if nxt == "x":
                m = re.match(r"[0-9a-fA-F]{1,2}", text[i + 2:])
                if m:
                    out.append(int(m.group(0), 16))
                    i += 2 + len(m.group(0))
                    continue
            if nxt in "01234567":
                m = re.match(r"[0-7]{1,3}", text[i + 1:])
                assert m
                out.append(int(m.group(0), 8) & 0xFF)
                i += 1 + len(m.group(0))
                continue
            out.extend(_ESCAPES.get(nxt, nxt).encode("utf-8", errors="surrogateescape"))
            i += 2
            continue
        out.extend(c.encode("utf-8", errors="surrogateescape"))
        i += 1
    return out.decode("utf-8", errors="surrogateescape")  # unterminated: take what is there


def decorated_path(text: str) -> str | None:
    """``3</usr/lib/x.so>`` -> ``/usr/lib/x.so`` (strace -y); None for an undecorated value."""
    m = re.match(r"^\s*(?:-?\d+|AT_FDCWD)<(.*)>\s*$", text, re.S)
    if not m:
        return None
    inner = m.group(1)
    # sockets and pipes are decorated too (socket:[123]); only real paths start with '/'
    if not inner.startswith("/"):
        return None
    return decode_c_string('"' + inner.replace('"', '\\"') + '"')


def split_args(text: str) -> tuple[tuple[str, ...], str]:
    """Split ``a, "b,c", {x, y})  = 3`` into top-level args and the text after the ')'."""
    args: list[str] = []
    depth, i, start, n = 0, 0, 0, len(text)
    while i < n:
        c = text[i]
        if c == '"':
            i += 1
            while i < n and text[i] != '"':
                i += 2 if text[i] == "\\" else 1
        elif c in "([{":
            depth += 1
        elif c in ")]}":
            if depth == 0:
                last = text[start:i].strip()
                if last or args:
                    args.append(last)
                return tuple(args), text[i + 1:]
            depth -= 1
        elif c == "<" and depth == 0 and i > 0 and (text[i - 1].isalnum() or text[i - 1] == "_"):
            # fd decoration 3</path,with,commas> or AT_FDCWD</cwd>: skip to the closing '>'
            j = text.find(">", i)
            i = j if j != -1 else n
        elif c == "," and depth == 0:
            args.append(text[start:i].strip())
            start = i + 1
        i += 1
    return tuple(a for a in [*args, text[start:].strip()] if a), ""


_LINE = re.compile(r"^(?:(?:\[pid\s+)?(?P<pid>\d+)\]?\s+)?(?P<rest>.*)$", re.S)
_CALL = re.compile(r"^(?P<name>[a-z_0-9]+)\((?P<tail>.*)$", re.S)
_RESUMED = re.compile(r"^<\.\.\. (?P<name>[a-z_0-9]+) resumed>\s?(?P<tail>.*)$", re.S)
# "= 3</path with spaces>", "= -1 ENOENT (No such file or directory)", "= 0x7f..", "= ?"
_RET = re.compile(r"^\s*=\s*(?P<ret>-?\w+<.*>|\S+)(?:\s+(?P<errno>E[A-Z0-9]+)\b.*)?$", re.S)


def parse(text: str) -> list[Syscall]:
    """Completed syscalls of a trace, unfinished/resumed halves joined per pid."""
    pending: dict[int, str] = {}
    calls: list[Syscall] = []
    for raw in text.splitlines():
        m = _LINE.match(raw)
        if not m:
            continue
        pid = int(m.group("pid") or 0)
        rest = m.group("rest").rstrip()
        if not rest or rest.startswith(("+++", "---", "strace:")):
            continue
        r = _RESUMED.match(rest)
        if r:
            head = pending.pop(pid, None)
            if head is None:
                continue  # the first half was before the trace started
            tail = r.group("tail")
            # strace 6 prints "<... openat resumed>, O_RDONLY) = 3": args continue after the head
            rest = head + tail
        if rest.endswith("<unfinished ...>"):
            pending[pid] = rest[: -len("<unfinished ...>")].rstrip()
            continue
        c = _CALL.match(rest)
        if not c:
            continue
        args, after = split_args(c.group("tail"))
        ret = _RET.match(after)
        if not ret:
            continue  # e.g. exit_group's "= ?" with nothing, or a truncated last line
        calls.append(Syscall(pid=pid, name=c.group("name"), args=args, ret=ret.group("ret"),
                             errno=ret.group("errno")))
    return calls
