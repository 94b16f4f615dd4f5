"""``grant``: print (or ``--apply``) the grants that make an account an operator, admin
or runner of the database, and the Python actions its jobs may use (MySQL/MariaDB;
docs/privileges.md)."""

from __future__ import annotations

import argparse

from jobtui.cli.exits import EXIT_OK
from jobtui.cli.opening import store_for
from jobtui.cli.options import json_option
from jobtui.cli.output import print_json, print_line
from jobtui.cli.verbs import CommandLine
from jobtui.core.accounts import parse_account, quote_account
from jobtui.core.actions import check_patterns
from jobtui.core.errors import InvalidInput
from jobtui.core.store import JobStore


def add_verbs(cli: CommandLine) -> None:
    p = cli.verb(
        "grant",
        "print (or --apply) the grants that make ACCOUNT an operator, admin or runner",
        cmd_grant,
    )
    p.add_argument("account", metavar="ACCOUNT", help="USER or 'USER'@'HOST' (host default %%)")
    kind = p.add_mutually_exclusive_group()
    kind.add_argument(
        "--operator",
        dest="kind",
        action="store_const",
        const="operator",
        help="sees and steers its own jobs only, through the views (the default)",
    )
    kind.add_argument(
        "--admin",
        dest="kind",
        action="store_const",
        const="admin",
        help="sees and steers every owner's jobs, creates and upgrades the tables",
    )
    kind.add_argument(
        "--runner",
        dest="kind",
        action="store_const",
        const="runner",
        help="what `jobtui worker` needs (tables, EXECUTE on the owners' routines, "
        "mysql.proc to verify them, CONNECTION ADMIN to abort)",
    )
    p.add_argument(
        "--actions",
        action="append",
        metavar="PATTERN",
        help="allow ACCOUNT's jobs the Python actions matching PATTERN (fnmatch, e.g. "
        "'reports.*'; repeat or comma-separate for several)",
    )
    p.add_argument(
        "--revoke-actions",
        action="append",
        metavar="PATTERN",
        help="take back patterns --actions gave (exactly as given)",
    )
    p.add_argument(
        "--apply", action="store_true", help="run the statements (needs an account that may grant)"
    )
    json_option(p, "the statements")


def cmd_grant(args: argparse.Namespace) -> int:
    # --actions/--revoke-actions alone touch only the allow-list; with a kind, both
    patterns = args.actions or args.revoke_actions
    kind = args.kind or (None if patterns else "operator")
    user, host = parse_account(args.account)  # bad input: exit 2 before connecting
    if args.actions:
        check_patterns(args.actions)
    if args.revoke_actions:
        check_patterns(args.revoke_actions)
    with store_for(args, read_only=not args.apply) as store:
        grants = store.backend.grants
        if not grants.present:
            raise InvalidInput(
                "SQLite has no accounts: whoever may open the file sees and changes every "
                "job (use file permissions); grants are for MySQL/MariaDB"
                + ("; on SQLite every registered action is allowed" if patterns else "")
            )
        database = store.schema_name
        if not database:
            raise InvalidInput(
                f"no database in {store.masked_url}: give one, e.g. mysql+pymysql://USER@HOST/DB"
            )
        statements = grants.role_statements(kind, f"{user}@{host}", str(database)) if kind else []
        if patterns:
            statements += grants.action_statements(
                f"{user}@{host}",
                str(database),
                grant=args.actions or (),
                revoke=args.revoke_actions or (),
            )
        if args.apply:
            _apply(store, statements)
    account = quote_account(user, host)
    if args.json:
        print_json(
            {
                "account": account,
                "kind": kind,
                "database": database,
                "statements": statements,
                "applied": bool(args.apply),
                "actions": check_patterns(args.actions) if args.actions else [],
                "revoked_actions": (
                    check_patterns(args.revoke_actions) if args.revoke_actions else []
                ),
            }
        )
        return EXIT_OK
    for statement in statements:
        print_line(f"{statement};")
    if args.apply:
        if kind:
            print_line(f"-- applied: {account} is a jobtui {kind} of `{database}`")
        if args.actions:
            allowed = ", ".join(check_patterns(args.actions))
            print_line(f"-- applied: {account}'s jobs may use the actions matching {allowed}")
        if args.revoke_actions:
            taken = ", ".join(check_patterns(args.revoke_actions))
            print_line(f"-- applied: {account} no longer has the action patterns {taken}")
    return EXIT_OK


def _apply(store: JobStore, statements: list[str]) -> None:
    with store.engine.connect() as conn:
        # the driver's own cursor without parameters: the % of a host stays as it is
        cur = conn.connection.dbapi_connection.cursor()  # type: ignore[union-attr]
        try:
            for statement in statements:
                cur.execute(statement)
        finally:
            cur.close()
        # the driver's commit: the allow-list's rows are no DDL that commits by itself
        conn.connection.dbapi_connection.commit()  # type: ignore[union-attr]
