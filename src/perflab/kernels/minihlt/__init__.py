"""minihlt, the built-in reference workload: a C++17 event-processing program shipped as sources.

It loads a pointer-rich detector description (millions of small linked objects, ``--static-mb``),
then processes events (transport through the geometry, hits, a trigger decision) and prints
``start processing event #N`` / ``done processing event #N in X ms`` lines and a summary
(``events:``, ``seconds:``, ``events/s:``, ``accepted:``, ``steps:``, ``checksum: 0xHEX (DEC)``).
The checksum is a sum of per-event integer hashes, identical across -O levels, ABIs and
``--fork`` splits at the same seed. Builds go through the shared build cache.
"""

from __future__ import annotations

import fcntl
import hashlib
import shutil
import subprocess
from pathlib import Path
from typing import Sequence

from perflab.model import BuildRecipe, Workload
from perflab.errors import PerflabError
from perflab.kernels.build import BuildResult, build, cache_root
from perflab.model import MetricPattern

HERE = Path(__file__).resolve().parent

#: ABI name -> the flags that select it. -m32 also gets SSE2 arithmetic so it does not run on the
#: x87 stack (the checksum does not need it; speed comparisons with -m64 are fairer with it).
ABI_FLAGS: dict[str, tuple[str, ...]] = {
    "m64": ("-m64",),
    "m32": ("-m32", "-msse2", "-mfpmath=sse"),
    "mx32": ("-mx32",),
}

DEFAULT_EVENTS = 100  # about 2-3 s per run on a 2-CPU VM at -O2
DEFAULT_STATIC_MB = 120
QUICK_EVENTS = 20  # the "minihlt-quick" variant: under 1 s
QUICK_STATIC_MB = 32

METRICS: tuple[MetricPattern, ...] = (
    MetricPattern(r"(?m)^events: (?P<events>\d+)$"),
    MetricPattern(r"(?m)^seconds: (?P<seconds>[\d.]+)$"),
    MetricPattern(r"(?m)^events/s: (?P<events_per_s>[\d.]+)$"),
    MetricPattern(r"(?m)^accepted: (?P<accepted>\d+)$"),
    MetricPattern(r"(?m)^steps: (?P<steps>\d+)$"),
    # the checksum is < 2**53, so its decimal form is exact as a float metric
    MetricPattern(r"(?m)^checksum: 0x[0-9a-f]+ \((?P<checksum>\d+)\)$"),
)

#: one line per event, with the time minihlt measured for it (measure/series.py)
SERIES: tuple[MetricPattern, ...] = (
    MetricPattern(r"^done processing event #(?P<event>\d+) in (?P<ms>[\d.]+) ms$", aggregate="series"),
)

#: minihlt's own Makefile as a `perflab variants --build` template (its CMakeLists.txt: ``cmake``)
MAKE_TEMPLATE = "make -C {src} CXX={cxx} CXXFLAGS={cxxflags} LDFLAGS={ldflags} LDLIBS={libs} -j{jobs}"

#: printed once the static data is in memory (a profiling window starts after it)
STATIC_LOADED_MARKER = "static data loaded:"


def sources() -> list[Path]:
    """All of minihlt's source files (.cpp and .h), sorted: what the build cache keys on."""
    return sorted(p for p in HERE.iterdir() if p.suffix in (".cpp", ".h"))


def cpp_sources() -> list[Path]:
    return [p for p in sources() if p.suffix == ".cpp"]


def headers() -> list[Path]:
    return [p for p in sources() if p.suffix == ".h"]


def build_minihlt(
    cflags: Sequence[str] = ("-O2",),
    compiler: str = "g++",
    ldflags: Sequence[str] = (),
    extra_inputs: Sequence[Path | str] = (),
) -> BuildResult:
    """Compile minihlt with ``cflags`` (plus -std=c++17) through the build cache."""
    flags = ["-std=c++17", *cflags]
    return build(
        cpp_sources(),
        "minihlt",
        compiler=compiler,
        cflags=flags,
        ldflags=[*ldflags, "-lm"],
        extra_inputs=[*headers(), *extra_inputs],
    )


def build_minihlt_pgo(
    cflags: Sequence[str] = ("-O2",),
    compiler: str = "g++",
    training_args: Sequence[str] = ("--events", "40", "--static-mb", "32", "--seed", "7"),
) -> BuildResult:
    """Two-phase profile-guided build: instrumented build, a training run, then -fprofile-use.

    ``-dumpdir`` fixes the .gcda names, which GCC otherwise derives from the (temporary) output
    path, so the profile written by the training run is found by the second build. The profile
    files take part in the second build's cache key.
    """
    tag = hashlib.sha256("\0".join([compiler, *cflags, *training_args]).encode())
    for src in sources():
        # The path too: GCC checks a profile against each function's source file and line, so a
        # profile trained from another checkout of the same sources fails the -fprofile-use build
        # ("source locations ... have changed").
        tag.update(str(src.resolve()).encode() + b"\0" + src.read_bytes())
    prof = cache_root() / "pgo" / f"minihlt-{tag.hexdigest()[:16]}"
    dumpdir = ("-dumpdir", f"{prof}/minihlt-")
    prof.parent.mkdir(parents=True, exist_ok=True)
    # Two labs or test workers training the same profile at once would remove each other's
    # directory mid-run; the lock makes the second wait and then find the profile trained.
    with open(f"{prof}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        gcda = sorted(prof.glob("*.gcda")) if prof.is_dir() else []
        if len(gcda) < len(cpp_sources()):
            shutil.rmtree(prof, ignore_errors=True)
            prof.mkdir(parents=True)
            gen = build_minihlt([*cflags, "-fprofile-generate", *dumpdir], compiler)
            proc = subprocess.run(
                [str(gen.path), *training_args], capture_output=True, text=True, check=False
            )
            if proc.returncode != 0:
                raise PerflabError(
                    f"PGO training run of minihlt failed (exit {proc.returncode}): "
                    f"{proc.stderr.strip()[-200:] or 'no stderr'}"
                )
            gcda = sorted(prof.glob("*.gcda"))
            if not gcda:
                raise PerflabError(f"PGO training run wrote no profile into {prof}: check the compiler")
    use = [*cflags, "-fprofile-use", "-fprofile-correction", "-Wno-missing-profile", *dumpdir]
    result = build_minihlt(use, compiler, extra_inputs=gcda)
    result.extra["profile_dir"] = str(prof)
    return result


def workload(
    cflags: Sequence[str] = ("-O2",),
    events: int | None = DEFAULT_EVENTS,
    static_mb: int = DEFAULT_STATIC_MB,
    extra_args: Sequence[str] = (),
    *,
    seconds: float | None = None,
    seed: int | None = None,
    compiler: str = "g++",
    name: str = "minihlt",
    build: bool = True,
) -> Workload:
    """minihlt as a Workload (primary metric events/s); builds it unless ``build=False``.

    With ``build=False`` argv[0] is the placeholder ``{binary}`` for the caller to substitute.
    """
    exe = str(build_minihlt(cflags, compiler).path) if build else "{binary}"
    args: list[str] = []
    if seconds is not None:
        args += ["--seconds", f"{seconds:g}"]
    if events is not None:
        args += ["--events", str(int(events))]
    args += ["--static-mb", str(int(static_mb))]
    if seed is not None:
        args += ["--seed", str(int(seed))]
    args += list(extra_args)
    return Workload(
        name=name,
        argv=(exe, *args),
        metrics=METRICS,
        series=SERIES,
        primary_metric="events_per_s",
        higher_is_better=True,
        build=BuildRecipe(
            sources=tuple(str(p) for p in cpp_sources()),
            language="c++",
            cflags=("-std=c++17", *cflags),
            ldflags=("-lm",),
            output="minihlt",
        ),
        source="builtin",
        fork_arg=("--fork", "{n}", "--first", "{first}", "--events", "{events}"),
        event_arg=("--event", "{k}"),
        checksum_metric="checksum",
    )


def quick_workload(cflags: Sequence[str] = ("-O2",), build: bool = True) -> Workload:
    """A short minihlt run (20 events, 32 MB of static data): under a second, for smoke tests."""
    return workload(cflags, events=QUICK_EVENTS, static_mb=QUICK_STATIC_MB, name="minihlt-quick", build=build)
