"""The claim protocol's small pieces: the jobs' lock names and the key they are made with.

MySQL/MariaDB: a job is executed only by the connection that holds
``GET_LOCK(lock_name(key, schema, job id), 0)``. The server releases the lock
when that connection goes away, and keeps it while an orphaned statement of
a vanished client still runs. SQLite: the job row's lease (``locked_by``,
``locked_until``) written inside ``BEGIN IMMEDIATE``. docs/runners.md tells
the whole protocol; the statements of each database are its backend's
(``jobtui.core.backends``).

Named locks are server-wide and any account may take or probe one, so their
names hold a keyed digest (HMAC-SHA256 with a random key kept in
``jobtui_secret``, which runners and admins read and operators cannot): an
operator can neither take a job's lock to stop it nor ask ``IS_USED_LOCK``
which jobs run (docs/privileges.md).
"""

from __future__ import annotations

import hashlib
import hmac

from sqlalchemy import select
from sqlalchemy.engine import Connection
from sqlalchemy.exc import DBAPIError

from jobtui.core import schema
from jobtui.core.dberrors import NO_SUCH_TABLE, PERMISSION_ERRORS, error_code
from jobtui.core.errors import JobtuiError, PermissionDenied

LOCK_PREFIX = "jobtui"
MAX_LOCK_NAME = 64

#: The node a connection runs on, as the reaper reaches it: ``host:port/gcomm-uuid``
#: (the node's ``wsrep_node_incoming_address`` when set, else its bind address or host
#: name and port). NULL on a server that is not a Galera node. Read by the claims
#: (backends/galera.py) and by the SQL interface's ``run`` (sqlapi/runlog.py): no
#: ``@@wsrep_*`` variable, so the text parses on any MariaDB.
NODE_EXPR = (
    "CONCAT(IFNULL((SELECT NULLIF(NULLIF(VARIABLE_VALUE, 'AUTO'), '') "
    "FROM information_schema.GLOBAL_VARIABLES "
    "WHERE VARIABLE_NAME = 'WSREP_NODE_INCOMING_ADDRESS'), "
    "CONCAT(IF(@@bind_address IN ('', '*', '0.0.0.0', '::'), @@hostname, @@bind_address), "
    "':', @@port)), '/', "
    "(SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS "
    "WHERE VARIABLE_NAME = 'WSREP_GCOMM_UUID'))"
)


def lock_name(key: str, schema_name: str, job_id: int | str) -> str:
    """``jobtui:`` + hex HMAC-SHA256(key, ``<schema>:<job id>``), cut to 64 characters.

    Without the key nobody can tell which name belongs to which job (or which
    database), so an account that may not read ``jobtui_secret`` can neither
    block a job by taking its lock nor see which jobs run.
    """
    if not key:
        raise ValueError("the lock key is empty")
    digest = hmac.new(key.encode(), f"{schema_name}:{job_id}".encode(), hashlib.sha256)
    return f"{LOCK_PREFIX}:{digest.hexdigest()}"[:MAX_LOCK_NAME]


def read_lock_key(conn: Connection) -> str:
    """The lock names' key from ``jobtui_secret`` (runners and admins may read it)."""
    s = schema.secret
    try:
        value = conn.execute(select(s.c.value).where(s.c.key == schema.LOCK_KEY)).scalar()
    except DBAPIError as exc:
        if error_code(exc) in PERMISSION_ERRORS:
            raise PermissionDenied(
                f"permission denied: this account may not read {s.name}, which holds the key "
                "of the jobs' lock names; only runner and admin accounts run jobs or prune "
                "(`jobtui grant ACCOUNT --runner`, docs/privileges.md)"
            ) from None
        if error_code(exc) == NO_SUCH_TABLE:
            value = None
        else:
            raise
    if not value:
        raise JobtuiError(
            f"no lock key in {s.name} yet: an admin runs `jobtui init` once on this database "
            "(it creates the key that keeps the jobs' lock names secret, docs/privileges.md)"
        )
    return str(value)
