"""Export and import of job definitions (``jobtui export`` / ``jobtui import``).

An export holds definitions, not runtime state; an import validates every
entry before it writes any, and on MySQL/MariaDB creates the jobs' routines
in the importing owner's session before their rows may be claimed.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import delete, insert, select, update

from jobtui.core import schema
from jobtui.core.calltext import NotExpressible, comment_text, recreate_call
from jobtui.core.errors import InvalidInput
from jobtui.core.jobdefs import JobSpec, exported_schedule, parse_job_definition, removal_pending
from jobtui.core.model import Intent
from jobtui.core.rowmap import new_job_values
from jobtui.core.schedules import first_run
from jobtui.core.store import expressions, reading, validation
from jobtui.core.store.context import StoreContext
from jobtui.core.transitions import status_after

# The columns an import writes over an existing job's row: its definition (the row's
# runtime state, failures and run log stay), and the status they leave.
_DEFINITION_COLUMNS = (
    "description",
    "max_failures",
    "what_kind",
    "what_target",
    "what_args",
    "schedule_kind",
    "schedule_interval",
    "schedule_cron",
    "schedule_tz",
    "schedule_expr",
    "schedule_start",
    "schedule_finish",
    "schedule_anchor",
    "updated",
    "intent",
    "phase",
    "next_run",
)


def export_jobs(ctx: StoreContext, *, all_owners: bool = False) -> list[dict[str, Any]]:
    """``JobStore.export``: job definitions, in the shape ``import_jobs`` reads."""
    out = []
    now = ctx.now()
    for job in reading.list_jobs(ctx, all_owners=all_owners):
        sched = exported_schedule(job, now)
        out.append(
            {
                "name": job.name,
                "owner": job.owner,
                "description": job.description,
                "what": job.what.to_dict(),
                "schedule": {
                    k: v for k, v in sched.to_dict().items() if k != "text" and v is not None
                },
                "max_failures": job.max_failures,
                "disabled": job.intent is Intent.DISABLED,
                # only on a job with a problem: `import` refuses such an entry,
                # whose placeholders stand for what could not be read
                **({"problem": job.problem} if job.problem else {}),
            }
        )
    return out


def export_sql(ctx: StoreContext, *, all_owners: bool = False) -> tuple[str, int]:
    """``jobtui export --format sql``: the CALLs that recreate the jobs, and how many were left out.

    One ``user_export`` CALL per job, ``;``-terminated, in ``export_jobs``' order.
    A job the SQL interface cannot submit (an action, a row with a problem) is a
    one-line comment instead: its text is escaped, so no row can end the comment.
    """
    jobs = reading.list_jobs(ctx, all_owners=all_owners)
    lines = [
        f"-- jobtui export --format sql: the CALLs that recreate {len(jobs)} job(s) in a jobtui",
        "-- database on MySQL/MariaDB, for the account that runs them (docs/sql.md), e.g.",
        "--   mariadb DATABASE < jobs.sql",
        "-- Not carried: description, max failures, disabled (use the JSON export for those).",
    ]
    skipped = 0
    for job in jobs:
        try:
            lines.append(recreate_call(job) + ";")
        except NotExpressible as exc:
            skipped += 1
            lines.append(comment_text(f"-- job {job.name!r} left out: {exc}"))
    return "\n".join(lines) + "\n", skipped


def import_jobs(ctx: StoreContext, data: Any) -> tuple[int, int]:
    """``JobStore.import_jobs``: create or change jobs from ``export`` output."""
    ctx.check_writable()
    from jobtui.core.store.importfile import check_shape  # (PyYAML only when importing)

    check_shape(data)  # nesting and size bounded, whoever calls
    if isinstance(data, dict) and "jobs" in data:
        data = data["jobs"]
    if not isinstance(data, list):
        raise InvalidInput("invalid import: expected a list of jobs (the output of export)")
    parsed: list[JobSpec] = []
    seen: set[str] = set()
    for i, item in enumerate(data):
        try:
            parsed.append(parse_job_definition(item))
        except InvalidInput as exc:
            label = item.get("name") if isinstance(item, dict) else None
            shown = repr(label) if label else "no name"  # repr: one line whatever the name holds
            raise InvalidInput(f"job #{i + 1} ({shown}): {exc}") from None
        if parsed[-1].name in seen:
            raise InvalidInput(f"job #{i + 1}: the name {parsed[-1].name!r} appears twice")
        seen.add(parsed[-1].name)
    for spec in parsed:
        try:
            validation.check_what(ctx, spec.what)
            expressions.check_expr_schedule(ctx, spec.schedule, ctx.now())
        except InvalidInput as exc:
            raise InvalidInput(f"job {spec.name!r}: {exc}") from None
    existing = {j.name: j for j in reading.list_jobs(ctx)}
    now = ctx.now()
    job_routines = ctx.backend.job_routines
    owns_routines = job_routines.present
    # MySQL/MariaDB: the routines of the jobs that exist first, then the new rows
    # (held: next_run NULL) and their routines; a refusal undoes all of that, so
    # nothing changed. Only then are the rows changed and the new ones released.
    made: list[tuple[int, Any]] = []
    keep: dict[int, list[Any]] = {}
    new_ids: dict[str, int] = {}
    try:
        if owns_routines:
            for spec in parsed:
                if spec.name in existing:
                    jid = existing[spec.name].id
                    keep[jid], done = job_routines.install(jid, spec.what, spec.schedule)
                    made += [(jid, r) for r in done]
        with ctx.write() as conn:
            for spec in parsed:
                if spec.name not in existing:
                    values = schema.new_row_values(
                        _new_values(ctx, spec, now), through_view=not ctx.sees_all
                    )
                    if owns_routines:
                        values["next_run"] = None
                    conn.execute(insert(ctx.job_table).values(**values))
        if owns_routines:
            ids = _ids_by_name(ctx, [p.name for p in parsed if p.name not in existing])
            new_ids.update(ids)
            for spec in parsed:
                if spec.name in ids:
                    jid = ids[spec.name]
                    keep[jid], done = job_routines.install(jid, spec.what, spec.schedule)
                    made += [(jid, r) for r in done]
    except BaseException:
        for jid, routine in made:
            job_routines.drop(jid, only=[routine])
        fresh = _ids_by_name(ctx, [p.name for p in parsed if p.name not in existing])
        if fresh:
            with ctx.write() as conn:
                conn.execute(delete(ctx.job_table).where(ctx.job_table.c.id.in_(fresh.values())))
        raise
    created = changed = 0
    with ctx.write() as conn:
        for spec in parsed:
            name = spec.name
            new = _new_values(ctx, spec, now)
            values = {key: new[key] for key in _DEFINITION_COLUMNS}
            if name in existing:
                job = existing[name]
                row = ctx.lock_row(conn, job.id)
                if row.remove_requested:
                    raise removal_pending(name)
                values["status"] = status_after(row, values)
                conn.execute(
                    update(ctx.job_table).where(ctx.job_table.c.id == job.id).values(**values)
                )
                changed += 1
            else:
                if name in new_ids:  # held until its routines existed: released now
                    conn.execute(
                        update(ctx.job_table)
                        .where(ctx.job_table.c.id == new_ids[name])
                        .values(next_run=values["next_run"])
                    )
                created += 1
    for jid, want in keep.items():
        if jid not in new_ids.values():
            job_routines.drop(jid, keep=want)
    return created, changed


def _new_values(ctx: StoreContext, spec: JobSpec, now: datetime) -> dict[str, Any]:
    """The row of an imported job, as submit would write it for this account."""
    return new_job_values(
        owner=ctx.owner,
        name=spec.name,
        what=spec.what,
        schedule=spec.schedule,
        description=spec.description,
        max_failures=spec.max_failures,
        disabled=spec.disabled,
        next_run=first_run(spec.schedule, now),
        now=now,
    )


def _ids_by_name(ctx: StoreContext, names: list[str]) -> dict[str, int]:
    """The ids of this account's jobs with these names."""
    if not names:
        return {}
    t = ctx.job_table
    with ctx.read() as conn:
        rows = conn.execute(
            select(t.c.name, t.c.id).where(t.c.owner == ctx.owner, t.c.name.in_(names))
        ).all()
    return {str(n): int(i) for n, i in rows}
