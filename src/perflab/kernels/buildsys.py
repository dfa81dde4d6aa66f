"""Projects built by their own build system: a make-style command template, or CMake.

A template is split like a shell would split it, *then* each placeholder is filled inside its
own word, and the words run as an argv list with no shell: a value with spaces or quotes stays
one argument (``CFLAGS={cflags}`` -> ``CFLAGS=-O2 -m32``) and is never parsed as shell.
Placeholders: {src} (the variant's own copy of the source tree), {cc}, {cxx}, {cflags},
{cxxflags}, {ldflags} (link-time flags, libraries excluded), {libs} (-l..., archives), {jobs}.

``cmake`` configures an out-of-source build directory per variant with CMAKE_C_FLAGS,
CMAKE_CXX_FLAGS, CMAKE_EXE_LINKER_FLAGS, the libraries last on the link line
(CMAKE_<LANG>_STANDARD_LIBRARIES: seed 003's archive order) and CMAKE_BUILD_TYPE=None, so no
build type adds flags of its own, then builds. Each variant is cached by a hash of the source
tree, the template, the flags and the compiler versions. PGO variants are built twice at the
same path (gcc names profiles after object paths), the profile sent to the build's own
directory with -fprofile-generate=DIR, and trained in the user's working directory.

A project's build may drop the flags it is given (a Makefile that links without LDFLAGS, a
CMakeLists.txt that sets CMAKE_C_FLAGS), so every build is read back (variant_probe.flags_trace):
``--build make`` tries CFLAGS/LDFLAGS, then MYCFLAGS/MYLDFLAGS too, and keeps the first whose
program shows the variant's flags; when none does, the variant is refused in one line that
names the template passing them through the project's own variables.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import re
import shlex
import shutil
import string
import subprocess
from pathlib import Path
from typing import Sequence

from perflab.errors import PerflabError
from perflab.kernels.build import BuildError, cache_root, compiler_version
from perflab.kernels.variant_probe import RECORD, flags_trace, link_marker
from perflab.kernels.variants import BuildTarget, Variant, VariantBuild
from perflab.platform.affinity import usable_cpus

#: what ``--build make`` means for a project without a template of its own
DEFAULT_MAKE = "make -C {src} CC={cc} CXX={cxx} CFLAGS={cflags} CXXFLAGS={cxxflags} LDFLAGS={ldflags} -j{jobs}"
#: the next convention ``--build make`` tries for PGO: Lua-style Makefiles take their extra flags
#: as MYCFLAGS/MYLDFLAGS and link without LDFLAGS, so -fprofile-generate never reaches the link
MY_MAKE = DEFAULT_MAKE + " MYCFLAGS={cflags} MYLDFLAGS={ldflags}"
#: the template a user can give when neither convention reaches the project's compile and link
HINT_TEMPLATE = "make -C {src} CC={cc} MYCFLAGS=\"{cflags}\" MYLDFLAGS=\"{ldflags}\" -j{jobs}"
PLACEHOLDERS = ("src", "cc", "cxx", "cflags", "cxxflags", "ldflags", "libs", "jobs")
# Files that are build products, not sources: neither hashed nor copied into a variant's tree,
# so a stale object from the user's own build can never stand in for a variant's.
_SKIP_DIRS = {".git", ".hg", ".svn", "__pycache__"}
_SKIP_SUFFIXES = (".o", ".obj", ".gcda", ".gcno", ".pyc")
LOG_TAIL = 2  # last lines of a failed build's log shown in its one-line error
_PROFILE_MISSING = re.compile(
    r"profile count data file not found|Wmissing-profile|missing-profile|"
    r"coverage mismatch|profile data may be corrupted|no profile data",
    re.IGNORECASE,
)


def run_training(argv: Sequence[str], cwd: Path, timeout: float) -> None:
    """The PGO training run, in the user's directory; a failure names the directory it ran in."""
    try:
        proc = subprocess.run(list(argv), cwd=cwd, capture_output=True, text=True, timeout=timeout)
    except OSError as exc:
        raise BuildError(f"PGO training run could not start in {cwd}: {exc}") from None
    except subprocess.TimeoutExpired:
        raise BuildError(f"PGO training run took longer than {timeout:g} s (in {cwd})") from None
    if proc.returncode != 0:
        tail = " | ".join(proc.stderr.strip().splitlines()[-3:]) or "no stderr"
        raise BuildError(f"PGO training run failed in {cwd} (exit {proc.returncode}): {tail}")


def gcda_names(exe: Path) -> set[str] | None:
    """The profile files an instrumented program writes (gcc embeds their paths in it); None: unreadable."""
    try:
        data = exe.read_bytes()
    except OSError:
        return None
    return {os.path.basename(m.decode()) for m in re.findall(rb"[\x21-\x7e]+\.gcda", data)}


def profile_notes(profile_dir: Path, use_log: str, trained: set[str] | None = None) -> list[str]:
    """Say when the training wrote no profile or the optimised build could not use all of it.

    ``trained``: the profile files of the program the training ran; a warning about another
    one (a second program of the project that no training runs, such as Lua's luac) is left out."""
    notes = []
    if not any(profile_dir.rglob("*.gcda")):
        notes.append(f"profile did not apply: the training run wrote no .gcda files into {profile_dir}")
    # diagnostics only: make and CMake echo the compile commands, which name -Wmissing-profile
    missing = [ln.strip() for ln in use_log.splitlines()
               if _PROFILE_MISSING.search(ln) and re.search(r"\b(warning|error|note):", ln)]
    if trained is not None:
        missing = [ln for ln in missing if not (names := re.findall(r"[^\s\u2018\u2019'\"`]+\.gcda", ln))
                   or any(os.path.basename(n) in trained for n in names)]
    if missing:
        many = f"{len(missing)} warnings" if len(missing) > 1 else "1 warning"
        # whole, never cut: the path in it says which object went without its profile
        notes.append(f"profile did not apply everywhere ({many}), e.g. {missing[0]}")
    return notes


def log_summary(text: str) -> str:
    """The first error (with its indented continuation, as CMake writes it) and the log's last lines.

    The first ``error:`` line (the compiler's or linker's own word) wins over a line that merely
    says error, such as make's closing ``*** [...] Error 1``; an undefined reference, which ld
    reports before collect2's ``error:``, is the reason and comes first."""
    raw = [ln for ln in text.splitlines() if ln.strip() and not re.search(r"(Entering|Leaving) directory", ln)]
    i = next((k for k, ln in enumerate(raw) if re.search(r"undefined reference|\berror:", ln, re.IGNORECASE)), None)
    if i is None:
        i = next((k for k, ln in enumerate(raw) if re.search(r"\berror\b", ln, re.IGNORECASE)), None)
    first = [] if i is None else [raw[i].strip()] + [ln.strip() for ln in raw[i + 1:i + 2] if ln[:1].isspace()]
    tail = [ln.strip() for ln in raw[-LOG_TAIL:]]
    return " | ".join([ln for ln in first if ln not in tail] + tail) or "no output"


def check_template(template: str) -> None:
    """Refuse a template that cannot work: unparsable, no {src}, or an unknown placeholder."""
    if template == "cmake":
        return
    try:
        words = shlex.split(template)
    except ValueError as exc:
        raise PerflabError(f"build template {template!r}: {exc}: close the quote") from None
    if not words:
        raise PerflabError("build template is empty: give e.g. --build 'make -C {src} CC={cc} -j{jobs}'")
    seen = set()
    for word in words:
        try:
            fields = list(string.Formatter().parse(word))
        except ValueError as exc:
            raise PerflabError(f"build template {template!r}: {exc} (write {{{{ and }}}} for literal braces)") from None
        for _, name, spec, conv in fields:
            if name is None:
                continue
            if name not in PLACEHOLDERS or spec or conv:
                raise PerflabError(
                    f"build template has an unknown placeholder {{{name}{'!' + conv if conv else ''}"
                    f"{':' + spec if spec else ''}}}: use {', '.join('{' + p + '}' for p in PLACEHOLDERS)}"
                )
            seen.add(name)
    if "src" not in seen:
        raise PerflabError(
            "build template has no {src}: say where the sources are, e.g. "
            "--build 'make -C {src} CC={cc} CFLAGS={cflags} LDFLAGS={ldflags} -j{jobs}'"
        )


def fill_template(template: str, values: dict[str, str]) -> list[str]:
    """The argv of a template: split first, then each placeholder filled within its own word."""
    return [word.format(**values) for word in shlex.split(template)]


def tree_hash(root: Path) -> str:
    """sha256 over the relative paths and bytes of a source tree (build products left out)."""
    h = hashlib.sha256()
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in _SKIP_DIRS)
        for name in sorted(filenames):
            if name.endswith(_SKIP_SUFFIXES):
                continue
            p = Path(dirpath) / name
            h.update(b"\0P" + str(p.relative_to(root)).encode())
            h.update(b"\0L" + os.readlink(p).encode() if p.is_symlink() else b"\0C" + p.read_bytes())
    return h.hexdigest()


def _ignore(directory: str, names: list[str]) -> set[str]:
    return {n for n in names if n in _SKIP_DIRS or n.endswith(_SKIP_SUFFIXES)}


def train_argv_for(train_argv: Sequence[str], exe: Path) -> list[str]:
    """The training command with {exe} filled in (or the program put first when it has none)."""
    if any("{exe}" in a for a in train_argv):
        return [a.replace("{exe}", str(exe)) for a in train_argv]
    return [str(exe), *train_argv]


def _split_libs(flags: Sequence[str]) -> tuple[list[str], list[str]]:
    libs = [f for f in flags if f.startswith("-l") or f.endswith((".a", ".so"))]
    return [f for f in flags if f not in libs], libs


def _values(v: Variant, src: Path, extra_c: list[str], extra_ld: list[str], jobs: int,
            marker: str | None = None) -> dict[str, str]:
    # the switches recorded in the program, and a build ID only a link with these flags carries
    # (RECORD at the link too: LTO compiles the program there)
    trace = [RECORD, f"-Wl,--build-id=0x{marker}"] if marker else []
    ldflags, libs = _split_libs([*v.link_flags, *extra_ld, *trace])
    cflags = shlex.join([*v.cflags, *extra_c, RECORD])
    return {"src": str(src), "cc": v.driver("c"), "cxx": v.driver("c++"), "cflags": cflags,
            "cxxflags": cflags, "ldflags": shlex.join(ldflags), "libs": shlex.join(libs), "jobs": str(jobs)}


def _commands(template: str, vals: dict[str, str], build_dir: Path) -> list[list[str]]:
    if template != "cmake":
        return [fill_template(template, vals)]
    return [
        ["cmake", "-S", vals["src"], "-B", str(build_dir), "-DCMAKE_BUILD_TYPE=None",
         f"-DCMAKE_C_COMPILER={vals['cc']}", f"-DCMAKE_CXX_COMPILER={vals['cxx']}",
         f"-DCMAKE_C_FLAGS={vals['cflags']}", f"-DCMAKE_CXX_FLAGS={vals['cxxflags']}",
         f"-DCMAKE_EXE_LINKER_FLAGS={vals['ldflags']}", f"-DCMAKE_C_STANDARD_LIBRARIES={vals['libs']}",
         f"-DCMAKE_CXX_STANDARD_LIBRARIES={vals['libs']}"],
        ["cmake", "--build", str(build_dir), "-j", vals["jobs"], "--verbose"],  # the log shows each command
    ]


def _run_logged(cmd: list[str], cwd: Path, log: Path, what: str) -> str:
    with open(log, "a") as f:
        f.write("$ " + shlex.join(cmd) + "\n")
        f.flush()
        try:
            proc = subprocess.run(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                  text=True, check=False)
        except OSError as exc:
            raise BuildError(f"{what}: cannot start {cmd[0]}: {exc.strerror}; full log: {log}") from None
        f.write(proc.stdout)
    if proc.returncode != 0:
        raise BuildError(f"{what} failed (exit {proc.returncode}): {log_summary(proc.stdout)}; "
                         f"command: {shlex.join(cmd)} (in {cwd}); full log: {log}", proc.stdout)
    return proc.stdout


def project_key(target: BuildTarget, v: Variant, train_argv: Sequence[str], train_cwd: Path) -> str:
    """The cache key: source tree, template, exe, flags, compilers (and the training, for PGO)."""
    assert target.src_dir is not None and target.template is not None
    h = hashlib.sha256()
    h.update(b"flags-traced")  # builds from before the read-back lack its records: not reused
    for part in (tree_hash(target.src_dir), target.template, target.exe or "", repr(v.cflags),
                 repr(v.ldflags), compiler_version(v.driver("c")), compiler_version(v.driver("c++"))):
        h.update(b"\0" + part.encode())
    if v.pgo:
        h.update(b"\0pgo" + "\0".join([*train_argv, str(train_cwd)]).encode())
    return h.hexdigest()[:24]


def build_project(
    target: BuildTarget, v: Variant, *, train_argv: Sequence[str] = (), train_cwd: Path,
    train_timeout: float = 600.0, cache_dir: Path | None = None, jobs: int = 0,
) -> VariantBuild:
    """Build variant ``v`` of a make/CMake project in its own directory (cached)."""
    projects = (cache_dir or cache_root()) / "projects"
    projects.mkdir(parents=True, exist_ok=True)
    # PGO needs the final path during the build, so no build-then-rename: two perflab processes
    # building the same variant take turns instead, and the second finds it cached.
    with open(projects / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        return _build_locked(target, v, train_argv=train_argv, train_cwd=train_cwd,
                             train_timeout=train_timeout, cache_dir=cache_dir, jobs=jobs)


def _build_locked(
    target: BuildTarget, v: Variant, *, train_argv: Sequence[str], train_cwd: Path,
    train_timeout: float, cache_dir: Path | None, jobs: int,
) -> VariantBuild:
    if target.src_dir is None or not target.src_dir.is_dir():
        raise BuildError(f"source directory {target.src_dir} not found: give --src DIR")
    if not target.exe:
        raise BuildError("a template build needs the program's path inside the build: give --exe PATH")
    if v.link_line is not None:
        raise BuildError(f"variant '{v.name}' fixes the link order ({{src}} in its flags): that needs a "
                         "source-list build (--source), not a build template")
    if v.pgo and not train_argv:
        raise BuildError("a PGO variant needs a training command (the study gives one by default)")
    libs = _split_libs(v.link_flags)[1]
    if libs and target.template != "cmake" and "{libs}" not in (target.template or ""):
        raise BuildError(f"variant '{v.name}' links {' '.join(libs)} but the build template has no {{libs}}: "
                         "add e.g. LDLIBS={libs} to it")
    jobs = jobs or len(usable_cpus())
    key = project_key(target, v, train_argv, train_cwd)
    root = (cache_dir or cache_root()) / "projects" / f"{target.name}-{key}"
    cmake = target.template == "cmake"
    work = root / ("build" if cmake else "src")
    exe, log, done = work / target.exe, root / "build.log", root / "done"
    if done.exists() and exe.exists():
        cmds = [c for c in (root / "command").read_text().split("\n") if c]
        notes = [n for n in (root / "notes").read_text().splitlines() if n]
        return VariantBuild(v, exe, True, tuple(shlex.split(cmds[-1])) if cmds else (), log.read_text(),
                            notes=notes, log_path=str(log))
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    prof = root / "profile"
    phases: list[tuple[str, list[str]]] = [("", [])]
    if v.pgo:
        phases = [("instrumented ", [f"-fprofile-generate={prof}"]),
                  ("", [f"-fprofile-use={prof}", "-fprofile-correction", "-Wmissing-profile"])]
    kind = "CMake" if cmake else shlex.split(target.template or "")[0]
    ran: list[str] = []
    notes = []
    template = target.template or ""
    # --build make tries the common conventions in turn before it gives up.
    tries = [DEFAULT_MAKE, MY_MAKE] if template == DEFAULT_MAKE else [template]
    # a link check only where the variant has link flags: a Makefile may link without LDFLAGS
    marker = link_marker(key) if v.link_flags or v.pgo else None

    def one_phase(template: str, phase: str, extra: list[str]) -> str:
        # the same path in both phases, so the profile's object names match
        shutil.rmtree(work, ignore_errors=True)
        if cmake:
            work.mkdir()
        else:
            shutil.copytree(target.src_dir, work, symlinks=True, ignore=_ignore)  # type: ignore[arg-type]  # checked on entry
        vals = _values(v, target.src_dir if cmake else work, extra, extra, jobs, marker)  # type: ignore[arg-type]  # as above
        text = ""
        for cmd in _commands(template, vals, work):
            ran.append(shlex.join(cmd))
            text += _run_logged(cmd, work if cmake else root, log, f"{kind} {phase}build of variant '{v.name}'")
        if not exe.exists():
            raise BuildError(f"the {kind} build of variant '{v.name}' finished but made no {target.exe} in "
                             f"{work}: give --exe PATH relative to it; full log: {log}")
        return text

    trained: set[str] | None = None
    if v.pgo:
        template, trained = _instrumented(tries, one_phase, phases[0][1], prof, exe, log, v.name, cmake,
                                          lambda: run_training(train_argv_for(train_argv, exe), train_cwd,
                                                               train_timeout))
    chosen, out = _traced(tries if not v.pgo else [template], one_phase, phases[-1][1], v, exe, marker,
                          log, cmake)
    if chosen != tries[0]:
        notes.append("flags passed as MYCFLAGS/MYLDFLAGS too: this Makefile links without LDFLAGS "
                     f"(--build '{HINT_TEMPLATE}' says so up front)")
    notes += profile_notes(prof, out, trained) if v.pgo else []
    (root / "command").write_text("\n".join(ran) + "\n")
    (root / "notes").write_text("\n".join(notes))
    done.write_text(str(exe))
    return VariantBuild(v, exe, False, tuple(shlex.split(ran[-1])), log.read_text(), notes=notes,
                        log_path=str(log))


def _fix(tries: Sequence[str], cmake: bool) -> str:
    """What to do when no convention tried passes the flags: the template using the project's own."""
    if cmake:
        return ("CMake got them as CMAKE_C_FLAGS, CMAKE_CXX_FLAGS and CMAKE_EXE_LINKER_FLAGS: check that "
                "the project's CMakeLists.txt adds to these rather than setting them")
    tried = " and ".join("CFLAGS/LDFLAGS" if t == DEFAULT_MAKE else "MYCFLAGS/MYLDFLAGS" if t == MY_MAKE
                         else repr(t) for t in tries)
    return (f"tried {tried}; pass the flags through the project's own variables, e.g. "
            f"--build '{HINT_TEMPLATE}' with {{cflags}} and {{ldflags}} where its Makefile reads them")


def _traced(tries: Sequence[str], one_phase, extra: list[str], v: Variant, exe: Path, marker: str | None,
            log: Path, cmake: bool) -> tuple[str, str]:
    """Build with the first template whose program shows the variant's flags (flags_trace): that
    template and its log, or a BuildError in one line naming the template that would pass them.
    A failed build is retried with the next convention (a 64-bit link of -m32 objects fails), and
    reported as the first one failed when none builds."""
    why, first_error = "", None
    for template in tries:
        try:
            text = one_phase(template, "", extra)
        except BuildError as exc:
            first_error = first_error or exc
            continue
        why = flags_trace(v, exe, marker)
        if not why:
            return template, text
    if not why and first_error is not None:
        raise first_error
    raise BuildError(f"variant '{v.name}': {why}; {_fix(tries, cmake)}; full log: {log}")


def _instrumented(tries: Sequence[str], one_phase, extra: list[str], prof: Path, exe: Path, log: Path,
                  name: str, cmake: bool, train) -> tuple[str, set[str] | None]:
    """Build and train the instrumented program with the first template whose flags reach both
    the compile and the link (a .gcda after training shows it); that template and the profile
    files the trained program writes, or a BuildError in one line that names the template
    passing flags through the project's own variables."""
    why = ""
    for template in tries:
        shutil.rmtree(prof, ignore_errors=True)
        try:
            text = one_phase(template, "instrumented ", extra)
        except BuildError as exc:
            # An undefined __gcov_* symbol: the objects were instrumented, the link was not.
            linked = "__gcov" not in exc.log and "__gcov" not in str(exc)
            why = str(exc) if linked else (f"-fprofile-generate reached the compile but not the link "
                                           f"({log_summary(exc.log)})")
            continue
        train()
        if any(prof.rglob("*.gcda")):
            return template, gcda_names(exe)
        reached = "-fprofile-generate" in text
        why = ("the instrumented program wrote no profile data (no .gcda after training): "
               + ("-fprofile-generate reached the compile but not the link" if reached
                  else "-fprofile-generate reached neither the compile nor the link"))
    raise BuildError(f"PGO variant '{name}': {why}; {_fix(tries, cmake)}; full log: {log}")
