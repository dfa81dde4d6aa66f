"""What the machine monitor reads once a sample, every file through ``sysfs.Root``.

A snapshot holds the kernel's counters as they are (jiffies, PSI microseconds, RAPL microjoules);
``derive`` turns two snapshots into one sample of rates and shares over the interval between them:
- busy and steal: shares of all CPUs' time (/proc/stat aggregate line);
- pressure: share of the interval in which some task waited for a CPU, for memory, for I/O (PSI
  "some" totals, /proc/pressure/*);
- load: the 1-minute load average and the runnable tasks (/proc/loadavg);
- memory: used (total less available) and swap used, in GiB (/proc/meminfo);
- frequency per CPU in MHz: cpufreq's scaling_cur_freq, or /proc/cpuinfo's "cpu MHz" where there is
  no cpufreq (a virtual machine: the figure is then the host's nominal one and does not move);
- power in watts per RAPL domain, from energy_uj differences (across at most one wrap).
The node's meter (ipmitool) and a GPU (nvidia-smi) are processes: measure/monitor.py starts them
and parses their output with ``parse_ipmi_dcmi`` and ``parse_nvidia_smi`` here.
"""

from __future__ import annotations

import csv
from typing import Any

from perflab.errors import PerflabError
from perflab.platform.energy import RaplDomain, rapl_delta_uj, rapl_domains
from perflab.platform.sysfs import Root, cpuinfo_blocks, psi_some_total

# What the GPU source asks nvidia-smi once a sample (about 30 ms a call on an H200 node, driver
# 580: bench/record_gpu.sh records it). Units are fixed by nounits: W, %, MiB, degrees C, MHz.
GPU_FIELDS = ("index", "name", "power.draw", "power.limit", "utilization.gpu", "utilization.memory",
              "memory.used", "memory.total", "temperature.gpu", "clocks.sm")
GPU_QUERY = ("nvidia-smi", "--query-gpu=" + ",".join(GPU_FIELDS), "--format=csv,noheader,nounits")
_GPU_KEYS = {"power.draw": "power_w", "power.limit": "power_limit_w", "utilization.gpu": "util_pct",
             "utilization.memory": "mem_util_pct", "memory.used": "mem_used_mib",
             "memory.total": "mem_total_mib", "temperature.gpu": "temp_c", "clocks.sm": "sm_mhz"}

_CPU = "sys/devices/system/cpu"
_PSI = ("cpu", "memory", "io")


def parse_nvidia_smi(text: str) -> list[dict[str, Any]]:
    """One dict per GPU from ``GPU_QUERY``'s output; a field the GPU does not report ("[N/A]",
    "[Not Supported]") is None. A line of another shape is named in one line."""
    gpus = []
    for row in csv.reader(text.splitlines(), skipinitialspace=True):
        if not row or not "".join(row).strip():
            continue
        if len(row) != len(GPU_FIELDS):
            raise PerflabError(f"nvidia-smi gave {len(row)} fields where {len(GPU_FIELDS)} were asked "
                               f"({','.join(row)[:80]!r}); an older driver may lack one of {', '.join(GPU_FIELDS)}")
        gpu: dict[str, Any] = {"index": int(row[0]), "name": row[1].strip()}
        for field, value in zip(GPU_FIELDS[2:], row[2:]):
            try:
                gpu[_GPU_KEYS[field]] = float(value)
            except ValueError:
                gpu[_GPU_KEYS[field]] = None  # "[N/A]", "[Not Supported]"
        gpus.append(gpu)
    return gpus


def online_cpus(root: Root) -> list[int]:
    listed = root.read_cpulist(f"{_CPU}/online")
    if listed:
        return listed
    return [int(n[3:]) for n in root.listdir(_CPU, r"cpu\d+")]


class MachineReader:
    """Snapshots of one machine's counters; which of them exist is decided once, at the start."""

    def __init__(self, root: Root = Root("/")) -> None:
        self.root = root
        self.cpus = online_cpus(root)
        self.cpufreq = bool(self.cpus) and root.exists(f"{_CPU}/cpu{self.cpus[0]}/cpufreq/scaling_cur_freq")
        self.cpuinfo_mhz = not self.cpufreq and any("cpu MHz" in b for b in cpuinfo_blocks(root))
        self.psi = [k for k in _PSI if root.exists(f"proc/pressure/{k}")]
        try:
            self.rapl: list[RaplDomain] = rapl_domains(root)
            self.rapl_reason = None if self.rapl else "no counters in /sys/class/powercap: a VM, or intel_rapl not loaded"
        except PerflabError as exc:
            self.rapl, self.rapl_reason = [], str(exc)
        if self.rapl and any(root.read_int(f"{d.path}/energy_uj") is None for d in self.rapl):
            self.rapl, self.rapl_reason = [], "RAPL energy_uj is not readable (root-only on recent kernels)"

    def sources(self) -> tuple[list[str], list[str]]:
        """(what this machine gives, what it lacks and why), each a short phrase."""
        have = ["load", "memory", "swap", "busy", "steal"]
        lacks = []
        if self.psi:
            have.append("pressure (" + ", ".join(self.psi) + ")")
        else:
            lacks.append("pressure (no /proc/pressure: kernel without PSI, or psi=0)")
        if self.cpufreq:
            have.append(f"frequency of {len(self.cpus)} CPUs")
        elif self.cpuinfo_mhz:
            have.append(f"frequency of {len(self.cpus)} CPUs (/proc/cpuinfo: no cpufreq)")
        else:
            lacks.append("CPU frequency (no cpufreq, no 'cpu MHz' in /proc/cpuinfo)")
        if self.rapl:
            have.append("RAPL power (" + ", ".join(d.key for d in self.rapl) + ")")
        else:
            lacks.append(f"RAPL ({self.rapl_reason})")
        return have, lacks

    def snapshot(self) -> dict[str, Any]:
        root = self.root
        snap: dict[str, Any] = {}
        stat = (root.read("proc/stat") or "").split("\n", 1)[0].split()
        if len(stat) >= 9 and stat[0] == "cpu":
            vals = [int(v) for v in stat[1:9]]
            # user nice system idle iowait irq softirq steal; guest time is already in user
            snap["jiffies"] = (sum(vals), vals[3] + vals[4], vals[7])
        load = (root.read("proc/loadavg") or "").split()
        if len(load) >= 4 and "/" in load[3]:
            snap["load1"] = float(load[0])
            snap["runnable"] = int(load[3].split("/")[0])
        mem = {}
        for line in (root.read("proc/meminfo") or "").splitlines():
            key, _, rest = line.partition(":")
            if key in ("MemTotal", "MemAvailable", "SwapTotal", "SwapFree") and rest.split():
                mem[key] = int(rest.split()[0])  # kB
        snap["mem_kb"] = mem
        snap["psi_us"] = {k: psi_some_total(root.read(f"proc/pressure/{k}")) for k in self.psi}
        if self.cpufreq:
            snap["freq_mhz"] = {c: khz // 1000 for c in self.cpus
                                if (khz := root.read_int(f"{_CPU}/cpu{c}/cpufreq/scaling_cur_freq")) is not None}
        elif self.cpuinfo_mhz:
            snap["freq_mhz"] = {int(b["processor"]): round(float(b["cpu MHz"]))
                                for b in cpuinfo_blocks(root) if "processor" in b and "cpu MHz" in b}
        snap["rapl_uj"] = {d.key: v for d in self.rapl if (v := root.read_int(f"{d.path}/energy_uj")) is not None}
        return snap

    def derive(self, prev: dict[str, Any], now: dict[str, Any], seconds: float) -> dict[str, Any]:
        """One sample: rates and shares over the ``seconds`` between two snapshots, levels at ``now``."""
        out: dict[str, Any] = {}
        if "jiffies" in now and "jiffies" in prev and now["jiffies"][0] > prev["jiffies"][0]:
            total = now["jiffies"][0] - prev["jiffies"][0]
            out["busy"] = round(1 - (now["jiffies"][1] - prev["jiffies"][1]) / total, 4)
            out["steal"] = round((now["jiffies"][2] - prev["jiffies"][2]) / total, 4)
        for key in ("load1", "runnable"):
            if key in now:
                out[key] = now[key]
        mem = now.get("mem_kb") or {}
        if "MemTotal" in mem and "MemAvailable" in mem:
            out["mem_used_gib"] = round((mem["MemTotal"] - mem["MemAvailable"]) / 2**20, 3)
        if "SwapTotal" in mem and "SwapFree" in mem:
            out["swap_used_gib"] = round((mem["SwapTotal"] - mem["SwapFree"]) / 2**20, 3)
        for key, us in (now.get("psi_us") or {}).items():
            before = (prev.get("psi_us") or {}).get(key)
            if us is not None and before is not None and seconds > 0:
                out[f"pressure_{key}"] = round(min(1.0, max(0.0, (us - before) / (seconds * 1e6))), 4)
        if now.get("freq_mhz"):
            out["freq_mhz"] = {str(c): v for c, v in now["freq_mhz"].items()}
        watts = {}
        for d in self.rapl:
            a, b = (prev.get("rapl_uj") or {}).get(d.key), (now.get("rapl_uj") or {}).get(d.key)
            if a is not None and b is not None and seconds > 0:
                watts[d.key] = round(rapl_delta_uj(a, b, d.max_range_uj) / 1e6 / seconds, 3)
        if watts:
            out["rapl_w"] = watts
        return out
