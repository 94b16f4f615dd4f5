"""Shared fixtures: real SQLite files and real MariaDB databases.

MariaDB tests use a fresh database per test (``jobtui_t_<random>``) on
127.0.0.1:3306 as root. Outside CI they are skipped with a reason when the
server is unreachable; with ``CI`` set, an unreachable server fails them.
Override the server with ``JOBTUI_TEST_MYSQL`` (a URL without database).
"""

from __future__ import annotations

import secrets
from collections.abc import Iterator

import pytest
from hypothesis import settings as hypothesis_settings
from support.mariadb import IN_CI, MYSQL_SERVER, admin_connection, require_mysql

from jobtui.core import accounts
from jobtui.core.backends.registry import make_engine
from jobtui.core.runner.pool import RunnerPool
from jobtui.core.store import JobStore, open_store

# support/accounts.py: the `server` fixture of real operator, admin and runner accounts.
# support/galera_cluster.py: the `galera_cluster` (3 loopback nodes) and `galera_db` fixtures.
pytest_plugins = ["support.accounts", "support.galera_cluster"]

# CI replays the same examples on every run (a landing must not depend on luck);
# developers' runs keep exploring new ones.
hypothesis_settings.register_profile("ci", derandomize=True, deadline=None, print_blob=True)
if IN_CI:
    hypothesis_settings.load_profile("ci")


@pytest.fixture(autouse=True)
def _own_state_home(tmp_path_factory, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """The console's remembered state (a theme) never comes from, nor goes to, the
    user's own $XDG_STATE_HOME: each test has an empty one of its own."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path_factory.mktemp("state")))
    # nor the user's config file and profiles (jobtui.core.config)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path_factory.mktemp("config")))
    monkeypatch.delenv("JOBTUI_CONFIG", raising=False)
    monkeypatch.delenv("JOBTUI_PROFILE", raising=False)


@pytest.fixture(autouse=True)
def _no_demo_actions_left() -> Iterator[None]:
    """Each test starts in a process that knows no demo action: a test that opened a demo
    database (tests/support/demo_db.py) must not lend them to the next one."""
    from jobtui.core import actions
    from jobtui.core.builtin_actions import DEMO_ACTIONS

    yield
    for name in DEMO_ACTIONS:
        actions.unregister(name)


@pytest.fixture
def sqlite_url(tmp_path) -> str:  # type: ignore[no-untyped-def]
    return f"sqlite:///{tmp_path / 'jobtui.db'}"


@pytest.fixture
def mariadb_url() -> Iterator[str]:
    """A URL to a brand-new, empty MariaDB database, dropped afterwards."""
    require_mysql()
    name = f"jobtui_t_{secrets.token_hex(6)}"
    conn = admin_connection()
    with conn.cursor() as cur:
        cur.execute(f"CREATE DATABASE `{name}`")
    conn.close()
    try:
        yield f"{MYSQL_SERVER}/{name}"
    finally:
        conn = admin_connection()
        with conn.cursor() as cur:
            cur.execute(f"DROP DATABASE IF EXISTS `{name}`")
            # The roles belong to this database only (`jobtui grant` makes them): left behind,
            # hundreds of them slowed every privilege check of the server that CI reuses.
            for role in [accounts.role_name(k, name) for k in accounts.KINDS]:
                cur.execute(f"DROP ROLE IF EXISTS `{role}`")
            cur.execute(f"DROP ROLE IF EXISTS `{accounts.executor_role(name)}`")
        conn.close()


@pytest.fixture(
    params=[
        "sqlite",
        pytest.param("mariadb", marks=pytest.mark.mariadb),
        pytest.param("galera", marks=pytest.mark.galera),
    ]
)
def db_url(request) -> str:  # type: ignore[no-untyped-def]
    """Parametrized over the backends: the store contract runs on each (galera: node 1
    of the test cluster, tests/support/galera_cluster.py)."""
    if request.param == "sqlite":
        return request.getfixturevalue("sqlite_url")  # type: ignore[no-any-return]
    if request.param == "galera":
        return request.getfixturevalue("galera_db").urls[0]  # type: ignore[no-any-return]
    return request.getfixturevalue("mariadb_url")  # type: ignore[no-any-return]


@pytest.fixture
def store(db_url) -> Iterator[JobStore]:  # type: ignore[no-untyped-def]
    s = open_store(db_url)
    try:
        yield s
    finally:
        s.close()


@pytest.fixture
def pool(store: JobStore) -> Iterator[RunnerPool]:
    """A pool with its engine and schema set up, but no threads: claims are driven by hand."""
    p = RunnerPool(store, threads=1, poll=0.2, name="batch", lead=0.0)
    p._engine = make_engine(store.url, pool_size=4)
    p._schema = store.schema_name
    yield p
    p.engine.dispose()
