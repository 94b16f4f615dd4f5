"""``--metrics-port``, ``--metrics-addr`` and ``--metrics-per-job`` of ``jobtui worker``
and ``jobtui console``: Prometheus metrics of the process's runner pool
(jobtui/core/metrics.py; docs/operations.md, "Metrics"; docs/cli.md)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from jobtui.core.errors import InvalidInput
from jobtui.core.store import JobStore

if TYPE_CHECKING:
    from jobtui.core.metrics import Metrics

DEFAULT_ADDR = "127.0.0.1"  # as jobtui.core.metrics.DEFAULT_ADDR (not imported: no client here)


def add_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("Prometheus metrics")
    group.add_argument(
        "--metrics-port",
        metavar="PORT",
        type=_port,
        default=None,
        help="serve Prometheus metrics at http://ADDRESS:PORT/metrics (1-65535; 0: any free "
        "port, logged); off unless given",
    )
    group.add_argument(
        "--metrics-addr",
        metavar="ADDRESS",
        default=None,
        help=f"the address the metrics listen on (default {DEFAULT_ADDR}; 0.0.0.0 for all)",
    )
    group.add_argument(
        "--metrics-per-job",
        action="store_true",
        help="also count runs by job (labels owner, job, outcome: one series per job)",
    )


def _port(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = -1
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(
            f"invalid --metrics-port {text!r}: expected a TCP port, a whole number 1-65535 "
            "(0: any free port)"
        )
    return value


def start(args: argparse.Namespace, store: JobStore) -> Metrics | None:
    """The metrics asked for by ``args``, already listening (a ``Metrics``), or None.
    InvalidInput (exit 2) when the options do not fit or the port cannot be had."""
    port = getattr(args, "metrics_port", None)
    if port is None:
        given = [
            option
            for option, value in (
                ("--metrics-addr", getattr(args, "metrics_addr", None)),
                ("--metrics-per-job", getattr(args, "metrics_per_job", False)),
            )
            if value
        ]
        if given:
            verb = "need" if len(given) > 1 else "needs"
            raise InvalidInput(f"{' and '.join(given)} {verb} --metrics-port PORT")
        return None
    from jobtui.core.metrics import Metrics  # the client is loaded only when asked for

    metrics = Metrics(store, per_job=args.metrics_per_job)
    metrics.serve(port, args.metrics_addr or DEFAULT_ADDR)
    return metrics
