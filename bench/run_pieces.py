"""Where a run of `true` goes in perflab's spawn server, piece by piece (runs back to back).

Each configuration runs RUNS runs of `true` in one batch of the real spawn server
(perflab/kernels/spawnserver.c, driven by measure/server.py as `perflab run` drives it) and
takes the batch's wall time per run, from the request to the last answer read:
  bare     the server alone: vfork, exec, wait4 and one answer line per run on the pipe
  health   + the run's health sample (the first line of /proc/stat, PSI, loadavg and each CPU's
           frequency and throttle counters, pread right after the reap)
  journal  + the run's record appended to the journal file before the next run starts
  both     health and journal: what `perflab run` asks for
beside the tools' own loops over the same runs: hyperfine -N and a static C loop of
vfork+execve+wait4 (the floor for a dynamic `true`). Besides it times the pieces alone, in
process: one health sample (preads of those files) and one journal append. The configurations
alternate over ROUNDS rounds (this VM's speed drifts); medians per run, and ratios to
hyperfine -N measured in the same rounds.

    .venv/bin/python bench/run_pieces.py [RUNS [ROUNDS [PROGRAM|static]]]
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

from perflab.measure.health import HealthProbe
from perflab.measure.server import Server, build_helper
from perflab.model import RunSpec
from perflab.platform.sysfs import Root

RUNS = int(sys.argv[1]) if len(sys.argv) > 1 else 500
ROUNDS = int(sys.argv[2]) if len(sys.argv) > 2 else 5
# the system's `true` (dynamic: most of its life is the loader), or "static": a static
# `int main() { return 0; }`, whose life is little more than fork+exec+exit
TRUE = sys.argv[3] if len(sys.argv) > 3 else ("/usr/bin/true" if os.path.exists("/usr/bin/true") else "/bin/true")

LOOP_C = r"""
#define _GNU_SOURCE
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
int main(int argc, char **argv) {
    long n = atol(argv[1]);
    char *args[] = {argv[2], NULL};
    extern char **environ;
    for (long i = 0; i < n; i++) {
        pid_t pid = vfork();
        if (pid == 0) { execve(argv[2], args, environ); _exit(127); }
        int status; struct rusage ru;
        wait4(pid, &status, 0, &ru);
    }
    return 0;
}
"""


def main() -> None:
    tmp = tempfile.mkdtemp(prefix="perflab-pieces-")
    loop = os.path.join(tmp, "loop")
    src = os.path.join(tmp, "loop.c")
    with open(src, "w") as fh:
        fh.write(LOOP_C)
    subprocess.run(["gcc", "-O2", "-static", "-o", loop, src], check=True)
    global TRUE
    if TRUE == "static":
        TRUE = os.path.join(tmp, "static-true")
        with open(TRUE + ".c", "w") as fh:
            fh.write("int main(void) { return 0; }\n")
        subprocess.run(["gcc", "-O2", "-static", "-o", TRUE, TRUE + ".c"], check=True)
    out = os.memfd_create("out")
    err = os.memfd_create("err")
    devnull = os.open(os.devnull, os.O_RDWR)
    server = Server.start(build_helper("spawnserver"), out, err, devnull)
    health = HealthProbe(Root("/"))
    cpus = sorted(os.sched_getaffinity(0))
    paths = health.paths(cpus)
    spec = RunSpec(argv=(TRUE,))
    journal = os.path.join(tmp, "journal")

    def batch(hp, jp):
        if os.path.exists(journal):
            os.unlink(journal)
        t0 = time.perf_counter()
        n = sum(len(g) for g in server.batch(spec, (TRUE,), RUNS, hp, jp, "t" if jp else ""))
        assert n == RUNS
        return (time.perf_counter() - t0) / RUNS

    def tool(argv):
        t0 = time.perf_counter()
        subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        return time.perf_counter() - t0

    def hyperfine(n):
        return tool(["hyperfine", "-N", "--runs", str(n), "--export-json", os.path.join(tmp, "h.json"), TRUE])

    configs = {
        "bare": lambda: batch([], ""),
        "health": lambda: batch(paths, ""),
        "journal": lambda: batch([], journal),
        "both": lambda: batch(paths, journal),
        # marginal cost of hyperfine's runs: its start-up taken out with a 50-run invocation
        "hyperfine -N": lambda: (hyperfine(RUNS) - hyperfine(50)) / (RUNS - 50),
        "C vfork loop": lambda: tool([loop, str(RUNS), TRUE]) / RUNS,
    }
    times: dict[str, list[float]] = {k: [] for k in configs}
    ratios: dict[str, list[float]] = {k: [] for k in configs}
    for _ in range(ROUNDS):
        this = {k: f() for k, f in configs.items()}
        for k, v in this.items():
            times[k].append(v)
            ratios[k].append(v / this["hyperfine -N"])
    # the pieces alone, in this process: a health sample's preads, a journal append
    fds = [os.open(p, os.O_RDONLY) for p in paths if os.path.exists(p)]
    t0 = time.perf_counter()
    for _ in range(RUNS):
        for fd in fds:
            os.pread(fd, 512, 0)
    sample = (time.perf_counter() - t0) / RUNS
    per_file = {}
    for p in paths:
        if os.path.exists(p):
            fd = os.open(p, os.O_RDONLY)
            t0 = time.perf_counter()
            for _ in range(RUNS):
                os.pread(fd, 512, 0)
            per_file[p] = (time.perf_counter() - t0) / RUNS
            os.close(fd)
    jfd = os.open(journal, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    line = b"t\t0\tR 1 2 0 3 4 5 6 7 8 9 0\t" + b"x" * 150 + b"\n"
    t0 = time.perf_counter()
    for _ in range(RUNS):
        os.write(jfd, line)
    append = (time.perf_counter() - t0) / RUNS
    server.stop()
    med = statistics.median
    print(f"{RUNS} runs of {TRUE} per configuration, {ROUNDS} rounds alternating, load "
          f"{os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs; medians per run")
    for k in configs:
        print(f"  {k:14} {med(times[k]) * 1e6:8.1f} us   / hyperfine -N (same round) {med(ratios[k]):.2f}")
    print(f"  pieces in process: health sample {sample * 1e6:.1f} us ({len(fds)} files), journal append "
          f"{append * 1e6:.1f} us")
    for p, t in sorted(per_file.items(), key=lambda kv: -kv[1]):
        print(f"    {p:55} {t * 1e6:6.1f} us")
    print(json.dumps({k: med(v) for k, v in times.items()}))


if __name__ == "__main__":
    main()
