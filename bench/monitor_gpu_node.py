"""Sample a GPU node with perflab's monitor around a CPU-bound job: 10 s idle, 16 copies of a
20 s loop counting its "events", 10 s idle; the samples, the event count and the copies' times go
to $OUT/h200-monitor.json (tests/data/monitor/h200-cpu-job.json is one such recording, from an
H200 node). Needs only the standard library and perflab's source beside it (src/), so it runs on
a bare machine: python3 bench/monitor_gpu_node.py from a checkout."""
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src"))
from perflab.measure.monitor import Monitor

JOB = ("import time\nn=0\nend=time.monotonic()+20\nx=0\n"
       "while time.monotonic()<end:\n    for i in range(2000): x=(x*1103515245+12345)%2147483648\n    n+=1\nprint('events', n)")
rows = []
m = Monitor(1.0, idle_s=10.0)
print(m.note(), flush=True)
m.start(rows.extend)
m.idle(phase="idle-before")
m.set_phase("study")
runs = []
procs = []
for _ in range(16):
    t = time.monotonic_ns()
    procs.append((t, subprocess.Popen([sys.executable, "-c", JOB], stdout=subprocess.PIPE, text=True)))
events = 0
for t, p in procs:
    out = p.communicate()[0]
    runs.append([t, time.monotonic_ns()])
    events += int(out.split()[-1])
m.idle(phase="idle-after")
m.stop()
out = os.environ.get("OUT", ".")
with open(os.path.join(out, "h200-monitor.json"), "w") as fh:
    json.dump({"rows": rows, "events": events, "runs": runs, "note": m.note(),
               "nproc": os.cpu_count()}, fh)
print("samples", len(rows), "events", events)
