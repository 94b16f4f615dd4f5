"""What a job row's definition columns may hold, checked as strictly as CLI input.

Operators write their rows through the view ``jobtui_user_job`` with any
client, so a row read back is input like any other (docs/privileges.md). The
store builds every Job through these checks: a row that does not pass becomes
a Job whose ``problem`` names the first column that is wrong and what is
accepted, with the placeholders below in place of what could not be read.
Reading never raises, and the runner never claims a job with a problem (it
marks it BROKEN with the problem as the reason).

Pure functions over column values, no database: the store caches their
results per distinct definition, as it caches the What and Schedule objects.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from jobtui.core.errors import InvalidInput
from jobtui.core.model import (
    MAX_ARG_LENGTH,
    MAX_ARGS,
    UNREADABLE,
    Schedule,
    What,
    format_seconds,
)
from jobtui.core.schedules import (
    MAX_EVERY,
    MIN_EVERY,
    check_cron,
    check_expr,
    check_tz,
)
from jobtui.core.timeutil import from_db

MAX_PROBLEM_LENGTH = 500
_SHOWN = 60  # characters of a bad value quoted in a problem

WHAT_KINDS = ("call", "sql", "action")
SCHEDULE_KINDS = ("every", "cron", "expr", "once")

# What a job whose definition could not be read shows instead. The target never
# passes as input (not a procedure, action name or statement a user would give),
# and `import` refuses an exported job that carries a problem, so a placeholder
# is never written back as a definition.
PLACEHOLDER_TARGET = "<invalid>"
PLACEHOLDER_SCHEDULE = UNREADABLE  # described as "invalid (see the job's problem)"
# Never a valid job name (a name starts with A-Z a-z 0-9 _): "#<id>" names a row
# whose own name is unusable, in listings only.
PLACEHOLDER_OWNER = "?"

# The largest JSON text ``what_args`` may hold: every argument at its longest,
# each character escaped (\\uXXXX: 6 characters), quoted and separated.
MAX_ARGS_JSON = 2 + MAX_ARGS * (6 * MAX_ARG_LENGTH + 4)


def shown(value: Any) -> str:
    """A bad value as a problem quotes it: Python's repr (control characters escaped,
    so a row cannot write to the terminal), cut to a few dozen characters."""
    if isinstance(value, str | bytes) and len(value) > _SHOWN:
        return repr(value[:_SHOWN]) + "..."
    text = repr(value)
    return text if len(text) <= _SHOWN + 2 else text[:_SHOWN] + "..."


def bad(column: str, value: Any, accepted: str) -> str:
    """``<column> = <value>: <what is accepted>``, bounded."""
    return f"{column} = {shown(value)}: {accepted}"[:MAX_PROBLEM_LENGTH]


def because(column: str, exc: Exception) -> str:
    """A problem from a validator's message (it quotes the value; anything unprintable
    that a library's text may carry is escaped all the same)."""
    text = f"{column}: {exc}"[:MAX_PROBLEM_LENGTH]
    return text if text.isprintable() else repr(text)[1:-1]


def placeholder_what(kind: Any) -> What:
    """The What of a job whose definition could not be read (never executed)."""
    what = What.__new__(What)
    object.__setattr__(what, "kind", kind if kind in WHAT_KINDS else "sql")
    object.__setattr__(what, "target", PLACEHOLDER_TARGET)
    object.__setattr__(what, "args", ())
    return what


def what_from_columns(kind: Any, target: Any, args_json: Any) -> What | str:
    """The What of ``what_kind``, ``what_target``, ``what_args``, or the problem (text)."""
    if kind not in WHAT_KINDS:
        return bad("what_kind", kind, "expected one of call, sql, action")
    if not isinstance(target, str):
        return bad("what_target", target, "expected text")
    args = _args(args_json)
    if isinstance(args, str):
        return args
    if args and kind == "sql":
        return bad("what_args", args_json, "an sql job takes no arguments: expected []")
    try:
        return What(kind, target, args)
    except InvalidInput as exc:
        return because("what_target", exc)


def _args(args_json: Any) -> tuple[str, ...] | str:
    accepted = (
        f"expected a JSON list of at most {MAX_ARGS} text arguments, each at most "
        f"{MAX_ARG_LENGTH} characters without NUL"
    )
    if args_json is None or args_json == "":
        return ()  # a row written before arguments existed
    if not isinstance(args_json, str) or len(args_json) > MAX_ARGS_JSON:
        return bad("what_args", args_json, accepted)
    try:
        value = json.loads(args_json)
    except (ValueError, RecursionError):  # RecursionError: "[[[[..." nested past the stack
        return bad("what_args", args_json, "not JSON; " + accepted)
    if (
        not isinstance(value, list)
        or len(value) > MAX_ARGS
        or not all(
            isinstance(a, str) and len(a) <= MAX_ARG_LENGTH and "\x00" not in a for a in value
        )
    ):
        return bad("what_args", args_json, accepted)
    return tuple(value)


def window_time(column: str, value: Any) -> datetime | str | None:
    """A schedule window bound as stored (None, a datetime, SQLite text), or the problem.

    A zero date (``0000-00-00``, which MariaDB's default sql_mode accepts) comes
    back from the driver as text that is no date: a problem, never an exception.
    """
    if value is None:
        return None
    try:
        return from_db(value)
    except (TypeError, ValueError, OverflowError, AttributeError):
        return bad(column, value, "expected a date-time or NULL")


def schedule_from_columns(
    kind: Any,
    interval: Any,
    cron: Any,
    tz: Any,
    expr: Any,
    start: Any,
    finish: Any,
) -> Schedule | str:
    """The Schedule of a row's ``schedule_*`` columns, or the problem (text).

    Only the columns of the schedule's kind are read (the others are ignored
    by every reader, and jobtui writes NULL there): ``schedule_interval`` a
    finite number of seconds in the range ``--every`` accepts, ``schedule_cron``
    an expression ``--cron`` accepts in a known ``schedule_tz``,
    ``schedule_expr`` an expression ``--expr`` accepts; the window's finish
    after its start.
    """
    if kind not in SCHEDULE_KINDS:
        return bad("schedule_kind", kind, "expected one of every, cron, expr, once")
    begin = window_time("schedule_start", start)
    if isinstance(begin, str):
        return begin
    end = window_time("schedule_finish", finish)
    if isinstance(end, str):
        return end
    if begin is not None and end is not None and end <= begin:
        return bad(
            "schedule_finish",
            finish,
            f"the window must end after it begins (schedule_start = {shown(start)})",
        )
    if kind == "every":
        # type(): bool is an int, and True is no interval
        if type(interval) not in (float, int) or not MIN_EVERY <= interval <= MAX_EVERY:
            return bad(
                "schedule_interval",
                interval,
                f"expected a number of seconds from {MIN_EVERY} to {format_seconds(MAX_EVERY)} "
                f"({MAX_EVERY:.0f} s)",
            )
        return Schedule("every", every=float(interval), start=begin, finish=end)
    if kind == "cron":
        if tz is not None:
            try:
                check_tz(tz)
            except InvalidInput as exc:
                return because("schedule_tz", exc)
        if not isinstance(cron, str):
            return bad("schedule_cron", cron, "expected a cron expression such as '*/5 * * * *'")
        try:
            normal = check_cron(cron, None)
        except InvalidInput as exc:
            return because("schedule_cron", exc)
        return Schedule("cron", cron=normal, tz=tz or None, start=begin, finish=end)
    if kind == "expr":
        try:
            checked = check_expr(expr)
        except InvalidInput as exc:
            return because("schedule_expr", exc)
        return Schedule("expr", expr=checked, start=begin, finish=end)
    return Schedule("once", start=begin, finish=end)
