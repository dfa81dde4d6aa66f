#!/usr/bin/env python3
"""Regenerate the README's tour and the pages' headline examples from real runs (`make docs-examples`).

Each example is a few shell lines run as a reader would paste them, in one bash of its own, in
/tmp/tour (emptied first; so the paths printed stay the same), with the venv's perflab first on
the PATH, COLUMNS=1000 so that no verdict line wraps. The whole output is recorded in
docs/examples/NAME.txt; the fenced block after `<!-- example: NAME -->` in the page is then
rewritten from the record (each line's output cut by its `show` rule, '...' where lines are left
out). An example told in several blocks of its page, one shell session with prose between, gives
each line a `block` and marks the blocks `<!-- example: NAME.1 -->`, `NAME.2`, ...; a step the
page does not show (a wait for a batch job) is `shown=False`. tests/docs/test_docs_examples.py fails
when a page no longer shows what its record holds, or a record no longer holds the commands below.
The fleet examples start their own Slurm (scripts/slurm-local) and PostgreSQL (scripts/pg-local)
and need root.

    .venv/bin/python bench/docs_examples.py              # every example (several minutes)
    .venv/bin/python bench/docs_examples.py cores cost   # these
    .venv/bin/python bench/docs_examples.py --pages      # only rewrite the pages from the records
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parent.parent
RECORDS = ROOT / "docs" / "examples"
MARK = "@@perflab-docs-example@@"


def everything(lines: list[str]) -> list[str]:
    return lines


def head_tail(h: int, t: int) -> Callable[[list[str]], list[str]]:
    return lambda lines: lines if len(lines) <= h + t else [*lines[:h], "...", *lines[len(lines) - t:]]


def matching(*patterns: str, rows: int = 0) -> Callable[[list[str]], list[str]]:
    """The lines that match a pattern, and the first `rows` rows of a table ('│ ... │'),
    with '...' where lines are left out."""
    def pick(lines: list[str]) -> list[str]:
        out, gap, seen_rows = [], False, 0
        for line in lines:
            keep = any(re.search(p, line) for p in patterns)
            if not keep and line.startswith("│") and seen_rows < rows:
                keep, seen_rows = True, seen_rows + 1
            if keep:
                if gap and (not out or out[-1] != "..."):
                    out.append("...")
                out.append(line)
                gap = False
            else:
                gap = True
        if gap and out and out[-1] != "...":
            out.append("...")
        return out
    return pick


@dataclass
class Line:
    shell: str  # as the reader pastes it
    show: Callable[[list[str]], list[str]] = everything
    shown: bool = True  # False: a step run but not printed on the page (a wait)
    block: int = 0  # an example told in several blocks of its page: <!-- example: NAME.BLOCK --> (from 1)


@dataclass
class Example:
    name: str
    page: str  # relative to the repository
    lines: list[Line]
    setup: str = ""  # run first, not shown (files the page shows with cat, say)
    cleanup: str = ""
    env: dict[str, str] = field(default_factory=dict)
    in_repo: bool = False  # runs in the checkout itself (commands that only read it)


ENC = r"""cat > enc.sh <<'EOF'
for f in 1 2 3; do printf "frame= $f fps= %d\r" $((f*20)) >&2; sleep 0.01; done; echo >&2
EOF
"""

FLEET_WAIT = ("for i in $(seq 120); do perflab fleet status farm --db farm.db | grep -q 'pending\\|running' "
              "|| break; sleep 5; done")

EXAMPLES = [
    Example("machine", "README.md", [Line("perflab machine | tail -4")]),
    Example("cores", "README.md", [Line(
        "perflab cores -w minihlt-quick --rounds 20",
        matching(r"^(verdict|note|CPU \d)"))]),
    Example("instances", "README.md", [Line(
        "perflab instances -w minihlt-quick --n 1,2,3,4 --policy none",
        matching(r"^(answer|memory at|note: N above)", r"^(┏|┃|┡|└)", rows=9))]),
    Example("cost", "README.md", [Line("perflab cost src/perflab/examples/trigger-farm-platforms.toml | tail -2")],
            setup="mkdir -p src/perflab/examples && cp {root}/src/perflab/examples/trigger-farm-platforms.toml "
                  "src/perflab/examples/"),
    Example("variants", "README.md", [Line(
        "perflab variants -w minihlt --build make --matrix abi=m64,m32,mx32 --events 20 --static-mb 32 --rounds 10",
        matching(r"^(verdict|m32|mx32|m64):"))]),
    Example("encoder", "README.md", [
        Line("cat enc.sh"),
        Line("perflab run --runs 5 -n encoder --metric 'stderr:last:fps=\\s*(?P<fps>[\\d.]+)' "
             "--metric 'stderr:count:frame=\\s*(?P<frames>\\d+)' -- sh enc.sh",
             matching(r"^│ encoder"))], setup=ENC),
    Example("profile-pid", "README.md", [
        Line("$(perflab workload path minihlt) --events 1000000 --seconds 60 > job.log &"),
        Line("perflab profile --pid $! --log job.log --start 'start processing event #300\\b' "
             "--stop 'done processing event #319\\b'",
             matching(r"^recording 1/1:", rows=2)),
        Line("kill %1")], cleanup="wait"),
    Example("fleet", "README.md", [
        Line("scripts/slurm-local start $PWD/cluster"),
        Line("export SLURM_CONF=$PWD/cluster/slurm.conf"),
        Line("perflab fleet submit farm --nodes 3 --host-label node --db farm.db -- run -w minihlt-quick --runs 10",
             matching(r"^fleet farm: submitted")),
        Line(FLEET_WAIT, shown=False),
        Line("perflab fleet report farm --db farm.db", matching(r"^│ node-", r"^(no slow host|slow hosts|  node-\d)"))],
        setup="mkdir -p scripts && cp {root}/scripts/slurm-local scripts/",
        cleanup="scripts/slurm-local stop $PWD/cluster >/dev/null 2>&1"),
]
ENC_TOML = r"""cat > perflab.toml <<'TOML'
[workload.enc]
command = "i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done; echo fps=181 frames=100"
shell = true
metrics = ['fps=(?P<fps>\d+)', 'frames=(?P<frames>\d+)', 'dropped=(?P<dropped>\d+)']
primary_metric = "fps"
TOML
"""
SUM_C = r"""cat > sum.c <<'CSRC'
#include <stdio.h>
int main(void) {
    double s = 0;
    for (long i = 1; i < 30000000; i++) s += 1.0 / i;
    printf("%.9f\n", s);
    return 0;
}
CSRC
"""
WORK_C = r"""cat > work.c <<'CSRC'
#include <stdio.h>
int main(void) {
    volatile unsigned long s = 0;
    for (unsigned long i = 0; i < LOOPS; i++) s += i * i;
    printf("%d events\n", 100);
    return 0;
}
CSRC
"""


def without(pattern: str) -> Callable[[list[str]], list[str]]:
    """The lines that do not match, '...' for each run of those left out."""
    def pick(lines: list[str]) -> list[str]:
        out: list[str] = []
        for line in lines:
            if re.search(pattern, line):
                if not out or out[-1] != "...":
                    out.append("...")
            else:
                out.append(line)
        return out
    return pick


PROG_C = r"""cat > prog.c <<'CSRC'
#include <stdio.h>
#include <math.h>
int main(int argc, char **argv) {
    const char *path = argc > 1 ? argv[1] : "data/input.txt";
    FILE *f = fopen(path, "r");
    if (!f) { perror(path); return 1; }
    unsigned long sum = 0; int c; long n = 0;
    while ((c = fgetc(f)) != EOF) { sum = sum * 31 + (unsigned)c; n++; }
    fclose(f);
    printf("bytes %ld checksum %lu sqrt %.3f\n", n, sum % 1000003, sqrt((double)n));
    return 0;
}
CSRC
"""


def from_match(pattern: str) -> Callable[[list[str]], list[str]]:
    """'...' and the lines from the first that matches on."""
    def pick(lines: list[str]) -> list[str]:
        i = next((i for i, line in enumerate(lines) if re.search(pattern, line)), len(lines))
        return (["..."] if i else []) + lines[i:]
    return pick


EXAMPLES += [
    Example("footprint", "docs/footprint.md", [
        Line("perflab footprint -- python3 -c 'import json'", from_match(r"needed files by top directory"))]),
    Example("footprint-prog", "docs/footprint.md", [
        Line("cat prog.c"),
        Line("gcc -O2 -o prog prog.c -lm"),
        Line("mkdir data && seq 0 4999 > data/input.txt"),
        Line("perflab footprint --db fp.db -- ./prog")], setup=PROG_C),
    Example("faults", "README.md", [
        Line("perflab cores --rounds 2 --min-rounds 2 -- false", matching(r"^perflab: error")),
        Line("timeout -s TERM 5 perflab instances -w minihlt-quick --n 1,2,3,4 --policy none --reps 20",
             matching(r"^perflab: interrupted")),
        Line("perflab resume | tail -1"),
        Line("perflab cores --cpus 999 -- true"),
        Line("perflab bundle -o b.tgz -- true > /dev/null && head -c 3000 b.tgz > truncated.tgz"),
        Line("perflab bundle verify truncated.tgz")]),
    Example("cost-plot", "docs/cost.md", [
        Line("perflab cost src/perflab/examples/trigger-farm-platforms.toml --plot cost.svg")],
        setup="mkdir -p src/perflab/examples && cp {root}/src/perflab/examples/trigger-farm-platforms.toml "
              "src/perflab/examples/"),
    Example("run-two", "docs/run.md", [
        Line("perflab run --runs 3 'sleep 0.01' 'sleep 0.02'",
             matching(r"^(ranked by|  \d|warning: 'sleep 0.02' against)"))]),
    Example("micro", "docs/micro.md", [
        Line("perflab micro --shm off --io-dir /tmp", without(r"^\d+/\d+ runs$|^results: "))]),
    Example("profile-event", "docs/profile.md", [
        Line("perflab profile -w minihlt --event 42 --repeat 3 --threshold 3", without(r"^perf.data: "))]),
    Example("profile-stacks", "docs/profile.md", [
        Line("perflab profile -w minihlt --event 42 --call-graph dwarf --repeat 3 --annotate 0 --threshold 6 "
             "--tree --prune 4 --export folded event42.folded --export speedscope event42.json",
             without(r"^perf.data: ")),
        Line("awk '{n += $NF} END {print NR \" stacks, \" n \" samples\"}' event42.folded"),
        Line("python3 -c \"import json; d = json.load(open('event42.json')); "
             "print(d['profiles'][0]['type'], len(d['shared']['frames']), 'frames', sum(d['profiles'][0]['weights']), 'samples')\"")]),
    Example("instrument-work", "docs/instrument.md", [
        Line("cat work.c"),
        Line("gcc -O1 -DLOOPS=200000 -o work work.c"),
        Line("perflab run --instrument cachegrind --runs 5 --metric '(?P<events>\\d+) events' -- ./work",
             matching(r"^(cachegrind:|instrument:|deterministic|cost:|┏|┃|┡|└|│)"))],
        setup=WORK_C),
    Example("instances-plan", "docs/instances.md", [
        Line("tar xjf tests/data/topologies/memorysidecaches.tar.bz2"),
        Line("perflab instances --plan --root memorysidecaches --n 1,2,4,6 --policy compact --policy spread "
             "--policy numa --threads-per-copy 4")],
        setup="mkdir -p tests/data/topologies && cp {root}/tests/data/topologies/memorysidecaches.tar.bz2 "
              "tests/data/topologies/"),
    Example("fleet-platforms", "docs/fleet.md", [
        Line("scripts/slurm-local start $PWD/cluster --platforms A:3,B:1:0.35 --slow node2=0.2"),
        Line("export SLURM_CONF=$PWD/cluster/slurm.conf"),
        Line('sinfo -N -o "%N %f %t"'),
        Line("perflab fleet submit farm --nodes 4 --db farm.db -- run --runs 10 --command-name loop -- "
             "sh -c 'i=0; while [ $i -lt 50000 ]; do i=$((i+1)); done'"),
        Line(FLEET_WAIT, shown=False),
        Line("perflab fleet report farm --db farm.db")],
        setup="mkdir -p scripts && cp {root}/scripts/slurm-local scripts/",
        cleanup="scripts/slurm-local stop $PWD/cluster >/dev/null 2>&1"),
    Example("machine-live", "docs/machine.md", [Line("perflab machine")]),
    Example("bundle-prog", "docs/bundle.md", [
        Line("perflab bundle -o prog.tar.gz --budget 1MiB -- ./prog"),
        Line("perflab bundle -o prog.tar.gz -- ./prog"),
        Line("perflab bundle verify prog.tar.gz")],
        setup=PROG_C + "gcc -O2 -o prog prog.c -lm && mkdir data && seq 0 4999 > data/input.txt\n"),
    # The page's python block is the script: the code shown is the code run.
    Example("stats-demo", "docs/statistics.md", [Line("python stats_demo.py")],
            setup="awk '/^```python/{f=1;next} f&&/^```/{exit} f' {root}/docs/statistics.md > stats_demo.py"),
    Example("compare-replicated", "docs/compare.md", [
        Line("for i in 1 2 3 4 5 6; do perflab run --runs 10 -- sleep 0.05 > /dev/null; done"),
        Line("for i in 1 2 3; do perflab run --runs 10 -- sleep 0.06 > /dev/null; done"),
        Line("perflab compare 1,2,3 4,5,6"),
        Line("perflab compare 4,5,6 7,8,9")]),
    Example("baseline-names", "docs/baseline.md", [
        Line("cp docs/ci-example/perflab.toml docs/ci-example/trigger.c ."),
        Line("perflab run --workload trigger --runs 20 --baseline-save main", matching(r"^perflab: ")),
        Line("perflab baseline list"),
        Line("perflab baseline show main"),
        Line('perflab baseline set release-1.0 1 --note "tag v1.0, commit 1a2b3c4"'),
        Line("perflab baseline list"),
        Line("perflab run --workload trigger --runs 20 > /dev/null"),
        Line("perflab baseline set main 2"),
        Line("perflab baseline rm release-1.0")],
        setup="mkdir -p docs/ci-example && cp {root}/docs/ci-example/* docs/ci-example/"),
    Example("variants-sum", "docs/variants.md", [
        Line("cat sum.c"),
        Line("perflab variants --db doc.db --source sum.c -V O1=-O1 --rounds 6 -- '{exe}'"),
        Line("perflab variants --energy rapl --source sum.c -V O1=-O1 -- '{exe}'; echo $?")], setup=SUM_C),
    Example("cores-counters", "docs/cores.md", [
        Line("perflab cores -w minihlt-quick --counters --rounds 6", without(r"^round \d+:|^results: "))]),
    Example("results-journal", "docs/results.md", [
        Line("for i in 1 2 3; do perflab run --runs 2000 -- sleep 0.005 > /dev/null 2>&1 & done; "
             "sleep 3; kill -9 $(jobs -p); wait", without(r"Killed")),
        Line("perflab results", matching(r"^│ +\d", r"^note: ")),
        Line("perflab resume 2 | tail -1"),
        Line("perflab results", matching(r"^│ +\d", r"^note: "))]),
    Example("minihlt-run", "docs/minihlt.md", [
        Line("MINIHLT=$(perflab workload path minihlt)"),
        Line("$MINIHLT --events 4 --static-mb 32", head_tail(5, 6)),
        Line("$MINIHLT --events 6 --static-mb 32 --fork 2 | tail -7")]),
    Example("shape", "docs/contributing.md", [Line("bench/shape.sh")], in_repo=True),
    Example("lab-metrics", "docs/lab.md", [
        Line("cat perflab.toml"),
        Line("perflab lab -w enc --quick --studies run --db l.db --out lab --primary-metric fps --lower-is-better",
             matching(r"^warning: metric regex", r"^report: ")),
        Line("perflab lab -w enc --quick --db l.db --primary-metric nps")], setup=ENC_TOML),
    Example("workload-metrics", "docs/workload.md", [
        Line("cat perflab.toml"),
        Line(r"perflab run --runs 3 -w enc --metric 'frames=(?P<frames>\d+)' --primary-metric frames --higher-is-better",
             matching(r"^│ enc ", r"^warning: metric regex")),
        Line("perflab run --runs 3 -w enc --primary-metric nps")], setup=ENC_TOML),
]

SLOW_START = r"""cat > slowstart.py <<'EOF'
import sys, time
for i in range(int(sys.argv[1])):
    time.sleep(0.05 if i < 20 else 0.005)  # the first 20 events 10x slower
    print(f"event {i}", flush=True)
EOF
"""
TRIG_TOML = SLOW_START + r"""cat > perflab.toml <<'EOF'
[workload.trig]
command = ["python3", "slowstart.py", "300"]
series = ['^event (?P<event>\d+)$']
EOF
"""
SERIES_LINES = r"^(\S.*: steady|  warm-up|  per-event|  event \d+ is|  the slowest|  profile it|  not steady|answer|ranked by)"
EXAMPLES += [
    Example("run-series", "docs/run.md", [Line("perflab run -w minihlt --runs 5", matching(SERIES_LINES))]),
    Example("run-warmup", "docs/run.md", [
        Line("cat slowstart.py"),
        Line(r"perflab run --runs 3 --series '^event (?P<event>\d+)$' -- python3 slowstart.py 200",
             matching(SERIES_LINES))], setup=SLOW_START),
    Example("workload-series", "docs/workload.md", [
        Line("cat perflab.toml"),
        Line("perflab run -w trig --runs 3 --primary-metric steady_rate", matching(SERIES_LINES)),
        Line("perflab run -w trig --runs 3 --skip-events 20", matching(SERIES_LINES))], setup=TRIG_TOML),
]

GATE = r"^(pass|FAIL|UNSURE|info|gate:|perflab: (warning|wrote|baseline))"
CI_TOML = "mkdir -p docs/ci-example && cp {root}/docs/ci-example/* docs/ci-example/\n"
EXAMPLES += [
    # docs/ci.md's pipeline run by hand: one session told in four blocks.
    Example("ci", "docs/ci.md", [
        Line("mkdir ci-demo && cp docs/ci-example/perflab.toml docs/ci-example/trigger.c ci-demo/ && cd ci-demo",
             block=1),
        Line("cat perflab.toml", block=1),
        Line("perflab run --workload trigger --runs 20 --baseline-save main", block=2),
        Line("perflab run --workload trigger --runs 20 --baseline main --fail-if 'median>+3%' --fail-if 'user>+3%' "
             "--fail-if 'events_per_s<-3%'", matching(GATE), block=3),
        Line("echo $?", block=3),
        Line("sed -i 's/define WORK_PER_EVENT 1000000/define WORK_PER_EVENT 1080000/' trigger.c", block=4),
        Line("perflab run --workload trigger --runs 20 --baseline main --fail-if 'median>+3%' --fail-if 'user>+3%' "
             "--fail-if 'events_per_s<-3%' --junit gate.xml --gate-markdown gate.md --gate-json gate.json",
             matching(GATE), block=4),
        Line("echo $?", block=4),
        Line("cat gate.md", block=5),
        Line("grep -c '<testcase' gate.xml; grep -o '<failure message=\"[^\"]*\"' gate.xml", block=6)],
        setup=CI_TOML),
    Example("ci-unsure", "docs/ci.md", [
        Line("perflab run --runs 2 -n work --baseline-save main -- sleep 0.05", matching(r"^perflab: baseline")),
        Line("perflab run --runs 2 -n work --baseline main -- sleep 0.1", matching(GATE)),
        Line("echo $?")]),
    Example("ci-ratchet", "docs/ci.md", [
        Line("perflab run --runs 12 -n work --baseline-save main -- sleep 0.100 > /dev/null"),
        Line("for s in 0.1030 0.1061 0.1093 0.1126 0.1159 0.1194; do "
             "perflab run --runs 12 -n work --baseline main --baseline-save main -- sleep $s > out.txt 2>&1; "
             "echo \"sleep $s exit $?: $(grep -E '^(pass|FAIL|UNSURE) wall' out.txt)\"; done")]),
    Example("frontend", "docs/frontend.md", [
        Line("perflab frontend --db fe.db", without(r"^\d+/\d+ runs$"))]),
    Example("frontend-cachegrind", "docs/frontend.md", [
        Line("perflab frontend --instrument cachegrind --max-size 1M --db fe.db")]),
    Example("report", "docs/report.md", [
        Line("perflab lab --quick --db lab.db --out out", matching(r"studies done in", r"^report: ")),
        Line("perflab report --db lab.db -o r.html"),
        Line("perflab report --db lab.db -o r.md"),
        Line("head -12 r.md")]),
    Example("report-journal", "docs/report.md", [
        Line("perflab run --runs 3000 -- sleep 0.005 > /dev/null 2>&1 & sleep 3; kill -9 $!; wait", without(r"Killed")),
        Line("perflab report 1 -o r.md")]),
]


def fleet_wait(name: str, db: str) -> str:
    """A hidden step: wait until no slot of fleet NAME is pending or running."""
    return (f"for i in $(seq 120); do perflab fleet status {name} --db {db} | grep -q 'pending\\|running' "
            "|| break; sleep 5; done")


def slot_running(job: str) -> str:
    """A hidden step: wait until Slurm runs array task JOB, then 2 s into it."""
    return f"for i in $(seq 240); do squeue -h -o '%i %T' | grep -q '^{job} RUNNING' && break; sleep 0.5; done; sleep 2"


SLURM_PG = ("mkdir -p scripts && cp {root}/scripts/slurm-local {root}/scripts/pg-local scripts/\n")
SLURM_PG_STOP = ("scripts/slurm-local stop $PWD/cluster >/dev/null 2>&1; "
                 "scripts/pg-local stop $PWD/pg >/dev/null 2>&1")
EXAMPLES += [
    Example("fleet-pg", "docs/fleet.md", [
        Line("scripts/slurm-local start $PWD/cluster", block=1),
        Line("export SLURM_CONF=$PWD/cluster/slurm.conf", block=1),
        Line("DB=$(scripts/pg-local start $PWD/pg --password hunter2); echo $DB", block=1),
        Line("perflab fleet submit farm --nodes 3 --host-label node --db $DB -- run -w minihlt-quick --runs 20",
             block=2),
        Line("perflab fleet status farm --db $DB", block=2),
        Line(slot_running("1_1"), shown=False),
        Line("scancel 1_1", block=3),
        Line("for i in $(seq 60); do squeue -h -o %i | grep -q '^1_1$' || break; sleep 1; done", shown=False),
        Line("perflab fleet status farm --db $DB", block=3),
        Line("perflab fleet resubmit farm --missing --db $DB", block=3),
        Line(fleet_wait("farm", "$DB"), shown=False),
        Line("perflab fleet status farm --db $DB", block=3),
        Line("perflab fleet report farm --db $DB --json farm.json --html farm.html", block=3),
        Line("grep -rl hunter2 perflab-fleet farm.json farm.html; echo $?", block=3)],
        setup=SLURM_PG, cleanup=SLURM_PG_STOP),
    Example("fleet-offline", "docs/fleet.md", [
        Line("perflab fleet submit offline --nodes 2 --host-label edge --shards $PWD/shards --db fleet.db -- "
             "run --runs 5 -- sleep 0.05"),
        Line(fleet_wait("offline", "fleet.db"), shown=False),
        Line("perflab fleet status offline --db fleet.db"),
        Line("perflab fleet collect offline --from $PWD/shards --db fleet.db"),
        Line("perflab fleet collect offline --from $PWD/shards --db fleet.db"),
        Line("perflab fleet status offline --db fleet.db")],
        setup=SLURM_PG + "scripts/slurm-local start $PWD/cluster > /dev/null\nexport SLURM_CONF=$PWD/cluster/slurm.conf\n",
        cleanup=SLURM_PG_STOP),
    Example("fleet-shard", "docs/fleet.md", [
        Line("export PERFLAB_DB_RETRY_S=3"),
        Line("DB=$(scripts/pg-local start $PWD/pg)"),
        Line("perflab fleet submit farm --nodes 2 --host-label node --db $DB -- run --runs 8 --command-name nap -- "
             "sleep 0.3"),
        Line(slot_running("1_1").replace("sleep 2", "sleep 1"), shown=False),
        Line("scripts/pg-local stop $PWD/pg"),
        Line("for i in $(seq 120); do [ -z \"$(squeue -h)\" ] && break; sleep 1; done", shown=False),
        Line("tail -qn1 perflab-fleet/farm/*.out"),
        Line("scripts/pg-local start $PWD/pg"),
        Line("perflab fleet status farm --db $DB"),
        Line("perflab fleet collect farm --db $DB"),
        Line("perflab fleet collect farm --db $DB"),
        Line("perflab fleet report farm --db $DB")],
        setup=SLURM_PG + "scripts/slurm-local start $PWD/cluster > /dev/null\nexport SLURM_CONF=$PWD/cluster/slurm.conf\n",
        cleanup=SLURM_PG_STOP),
]

FMSUM = "mkdir -p tests/data && cp -r {root}/tests/data/fmsum tests/data/\n"
BROKEN = FMSUM + ("cp -r tests/data/fmsum fmsum && cp -r fmsum broken && "
                  "echo 'int main(void) { return undefined_thing; }' > broken/fmsum.c\n")
EXAMPLES += [
    Example("variants-abi", "docs/variants.md", [Line(
        "perflab variants --db doc.db -w minihlt --build make --matrix abi=m64,m32,mx32 --events 30 --static-mb 60",
        without(r"^round \d+"))]),
    Example("variants-cmake", "docs/variants.md", [Line(
        "perflab variants -w minihlt --build cmake -V O3-native='-O3 -march=native' -V lto='-O2 -flto' "
        "-V pgo='-O2 pgo' -V fastmath='-O2 -ffast-math' --events 30 --static-mb 60", without(r"^round \d+"))]),
    Example("variants-pgo", "docs/variants.md", [
        Line("cp -r tests/data/fmsum . && echo 3000 > train.txt", block=1),
        Line("perflab variants --db doc.db --config fmsum/perflab.toml -V pgo='-O2 pgo' --train '{exe} -f train.txt' "
             "--metric 'checksum: (?P<checksum>\\S+)' --json fm.json -- {exe} 20000", without(r"^round \d+"), block=1),
        Line("python3 -c 'import json; print(json.dumps(json.load(open(\"fm.json\"))[\"result\"][\"variants\"][1]"
             "[\"comparisons\"][\"wall_s\"]))'", block=2)], setup=FMSUM),
    Example("variants-linkorder", "docs/variants.md", [Line("perflab variants --link-order-demo")]),
    Example("variants-cachegrind", "docs/variants.md", [
        Line("perflab variants --source sum.c -V O0='-O0' -V O3='-O3' --rounds 10 --instrument cachegrind -- '{exe}'",
             from_match(r"variants vs baseline"))], setup=SUM_C),
    Example("variants-bad", "docs/variants.md", [
        Line("perflab variants --build 'make CC={cc} -j{jobs}' --src fmsum --exe fmsum -V O3=-O3 -- {exe}"),
        Line("perflab variants --build 'make -C {src} CFLAGS={cflgs}' --src fmsum --exe fmsum -V O3=-O3 -- {exe}"),
        Line("perflab variants --build make --src broken --exe fmsum -V O3=-O3 -- {exe}"),
        Line("perflab variants --build cmake --src broken --exe fmsum -V O3=-O3 -- {exe}")], setup=BROKEN),
    Example("variants-tie", "docs/variants.md", [
        Line("cp tests/data/fmsum/fmsum.c ."),
        Line("perflab variants --source fmsum.c -V base=-O0 -V O2=-O2 -V O3=-O3 --baseline base -- {exe} 100000",
             without(r"^round \d+"))], setup=FMSUM),
    Example("cores-default", "docs/cores.md", [Line("perflab cores -w minihlt-quick", without(r"^(block \d+, )?round \d+:"))]),
    Example("cores-until-decided", "docs/cores.md", [
        Line("perflab cores -w minihlt-quick --until-decided --span 20 --max-time 120", without(r"^block \d+"))]),
    Example("cores-competitor", "docs/cores.md", [
        Line("timeout 20 chrt -f 1 taskset -c 1 python3 duty40.py & perflab cores -w minihlt-quick",
             without(r"^(block \d+, )?round \d+:"))],
        # The page's python block is the competitor: the code shown is the code run.
        setup="awk '/^```python/{f=1;next} f&&/^```/{exit} f' {root}/docs/cores.md > duty40.py", cleanup="wait"),
]
MINIHLT_SRC = "mkdir -p src/perflab/kernels && cp -r {root}/src/perflab/kernels/minihlt src/perflab/kernels/\n"
CG = "perflab profile --instrument callgrind"
EXAMPLES += [
    Example("profile-diff-flame", "docs/profile.md", [
        Line("g++ -std=c++17 -O0 -g -fno-omit-frame-pointer -o minihlt-O0 src/perflab/kernels/minihlt/*.cpp -lm"),
        Line("g++ -std=c++17 -O2 -g -fno-omit-frame-pointer -o minihlt-O2 src/perflab/kernels/minihlt/*.cpp -lm"),
        Line("perflab profile --call-graph fp --repeat 3 --annotate 0 --threshold 5 -- ./minihlt-O2 --events 30 "
             "--static-mb 16", head_tail(0, 2)),
        Line("perflab profile --call-graph fp --repeat 3 --annotate 0 --threshold 5 -- ./minihlt-O0 --events 30 "
             "--static-mb 16", head_tail(0, 2)),
        Line("perflab profile diff 1 2 --top 4"),
        Line("perflab report 3 -o diff.html")], setup=MINIHLT_SRC),
    Example("profile-callgrind-tree", "docs/profile.md", [
        Line("g++ -std=c++17 -O2 -g -o minihlt src/perflab/kernels/minihlt/*.cpp -lm"),
        Line("perflab profile --instrument callgrind --threshold 8 --tree --prune 6 --export folded cg.folded "
             "-- ./minihlt --events 1 --static-mb 1", without(r"^(callgrind.out|counts per source|/tmp/)")),
        Line("awk '{n += $NF} END {print NR \" stacks, \" n \" instructions\"}' cg.folded")], setup=MINIHLT_SRC),
    Example("profile-callgrind", "docs/profile.md", [
        Line("mkdir plain planted", block=1),
        Line("cp src/perflab/kernels/minihlt/*.cpp src/perflab/kernels/minihlt/*.h plain/", block=1),
        Line("cp plain/* planted/", block=1),
        Line("sed -i 's/^void FieldMap::field(const double p\\[3\\], double out\\[3\\]) const {$/&\\n    "
             "for (volatile int planted = 0; planted < 40; planted = planted + 1) {}/' planted/field.cpp", block=1),
        Line("g++ -std=c++17 -O1 -g -o minihlt plain/*.cpp -lm", block=1),
        Line("g++ -std=c++17 -O1 -g -o minihlt-planted planted/*.cpp -lm", block=1),
        Line(f"{CG} --repeat 2 --threshold 2 -- ./minihlt --events 1 --static-mb 1", block=2),
        Line(f"{CG} --repeat 2 --threshold 2 -- ./minihlt-planted --events 1 --static-mb 1", head_tail(0, 2),
             block=2),
        Line("perflab profile diff 1 2 --top 5", block=2),
        Line(f"{CG} --event 1 --repeat 5 --threshold 4 -- ./minihlt --events 3 --static-mb 1", block=3),
        Line(f"{CG} --event 1 --repeat 5 --threshold 4 -- ./minihlt-planted --events 3 --static-mb 1",
             head_tail(0, 2), block=3),
        Line("perflab profile diff 4 5 --top 6", block=3),
        Line(f"{CG} --event 1 --repeat 5 --threshold 4 -- ./minihlt --events 3 --static-mb 1", head_tail(0, 2),
             block=3),
        Line("perflab profile diff 4 7 --top 4", block=3),
        Line("perflab profile diff 4 7 --top 1 --min-effect 2", block=4)], setup=MINIHLT_SRC),
]

# A job perflab attaches to: minihlt copied out of the build cache, as docs/profile.md shows.
MINIHLT_O2 = "cp $(perflab workload path minihlt) minihlt-O2\n"
KILL_JOBS = "for p in $(jobs -p); do pkill -P $p; kill $p; done 2>/dev/null; wait"
EXAMPLES += [
    Example("profile-pid-annotate", "docs/profile.md", [
        Line("./minihlt-O2 --events 1000000 --seconds 120 > job.log &"),
        Line("sleep 1", shown=False),
        Line("tail -1 job.log"),
        Line("perflab profile --pid $! --log job.log --start 'start processing event #300\\b' "
             "--stop 'done processing event #319\\b' --annotate 2 --threshold 3")],
        setup=MINIHLT_O2, cleanup=KILL_JOBS),
    Example("profile-fork", "docs/profile.md", [
        Line("./minihlt-O2 --fork 2 --events 1000000 --seconds 120 > fjob.log &"),
        Line("perflab profile --pid $! --log fjob.log --event 1000 --annotate 0"),
        Line("perflab profile --pid $! --children --log fjob.log --event 2000 --annotate 0 --threshold 4")],
        setup=MINIHLT_O2, cleanup=KILL_JOBS),
]

def lab_summary(lines: list[str]) -> list[str]:
    """A lab's progress lines, '...' for each study's own output, then the closing summary."""
    end = next((i for i, line in enumerate(lines) if re.match(r"^ *perflab lab: (?!results)", line)), len(lines))
    return [*matching(r"^(perflab lab: results|\[\d+/\d+\] )")(lines[:end]), *lines[end:]]


EXAMPLES += [
    Example("lab-resume", "docs/lab.md", [
        Line("perflab lab --quick --studies run,cores --db lab.db --out out > lab.log 2>&1 &"),
        Line("until [ \"$(sqlite3 lab.db 'select count(*) from measurements' 2>/dev/null || echo 0)\" -ge 5 ]; "
             "do sleep 0.1; done", shown=False),
        Line("kill -9 %1                     # after 5 measurements were stored", without(r"Killed")),
        Line("sqlite3 lab.db 'select id, study, name, status, parent_id from campaigns'", without(r"Killed")),
        Line("perflab lab --resume --db lab.db", lab_summary)]),
    Example("lab-quick", "docs/lab.md", [Line("bench/lab_quick.sh")], in_repo=True),
]

CGR = "perflab run --instrument cachegrind --runs 2"
EXAMPLES += [
    Example("instrument-gate", "docs/instrument.md", [
        Line("gcc -O1 -DLOOPS=200000 -o work work.c"),
        Line(f"{CGR} --baseline-save main -- ./work", matching(r"^perflab: baseline")),
        Line("gcc -O1 -DLOOPS=202200 -o work work.c"),
        Line(f"{CGR} --baseline main --fail-if 'instructions>+0.5%' --fail-if 'estimated_cycles>+1%' -- ./work",
             matching(r"^(pass|FAIL|UNSURE) (instructions|estimated)", r"^gate: "))], setup=WORK_C),
    Example("instrument-compare", "docs/instrument.md", [
        Line("gcc -O1 -DLOOPS=200000 -o work work.c && " + CGR + " -- ./work > /dev/null"),
        Line("gcc -O1 -DLOOPS=201100 -o work work.c && " + CGR + " -- ./work > /dev/null"),
        Line("perflab compare 1 2")], setup=WORK_C),
]

FPS_TOML = r"""cat > perflab.toml <<'TOML'
[workload.enc]
command = "echo fps=$FPS"
shell = true
metrics = ['fps=(?P<fps>[\d.]+)']
primary_metric = "fps"
higher_is_better = true
TOML
"""
EXAMPLES += [
    Example("compare-metric", "docs/compare.md", [
        Line("cat perflab.toml"),
        Line("FPS=100 perflab run -w enc --runs 6 > /dev/null; FPS=150 perflab run -w enc --runs 6 > /dev/null"),
        Line("perflab compare 1 2"),
        Line("perflab compare 1 2 --json - | python3 -c 'import json, sys; "
             "print(json.dumps(next(r for r in json.load(sys.stdin)[\"result\"][\"rows\"] if r[\"measure\"] == \"metric:fps\")))'")],
        setup=FPS_TOML),
    Example("compare-two-speeds", "docs/compare.md", [
        Line("perflab run --runs 30 --command-name job -- bash -c 'sleep 0.05' > /dev/null"),
        Line("perflab run --runs 30 --command-name job -- bash -c "
             "'if [ $((RANDOM % 5)) -lt 2 ]; then sleep 0.1; else sleep 0.05; fi' > /dev/null"),
        Line("perflab compare 1 2")]),
    Example("compare-instances", "docs/compare.md", [
        Line("perflab instances --max 2 -- sleep 0.05 > /dev/null; perflab instances --max 2 -- sleep 0.1 > /dev/null"),
        Line("perflab compare 1 2", matching(r"^(┏|┃|┡|└|verdict|significant|note)", r"^│ all", rows=1))]),
]

TOPOS = ("mkdir -p tests/data/topologies && cp {root}/tests/data/topologies/64amd64-4s2n4ca2co.tar.bz2 "
         "{root}/tests/data/topologies/48amd64-4pa2n6c-sparse.tar.bz2 tests/data/topologies/\n")
EXAMPLES += [
    Example("machine-fixture", "docs/machine.md", [
        Line("mkdir -p topo", block=1),
        Line("tar xjf tests/data/topologies/64amd64-4s2n4ca2co.tar.bz2 -C topo", block=1),
        Line("perflab machine --root topo/64amd64-4s2n4ca2co", head_tail(40, 0), block=1),
        Line("tar xjf tests/data/topologies/48amd64-4pa2n6c-sparse.tar.bz2 -C topo     "
             "# unpacks 48amd64-4d2n6c-sparse/", block=2),
        Line("perflab machine --root topo/48amd64-4d2n6c-sparse --json | jq -c .topology.counts", block=2)],
        setup=TOPOS),
]

EXAMPLES += [
    Example("baseline-fresh", "docs/baseline.md", [
        Line("for s in 0.100 0.101 0.102; do perflab run --runs 12 -n work --baseline-save main -- sleep $s > /dev/null; "
             "done", block=1),
        Line("perflab run --runs 12 -n work -- sleep 0.110 > /dev/null", block=1),
        Line("perflab baseline show main", block=1),
        Line("perflab baseline set main 4 --fresh", block=1),
        Line("perflab baseline show main", block=1),
        Line("perflab baseline show release-1.0", block=2),
        Line("perflab baseline set main 99", block=2)]),
    Example("baseline-cores", "docs/baseline.md", [
        Line("perflab cores --rounds 3 --min-rounds 3 --span 0 --baseline-save nightly -- sleep 0.01",
             matching(r"^perflab: baseline")),
        Line("perflab cores --rounds 3 --min-rounds 3 --span 0 -- sleep 0.01 > /dev/null"),
        Line("perflab compare --baseline nightly 2 --fail-if 'median>+400%'",
             matching(r"^(pass|FAIL|UNSURE) wall time \[s\] of (all|cpu=0)", r"^gate: "))]),
]

COIN = ("perflab run --runs 30 -n coin -n steady --json r.json "
        "\"sh -c 'if [ \\$(( \\$(od -An -N1 -tu1 /dev/urandom) % 2 )) = 0 ]; then sleep 0.05; else sleep 0.08; fi'\" "
        "\"sh -c 'od -An -N1 -tu1 /dev/urandom >/dev/null; sleep 0.065'\"")
EXAMPLES += [
    Example("run-two-speeds", "docs/run.md", [Line(COIN), Line("jq -r .result.verdict r.json")]),
    Example("run-score", "docs/run.md", [Line(
        "perflab run --runs 10 --metric 'score=(?P<score>[0-9.]+)' --primary-metric score -n fast -n slow "
        "\"sh -c 'sleep 0.2; echo score=100'\" \"sh -c 'sleep 0.3; echo score=150'\"")]),
    Example("run-limits", "docs/run.md", [
        Line("perflab run --precision 1% --max-runs 12 -n jitter -- "
             "sh -c 'sleep 0.0$(( $(od -An -N1 -tu1 /dev/urandom) % 5 + 2 ))'", matching(r"^warning: 'jitter': --precision")),
        Line("perflab run --runs 5 --max-runs 3 -- true; echo $?"),
        Line("perflab run --reference nope 'sleep 0.1' 'sleep 0.2'")]),
    Example("run-energy", "docs/run.md", [
        Line("perflab run --energy auto --runs 5 -w minihlt-quick", matching(r"^energy:", r"^(┏|┃|┡|└|│)", r"^perflab: ")),
        Line("perflab run --energy rapl --runs 5 -- sleep 0.1; echo $?")]),
    Example("energy-absent", "docs/energy.md", [
        Line("perflab run --energy auto --runs 2 -- true", matching(r"^energy:"))]),
    Example("run-sleep", "docs/run.md", [Line("perflab run --runs 30 -- sleep 0.01")]),
    Example("monitor", "docs/energy.md", [
        Line("perflab instances -w minihlt-quick --n 1,2 --policy none --monitor --idle 5s",
             matching(r"^monitor", r"^machine beside", r"^(┃|│) *(phase|idle|study)", r"^(┏|┡)━{13}(┳|╇)", r"^└─{13}┴",
                      r"^note: (the idle|\w+: net energy|energy per event)", r"^energy", r"^results: ")),
        Line("perflab results 1 --monitor-csv monitor.csv > /dev/null; head -3 monitor.csv"),
        Line("perflab report 1 -o monitor.html")]),
    Example("run-until-decided", "docs/run.md", [Line(
        "perflab run --until-decided 'sleep 0.02' 'sleep 0.025'",
        matching(r"^(┏|┃|┡|└|│|ranked|estimate|  \d|measured|comparison)"))]),
    Example("run-until-decided-early", "docs/run.md", [Line(
        "perflab run --until-decided 'sleep 0.02' 'sleep 0.05'",
        matching(r"^(┏|┃|┡|└|│|ranked|  \d|measured)"))]),
    Example("run-ignore-failure", "docs/run.md", [Line(
        "perflab run --runs 10 --ignore-failure 'sleep 0.02' 'sh -c \"sleep 0.01; exit 3\"' 'sleep 0.01'",
        matching(r"^(┏|┃|┡|└|│|ranked|  \d|warning: 'sh -c|perflab: results)"))]),
]

EXAMPLES += [
    Example("instances-default", "docs/instances.md", [
        Line("perflab instances -w minihlt-quick --json i.json", without(r"^round \d+/\d+ done$"))]),
    Example("instances-one-round", "docs/instances.md", [
        Line("perflab instances -w minihlt-quick --n 1,2,3 --policy none --reps 1", without(r"^round \d+/\d+ done$"))]),
    Example("instances-fork", "docs/instances.md", [
        Line("perflab instances -w minihlt --fork-master --n 2 --policy none --reps 10 -- --events 20",
             from_match(r"^fork-master at equal work"))]),
]

EXAMPLES += [
    Example("profile-stripped", "docs/profile.md", [
        Line("g++ -std=c++17 -O2 -s -o minihlt-stripped src/perflab/kernels/minihlt/*.cpp -lm"),
        Line("perflab profile --annotate 0 -- ./minihlt-stripped --events 20 --static-mb 16")], setup=MINIHLT_SRC),
]

EXAMPLES += [
    Example("results-died", "docs/results.md", [
        Line("perflab run --runs 200 -- sleep 0.01 > /dev/null 2>&1 &"),
        Line("sleep 0.3; perflab run --runs 1000 -- sleep 0.01 > /dev/null 2>&1 &"),
        Line("sleep 1.2; kill -9 %1", without(r"Killed")),
        Line("perflab results", without(r"Killed")),
        Line("perflab resume 2; echo $?"),
        Line("perflab resume | tail -1")], cleanup="kill %2; wait"),
]

ENGINE = r"""cat > engine.sh <<'SH'
# a stand-in chess engine: its result, then its speed, which changes run to run
echo "bestmove e2e4"
echo "nodes 1000 nps $(( $(date +%N) / 1000 + 300000000 ))"
SH
"""
EXAMPLES += [
    Example("bundle-mismatch", "docs/bundle.md", [
        Line("cat engine.sh"),
        Line("perflab bundle -o b.tgz -- sh engine.sh", matching(r"^(wrote|perflab: error)")),
        Line("perflab bundle verify b.tgz; echo $?")], setup=ENGINE),
]

EXAMPLES += [
    Example("results-list", "docs/results.md", [
        Line("perflab cores --rounds 3 --min-rounds 3 --span 0 -- sleep 0.01 > /dev/null"),
        Line("for i in $(seq 8); do perflab run --runs 10 -- sleep 0.06 > /dev/null; done"),
        Line("perflab results --last 3"),
        Line("perflab results 1")]),
]

RND_C = r"""cat > rnd.c <<'CSRC'
#include <stdio.h>
int main(void) {
    unsigned char b = 0;
    FILE *f = fopen("/dev/urandom", "rb");
    if (f) { if (fread(&b, 1, 1, f) != 1) b = 0; fclose(f); }
    volatile unsigned long s = 0;
    for (unsigned long i = 0; i < 1000UL * b; i++) s += i * i;
    printf("%d events\n", 100);
    return 0;
}
CSRC
"""
EXAMPLES += [
    Example("instrument-rnd", "docs/instrument.md", [
        Line("cat rnd.c"),
        Line("gcc -O1 -o rnd rnd.c"),
        Line("perflab run --instrument cachegrind --runs 3 -- ./rnd",
             matching(r"^│ \./rnd +│ (instructions|estimated_cycles|i1_misses) ", r"^(not )?deterministic"))],
        setup=RND_C),
]

def elide_sources(lines: list[str]) -> list[str]:
    """minihlt's source paths as '.../FILE': where the package is installed is the reader's own."""
    return [re.sub(r"\S*/src/perflab/kernels/minihlt/", ".../", line) for line in lines]


# docs/workload.md: its first toml block is the perflab.toml these examples run with (count, gz),
# its first C block the count.c it builds.
DOC_TOML = ("awk '/^```toml/{f=1;next} f&&/^```/{exit} f' {root}/docs/workload.md > perflab.toml\n"
            "mkdir -p src run && awk '/^```c$/{f=1;next} f&&/^```/{exit} f' {root}/docs/workload.md > src/count.c\n")
NEVER_TOML = r"""cat > never.toml <<'TOML'
[workload.enc]
command = "echo fps= 181.5 frames=100"
shell = true
metrics = ['FPS: (?P<fps>[\d.]+)']
primary_metric = "fps"
TOML
"""
BAD_TOML = r"""cat > bad.toml <<'TOML'
[workload.bad]
command = "true"
metrics = ['rate: (?P<r>[0-9.]+']
TOML
"""
# Lua 5.4.4 as the page says: the upstream tarball of Debian's source package (apt-get source, with a
# deb-src line of its own so the system's apt set-up is left alone; $LUA_TARBALL skips the download),
# built once; bench.lua and the luabench workload are the page's own lua and toml blocks.
LUA_SRC = r"""if [ -n "$LUA_TARBALL" ]; then cp "$LUA_TARBALL" .; else
mkdir -p apt/lists/partial
echo 'deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian bookworm main' > apt/src.list
APT="-o Dir::Etc::SourceList=$PWD/apt/src.list -o Dir::Etc::SourceParts=/dev/null -o Dir::State::Lists=$PWD/apt/lists"
apt-get $APT -qq update && apt-get $APT -qq source --download-only lua5.4 > /dev/null 2>&1; fi
tar xzf lua5.4_5.4.4.orig.tar.gz && mv lua-5.4.4 lua && make -C lua > /dev/null 2>&1
awk '/^```lua/{f=1;next} f&&/^```/{exit} f' {root}/docs/workload.md > bench.lua
awk '/^```toml/{f=1;b="";next} f&&/^```/{if(b~/workload.luabench/)printf "%s",b;f=0;next} f{b=b $0 "\n"}' {root}/docs/workload.md > perflab.toml
"""
LUA_V = "perflab variants --db lua.db -w luabench --build {build} --src lua --exe src/lua -V o2='-O2' -V o3='-O3' " \
        "-V pgo='pgo -O2' --baseline o2"
EXAMPLES += [
    Example("workload-never", "docs/workload.md", [
        Line(r"perflab run --runs 3 --metric 'fps=(?P<fps>\d+)' --metric 'q=(?P<q>\S+)' -- sh -c 'echo frame=10 q=n/a'",
             matching(r"^warning: metric regex")),
        Line("cat never.toml"),
        Line("perflab run --runs 3 -w enc --config never.toml; echo $?")], setup=NEVER_TOML),
    Example("workload-bad", "docs/workload.md", [
        Line("cat bad.toml"),
        Line("perflab workload list --config bad.toml; echo $?"),
        Line("perflab workload path nope"),
        Line("perflab run -- sim-not-installed --events 5")], setup=DOC_TOML + BAD_TOML),
    Example("workload-mycflags", "docs/workload.md", [
        Line("perflab variants --build make --src tests/data/mycflags --exe prog -V o2='-O2' -V pgo='pgo -O2' -r 3 "
             "-- '{exe}' 100000", matching(r"^(o2|pgo): built", r"^  pgo: ", r"^verdict: "))],
        setup="mkdir -p tests/data && cp -r {root}/tests/data/mycflags tests/data/\n"),
    Example("workload-lua", "docs/workload.md", [
        Line("perflab run --db lua.db -r 10 -w luabench", block=1),
        Line("make -C lua clean > /dev/null && make -C lua MYCFLAGS=-O0 > /dev/null", block=2),
        Line("perflab run --db lua.db -r 10 -w luabench > /dev/null", block=2),
        Line("perflab compare --db lua.db 1 2", block=2),
        Line(LUA_V.format(build="make"), without(r"^round \d+"), block=3),
        Line(LUA_V.format(build="'make -C {src} CC={cc} MYCFLAGS={cflags} MYLDFLAGS={ldflags} -j{jobs}'"),
             matching(r"^(o2|o3|pgo): built", r"^o3: score", r"^verdict: "), block=4)], setup=LUA_SRC),
    # An empty build cache of its own, so the first build is a real one on every rerun.
    Example("workload-cmds", "docs/workload.md", [
        Line("perflab workload list", block=1),
        Line("export PERFLAB_CACHE=$PWD/cache      # an empty build cache", block=2),
        Line("perflab workload build count", block=2),
        Line("perflab workload build count", block=2),
        Line('perflab workload build minihlt --cflags "-O3 -march=native"', elide_sources, block=2),
        Line("perflab workload path minihlt", block=3),
        Line("perf stat -e task-clock $(perflab workload path minihlt) --events 20 2>&1 > /dev/null | "
             "grep -E 'task-clock|elapsed'", block=3),
        Line("perflab workload path gz", block=3)], setup=DOC_TOML),
    Example("minihlt-abi", "docs/minihlt.md", [
        Line('/usr/bin/time -f "maxrss %M KB" $(perflab workload path minihlt) --events 1 2>&1 | tail -1', block=1),
        Line('/usr/bin/time -f "maxrss %M KB" $(perflab workload path minihlt --cflags "-O2 -m32 -msse2 -mfpmath=sse") '
             '--events 1 2>&1 | tail -1', block=1),
        Line("perflab workload build minihlt", elide_sources, block=2),
        Line("perflab workload path minihlt", block=2),
        Line('$(perflab workload path minihlt --cflags "-O2 -mx32") --events 1; echo $?', block=3)]),
    Example("minihlt-builds", "docs/minihlt.md", [Line("bench/minihlt_builds.sh 10", from_match(r"^events/s"))],
            in_repo=True),
    Example("cost-campaign", "docs/cost.md", [
        Line("perflab instances --energy auto -w minihlt-quick --n 1,2 --policy none", matching(r"^(energy|answer):")),
        Line("cat p.toml"),
        Line("perflab cost p.toml; echo $?"),
        Line("sed -i '/power_from_campaign/d' p.toml"),
        Line("perflab cost p.toml")], setup=r"""cat > p.toml <<'TOML'
[requirement]
target_events_per_s = 700000
power_envelope_kw = 200
currency = "CHF"

[[platform]]
name = "this VM"
sockets = 1
tdp_w = 85
throughput_from_campaign = 1
power_from_campaign = 1
prices = { board = 400, memory = 600, psu = 150, cpu = 670, chassis = 300 }

[[platform]]
name = "E5-2630 v3"
sockets = 2
tdp_w = 85
throughput_per_node = 986
measured_power_w = 265
prices = { board = 400, memory = 600, psu = 150, cpu = 670, chassis = 300 }
TOML
"""),
]
HEPSCORE_FILES = ("cp {root}/tests/data/hepscore/hepscore_result_expected_output.json hepscore-result.json && "
                  "cp {root}/tests/data/hepscore/ref_summary_output.json suite-report.json")
SCORE_COST_TOML = r"""cat > platforms.toml <<'TOML'
[requirement]
target_score = 100000          # the farm's need, in the score's unit
score_unit = "HEPscore"
power_envelope_kw = 40
currency = "CHF"

[[platform]]
name = "64-CPU host"
sockets = 2
tdp_w = 105
score_from_campaign = 1        # perflab import hepscore-result.json
prices = { board = 400, memory = 900, psu = 150, cpu = 1200, chassis = 300 }

[[platform]]
name = "E5-2695 v2"
sockets = 2
tdp_w = 115
score_from_campaign = 2        # perflab import suite-report.json
prices = { board = 400, memory = 600, psu = 150, cpu = 1500, chassis = 300 }
TOML
"""
EXAMPLES += [
    Example("score", "docs/score.md", [
        Line("perflab score --suite minihlt", without(r"^repetition \d+/\d+ done$"), block=1),
        Line("perflab score --campaign 1 --export hep-suite minihlt-score.json | tail -1", block=2),
        Line("perflab import minihlt-score.json | grep '^score'", block=2)]),
    Example("import", "docs/import.md", [
        Line("perflab import hepscore-result.json", block=1),
        Line("perflab import suite-report.json", block=2),
        Line("perflab score --compare 1 1 | tail -1", block=3)], setup=HEPSCORE_FILES),
    Example("cost-score", "docs/cost.md", [
        Line("cat platforms.toml"),
        Line("perflab import hepscore-result.json | grep '^score'"),
        Line("perflab import suite-report.json | grep '^score'"),
        Line("perflab cost platforms.toml")], setup=HEPSCORE_FILES + "\n" + SCORE_COST_TOML),
]
BY_NAME = {e.name: e for e in EXAMPLES}


# --- records --------------------------------------------------------------------------------------

def record_path(name: str) -> Path:
    return RECORDS / f"{name}.txt"


def scrub(text: str) -> str:
    """A record without the paths of the machine that ran it: the checkout as '...', the home
    directory as '~' (the build cache, the interpreter); a reader's own are elsewhere. In a
    table row the cell keeps its width, so the borders still line up."""
    home = str(Path.home())
    subs = [(str(ROOT), "...")] + ([] if home in ("/", "") else [(home + "/", "~/")])
    return "\n".join(_scrub_line(line, subs) for line in text.split("\n"))


def _scrub_line(line: str, subs: list[tuple[str, str]]) -> str:
    for old, new in subs:
        while old in line:
            at = line.index(old)
            line = line[:at] + new + line[at + len(old):]
            border = line.find("│", at)
            if border > 0:  # pad the cell back to its width
                line = line[:border] + " " * (len(old) - len(new)) + line[border:]
    return line


def read_record(name: str) -> list[tuple[str, list[str]]]:
    """[(shell line, its output lines)] of a record."""
    out: list[tuple[str, list[str]]] = []
    for line in record_path(name).read_text().splitlines():
        if line.startswith("$ "):
            out.append((line[2:], []))
        elif out:
            out[-1][1].append(line)
    return out


def split_mark(mark: str) -> tuple[str, int]:
    """'ci.2' -> ('ci', 2); 'cores' -> ('cores', 0)."""
    name, _, block = mark.partition(".")
    return name, int(block) if block else 0


def shown_block(example: Example, block: int = 0) -> list[str]:
    """The page's block for an example (or for one of its blocks), cut from its record."""
    record = read_record(example.name)
    lines = [ln for ln in example.lines if ln.shown]
    if [s for s, _ in record] != [ln.shell for ln in lines]:
        raise SystemExit(f"docs/examples/{example.name}.txt holds other commands than bench/docs_examples.py: "
                         f"regenerate it ({' '.join(['.venv/bin/python bench/docs_examples.py', example.name])})")
    out: list[str] = []
    for ln, (shell, output) in zip(lines, record):
        if block and ln.block != block:
            continue
        out.append(f"$ {shell}")
        out.extend(ln.show(output))
    return out


def whole_machine() -> None:
    """Refuse to record while this process may not use every online CPU (a cpuset or taskset
    around it): the records would show a smaller machine than the pages describe."""
    from perflab.platform.sysfs import Root, parse_cpulist

    online = set(parse_cpulist(Root("/").read("sys/devices/system/cpu/online").strip()))
    allowed = os.sched_getaffinity(0)
    if allowed != online:
        raise SystemExit(f"docs-examples: this process may use CPUs {sorted(allowed)} of the online "
                         f"{sorted(online)} (a cpuset or taskset around it); run it on the whole machine")


def run(example: Example) -> None:
    """Run an example in a fresh directory and write its record."""
    whole_machine()
    # One fixed directory, emptied first: the paths it prints are the same from run to run.
    work = Path(os.environ.get("PERFLAB_DOCS_TOUR", "/tmp/tour"))  # another directory for parallel runs
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir()
    env = {**os.environ, "PATH": f"{ROOT / '.venv' / 'bin'}:{os.environ['PATH']}", "COLUMNS": "1000",
           "TERM": "dumb", **example.env}
    env.pop("PERFLAB_DB", None)
    script = ["set +e", example.setup.replace("{root}", str(ROOT))]
    for i, ln in enumerate(example.lines):
        # The mark keeps the last command's exit status: a line `echo $?` shows the one before it.
        script.append(f"__rc=$?; echo '{MARK} {i}'; (exit $__rc)")
        script.append(ln.shell if ln.shell.rstrip().endswith("&") else f"{ln.shell} 2>&1")
    script.append(f"echo '{MARK} end'")
    script.append(example.cleanup)
    t0 = time.monotonic()
    proc = subprocess.run(["bash", "-c", "\n".join(script)], cwd=ROOT if example.in_repo else work, env=env, text=True,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=1800)
    parts: dict[int, list[str]] = {}
    current = None
    for line in proc.stdout.splitlines():
        if line.startswith(MARK):
            tag = line.split()[-1]
            current = None if tag == "end" else int(tag)
            if current is not None:
                parts[current] = []
        elif current is not None:
            parts[current].append(line.rstrip())
    RECORDS.mkdir(exist_ok=True)
    text = []
    for i, ln in enumerate(example.lines):
        if ln.shown:
            text.append(f"$ {ln.shell}")
            text.extend(parts.get(i, []))
    record_path(example.name).write_text(scrub("\n".join(text) + "\n"))
    shutil.rmtree(work, ignore_errors=True)
    print(f"docs-examples: {example.name}: {time.monotonic() - t0:.0f} s", file=sys.stderr)


# --- pages ----------------------------------------------------------------------------------------

def marked_blocks(text: str) -> list[tuple[str, int, int]]:
    """(mark, first line, end line) of the fenced block after each `<!-- example: NAME -->` or
    `<!-- example: NAME.BLOCK -->`."""
    lines = text.splitlines()
    out = []
    for i, line in enumerate(lines):
        m = re.fullmatch(r"<!-- example: ([\w-]+(?:\.\d+)?) -->", line.strip())
        if not m:
            continue
        start = next(j for j in range(i + 1, len(lines)) if lines[j].startswith("```"))
        end = next(j for j in range(start + 1, len(lines)) if lines[j].startswith("```"))
        out.append((m.group(1), start + 1, end))
    return out


def rewrite_pages() -> None:
    for page in sorted({e.page for e in EXAMPLES}):
        path = ROOT / page
        lines = path.read_text().splitlines()
        for mark, start, end in reversed(marked_blocks(path.read_text())):
            name, block = split_mark(mark)
            if record_path(name).exists():
                lines[start:end] = shown_block(BY_NAME[name], block)
        path.write_text("\n".join(lines) + "\n")


def main(argv: list[str]) -> int:
    if "--pages" not in argv:
        names = argv or [e.name for e in EXAMPLES]
        unknown = [n for n in names if n not in BY_NAME]
        if unknown:
            print(f"docs-examples: no example {unknown}; examples: {', '.join(BY_NAME)}", file=sys.stderr)
            return 2
        for n in names:
            run(BY_NAME[n])
    rewrite_pages()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
