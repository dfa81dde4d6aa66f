"""Machine metadata recorded with every campaign: CPU, microcode, kernel, governor, THP, tools, load.

Everything under /proc and /sys is read through ``Root``. On a fixture root (``Root`` that is not
"/") only what the tree holds is reported: no subprocess, no uname, no live sampling.
"""

from __future__ import annotations

# subprocess is imported in the functions that use it: `perflab run` starts without it
# (bench/startup.sh).
import os
import re
import time

from perflab.platform.sysfs import Root, cpuinfo_blocks
from perflab.startup import which

FLAGS_OF_INTEREST = ("avx", "avx2", "avx512f", "fma", "sse4_2", "bmi2", "hypervisor")
COMPILERS = ("gcc", "g++", "clang")
STEAL_INTERVAL_S = 0.1


def _cpu(root: Root) -> dict:
    blocks = cpuinfo_blocks(root)
    if not blocks:
        return {}
    first = blocks[0]
    flags = set(first.get("flags", "").split())

    def num(key: str) -> int | None:
        try:
            return int(first.get(key, ""), 0)
        except ValueError:
            return None

    microcodes = sorted({b["microcode"] for b in blocks if "microcode" in b})
    models = sorted({b.get("model name", "") for b in blocks} - {""})
    return {
        "cpu_model": models[0] if len(models) == 1 else (models or None),
        "vendor": first.get("vendor_id"),
        "family": num("cpu family"),
        "model": num("model"),
        "stepping": num("stepping"),
        # Several values mean a partial microcode update: worth seeing.
        "microcode": microcodes[0] if len(microcodes) == 1 else (microcodes or None),
        "flags": {f: f in flags for f in FLAGS_OF_INTEREST},
        "logical_cpus_in_cpuinfo": len(blocks),
        "bogomips": first.get("bogomips"),
    }


def _meminfo(root: Root) -> dict[str, int]:
    out: dict[str, int] = {}
    for line in (root.read("proc/meminfo") or "").splitlines():
        key, _, rest = line.partition(":")
        parts = rest.split()
        if parts and parts[0].isdigit():
            mult = 1024 if len(parts) > 1 and parts[1] == "kB" else 1
            out[key.strip()] = int(parts[0]) * mult
    return out


def _hugepages(root: Root, meminfo: dict[str, int]) -> dict:
    pools = {}
    base = "sys/kernel/mm/hugepages"
    for name in root.listdir(base, r"hugepages-\d+kB"):
        pools[name[len("hugepages-"):]] = {
            "nr": root.read_int(f"{base}/{name}/nr_hugepages"),
            "free": root.read_int(f"{base}/{name}/free_hugepages"),
        }
    return {
        "default_size_bytes": meminfo.get("Hugepagesize"),
        "total": meminfo.get("HugePages_Total"),
        "free": meminfo.get("HugePages_Free"),
        "pools": pools,
    }


def _bracketed(text: str | None) -> str | None:
    """The selected word of a sysfs choice file like ``always [madvise] never``."""
    if text is None:
        return None
    m = re.search(r"\[([^\]]+)\]", text)
    return m.group(1) if m else text.strip()


def _governors(root: Root) -> dict:
    base = "sys/devices/system/cpu"
    governors: dict[str, list[int]] = {}
    drivers = set()
    for name in root.listdir(base, r"cpu\d+"):
        gov = root.read(f"{base}/{name}/cpufreq/scaling_governor")
        if gov:
            governors.setdefault(gov, []).append(int(name[3:]))
        drv = root.read(f"{base}/{name}/cpufreq/scaling_driver")
        if drv:
            drivers.add(drv)
    no_turbo = root.read_int(f"{base}/intel_pstate/no_turbo")
    boost = root.read_int(f"{base}/cpufreq/boost")
    return {
        "governors": {g: cpus for g, cpus in sorted(governors.items())},
        "scaling_driver": sorted(drivers) or None,
        "turbo": (None if no_turbo is None and boost is None
                  else bool(boost) if boost is not None else not no_turbo),
    }


def _cpu_times(root: Root) -> list[int] | None:
    text = root.read("proc/stat") or ""
    for line in text.splitlines():
        if line.startswith("cpu "):
            return [int(v) for v in line.split()[1:]]
    return None


def steal_fraction(root: Root, interval_s: float = STEAL_INTERVAL_S) -> float | None:
    """Share of CPU time stolen by the hypervisor over ``interval_s`` (/proc/stat, 8th field)."""
    a = _cpu_times(root)
    if a is None or len(a) < 8:
        return None
    time.sleep(interval_s)
    b = _cpu_times(root)
    if b is None:
        return None
    # guest/guest_nice (fields 9-10) are already counted in user/nice: leave them out.
    total = sum(b[:8]) - sum(a[:8])
    return (b[7] - a[7]) / total if total > 0 else 0.0


def _steal_since_boot(root: Root) -> float | None:
    t = _cpu_times(root)
    if t is None or len(t) < 8 or sum(t[:8]) == 0:
        return None
    return t[7] / sum(t[:8])


def _tool_version(argv: list[str]) -> str | None:
    import subprocess
    if which(argv[0]) is None:
        return None
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=10, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    text = (proc.stdout or proc.stderr).strip()
    return text.splitlines()[0] if text else None


def _nofile_info(root: Root) -> dict[str, str]:
    out = {}
    for line in (root.read("proc/hwloc-nofile-info") or "").splitlines():
        key, sep, value = line.partition(":")
        if sep:
            out[key.strip()] = value.strip()
    return out


def _virtualisation(root: Root, cpu: dict) -> str | None:
    hv = root.read("sys/hypervisor/type")
    product = root.read("sys/class/dmi/id/product_name")
    vendor = root.read("sys/class/dmi/id/sys_vendor")
    if cpu.get("flags", {}).get("hypervisor"):
        detail = ", ".join(v for v in (hv, vendor, product) if v)
        return f"virtual machine (hypervisor CPU flag{': ' + detail if detail else ''})"
    if hv:
        return f"hypervisor type {hv}"
    return None


def collect(root: Root = Root("/")) -> dict:
    """Metadata of the machine under ``root`` as a JSON-able dict (None where unknown)."""
    live = root.is_live
    cpu = _cpu(root)
    meminfo = _meminfo(root)
    info = _nofile_info(root)
    md: dict = {"source": "live" if live else f"tree {root.path}"}
    md.update(cpu)
    md["virtualisation"] = _virtualisation(root, cpu)
    if live:
        u = os.uname()
        md["hostname"] = u.nodename
        md["kernel"] = {"release": u.release, "version": u.version, "machine": u.machine}
    else:
        md["hostname"] = info.get("HostName")
        release = info.get("OSRelease") or root.read("proc/sys/kernel/osrelease")
        version = info.get("OSVersion") or root.read("proc/version")
        md["kernel"] = {"release": release, "version": version, "machine": info.get("Architecture")}
    md["cmdline"] = root.read("proc/cmdline")
    md.update(_governors(root))
    md["thp"] = {
        "enabled": _bracketed(root.read("sys/kernel/mm/transparent_hugepage/enabled")),
        "defrag": _bracketed(root.read("sys/kernel/mm/transparent_hugepage/defrag")),
    }
    md["smt_control"] = root.read("sys/devices/system/cpu/smt/control")
    md["isolated_cpus"] = root.read_cpulist("sys/devices/system/cpu/isolated")
    md["perf_event_paranoid"] = root.read_int("proc/sys/kernel/perf_event_paranoid")
    md["mem_total_bytes"] = meminfo.get("MemTotal")
    md["hugepages"] = _hugepages(root, meminfo)
    load = (root.read("proc/loadavg") or "").split()
    md["loadavg"] = [float(v) for v in load[:3]] if len(load) >= 3 else None
    md["steal_since_boot"] = _steal_since_boot(root)
    if live:
        md["steal"] = steal_fraction(root)
        md["compilers"] = {c: _tool_version([c, "--version"]) for c in COMPILERS}
        md["perf_version"] = _tool_version(["perf", "--version"])
        import platform as _platform

        from perflab import __version__

        md["python"] = _platform.python_version()
        md["perflab"] = __version__
    else:
        md["steal"] = None  # one snapshot: no interval to sample over
        md["compilers"] = {}
        md["perf_version"] = None
    return md
