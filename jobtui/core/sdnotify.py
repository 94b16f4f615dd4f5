"""systemd's notification protocol (sd_notify(3)), the few lines of it a service needs:
one datagram of ``KEY=VALUE`` lines to the unix socket named by ``$NOTIFY_SOCKET`` (a
path, or ``@name`` in the abstract namespace). ``READY=1`` once the pool runs,
``WATCHDOG=1`` every half ``$WATCHDOG_USEC`` while its heartbeats reach the database,
``STOPPING=1`` on the way out. Without ``$NOTIFY_SOCKET`` (not under systemd, or no
``Type=notify``) every call does nothing.
"""

from __future__ import annotations

import os
import socket


class Notifier:
    def __init__(self, address: str | None, watchdog_usec: int | None = None) -> None:
        self.address = address
        self.watchdog_usec = watchdog_usec

    @classmethod
    def from_env(cls) -> Notifier:
        address = os.environ.get("NOTIFY_SOCKET") or None
        usec: int | None = None
        raw = os.environ.get("WATCHDOG_USEC", "")
        pid = os.environ.get("WATCHDOG_PID", "")
        if raw.isdigit() and int(raw) > 0 and (not pid or pid == str(os.getpid())):
            usec = int(raw)
        return cls(address, usec)

    def notify(self, *lines: str) -> bool:
        """Send one datagram; False when there is no socket or it could not be sent."""
        if not self.address:
            return False
        target = self.address
        if target.startswith("@"):
            target = "\0" + target[1:]
        elif not target.startswith("/"):
            return False  # vsock and other forms: not supported
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC) as s:
                s.connect(target)
                s.sendall("\n".join(lines).encode())
        except OSError:
            return False  # systemd gone or the socket not ours: a notification is best effort
        return True

    def ready(self, status: str = "") -> bool:
        return self.notify("READY=1", *([f"STATUS={status}"] if status else []))

    def watchdog(self) -> bool:
        return self.notify("WATCHDOG=1")

    def stopping(self) -> bool:
        return self.notify("STOPPING=1")

    def watchdog_interval(self) -> float | None:
        """Seconds between WATCHDOG=1 pings: half the service's WatchdogSec, or None."""
        if not self.address or not self.watchdog_usec:
            return None
        return self.watchdog_usec / 2_000_000
