"""What a build variant is: flags, compiler, PGO and link order; matrix expansion; the target.

A ``Variant`` is one named way to build the program (seeds 000, 002, 003: ABI -m64/-m32/-mx32,
-O level, -march, LTO, PGO, fast-math, library link order). A ``BuildTarget`` says what is
built: a list of source files compiled directly, or a project built by its own make or CMake
through a template (``perflab.kernels.buildsys``). Building lives in ``variant_build``.
"""

from __future__ import annotations

import itertools
import re
import shlex
import subprocess
import tempfile
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Sequence

from perflab.errors import PerflabError
from perflab.startup import which

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

    @property
    def link_flags(self) -> tuple[str, ...]:
        """Flags a link needs too: ABI, LTO, static, PGO (a Makefile's LDFLAGS may not repeat CFLAGS)."""
        keep = tuple(f for f in self.cflags if f.startswith(_LINK_TIME) or f in _LINK_FLAGS)
        return (*keep, *self.ldflags)

    def as_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> "Variant":
        line = d.get("link_line")
        return cls(d["name"], tuple(d.get("cflags", ())), tuple(d.get("ldflags", ())),
                   d.get("compiler", "gcc"), bool(d.get("pgo")), tuple(line) if line is not None else None)


_LINK_PREFIXES = ("-l", "-L", "-Wl,")
_LINK_TIME = ("-m32", "-m64", "-mx32", "-flto", "-fno-lto", "-fprofile", "-fuse-ld", "-pthread", "-fopenmp",
              "-fsanitize")
_LINK_FLAGS = {"-static", "-static-libstdc++", "-static-libgcc", "-shared-libgcc", "-pie", "-no-pie",
               "-rdynamic"}


def parse_variant(spec: str) -> Variant:
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




def with_common_flags(variants: Sequence[Variant], cflags: Sequence[str]) -> tuple[Variant, ...]:
    """Append flags every variant shares (--cflags) to each variant."""
    if not cflags:
        return tuple(variants)
    return tuple(replace(v, cflags=(*v.cflags, *cflags)) for v in variants)


def resolve_baseline(variants: Sequence[Variant], baseline: str | None) -> tuple[list[Variant], str]:
    """The variants to measure (baseline added when missing) and the baseline's name."""
    vs = list(variants)
    names = [v.name for v in vs]
    if len(set(names)) != len(names):
        dup = next(n for n in names if names.count(n) > 1)
        raise PerflabError(f"variant name '{dup}' is given twice: name each variant once")
    if baseline is not None:
        if baseline not in names:
            raise PerflabError(
                f"--baseline '{baseline}' is not one of the variants ({', '.join(names)}): "
                f"name one of them or leave --baseline out for -m64 -O2"
            )
        return vs, baseline
    for v in vs:
        if is_baseline_like(v):
            return vs, v.name
    if "base" in names:
        raise PerflabError("a variant is called 'base' but is not -m64 -O2: pass --baseline NAME")
    return [Variant("base", ("-O2", "-m64")), *vs], "base"  # the order --matrix uses: one shared build


# -------------------------------------------------------------------------------------------
# What is built


@dataclass(frozen=True)
class BuildTarget:
    """The program the variants rebuild.

    Either ``sources`` compiled directly (with ``cflags``/``ldflags`` every variant shares), or
    a project built by its own build system: ``template`` is ``"cmake"`` or a command template
    such as ``make -C {src} CC={cc} CFLAGS={cflags} LDFLAGS={ldflags} -j{jobs}``, run in a copy
    of ``src_dir`` (CMake: in its own build directory); ``exe`` is the program's path inside it.
    """

    name: str
    sources: tuple[Path, ...] = ()
    language: str = "c++"
    cflags: tuple[str, ...] = ()  # common flags (include dirs, -D), before the variant's
    ldflags: tuple[str, ...] = ()  # common link flags, e.g. -lm, after the variant's
    extra_inputs: tuple[Path, ...] = ()  # headers etc. that key the cache without being compiled
    template: str | None = None
    src_dir: Path | None = None
    exe: str | None = None

    def as_dict(self) -> dict:
        d = asdict(self)
        for k in ("sources", "extra_inputs"):
            d[k] = [str(p) for p in d[k]]
        d["src_dir"] = str(self.src_dir) if self.src_dir is not None else None
        return d

    @classmethod
    def from_dict(cls, d: dict) -> "BuildTarget":
        return cls(d["name"], tuple(Path(p) for p in d.get("sources", ())), d.get("language", "c++"),
                   tuple(d.get("cflags", ())), tuple(d.get("ldflags", ())),
                   tuple(Path(p) for p in d.get("extra_inputs", ())), d.get("template"),
                   Path(d["src_dir"]) if d.get("src_dir") else None, d.get("exe"))


@dataclass(frozen=True)
class Sizes:
    """Berkeley-style section sizes from binutils ``size``: text (+rodata), data, bss, in bytes."""

    text: int
    data: int
    bss: int


@dataclass
class VariantBuild:
    """One built variant: where the program is, whether the cache had it, how it was made."""

    variant: Variant
    path: Path
    cached: bool
    command: tuple[str, ...]
    log: str = ""
    sizes: Sizes | None = None
    notes: list[str] = field(default_factory=list)  # e.g. "profile did not apply: ..."
    log_path: str | None = None


def section_sizes(path: Path) -> Sizes | None:
    """text/data/bss of an ELF file via binutils ``size -B`` (None when size is missing)."""
    exe = which("size")
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
    exe = which("objcopy")
    if exe is None:
        return None
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "text.bin"
        proc = subprocess.run([exe, "-O", "binary", "--only-section=.text", str(path), str(out)],
                              capture_output=True, check=False)
        return out.read_bytes() if proc.returncode == 0 and out.exists() else None
