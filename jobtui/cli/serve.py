"""``jobtui serve``: the operator console in a browser, through textual-serve.

textual-serve runs a web server; each browser tab that opens its page gets
its own ``jobtui console`` process, started by textual-serve as a shell
command, whose screen travels over a websocket. The verb is jobtui/cli/console.py's
(``add_options``, ``check_listen``, ``tab_command``, ``serve``); docs/console.md ("In a
browser") and docs/cli.md.

What this module guards:

- **Where it listens.** The page has no login of its own: whoever reaches the
  port steers jobs with the database account's rights. So it listens on
  loopback unless ``--allow-remote`` is given, and the refusal says how to
  reach it safely (an SSH tunnel, or a reverse proxy with a login).
- **The password.** The database URL (which may hold one) goes to each
  console process in the environment (``JOBTUI_DB``), never on its command
  line, which any local user can read (``ps``); the command shown and the URL
  printed hold no secret.
"""

from __future__ import annotations

import argparse
import asyncio
import ipaddress
import os
import shlex
import signal
import socket
import sys
from collections.abc import Sequence
from typing import Any
from urllib.parse import urlsplit

from jobtui.core.db import ENV_VAR, mask_url
from jobtui.core.errors import InvalidInput

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8000
TITLE = "jobtui"
WILDCARDS = ("", "0.0.0.0", "::")


def add_options(parser: argparse.ArgumentParser) -> None:
    """The options of ``serve`` beyond the console's own."""
    group = parser.add_argument_group("web server")
    group.add_argument(
        "--host",
        metavar="ADDRESS",
        default=DEFAULT_HOST,
        help=f"address to listen on (default {DEFAULT_HOST}; a non-loopback address needs "
        "--allow-remote)",
    )
    group.add_argument(
        "--port",
        metavar="PORT",
        type=_port,
        default=DEFAULT_PORT,
        help=f"TCP port to listen on, 1-65535 (default {DEFAULT_PORT})",
    )
    group.add_argument(
        "--public-url",
        metavar="URL",
        type=_public_url,
        help="the http(s):// URL browsers open, when it is not http://HOST:PORT (behind a "
        "reverse proxy, or with --host 0.0.0.0)",
    )
    group.add_argument(
        "--allow-remote",
        action="store_true",
        help="listen on a non-loopback address: the page has no login, so only with a "
        "firewall or an authenticating reverse proxy in front",
    )


def _port(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if not 1 <= value <= 65535:
        raise argparse.ArgumentTypeError(
            f"invalid --port {text!r}: expected a TCP port, a whole number 1-65535"
        )
    return value


def _public_url(text: str) -> str:
    parts = urlsplit(text)
    problem = ""
    if parts.scheme not in ("http", "https") or not parts.hostname:
        problem = "it is not an http:// or https:// URL with a host"
    elif parts.username is not None or parts.password is not None:
        problem = "it holds a user or password (the page has none; a proxy asks for them)"
    elif parts.query or parts.fragment:
        problem = "it has a ?query or #fragment"
    if problem:
        shown = text if parts.password is None else text.replace(parts.password, "***")
        raise argparse.ArgumentTypeError(
            f"invalid --public-url {shown!r}: {problem}; expected e.g. "
            "https://jobs.example.org or http://HOST:8000/jobtui"
        )
    return text.rstrip("/")


def is_loopback(host: str) -> bool:
    """Whether every address ``host`` names is a loopback address (127.0.0.0/8, ::1).

    A name is resolved; one that does not resolve is refused with InvalidInput.
    """
    bare = host.strip("[]")
    if bare in WILDCARDS:
        return False
    try:
        return ipaddress.ip_address(bare).is_loopback
    except ValueError:
        pass
    try:
        infos = socket.getaddrinfo(bare, None, proto=socket.IPPROTO_TCP)
    except (OSError, UnicodeError) as exc:
        raise InvalidInput(
            f"invalid --host {host!r}: it does not resolve ({exc}); expected an IP address "
            f"or a host name of this machine (default {DEFAULT_HOST})"
        ) from None
    addresses = {str(info[4][0]).split("%", 1)[0] for info in infos}
    return bool(addresses) and all(ipaddress.ip_address(a).is_loopback for a in addresses)


def check_listen(host: str, port: int, *, allow_remote: bool, public_url: str | None) -> str:
    """Refuse (InvalidInput, exit 2) what would expose the console; return the page's URL."""
    bare = host.strip("[]")
    if any(not c.isprintable() or c.isspace() for c in host):
        raise InvalidInput(
            f"invalid --host {host!r}: expected an IP address or a host name without spaces"
        )
    if not allow_remote and not is_loopback(host):
        where = "every address" if bare in WILDCARDS else repr(host)
        raise InvalidInput(
            f"refusing to serve the console on {where}: it is not a loopback address and the "
            "page has no login of its own, so whoever reaches the port can pause, abort, edit "
            "and remove jobs with this database account's rights. Keep the default "
            f"--host {DEFAULT_HOST} and reach it through an SSH tunnel (ssh -L "
            f"{port}:127.0.0.1:{port} THIS_HOST, then open http://127.0.0.1:{port}), or put a "
            "reverse proxy on this host in front that asks for a login and speaks TLS "
            "(--public-url https://...). To listen there anyway, behind a firewall or such "
            "a proxy, add --allow-remote"
        )
    if public_url:
        return public_url
    if bare in WILDCARDS:
        raise InvalidInput(
            f"--host {host!r} listens on every address, and the page must name one for the "
            f"browser to connect back to: add --public-url http://NAME:{port} (the name or "
            "address browsers reach this host by)"
        )
    shown = f"[{bare}]" if ":" in bare else bare
    return f"http://{shown}:{port}"


def tab_command(options: Sequence[str]) -> list[str]:
    """The command each browser tab runs: this Python's ``jobtui console`` (no database URL)."""
    return [sys.executable, "-m", "jobtui", "console", *options]


def serve(url: str, argv: Sequence[str], *, host: str, port: int, public_url: str) -> int:
    """Serve the console (``argv``) on ``host:port`` for the database ``url`` until Ctrl+C."""
    try:
        from textual_serve.server import Server
    except ImportError as exc:
        from jobtui.core.errors import DatabaseUnavailable

        raise DatabaseUnavailable(
            f"the browser view is not available in this installation (textual_serve failed "
            f"to import: {exc})"
        ) from None

    # The console processes read the database from the environment: their command
    # line (visible to every local user) never holds the URL or its password.
    os.environ[ENV_VAR] = url
    command = shlex.join(argv)
    shown_db = mask_url(url)

    class ConsoleServer(Server):  # type: ignore[misc]
        async def on_startup(self, app: Any) -> None:
            """textual-serve's banner names the command; the line below says more, once bound."""

        def serve(self, debug: bool = False) -> None:
            # Server.serve, but announcing the URL only once the port is bound
            # (aiohttp calls ``print`` then), so a port in use prints only the error.
            from aiohttp import web

            self.debug = debug
            self.initialize_logging()
            loop = asyncio.new_event_loop()
            asyncio.set_event_loop(loop)
            for sig in (signal.SIGINT, signal.SIGTERM):
                loop.add_signal_handler(sig, self.request_exit)
            web.run_app(
                self._make_app(),
                host=host,
                port=port,
                handle_signals=False,
                loop=loop,
                print=lambda *_banner: print(
                    f"jobtui serve: the console for {shown_db} at {self.public_url} "
                    f"(listening on {host}:{port}; each browser tab runs its own console; "
                    "Ctrl+C stops)",
                    flush=True,
                ),
            )

    server = ConsoleServer(command, host=host, port=port, title=TITLE, public_url=public_url)
    try:
        server.serve()
    except OSError as exc:
        raise InvalidInput(
            f"cannot listen on {host}:{port}: {exc.strerror or exc}; choose another --port "
            "or --host"
        ) from None
    return 0
