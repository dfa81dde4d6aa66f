"""The cachegrind instrument: a run's instructions, simulated cache misses and branch
mispredictions, counted by Valgrind (deterministic where the program is).

Each instrumented run is ``env -i PATH=... LC_ALL=C [workload env] valgrind --tool=cachegrind
--cache-sim=yes --branch-sim=yes --trace-children=yes --I1 --D1 --LL CMD``: the environment is
fixed and minimal because its size moves the initial stack, and with it the counts (measured
here: +467 instructions for 3000 more bytes of environment), and PWD is not in it, so the
working directory does not move them either. A program given by a path runs through a link at a
fixed-length path (/tmp/perflab-cachegrind-XXXXXXXX/bin/NNN/NAME, its own name kept), so
neither the place of a checkout nor the way the path is written moves them (an absolute path
of another length moved them by 14). The cache model is explicit (platform/cache_model.py).
Every process of the tree writes its own counts file, summed here.

Estimated cycles are Itamar Turner-Trauring's weights (pythonspeed.com, "consistent
benchmarking in CI", as iai and iai-callgrind use them): L1 hits + 5 x LL hits + 35 x RAM
accesses, where the RAM accesses are the LL misses.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Callable, Generator, Sequence

from perflab.errors import PerflabError
from perflab.measure.interface import ConcurrentResult, Executor
from perflab.measure.spawn import base_argv
from perflab.model import RunResult, RunSpec
from perflab.platform.cache_model import CacheModel
from perflab.startup import which

if TYPE_CHECKING:
    from perflab.measure.journal import Journal

NAME = "cachegrind"
STABLE_PATH = "/usr/local/bin:/usr/bin:/bin"
STABLE_ENV = (("PATH", STABLE_PATH), ("LC_ALL", "C"))
INSTALL = "install it (apt-get install valgrind, or make system)"
# The measures every instrumented run stores, in the order they are shown.
MEASURES = ("instructions", "estimated_cycles", "i1_misses", "d1_misses", "ll_misses",
            "cond_mispredicts", "ind_mispredicts")
PER_EVENT = ("instructions", "estimated_cycles", "i1_misses")  # also divided by metric 'events'
ALL_MEASURES = MEASURES + tuple(f"{m}_per_event" for m in PER_EVENT)


def valgrind() -> str:
    """Valgrind's own binary, or a one-line error saying how to install it.

    Debian's /usr/bin/valgrind is a shell script around valgrind.bin that adds
    LD_LIBRARY_PATH=/usr/lib/debug, GLIBCXX_FORCE_NEW and, through sh, PWD to the program's
    environment: PWD moved the count with the working directory (14 instructions between / and
    /tmp/x), so the binary is called directly where there is one.
    """
    exe = which("valgrind")
    if exe is None:
        raise PerflabError(f"--instrument {NAME} needs Valgrind, which is not installed: {INSTALL}")
    real = os.path.realpath(exe) + ".bin"
    return real if which(real) else exe


def measures(counts: dict[str, float], events: float | None = None) -> dict[str, float]:
    """Cachegrind's event totals (Ir, I1mr, ...) -> perflab's measures (see the module doc)."""
    c = {k: float(counts.get(k, 0)) for k in ("Ir", "Dr", "Dw", "I1mr", "D1mr", "D1mw", "ILmr",
                                                "DLmr", "DLmw", "Bcm", "Bim")}
    l1_misses = c["I1mr"] + c["D1mr"] + c["D1mw"]
    ram = c["ILmr"] + c["DLmr"] + c["DLmw"]
    l1_hits = c["Ir"] + c["Dr"] + c["Dw"] - l1_misses
    out = {
        "instructions": c["Ir"],
        "estimated_cycles": l1_hits + 5 * (l1_misses - ram) + 35 * ram,
        "i1_misses": c["I1mr"],
        "d1_misses": c["D1mr"] + c["D1mw"],
        "ll_misses": ram,
        "cond_mispredicts": c["Bcm"],
        "ind_mispredicts": c["Bim"],
    }
    if events:
        for name in PER_EVENT:
            out[f"{name}_per_event"] = out[name] / events
    return out


def parse(text: str) -> dict[str, float]:
    """One cachegrind.out file's totals: its 'events:' names over its 'summary:' numbers."""
    names: list[str] = []
    for line in text.splitlines():
        if line.startswith("events:"):
            names = line.split()[1:]
        elif line.startswith(("summary:", "totals:")) and names:
            return {n: float(v) for n, v in zip(names, line.split()[1:])}
    return {}


def collect(outdir: str) -> tuple[dict[str, float], int]:
    """The summed totals of every process's counts file in ``outdir``, and how many there were."""
    total: dict[str, float] = {}
    files = sorted(f for f in os.listdir(outdir) if f.startswith("cg."))
    for name in files:
        with open(os.path.join(outdir, name), encoding="utf-8", errors="replace") as fh:
            for k, v in parse(fh.read()).items():
                total[k] = total.get(k, 0.0) + v
    return total, len(files)


def _program(argv: tuple[str, ...]) -> tuple[str, ...]:
    """argv with a bare program name the stable PATH does not find resolved on the user's PATH."""
    prog = argv[0]
    if "/" in prog or which(prog, STABLE_PATH):
        return argv
    found = which(prog)
    return (found, *argv[1:]) if found else argv


def wrap(spec: RunSpec, model: CacheModel, outdir: str, exe: str,
         program: tuple[str, ...] | None = None) -> tuple[str, ...]:
    """The argv that runs ``spec`` (or ``program``, its argv as linked) under cachegrind in the
    stable environment."""
    env = dict(STABLE_ENV)
    env.update(spec.env or {})
    return (which("env") or "/usr/bin/env", "-i", *(f"{k}={v}" for k, v in env.items()), exe,
            "--tool=cachegrind", "--cache-sim=yes", "--branch-sim=yes", "--trace-children=yes",
            f"--cachegrind-out-file={outdir}/cg.%p.%n", f"--log-file={outdir}/vg.%p.log",
            *model.valgrind_options(), *(program or _program(base_argv(spec))))


@dataclass(frozen=True)
class Cost:
    """One command's native wall time against its first simulated run's."""

    native_s: float
    simulated_s: float

    @property
    def slowdown(self) -> float:
        return self.simulated_s / max(self.native_s, 1e-9)

    def as_dict(self) -> dict[str, float]:
        return {"native_s": self.native_s, "simulated_s": self.simulated_s, "slowdown": self.slowdown}


class CachegrindExecutor:
    """Wraps an executor: specs whose ``instrument`` is 'cachegrind' run simulated, one at a
    time, and come back with MEASURES in their metrics; every other spec passes through. The
    first run of each command is preceded by one native run, to measure what simulation costs
    (``costs``; ``on_cost`` hears it at once, before the rest of the campaign). ``events``:
    Cachegrind totals also kept as they are, as metrics 'cg_<event>' (e.g. ILmr, the LL misses of
    instruction fetches, which MEASURES sum with the data's)."""

    def __init__(self, inner: Executor, model: CacheModel,
                 on_cost: Callable[[str, Cost], None] | None = None, events: Sequence[str] = ()) -> None:
        import tempfile

        self.inner = inner
        self.model = model
        self.events = tuple(events)
        self.exe = valgrind()
        self.on_cost = on_cost
        self.costs: dict[str, Cost] = {}
        # /tmp itself, not $TMPDIR: the links' path length must not differ between machines.
        self._root = tempfile.mkdtemp(prefix="perflab-cachegrind-", dir="/tmp")
        self._dir = os.path.join(self._root, "out")
        os.mkdir(self._dir)
        self._links: dict[str, str] = {}

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)  # root, trampoline, ...: the inner executor's

    @property
    def live(self) -> bool:
        return self.inner.live

    def now_ns(self) -> int:
        return self.inner.now_ns()

    def wait(self, seconds: float) -> None:
        self.inner.wait(seconds)

    def run_batch(self, spec: RunSpec, count: int, journal: Journal | None = None,
                  key: tuple[int, str, dict, int] | None = None) -> Generator[list[RunResult], None, None]:
        if spec.instrument:
            raise ValueError(f"--instrument {spec.instrument} runs one at a time: can_batch is False")
        return self.inner.run_batch(spec, count, journal, key)

    def close(self) -> None:
        import shutil

        shutil.rmtree(self._root, ignore_errors=True)

    def can_batch(self, spec: RunSpec) -> bool:
        return not spec.instrument and self.inner.can_batch(spec)

    def _clear(self) -> None:
        for name in os.listdir(self._dir):
            os.unlink(os.path.join(self._dir, name))

    def _linked(self, argv: tuple[str, ...], cwd: str | None) -> tuple[str, ...]:
        """argv whose program, where given by a path, is reached through a fixed-length link."""
        if "/" not in argv[0]:
            return _program(argv)
        real = os.path.realpath(os.path.join(cwd or os.getcwd(), argv[0]))
        if real not in self._links:
            folder = os.path.join(self._root, "bin", f"{len(self._links):03d}")
            os.makedirs(folder)
            self._links[real] = os.path.join(folder, os.path.basename(real))
            os.symlink(real, self._links[real])
        return (self._links[real], *argv[1:])

    def _simulated(self, spec: RunSpec) -> RunSpec:
        program = self._linked(base_argv(spec), spec.cwd)
        return replace(spec, argv=wrap(spec, self.model, self._dir, self.exe, program),
                       shell=False, env=None)

    def _finish(self, spec: RunSpec, result: RunResult) -> RunResult:
        counts, files = collect(self._dir)
        if files and counts:
            result.metrics.update(measures(counts, result.metrics.get("events")))
            result.metrics["processes"] = float(files)
            result.metrics.update({f"cg_{e}": counts.get(e, 0.0) for e in self.events})
        elif result.ok:
            raise PerflabError(f"cachegrind wrote no counts for '{spec.label or spec.argv[0]}' "
                               f"({self._log_tail() or 'no log'}): check that Valgrind runs it")
        else:
            result.stderr_tail = "\n".join(filter(None, (result.stderr_tail, self._log_tail())))
        return result

    def _log_tail(self) -> str:
        lines: list[str] = []
        for name in sorted(os.listdir(self._dir)):
            if name.startswith("vg."):
                with open(os.path.join(self._dir, name), encoding="utf-8", errors="replace") as fh:
                    lines += [ln for ln in fh.read().splitlines() if ln.strip("=-0123456789 ")]
        return "; ".join(ln.split(" ", 1)[-1].strip() for ln in lines[-3:])

    def _calibrate(self, spec: RunSpec) -> RunResult | None:
        key = spec.label or " ".join(spec.argv)
        if key in self.costs:
            return None
        return self.inner.run(spec)

    def _cost(self, spec: RunSpec, native: RunResult | None, simulated: RunResult) -> None:
        if native is None or not native.ok or not simulated.ok:
            return
        cost = Cost(native.wall_s, simulated.wall_s)
        self.costs[spec.label or " ".join(spec.argv)] = cost
        if self.on_cost is not None:
            self.on_cost(spec.label, cost)

    def run(self, spec: RunSpec) -> RunResult:
        if spec.instrument != NAME:
            return self.inner.run(spec)
        native = self._calibrate(spec)
        self._clear()
        result = self._finish(spec, self.inner.run(self._simulated(spec)))
        self._cost(spec, native, result)
        return result

    def capture(self, spec: RunSpec) -> tuple[RunResult, str]:
        if spec.instrument != NAME:
            return self.inner.capture(spec)
        self._clear()
        result, output = self.inner.capture(self._simulated(spec))
        return self._finish(spec, result), output

    def run_concurrent(self, specs: Sequence[RunSpec], together: bool = True) -> ConcurrentResult:
        if any(s.instrument == NAME for s in specs):
            raise PerflabError(f"--instrument {NAME} simulates one process tree at a time: "
                               "measure concurrent copies without it")
        return self.inner.run_concurrent(specs, together)
