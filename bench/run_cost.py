"""Per-run cost of `perflab run` beside `hyperfine -N` and the floor of starting the command at all.

The cost of one more run is what a tool's wall time grows by per added run: each tool runs the
command N1 and N2 times in two invocations and the marginal cost is (T(N2) - T(N1)) / (N2 - N1),
so start-up, warm-up and the final analysis cancel out. Three tools, on the same command:
  floor        a small C loop (compiled here at run time with gcc) that starts the command with
               posix_spawn (spawn) or vfork+execve (vfork) and reaps it with wait4, N times: the
               least any tool can spend per run, since it does nothing else
  hyperfine    hyperfine -N --runs N (no shell)
  perflab      perflab run --runs N -- CMD, its store an existing SQLite file (every run stored,
               with its rusage and health sample, and journalled for resume)
Every round runs all eight invocations (four tools x two N) in a shuffled order, and a tool's
marginal cost is taken within the round, so the machine's drift between rounds cancels in the
ratios; the figures are medians over the rounds, the ratios medians of the ratios within a round.

    .venv/bin/python bench/run_cost.py [N1 [N2 [ROUNDS [PROGRAM|static]]]]

PROGRAM defaults to the system's `true` (dynamically linked: most of its life is the loader);
"static" builds a static `int main() { return 0; }` here, whose life is little more than the
exec itself.
"""

from __future__ import annotations

import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

N1 = int(sys.argv[1]) if len(sys.argv) > 1 else 200
N2 = int(sys.argv[2]) if len(sys.argv) > 2 else 1200
ROUNDS = int(sys.argv[3]) if len(sys.argv) > 3 else 7
PROGRAM = sys.argv[4] if len(sys.argv) > 4 else (shutil.which("true") or "/bin/true")
HERE = os.path.dirname(os.path.abspath(__file__))
PERFLAB = os.environ.get("PERFLAB") or os.path.join(HERE, "..", ".venv", "bin", "perflab")

LOOP_C = r"""
#define _GNU_SOURCE
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
extern char **environ;
int main(int argc, char **argv) {
    if (argc < 4) return 2;
    int use_vfork = strcmp(argv[1], "vfork") == 0;
    long n = atol(argv[2]);
    char *args[] = {argv[3], NULL};
    for (long i = 0; i < n; i++) {
        pid_t pid;
        if (use_vfork) {
            pid = vfork();
            if (pid == 0) { execve(argv[3], args, environ); _exit(127); }
        } else if (posix_spawn(&pid, argv[3], NULL, NULL, args, environ) != 0) {
            return 1;
        }
        int status; struct rusage ru;
        if (wait4(pid, &status, 0, &ru) < 0 || status != 0) return 1;
    }
    return 0;
}
"""


def build(tmp: str) -> tuple[str, str]:
    """The C loop, and the program to run (a static `true` when asked)."""
    src = os.path.join(tmp, "loop.c")
    with open(src, "w") as fh:
        fh.write(LOOP_C)
    loop = os.path.join(tmp, "loop")
    subprocess.run(["gcc", "-O2", "-o", loop, src], check=True)
    program = PROGRAM
    if program == "static":
        program = os.path.join(tmp, "static-true")
        with open(program + ".c", "w") as fh:
            fh.write("int main(void) { return 0; }\n")
        subprocess.run(["gcc", "-O2", "-static", "-o", program, program + ".c"], check=True)
    return loop, program


def main() -> None:
    if shutil.which("hyperfine") is None:
        sys.exit("hyperfine not found: install it (scripts/install-system-packages.sh, or apt-get install hyperfine)")
    tmp = tempfile.mkdtemp(prefix="perflab-runcost-")
    try:
        loop, program = build(tmp)
        db = os.path.join(tmp, "s.db")
        tools = {
            "floor (posix_spawn)": lambda n: [loop, "spawn", str(n), program],
            "floor (vfork)": lambda n: [loop, "vfork", str(n), program],
            "hyperfine -N": lambda n: ["hyperfine", "-N", "--runs", str(n), "--style", "none",
                                       "--export-json", os.path.join(tmp, "h.json"), program],
            "perflab run": lambda n: [PERFLAB, "run", "--db", db, "--runs", str(n), "--", program],
        }
        # the store exists and the machine capture is cached, as for every run but a user's first
        subprocess.run(tools["perflab run"](1), check=True, stdout=subprocess.DEVNULL)
        rng = random.Random(1)
        marginal: dict[str, list[float]] = {k: [] for k in tools}
        loads = []
        for _ in range(ROUNDS):
            jobs = [(k, n) for k in tools for n in (N1, N2)]
            rng.shuffle(jobs)
            wall = {}
            for k, n in jobs:
                t0 = time.perf_counter()
                subprocess.run(tools[k](n), check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                wall[k, n] = time.perf_counter() - t0
            for k in tools:
                marginal[k].append((wall[k, N2] - wall[k, N1]) / (N2 - N1))
            loads.append(os.getloadavg()[0])
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    med = statistics.median
    floor = [min(a, b) for a, b in zip(marginal["floor (posix_spawn)"], marginal["floor (vfork)"])]

    def ratio(a: list[float], b: list[float]) -> float:
        return med([x / y for x, y in zip(a, b)])

    print(f"per-run cost of {os.path.basename(program) if PROGRAM == 'static' else program}: "
          f"(T({N2} runs) - T({N1} runs)) / {N2 - N1}, {ROUNDS} rounds, load "
          f"{min(loads):.1f}-{max(loads):.1f} on {os.cpu_count()} CPUs")
    for k, v in marginal.items():
        print(f"  {k:20} {med(v) * 1e6:7.0f} us a run (rounds: {min(v) * 1e6:.0f}-{max(v) * 1e6:.0f})")
    hf, pl = marginal["hyperfine -N"], marginal["perflab run"]
    print(f"  hyperfine -N / floor {ratio(hf, floor):.2f}; perflab run / floor {ratio(pl, floor):.2f}; "
          f"perflab run / hyperfine -N {ratio(pl, hf):.2f} (medians of the ratios within a round; "
          f"floor: the cheaper C loop of the round)")
    half = 0.5 * med(hf)
    where = "below" if half < med(floor) else "above"
    print(f"  half of hyperfine -N's cost, {half * 1e6:.0f} us, is {where} the floor's {med(floor) * 1e6:.0f} us; "
          f"perflab run {'meets' if ratio(pl, hf) <= 0.5 else 'misses'} 0.5x hyperfine -N")


if __name__ == "__main__":
    main()
