"""Building one program many ways: variant model, matrix expansion, PGO, sizes, link-order check.

The variants study (``perflab.studies.variants``) measures what this module builds. Plain
variants go through the shared build cache (``perflab.kernels.build.build``); PGO variants are
built in two phases in a fixed directory of that cache, because gcc names a ``.gcda`` profile
after the absolute path of its object file: the instrumented and the optimised build must
compile each source to the same object path for the profile to be found.
"""

from __future__ import annotations

import itertools
import os
import re
import shlex
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

from perflab.errors import PerflabError
from perflab.kernels.build import BuildError, BuildResult, build, build_key, cache_root

# -------------------------------------------------------------------------------------------
# Variant model


@dataclass(frozen=True)
class Variant:
    """One named build: compiler family, compile flags, link flags, PGO, explicit link order.

    ``compiler`` is a family ("gcc" or "clang"; the C++ driver is picked per language) or an
    explicit driver name. ``link_line`` (with a ``{src}`` item) fixes the order of objects and
    libraries on the link line, for seed 003's library-order trap.
    """

    name: str
    cflags: tuple[str, ...] = ()
    ldflags: tuple[str, ...] = ()
    compiler: str = "gcc"
    pgo: bool = False
    link_line: tuple[str, ...] | None = None

    @property
    def flags_text(self) -> str:
        parts = list(self.cflags)
        if self.link_line is not None:
            parts += list(self.link_line)
        else:
            parts += list(self.ldflags)
        if self.pgo:
            parts.append("+pgo")
        if self.compiler != "gcc":
            parts.insert(0, f"cc={self.compiler}")
        return " ".join(parts)

    def driver(self, language: str) -> str:
        """The compiler driver for ``language`` ("c" or "c++")."""
        cxx = language in ("c++", "cxx", "cpp")
        fam = {"gcc": ("gcc", "g++"), "g++": ("gcc", "g++"), "clang": ("clang", "clang++"),
               "clang++": ("clang", "clang++")}
        if self.compiler in fam:
            return fam[self.compiler][1 if cxx else 0]
        return self.compiler

    @property
    def abi(self) -> str:
        for f in reversed(self.cflags):
            if f in ("-m64", "-m32", "-mx32"):
                return f[1:]
        return "m64"


_LINK_PREFIXES = ("-l", "-L", "-Wl,")
_LINK_FLAGS = {"-static", "-static-libstdc++", "-static-libgcc", "-shared-libgcc", "-pie", "-no-pie",
               "-rdynamic"}


def parse_variant(spec: str, baseline_flags: Sequence[str] = ()) -> Variant:
    """``NAME=FLAGS`` -> Variant.

    FLAGS is shell-split. ``cc=clang`` picks the compiler, ``pgo`` (or ``-fprofile-use``) asks
    for the two-phase profile-guided build, ``-l``/``-L``/``-Wl,``/``*.a`` items go after the
    sources, and a ``{src}`` item makes the flags an explicit link line in the order given.
    """
    name, sep, flags = spec.partition("=")
    name = name.strip()
    if not sep or not name:
        raise PerflabError(
            f"bad --variant '{spec}': write NAME='FLAGS', e.g. --variant lto='-O2 -flto'"
        )
    if not re.fullmatch(r"[A-Za-z0-9_.+-]+", name):
        raise PerflabError(f"bad variant name '{name}': use letters, digits and . _ + - only")
    try:
        tokens = shlex.split(flags)
    except ValueError as exc:
        raise PerflabError(f"bad flags for variant '{name}': {exc} (quote them once)") from None
    return variant_from_tokens(name, tokens)


def variant_from_tokens(name: str, tokens: Sequence[str]) -> Variant:
    compiler = "gcc"
    pgo = False
    cflags: list[str] = []
    ldflags: list[str] = []
    explicit = "{src}" in tokens
    order: list[str] = []
    for t in tokens:
        if t.startswith(("cc=", "CC=", "compiler=")):
            compiler = t.split("=", 1)[1]
        elif t in ("pgo", "+pgo", "-fprofile-use"):
            pgo = True
        elif explicit and (t == "{src}" or t.startswith(_LINK_PREFIXES) or t.endswith((".a", ".so", ".o"))):
            order.append(t)
        elif t.startswith(_LINK_PREFIXES) or t.endswith((".a", ".so")):
            ldflags.append(t)
        elif t in _LINK_FLAGS:
            # also needed at link time; build() puts cflags on the link command too
            cflags.append(t)
        else:
            cflags.append(t)
    return Variant(name, tuple(cflags), tuple(ldflags), compiler, pgo,
                   tuple(order) if explicit else None)


# axis -> value -> (name token, flags). Flags "cc=..." and "pgo" are pseudo-flags (see above).
AXES: dict[str, dict[str, tuple[str, tuple[str, ...]]]] = {
    "abi": {
        "m64": ("m64", ("-m64",)),
        # SSE maths for -m32 so that its results match -m64 (x87's 80-bit intermediates differ)
        "m32": ("m32", ("-m32", "-msse2", "-mfpmath=sse")),
        "mx32": ("mx32", ("-mx32",)),
    },
    "opt": {v: (v, (f"-{v}",)) for v in ("O0", "O1", "O2", "O3", "Os", "Ofast")},
    "debug": {"g": ("g", ("-g",)), "nog": ("nog", ())},
    "march": {
        "native": ("native", ("-march=native",)),
        "generic": ("generic", ("-march=x86-64", "-mtune=generic")),
        "x86-64": ("x86-64", ("-march=x86-64",)),
        "v2": ("v2", ("-march=x86-64-v2",)),
        "v3": ("v3", ("-march=x86-64-v3",)),
        "v4": ("v4", ("-march=x86-64-v4",)),
        "x86-64-v2": ("v2", ("-march=x86-64-v2",)),
        "x86-64-v3": ("v3", ("-march=x86-64-v3",)),
        "x86-64-v4": ("v4", ("-march=x86-64-v4",)),
    },
    "lto": {"on": ("lto", ("-flto",)), "off": ("nolto", ())},
    "pgo": {"on": ("pgo", ("pgo",)), "off": ("nopgo", ())},
    "fastmath": {"on": ("fastmath", ("-ffast-math",)), "off": ("nofastmath", ())},
    "fpcontract": {"fast": ("fma", ("-ffp-contract=fast",)), "off": ("nofma", ("-ffp-contract=off",))},
    "link": {
        "shared": ("shared", ()),
        "static": ("static", ("-static",)),
        "static-libstdc++": ("staticcxx", ("-static-libstdc++", "-static-libgcc")),
    },
    "cc": {"gcc": ("gcc", ("cc=gcc",)), "clang": ("clang", ("cc=clang",))},
}
_AXIS_ALIASES = {"O": "opt", "optimisation": "opt", "optimization": "opt", "g": "debug",
                 "target": "march", "arch": "march", "compiler": "cc", "fp-contract": "fpcontract",
                 "fma": "fpcontract", "fast-math": "fastmath"}


def is_matrix_token(token: str) -> bool:
    axis = token.partition("=")[0]
    return "=" in token and (axis in AXES or axis in _AXIS_ALIASES)


def expand_matrix(items: Sequence[str], default_opt: str = "-O2") -> list[Variant]:
    """``["abi=m64,m32", "opt=O2,O3"]`` -> the product, named ``m64-O2``, ``m64-O3``, ...

    Without an ``opt`` axis every variant gets ``default_opt``, so ``abi=m64,m32`` compares the
    ABIs at the baseline's optimisation level.
    """
    axes: list[tuple[str, list[tuple[str, tuple[str, ...]]]]] = []
    for item in items:
        for part in item.split():
            axis, sep, values = part.partition("=")
            axis = _AXIS_ALIASES.get(axis, axis)
            if not sep or axis not in AXES:
                raise PerflabError(
                    f"bad --matrix item '{part}': write AXIS=V1,V2 with AXIS one of "
                    f"{', '.join(AXES)} (e.g. --matrix abi=m64,m32 opt=O2,O3)"
                )
            if any(a == axis for a, _ in axes):
                raise PerflabError(f"--matrix names axis '{axis}' twice: give each axis once")
            vals = []
            for v in values.split(","):
                v = v.strip().lstrip("-")
                if v not in AXES[axis]:
                    raise PerflabError(
                        f"unknown value '{v}' for matrix axis '{axis}': choose from "
                        f"{', '.join(AXES[axis])}"
                    )
                vals.append(AXES[axis][v])
            axes.append((axis, vals))
    if not axes:
        return []
    out = []
    for combo in itertools.product(*(vals for _, vals in axes)):
        tokens: list[str] = []
        if not any(a == "opt" for a, _ in axes) and default_opt:
            tokens.append(default_opt)
        for _, flags in combo:
            tokens.extend(flags)
        name = "-".join(tok for tok, _ in combo)
        out.append(variant_from_tokens(name, tokens))
    return out


def is_baseline_like(v: Variant) -> bool:
    """True for the default baseline build: gcc, -O2, 64-bit, nothing else."""
    return (v.compiler == "gcc" and not v.pgo and not v.ldflags and v.link_line is None
            and set(v.cflags) in ({"-O2"}, {"-m64", "-O2"}))


# -------------------------------------------------------------------------------------------
# What is built


@dataclass(frozen=True)
class BuildTarget:
    """The program the variants rebuild: sources, language, flags every variant shares."""

    name: str
    sources: tuple[Path, ...]
    language: str = "c++"
    cflags: tuple[str, ...] = ()  # common flags (include dirs, -D), before the variant's
    ldflags: tuple[str, ...] = ()  # common link flags, e.g. -lm, after the variant's
    extra_inputs: tuple[Path, ...] = ()  # headers etc. that key the cache without being compiled


@dataclass(frozen=True)
class Sizes:
    """Berkeley-style section sizes from binutils ``size``: text (+rodata), data, bss, in bytes."""

    text: int
    data: int
    bss: int


@dataclass
class VariantBuild:
    variant: Variant
    path: Path
    cached: bool
    command: tuple[str, ...]
    log: str = ""
    sizes: Sizes | None = None
    notes: list[str] = field(default_factory=list)  # e.g. "profile did not apply: ..."


def _split_ld(v: Variant, target: BuildTarget) -> tuple[list[str], list[str]]:
    return [*target.cflags, *v.cflags], [*v.ldflags, *target.ldflags]


def build_variant(
    target: BuildTarget,
    v: Variant,
    *,
    train_argv: Sequence[str] = (),
    train_timeout: float = 600.0,
    cache_dir: Path | None = None,
) -> VariantBuild:
    """Build ``target`` as variant ``v`` (cached); PGO variants run ``train_argv`` in between."""
    compiler = v.driver(target.language)
    if shutil.which(compiler) is None:
        raise BuildError(f"compiler '{compiler}' is not installed (apt-get install {v.compiler})")
    cflags, ldflags = _split_ld(v, target)
    if v.pgo:
        vb = _build_pgo(target, v, compiler, cflags, ldflags, train_argv, train_timeout, cache_dir)
    else:
        link_line = None
        if v.link_line is not None:
            link_line = [*v.link_line, *target.ldflags]
        res: BuildResult = build(
            target.sources, target.name, compiler=compiler, cflags=cflags, ldflags=ldflags,
            extra_inputs=target.extra_inputs, cache_dir=cache_dir, link_line=link_line,
        )
        vb = VariantBuild(v, res.path, res.cached, res.command, res.log)
    vb.sizes = section_sizes(vb.path)
    for issue in check_link_order(vb.command):
        vb.notes.append(issue.message)
    return vb


def _run(cmd: Sequence[str], cwd: Path, what: str, timeout: float | None = None) -> str:
    proc = subprocess.run(list(cmd), cwd=cwd, capture_output=True, text=True, check=False,
                          timeout=timeout)
    log = proc.stdout + proc.stderr
    if proc.returncode != 0:
        first = next((ln for ln in log.splitlines() if "error" in ln.lower()), log.strip()[:300])
        raise BuildError(f"{what} failed (exit {proc.returncode}): {first.strip()}", log)
    return log


_PROFILE_MISSING = re.compile(
    r"profile count data file not found|Wmissing-profile|missing-profile|"
    r"coverage mismatch|profile data may be corrupted|no profile data",
    re.IGNORECASE,
)


def _build_pgo(target, v, compiler, cflags, ldflags, train_argv, train_timeout, cache_dir) -> VariantBuild:
    """-fprofile-generate build, a training run, then -fprofile-use, all in one fixed directory."""
    if v.driver("c").startswith("clang"):
        raise BuildError(
            "PGO here drives gcc's -fprofile-generate/-fprofile-use; for clang build the profile "
            "with llvm-profdata yourself and pass -fprofile-use=FILE as a plain flag"
        )
    target = BuildTarget(target.name, tuple(Path(s).resolve() for s in target.sources), target.language,
                         target.cflags, target.ldflags, tuple(Path(s).resolve() for s in target.extra_inputs))
    key = build_key(target.sources, compiler,
                    ["pgo", *cflags, "|", *ldflags, "|train", *train_argv], target.extra_inputs)
    root = (cache_dir or cache_root()) / "pgo" / key
    out = root / target.name
    if out.exists():
        log = (root / "build.log").read_text() if (root / "build.log").exists() else ""
        cmd = tuple((root / "command").read_text().split("\0")) if (root / "command").exists() else ()
        notes = (root / "notes").read_text().splitlines() if (root / "notes").exists() else []
        return VariantBuild(v, out, True, cmd, log, notes=[n for n in notes if n])
    work = root / "work"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    objs = [work / f"{i:02d}-{Path(s).stem}.o" for i, s in enumerate(target.sources)]
    logs: list[str] = []

    def compile_all(extra: list[str]) -> None:
        for src, obj in zip(target.sources, objs):
            logs.append(_run([compiler, *cflags, *extra, "-c", str(src), "-o", str(obj)], work,
                             f"PGO compile of {Path(src).name}"))

    gen = work / f"{target.name}-instrumented"
    compile_all(["-fprofile-generate"])
    logs.append(_run([compiler, *cflags, "-fprofile-generate", "-o", str(gen), *map(str, objs), *ldflags],
                     work, "PGO instrumented link"))
    if not train_argv:
        raise BuildError("a PGO variant needs a training command (the study gives one by default)")
    argv = [str(gen), *train_argv[1:]] if train_argv[0] == "{exe}" else [str(gen), *train_argv]
    try:
        proc = subprocess.run(argv, cwd=work, capture_output=True, text=True, timeout=train_timeout)
    except OSError as exc:
        raise BuildError(f"PGO training run could not start: {exc}") from None
    if proc.returncode != 0:
        raise BuildError(f"PGO training run failed (exit {proc.returncode}): {proc.stderr.strip()[-200:]}")
    notes: list[str] = []
    gcdas = sorted(work.glob("*.gcda"))
    if not gcdas:
        notes.append("profile did not apply: the training run wrote no .gcda files")
    use = ["-fprofile-use", "-fprofile-correction", "-Wmissing-profile"]
    n_before = len(logs)
    compile_all(use)
    link_cmd = [compiler, *cflags, *use, "-o", str(root / f".{target.name}.tmp"), *map(str, objs), *ldflags]
    logs.append(_run(link_cmd, work, "PGO optimised link"))
    use_log = "".join(logs[n_before:])
    missing = [ln.strip() for ln in use_log.splitlines() if _PROFILE_MISSING.search(ln)]
    if missing:
        notes.append(f"profile did not apply everywhere ({len(missing)} warnings), e.g. {missing[0][:160]}")
    os.rename(root / f".{target.name}.tmp", out)
    command = tuple(link_cmd[:-len(objs) - len(ldflags) - 2] + ["-o", str(out), *map(str, objs), *ldflags])
    (root / "build.log").write_text("".join(logs))
    (root / "command").write_text("\0".join(command))
    (root / "notes").write_text("\n".join(notes))
    (root / "training").write_text(" ".join(train_argv))
    return VariantBuild(v, out, False, command, "".join(logs), notes=notes)


def section_sizes(path: Path) -> Sizes | None:
    """text/data/bss of an ELF file via binutils ``size -B`` (None when size is missing)."""
    exe = shutil.which("size")
    if exe is None:
        return None
    proc = subprocess.run([exe, "-B", str(path)], capture_output=True, text=True, check=False)
    lines = proc.stdout.strip().splitlines()
    if proc.returncode != 0 or len(lines) < 2:
        return None
    text, data, bss = (int(x) for x in lines[1].split()[:3])
    return Sizes(text, data, bss)


def text_bytes(path: Path) -> bytes | None:
    """The raw .text section (objcopy), to tell whether two builds generated the same code."""
    exe = shutil.which("objcopy")
    if exe is None:
        return None
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "text.bin"
        proc = subprocess.run([exe, "-O", "binary", "--only-section=.text", str(path), str(out)],
                              capture_output=True, check=False)
        return out.read_bytes() if proc.returncode == 0 and out.exists() else None


# -------------------------------------------------------------------------------------------
# Link-order trap (seed 003): an archive placed before the objects that need it is skipped


@dataclass(frozen=True)
class LinkOrderIssue:
    library: str  # as written on the line: -lmopt or path/libmopt.a
    archive: str  # the file the linker would search
    needed_by: str  # the first later input that references one of its symbols
    symbols: tuple[str, ...]
    resolved_from: str | None  # a later library that will supply the symbols instead, if any

    @property
    def message(self) -> str:
        sym = ", ".join(self.symbols[:3])
        tail = (f"; {sym} will come from {self.resolved_from} instead" if self.resolved_from
                else "; the link fails or picks another definition")
        return (f"link order: {self.library} ({Path(self.archive).name}, an archive) comes before "
                f"{Path(self.needed_by).name}, which needs {sym} from it: the linker skips it{tail}. "
                f"Put objects first, then archives, then shared libraries")


_SRC_EXT = (".c", ".cc", ".cpp", ".cxx", ".C", ".c++")


def _search_dirs(compiler: str, flags: Sequence[str]) -> list[Path]:
    dirs = [Path(f[2:]) for f in flags if f.startswith("-L") and len(f) > 2]
    try:
        out = subprocess.run([compiler, *[f for f in flags if f.startswith("-m")], "-print-search-dirs"],
                             capture_output=True, text=True, check=False).stdout
    except OSError:
        out = ""
    for line in out.splitlines():
        if line.startswith("libraries:"):
            dirs += [Path(p) for p in line.split("=", 1)[-1].split(":") if p]
    return dirs


def _resolve_lib(name: str, dirs: Sequence[Path], static: bool) -> Path | None:
    for d in dirs:
        for cand in ([f"lib{name}.a"] if static else [f"lib{name}.so", f"lib{name}.a"]):
            p = d / cand
            if p.exists():
                return p.resolve()
    return None


def _nm(path: Path, *args: str) -> set[str]:
    proc = subprocess.run(["nm", *args, str(path)], capture_output=True, text=True, check=False)
    syms = set()
    for line in proc.stdout.splitlines():
        parts = line.split()
        if parts and not line.endswith(":"):
            syms.add(parts[-1].split("@")[0])
    return syms


def _defined(path: Path) -> set[str]:
    head = path.read_bytes()[:512] if path.is_file() else b""
    if not head.startswith(b"\x7fELF") and not head.startswith(b"!<arch>"):
        # a linker script such as Debian's libm.so: GROUP ( /lib/.../libm.so.6 ... )
        text = path.read_text(errors="replace")
        syms: set[str] = set()
        for m in re.finditer(r"(/[^\s()]+)", text):
            p = Path(m.group(1))
            if p.exists() and p != path:
                syms |= _defined(p)
        return syms
    args = ("-g", "--defined-only") + (("-D",) if ".so" in path.name else ())
    return _nm(path, *args)


def check_link_order(command: Sequence[str], cwd: str | Path | None = None) -> list[LinkOrderIssue]:
    """Find archives on a link command that come before the objects needing their symbols.

    Archives resolve only symbols already undefined when the linker reaches them (seed 003), so
    an ``-lX``/``libX.a`` that defines a symbol a *later* object or source references is skipped.
    Sources on the line are compiled to temporary objects to read their undefined symbols (nm).
    """
    if not command:
        return []
    compiler, args = command[0], list(command[1:])
    if "-c" in args or "-S" in args or "-E" in args:
        return []
    base = Path(cwd) if cwd else Path.cwd()
    static = "-static" in args
    dirs: list[Path] | None = None
    inputs: list[tuple[str, Path, str]] = []  # (as written, path, kind: obj|src|archive|shared)
    skip_next = False
    for i, a in enumerate(args):
        if skip_next:
            skip_next = False
            continue
        if a in ("-o", "-x", "-include", "-I", "-L", "-MF", "-MT"):
            skip_next = True
            continue
        if a.startswith("-l") and len(a) > 2:
            if dirs is None:
                dirs = _search_dirs(compiler, args)
            p = _resolve_lib(a[2:], dirs, static)
            if p is not None:
                inputs.append((a, p, "archive" if p.suffix == ".a" else "shared"))
        elif not a.startswith("-"):
            p = Path(a) if Path(a).is_absolute() else base / a
            if a.endswith(".a"):
                inputs.append((a, p, "archive"))
            elif a.endswith(".o"):
                inputs.append((a, p, "obj"))
            elif a.endswith(_SRC_EXT):
                inputs.append((a, p, "src"))
            elif ".so" in Path(a).name:
                inputs.append((a, p, "shared"))
    undef_cache: dict[int, set[str]] = {}
    cflags = [a for a in args if a.startswith(("-m", "-O", "-D", "-I", "-std", "-f"))
              and not a.startswith(("-fprofile", "-flto"))]

    def undefined(idx: int) -> set[str]:
        if idx not in undef_cache:
            _, p, kind = inputs[idx]
            if kind == "obj":
                undef_cache[idx] = _nm(p, "-u")
            else:
                import tempfile

                with tempfile.TemporaryDirectory() as tmp:
                    obj = Path(tmp) / "probe.o"
                    subprocess.run([compiler, *cflags, "-c", str(p), "-o", str(obj)],
                                   capture_output=True, check=False)
                    undef_cache[idx] = _nm(obj, "-u") if obj.exists() else set()
        return undef_cache[idx]

    issues = []
    for i, (written, path, kind) in enumerate(inputs):
        if kind != "archive" or not path.exists():
            continue
        defined = _defined(path)
        # symbols still undefined before the archive could be taken from it: those are fine
        before: set[str] = set()
        for j in range(i):
            if inputs[j][2] in ("obj", "src"):
                before |= undefined(j)
        for j in range(i + 1, len(inputs)):
            if inputs[j][2] not in ("obj", "src"):
                continue
            need = sorted((undefined(j) & defined) - before)
            if need:
                resolved = None
                for k in range(j + 1, len(inputs)):
                    if inputs[k][2] in ("archive", "shared") and inputs[k][1].exists() and \
                            set(need) & _defined(inputs[k][1]):
                        resolved = inputs[k][0]
                        break
                if resolved is None:
                    for k in range(i):
                        if inputs[k][2] == "shared" and set(need) & _defined(inputs[k][1]):
                            resolved = inputs[k][0]
                            break
                issues.append(LinkOrderIssue(written, str(path), str(inputs[j][1]), tuple(need), resolved))
                break
    return issues
