"""Actions shipped with jobtui (registered as entry points): handy for demos and tests."""

from __future__ import annotations

import csv
import random
from pathlib import Path

from sqlalchemy import text

from jobtui.core.actions import ActionContext
from jobtui.core.model import check_identifier


def noop(ctx: ActionContext) -> None:
    """Do nothing (measures the scheduler's own cost)."""


def sleep(ctx: ActionContext) -> None:
    """Sleep for the first argument's seconds (default 5); stops at once when aborted."""
    seconds = float(ctx.args[0]) if ctx.args else 5.0
    ctx.sleep(seconds)


def fail(ctx: ActionContext) -> None:
    """Always fail, with the first argument as the error text."""
    raise RuntimeError(ctx.args[0] if ctx.args else "this job always fails (demo)")


def flaky(ctx: ActionContext) -> None:
    """Fail about one run in three."""
    if random.random() < 0.34:
        raise RuntimeError("flaky: simulated transient failure")


def export_csv(ctx: ActionContext) -> None:
    """Export table ARG1 to the CSV file ARG2 (through the run's own connection)."""
    if len(ctx.args) != 2:
        raise ValueError("demo.export_csv takes two arguments: TABLE and PATH")
    table = check_identifier(ctx.args[0], "table name")
    path = Path(ctx.args[1]).expanduser()
    quoted = ctx.connection.dialect.identifier_preparer.quote_identifier(table)
    result = ctx.connection.execute(text(f"SELECT * FROM {quoted}"))  # identifier validated
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    with tmp.open("w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(result.keys())
        for row in result:
            writer.writerow(list(row))
    tmp.replace(path)
