"""Run health: what the machine can tell about each run, and whether the run is suspect.

One sample per run, taken right after it (by the spawn server, which reads the files below
right after the reap: ``paths`` and ``sample_texts``), differenced against the previous sample
(the previous run's end: runs follow each other, so the interval is the run plus the gap
before it):
- steal: share of CPU time the hypervisor took (/proc/stat, 8th field);
- cpu_pressure: share of the interval in which some task waited for a CPU (/proc/pressure/cpu,
  "some" total, PSI); other load shows here first;
- runnable_others: tasks runnable at the sample besides perflab (/proc/loadavg, 4th field);
- freq_mhz: current frequency of the CPUs the run was pinned to (cpufreq, where present);
- throttle: thermal throttle events during the interval (thermal_throttle counters, where present);
- governor and turbo, as the machine has them (perflab never changes them).
Files stay open and are read with pread: a sample costs a few microseconds, not an open per file.
A run is suspect when the machine was disturbed: steal above 2 %, CPU pressure above 20 %, or a
thermal throttle event. Everything is read through perflab.platform.sysfs.Root, so tests point
it at fixture trees.
"""

from __future__ import annotations

import os
import time
from typing import Sequence

from perflab.platform.sysfs import Root, psi_some_total

STEAL_SUSPECT = 0.02
PRESSURE_SUSPECT = 0.20


class _File:
    """A /proc or /sys file kept open under a root, re-read with pread (None when absent)."""

    def __init__(self, root: Root, rel: str) -> None:
        try:
            self.fd: int | None = os.open(root.join(rel), os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            self.fd = None

    def read(self, size: int = 4096) -> str | None:
        if self.fd is None:
            return None
        try:
            return os.pread(self.fd, size, 0).decode("ascii", "replace")
        except OSError:
            return None

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


_MACHINE_FILES = ("proc/stat", "proc/pressure/cpu", "proc/loadavg")


def _cpu_rel(cpu: int) -> tuple[str, str, str]:
    """A CPU's health files: current frequency, core and package thermal throttle counts."""
    base = f"sys/devices/system/cpu/cpu{cpu}"
    return (f"{base}/cpufreq/scaling_cur_freq", f"{base}/thermal_throttle/core_throttle_count",
            f"{base}/thermal_throttle/package_throttle_count")


def _stat_times(text: str | None) -> tuple[int, int] | None:
    """(total, steal) jiffies of the aggregate cpu line (guest time is already in user)."""
    if not text or not text.startswith("cpu "):
        return None
    vals = [int(v) for v in text.split("\n", 1)[0].split()[1:9]]
    return (sum(vals), vals[7]) if len(vals) == 8 else None


def _bracketed(text: str | None) -> str | None:
    if text and "[" in text:
        return text[text.index("[") + 1:text.index("]")]
    return text.strip() if text else None


class HealthProbe:
    """Samples the machine once per run; ``sample(cpus)`` -> the run's health dict."""

    def __init__(self, root: Root = Root("/")) -> None:
        self.root = root
        self._stat = _File(root, "proc/stat")
        self._psi = _File(root, "proc/pressure/cpu")
        self._load = _File(root, "proc/loadavg")
        self._freq: dict[int, _File] = {}
        self._throttle: dict[int, list[_File]] = {}
        self._prev = self._read(())
        self.governor, self.turbo = self._policy()

    def _policy(self) -> tuple[str | None, bool | None]:
        """The governor(s) in force and whether turbo is on: recorded, never changed."""
        govs = {g for cpu in self.root.listdir("sys/devices/system/cpu", r"cpu\d+")
                if (g := self.root.read(f"sys/devices/system/cpu/{cpu}/cpufreq/scaling_governor"))}
        no_turbo = self.root.read_int("sys/devices/system/cpu/intel_pstate/no_turbo")
        boost = self.root.read_int("sys/devices/system/cpu/cpufreq/boost")
        turbo = None if no_turbo is None and boost is None else bool(boost) if boost is not None else not no_turbo
        return (",".join(sorted(govs)) or None), turbo

    def _cpu_files(self, cpu: int) -> tuple[_File, list[_File]]:
        if cpu not in self._freq:
            self._freq[cpu] = _File(self.root, _cpu_rel(cpu)[0])
            self._throttle[cpu] = [_File(self.root, rel) for rel in _cpu_rel(cpu)[1:]]
        return self._freq[cpu], self._throttle[cpu]

    def paths(self, cpus: Sequence[int]) -> list[str]:
        """The files a sample reads, in the order ``sample_texts`` takes their first lines: the
        spawn server reads them right after each run (perflab/kernels/spawnserver.c)."""
        rels = [*_MACHINE_FILES, *(rel for cpu in cpus for rel in _cpu_rel(cpu))]
        return [self.root.join(rel) for rel in rels]

    def _texts(self, cpus: Sequence[int]) -> list[str | None]:
        texts = [self._stat.read(512), self._psi.read(256), self._load.read(128)]
        for cpu in cpus:
            freq, counters = self._cpu_files(cpu)
            texts.extend(f.read(64) for f in (freq, *counters))
        return texts

    def _parse(self, texts: Sequence[str | None], cpus: Sequence[int], ns: int) -> dict:
        stat, psi, load_text = (list(texts[:3]) + [None] * 3)[:3]
        out: dict = {"times": _stat_times(stat), "psi": psi_some_total(psi)}
        load = (load_text or "").split()
        if len(load) >= 4 and "/" in load[3]:
            out["runnable"] = int(load[3].split("/")[0])
        freqs, throttles = {}, {}
        for k, cpu in enumerate(cpus):
            per = texts[3 + 3 * k:6 + 3 * k]
            khz = (per[0] or "").strip() if per else ""
            if khz.isdigit():
                freqs[cpu] = int(khz) // 1000
            counts = [int(t) for t in ((x or "").strip() for x in per[1:]) if t.isdigit()]
            if counts:
                throttles[cpu] = sum(counts)
        out["freqs"], out["throttles"] = freqs, throttles
        out["ns"] = ns
        return out

    def _read(self, cpus: Sequence[int]) -> dict:
        return self._parse(self._texts(cpus), cpus, time.monotonic_ns())

    def sample(self, cpus: Sequence[int] = ()) -> tuple[dict, bool]:
        """The health of the interval since the previous sample, and whether it is suspect."""
        return self._advance(self._read(cpus))

    def sample_texts(self, texts: Sequence[str | None], ns: int,
                     cpus: Sequence[int] = ()) -> tuple[dict, bool]:
        """As ``sample``, from the first lines of ``paths(cpus)`` read at ``ns`` (monotonic)
        elsewhere: by the spawn server, right after the run."""
        return self._advance(self._parse(texts, cpus, ns))

    def _advance(self, now: dict) -> tuple[dict, bool]:
        prev, self._prev = self._prev, now
        health: dict = {}
        if now["times"] and prev["times"] and now["times"][0] > prev["times"][0]:
            total = now["times"][0] - prev["times"][0]
            health["steal"] = round((now["times"][1] - prev["times"][1]) / total, 4)
        interval_us = (now["ns"] - prev["ns"]) / 1e3
        if now["psi"] is not None and prev["psi"] is not None and interval_us > 0:
            # PSI "some": microseconds in which at least one task waited for a CPU
            health["cpu_pressure"] = round(min(1.0, max(0.0, (now["psi"] - prev["psi"]) / interval_us)), 4)
        if "runnable" in now:
            health["runnable_others"] = max(0, now["runnable"] - 1)
        if now["freqs"]:
            health["freq_mhz"] = now["freqs"]
        events = sum(n - prev["throttles"].get(c, n) for c, n in now["throttles"].items())
        if events > 0:
            health["throttle"] = events
        if self.governor:
            health["governor"] = self.governor
        if self.turbo is not None:
            health["turbo"] = self.turbo
        suspect = (health.get("steal", 0) > STEAL_SUSPECT or health.get("cpu_pressure", 0) > PRESSURE_SUSPECT
                   or health.get("throttle", 0) > 0)
        return health, suspect

    def close(self) -> None:
        for f in (self._stat, self._psi, self._load, *self._freq.values(),
                  *(f for fs in self._throttle.values() for f in fs)):
            f.close()
