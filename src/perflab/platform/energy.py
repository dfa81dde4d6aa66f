"""Energy counters a machine offers, read through the root-aware helper.

RAPL through powercap sysfs (``/sys/class/powercap/intel-rapl:*``; AMD Zen exposes the same
driver name): a package zone per socket (``intel-rapl:N``, name ``package-N``) with sub-zones
(``intel-rapl:N:M``: core, uncore, dram), each an ``energy_uj`` counter that wraps at
``max_energy_range_uj``. RAPL covers the CPU packages and DRAM only: a node's fans, disks and
power-supply losses are not in it, which is why a cooling envelope wants the node's own meter
(``ipmitool dcmi power reading``, parsed here; sampled by perflab.measure.energy).
"""

from __future__ import annotations

import re
from typing import NamedTuple

from perflab.errors import PerflabError
from perflab.platform.sysfs import Root

POWERCAP = "sys/class/powercap"


# A NamedTuple, not a frozen dataclass: this module is on every `perflab run`'s path (to say why
# energy is not measured), and a frozen dataclass costs ten times as much to define (~0.5 ms).
class RaplDomain(NamedTuple):
    """One RAPL counter: ``key`` such as ``package-0`` or ``package-0/dram``."""

    key: str
    path: str  # relative to the root, e.g. sys/class/powercap/intel-rapl:0:1
    max_range_uj: int


def rapl_domains(root: Root = Root("/")) -> list[RaplDomain]:
    """Every RAPL zone with an energy counter, packages first (empty when there is no RAPL)."""
    out: list[RaplDomain] = []
    zones = root.listdir(POWERCAP, r"(intel|amd)-rapl:\d+(:\d+)?")
    names = {z: (root.read(f"{POWERCAP}/{z}/name") or z) for z in zones}
    for zone in zones:
        if not root.exists(f"{POWERCAP}/{zone}/energy_uj"):
            continue
        parts = zone.split(":")
        name = names[zone]
        if len(parts) == 3:
            parent = names.get(f"{parts[0]}:{parts[1]}", f"package-{parts[1]}")
            name = f"{parent}/{name}"
        max_range = root.read_int(f"{POWERCAP}/{zone}/max_energy_range_uj")
        if max_range is None or max_range <= 0:
            raise PerflabError(f"{root.join(f'{POWERCAP}/{zone}/max_energy_range_uj')} is missing or not a "
                               "positive number: cannot account for counter wrap-around")
        out.append(RaplDomain(name, f"{POWERCAP}/{zone}", max_range))
    return out


def read_rapl(root: Root, domains: list[RaplDomain]) -> dict[str, int]:
    """energy_uj of every domain; a missing or unreadable counter is named in one line."""
    out: dict[str, int] = {}
    for d in domains:
        value = root.read_int(f"{d.path}/energy_uj")
        if value is None:
            raise PerflabError(
                f"cannot read {root.join(d.path + '/energy_uj')} (unreadable or not a number): RAPL "
                "counters are root-only on recent kernels; run as root or choose --energy off"
            )
        out[d.key] = value
    return out


def rapl_delta_uj(before: int, after: int, max_range_uj: int) -> int:
    """Energy between two reads of one counter, across at most one wrap-around."""
    return after - before if after >= before else after + max_range_uj - before


NO_RAPL = "no RAPL energy counters in /sys/class/powercap (virtual machine, or the intel_rapl driver not loaded)"


def rapl_available(root: Root = Root("/")) -> tuple[bool, str]:
    """(available, one-line reason) for RAPL through powercap on this machine."""
    try:
        domains = rapl_domains(root)
    except PerflabError as exc:
        return False, str(exc)
    if not domains:
        return False, NO_RAPL
    try:
        read_rapl(root, domains)
    except PerflabError as exc:
        return False, str(exc)
    return True, "RAPL: " + ", ".join(d.key for d in domains)


def rapl_status(root: Root = Root("/")) -> dict:
    """Every RAPL zone with whether its counter reads (and why not), or why there is none."""
    import os

    try:
        domains = rapl_domains(root)
    except PerflabError as exc:
        return {"domains": [], "reason": str(exc)}
    rows = []
    for d in domains:
        path = root.join(f"{d.path}/energy_uj")
        value = root.read_int(f"{d.path}/energy_uj")
        if value is not None:
            why = None
        elif root.exists(f"{d.path}/energy_uj") and not os.access(path, os.R_OK, effective_ids=True):
            # Linux made energy_uj root-only in 2020 (the PLATYPUS side channel, CVE-2020-8694).
            why = "permission denied: energy_uj is root-only; run as root or grant read access (udev rule)"
        else:
            why = "unreadable or not a number"
        rows.append({"key": d.key, "zone": d.path.rsplit("/", 1)[-1], "readable": why is None,
                     "max_range_uj": d.max_range_uj, "reason": why})
    return {"domains": rows, "reason": None if rows else NO_RAPL}


# Patterns as strings, compiled by re on first use: this module is on every `perflab run`'s path,
# which reads no ipmitool or perf energy output (each compile is ~0.1-0.2 ms).
_IPMI_WATTS = r"(?i)Instantaneous power reading:\s*(\d+(?:\.\d+)?)\s*Watts"
_IPMI_STATE = r"(?i)Power reading state is:\s*(\w+)"


def parse_ipmi_dcmi(text: str) -> float:
    """Watts from ``ipmitool dcmi power reading``; a BMC that does not measure is one line."""
    m = re.search(_IPMI_WATTS, text)
    if m is None:
        first = next((line.strip() for line in text.splitlines() if line.strip()), "no output")
        raise PerflabError(f"ipmitool gave no power reading ({first}); check that the BMC supports DCMI")
    watts = float(m.group(1))
    state = re.search(_IPMI_STATE, text)
    if watts == 0 and state is not None and state.group(1).lower() == "deactivated":
        raise PerflabError("the BMC's power reading is deactivated (0 W): enable DCMI power "
                           "readings in the BMC, or choose another --energy source")
    return watts


_PERF_ENERGY = r"(?m)^\s*([0-9.]+),(Joules),(power/energy-[a-z]+/)"


def parse_perf_energy(text: str) -> dict[str, float]:
    """Joules per perf power event from ``perf stat -x, -a -e power/energy-pkg/,...`` output."""
    return {m.group(3).strip("/").split("/")[-1]: float(m.group(1)) for m in re.finditer(_PERF_ENERGY, text)}
