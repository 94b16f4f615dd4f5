"""The DBMS_JOB procedures: submit, change, broken, run, remove, ... (docs/sql.md)."""

from __future__ import annotations


def statements(schema_name: str, *, definer_role: bool) -> list[str]:
    """The statements that (re)create the procedures, in order."""
    return []
