"""Which process holds a campaign open, and whether it still lives.

A campaign is `running` from the moment a perflab opens it until that perflab closes it (done,
interrupted, failed). A perflab killed with SIGKILL, by the OOM killer or by a power cut closes
nothing, and its campaign would read `running` for ever. So the perflab that opens a campaign
records itself in the campaign's labels: host name, boot id (/proc/sys/kernel/random/boot_id, new
at every boot), pid and the pid's start time (/proc/PID/stat field 22, in clock ticks since boot),
which together name one process even after its pid is reused. `perflab results` then says which
`running` campaigns have lost their perflab, and `perflab resume` refuses to run a campaign beside
the perflab still measuring it.
"""

from __future__ import annotations

import os
from typing import Any, Mapping

from perflab.platform.sysfs import Root


def start_ticks(root: Root, pid: int) -> int | None:
    """Field 22 of /proc/PID/stat; None where the process does not exist."""
    text = root.read(f"proc/{pid}/stat")
    if not text or ")" not in text:
        return None
    # The command name (field 2) may hold spaces and parentheses: count from the last ')'.
    fields = text[text.rindex(")") + 2:].split()
    try:
        return int(fields[19])  # field 3 is fields[0]
    except (IndexError, ValueError):
        return None


def identity(root: Root = Root(), pid: int | None = None) -> dict[str, Any]:
    """This process (or ``pid``) as a campaign's owner label; empty where /proc cannot say."""
    pid = os.getpid() if pid is None else pid
    boot, start = root.read("proc/sys/kernel/random/boot_id"), start_ticks(root, pid)
    if not boot or start is None:
        return {}
    return {"host": os.uname().nodename, "boot": boot, "pid": pid, "start": start}


def alive(owner: Mapping[str, Any] | None, root: Root = Root()) -> bool | None:
    """True while the owner process runs, False once it is gone, None where this machine cannot
    tell (no owner recorded: an older perflab or a batch submitter; another machine's process)."""
    if not isinstance(owner, Mapping) or not {"host", "boot", "pid", "start"} <= set(owner):
        return None
    if owner["boot"] != root.read("proc/sys/kernel/random/boot_id"):
        # This host restarted since (every process of the old boot is gone), or another host.
        return False if owner["host"] == os.uname().nodename else None
    try:
        return start_ticks(root, int(owner["pid"])) == int(owner["start"])
    except (TypeError, ValueError):
        return None


def shown_status(status: str, owner_alive: bool | None) -> str:
    """The status results and reports show: 'died' for a campaign marked running whose perflab is
    gone (killed before it could close it), else the stored one. One rule for every view."""
    return "died" if status == "running" and owner_alive is False else status
