"""What a job runs, checked against the database before a row may name it (submit,
change, import): the procedure exists, the action is registered and allowed to the
job's owner, the SQL statement compiles.
"""

from __future__ import annotations

from sqlalchemy.exc import DBAPIError

from jobtui.core import actions
from jobtui.core.dberrors import db_errors, short_error, translate_db_error
from jobtui.core.errors import DatabaseUnavailable, InvalidInput
from jobtui.core.model import JOB_PARAM_MESSAGE, What, passes_job_number, split_procedure
from jobtui.core.store.context import StoreContext


@db_errors
def check_what(ctx: StoreContext, what: What, *, owner: str | None = None) -> None:
    """``JobStore.check_what``: procedure exists, action registered and, where the account
    may read the allow-list, allowed to the job's owner; SQL that compiles."""
    if what.kind == "action":
        actions.check_registered(what.target)
        ctx.backend.refuse_ungranted(owner or ctx.owner, what.target)
        return
    if what.kind == "call":
        schema_name, proc = split_procedure(what.target)
        ctx.backend.check_procedure(schema_name, proc, what.args)
        return
    if passes_job_number(what.target):
        raise InvalidInput(f"invalid --sql {what.target!r}: {JOB_PARAM_MESSAGE}")
    _check_sql(ctx, what.target)


def _check_sql(ctx: StoreContext, statement: str) -> None:
    """Compile the statement without running it (EXPLAIN on SQLite, PREPARE on MySQL)."""
    try:
        ctx.backend.check_sql(statement)
    except DBAPIError as exc:
        translated = translate_db_error(exc)
        if isinstance(translated, DatabaseUnavailable):
            raise translated from exc
        raise InvalidInput(
            f"invalid --sql: the database rejected it ({short_error(exc)})"
        ) from None
