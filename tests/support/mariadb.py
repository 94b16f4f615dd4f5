"""The shared MariaDB test server: where it is, whether it answers, an admin connection.

127.0.0.1:3306 as root unless ``JOBTUI_TEST_MYSQL`` names another server (a URL
without database). Outside CI a test that needs it is skipped with the reason
when it does not answer; with ``CI`` set, it fails.
"""

from __future__ import annotations

import os

import pytest

MYSQL_SERVER = os.environ.get("JOBTUI_TEST_MYSQL", "mysql+pymysql://root@127.0.0.1:3306")
IN_CI = bool(os.environ.get("CI"))


def _mysql_reachable() -> str | None:
    """None when reachable, else the reason."""
    import pymysql

    from jobtui.core.db import parse_url

    url = parse_url(MYSQL_SERVER + "/test")
    try:
        conn = pymysql.connect(
            host=url.host or "127.0.0.1",
            port=url.port or 3306,
            user=url.username or "root",
            password=url.password or "",
            connect_timeout=3,
        )
    except Exception as exc:  # any failure means "not reachable"
        return f"MariaDB not reachable at {url.host}:{url.port}: {exc}"
    conn.close()
    return None


_reason: str | bool | None = False


def mysql_unreachable_reason() -> str | None:
    global _reason
    if _reason is False:
        _reason = _mysql_reachable()
    return _reason  # type: ignore[return-value]


def require_mysql() -> None:
    reason = mysql_unreachable_reason()
    if reason:
        if IN_CI:
            pytest.fail(f"CI is set, so MariaDB tests must run: {reason}")
        pytest.skip(reason)


def admin_connection(database: str | None = None):  # type: ignore[no-untyped-def]
    """A raw PyMySQL connection as the test server's admin (autocommit)."""
    import pymysql

    from jobtui.core.db import parse_url

    url = parse_url(MYSQL_SERVER + "/test")
    return pymysql.connect(
        host=url.host or "127.0.0.1",
        port=url.port or 3306,
        user=url.username or "root",
        password=url.password or "",
        database=database,
        autocommit=True,
    )
