"""The DBMS_JOB views: user_jobs, dba_jobs, user_jobs_running, dba_jobs_running (docs/sql.md)."""

from __future__ import annotations


def statements(schema_name: str, *, definer_role: bool) -> list[str]:
    """The statements that (re)create the views, in order."""
    return []
