"""Processes on this host, as a runner sees them: is a runner's process still there?

A runner that stopped heartbeating may be dead, or only stopped (SIGSTOP, a
debugger, a frozen VM). The reaper (reaping.py) asks here before it gives the
jobs of a silent runner on its own host to anyone else.
"""

from __future__ import annotations

import os
from datetime import datetime


def process_alive(pid: int, *, since: datetime | None = None) -> bool:
    """Whether process ``pid`` on this host exists and is not a zombie.

    With ``since`` (a time the process is known to have been alive), a process
    that started after it is another one that got the pid (Linux: the start
    time from /proc); without /proc, existence is all that is checked.
    """
    try:
        os.kill(pid, 0)
    except PermissionError:
        pass  # it exists, as another user's
    except OSError:
        return False
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
        with open("/proc/stat", "rb") as f:
            boot = next(int(line.split()[1]) for line in f if line.startswith(b"btime "))
    except (OSError, IndexError, ValueError, StopIteration):
        return True
    if fields[0] in (b"Z", b"X"):  # a zombie (or dying): the process has ended
        return False
    started = boot + int(fields[19]) / os.sysconf("SC_CLK_TCK")
    return since is None or started <= since.timestamp() + 1.0
