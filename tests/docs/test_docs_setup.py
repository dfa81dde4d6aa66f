"""What a reader needs to paste the docs' examples is what the set-up gives: every program a '$ '
line runs is perflab, a shell builtin, part of a base Debian, a file of the repository, or a
package scripts/install-system-packages.sh installs; and no docs file carries a path of the
machine that recorded it (its home directory, its checkout)."""

from __future__ import annotations

import re

from tests.docs_pages import ROOT, _simple_commands, blocks, pages

INSTALL = ROOT / "scripts" / "install-system-packages.sh"

# Shell keywords and builtins, and programs of Debian's essential set (coreutils, grep, sed, tar,
# procps' kill, bash itself): there on every machine the set-up runs on.
_BASE = {
    "for", "do", "done", "if", "then", "fi", "while", "cd", "echo", "export", "wait", "jobs", "kill",
    "source", ".", "set", "test", "[", "true", "false", "printf", "read", "exit",
    "cat", "cp", "mv", "rm", "mkdir", "ls", "head", "tail", "sleep", "seq", "od", "timeout", "env",
    "wc", "sort", "uniq", "tee", "touch", "date", "nproc", "grep", "sed", "awk", "tar", "bash", "sh",
    "python", "python3",  # the venv's (the examples run with it activated) or Debian's python3
    "sudo",  # the set-up itself runs apt-get through sudo when not root
}
# Programs from a package the set-up installs: program -> Debian package.
_PACKAGE = {
    "gcc": "gcc", "g++": "g++", "cc": "gcc", "clang": "clang", "make": "make", "cmake": "cmake",
    "perf": "linux-perf", "strace": "strace", "numactl": "numactl", "valgrind": "valgrind",
    "hyperfine": "hyperfine", "jq": "jq", "sqlite3": "sqlite3", "/usr/bin/time": "time",
    "sinfo": "slurm-client", "squeue": "slurm-client", "scancel": "slurm-client", "sbatch": "slurm-client",
    "psql": "postgresql", "lscpu": "util-linux", "taskset": "util-linux", "chrt": "util-linux",
    "readelf": "binutils", "objdump": "binutils", "nm": "binutils", "file": "file",
}


def installed_packages() -> set[str]:
    text = INSTALL.read_text()
    m = re.search(r"^PKGS=\((.*?)^\)", text, flags=re.S | re.M)
    assert m, f"{INSTALL.name}: no PKGS=( ... ) list"
    return set(m.group(1).split())


def _programs(line: str) -> list[str]:
    shell = line.rstrip("\\")
    out = []
    for words in _simple_commands(shell):
        while words and (re.match(r"^[A-Za-z_]\w*=", words[0]) or words[0] in ("sudo", "time", "exec", "timeout")):
            wrapper = words[0]
            words = words[1:]  # FOO=1 cmd, sudo cmd, timeout -s TERM 5 cmd
            while wrapper == "timeout" and words and (words[0].startswith("-") or re.fullmatch(r"[\d.]+[smh]?", words[0])):
                words = words[2:] if words[0] in ("-s", "--signal", "-k", "--kill-after") else words[1:]
        if words:
            out.append(words[0])
    return out


def unknown_tools(pages_=None) -> list[str]:
    """'page:line: program' for each program a '$ ' line runs that nothing installs."""
    pkgs = installed_packages()
    bad = []
    for page in pages_ or pages():
        for b in blocks(page):
            if b.illustrative:
                continue
            for i, line in enumerate(b.lines):
                if not line.startswith("$ "):
                    continue
                for prog in _programs(line[2:]):
                    if (prog in _BASE or prog.startswith(("$", "./", ".venv/", "SUBST"))
                            or prog == "perflab" or "/" in prog and (ROOT / prog).exists()):
                        continue
                    if prog in _PACKAGE and _PACKAGE[prog] in pkgs:
                        continue
                    where = f"{page.relative_to(ROOT) if page.is_relative_to(ROOT) else page.name}:{b.line + 1 + i}"
                    bad.append(f"{where}: {prog}")
    return bad


def test_every_tool_an_example_runs_is_installed_by_the_setup():
    bad = unknown_tools()
    assert not bad, ("programs the docs run that scripts/install-system-packages.sh does not install "
                     "(add the package there, or rewrite the example without it):\n" + "\n".join(bad))


def test_the_tool_check_can_fail(tmp_path):
    page = tmp_path / "p.md"
    page.write_text("```\n$ perflab results --json | yq .x\n$ jq . r.json && ./a.out\n"
                    "$ sudo FOO=1 timeout -s TERM 5 perl x\n```\n")
    assert [b.split(": ")[1] for b in unknown_tools([page])] == ["yq", "perl"]


# --- paths of the recording machine ---------------------------------------------------------------

# A home directory or a checkout elsewhere: what a reader's machine does not have. /tmp paths are
# the examples' scratch directories, the same on every machine that reruns them.
_MACHINE_PATH = re.compile(r"(?<![\w.~])(?:/root/|/home/\w|/Users/\w|/work/)")


def docs_files() -> list:
    docs = ROOT / "docs"
    return [ROOT / "README.md", *sorted(p for p in docs.rglob("*")
                                        if p.is_file() and p.suffix in (".md", ".txt", ".json", ".toml", ".yml", ".yaml",
                                                                          ".sh", ".c", ".py"))]


def machine_paths(files) -> list[str]:
    bad = []
    for f in files:
        for n, line in enumerate(f.read_text().splitlines(), 1):
            for m in _MACHINE_PATH.finditer(line):
                bad.append(f"{f.name}:{n}: {line[m.start(): m.start() + 60]}")
    return bad


def test_no_docs_file_holds_a_path_of_the_recording_machine():
    bad = machine_paths(docs_files())
    assert not bad, ("absolute paths of the machine that recorded these (scripts/docs-examples "
                     "writes records through scrub()):\n" + "\n".join(bad))


def test_the_path_check_can_fail(tmp_path):
    f = tmp_path / "x.txt"
    f.write_text("path: /root/.cache/perflab/builds/x\nok: ~/.cache/perflab and /tmp/tour\n"
                 "src: /work/wt/docs3/src/perflab/kernels/minihlt/main.cpp\n")
    assert [b.split(":")[1] for b in machine_paths([f])] == ["1", "3"]
