"""Shell completion through argcomplete: ``jobtui completion bash|zsh|fish`` prints the
script to source, and ``autocomplete`` answers the shell's requests (docs/cli.md,
"Shell completion").

The shell runs ``jobtui`` itself with ``_ARGCOMPLETE=1`` and the command line in
``COMP_LINE``; ``autocomplete`` then prints the candidates and exits before any
verb runs. A job NAME is completed from the database only when that is cheap and
harmless: a SQLite file that exists, opened without creating or upgrading
anything. A server database is never dialled on a key press (it could hang the
shell while it is unreachable).
"""

from __future__ import annotations

import argparse
import os
from typing import Any

from jobtui.cli.output import PROG
from jobtui.cli.verbs import CommandLine
from jobtui.core.db import resolve_url

SHELLS = ("bash", "zsh", "fish")
NEW_NAME_VERBS = frozenset({"submit"})  # a new job's NAME: nothing to complete


def add_verbs(cli: CommandLine) -> None:
    p = cli.verb(
        "completion", "print the shell completion script for bash, zsh or fish", cmd_completion
    )
    p.description = (
        "Print the script that makes the shell complete jobtui's verbs, options and job "
        'names: `eval "$(jobtui completion bash)"` in ~/.bashrc (zsh: ~/.zshrc), '
        "`jobtui completion fish | source` in ~/.config/fish/config.fish."
    )
    p.add_argument("shell", metavar="SHELL", type=_shell, help="bash, zsh or fish")


def _shell(text: str) -> str:
    if text not in SHELLS:
        raise argparse.ArgumentTypeError(
            f"invalid SHELL {text!r}: accepted are {', '.join(SHELLS)}"
        )
    return text


def cmd_completion(args: argparse.Namespace) -> int:
    import argcomplete  # here and below, not on top: every other command starts without it

    print(argcomplete.shellcode([PROG], shell=args.shell), end="")
    return 0


def autocomplete(cli: CommandLine) -> None:
    """Answer the shell's completion request and exit, if this is one; else return."""
    if "_ARGCOMPLETE" not in os.environ:
        return
    import argcomplete

    for verb, sub in cli.parsers.items():
        if verb in NEW_NAME_VERBS:
            continue
        for action in sub._actions:  # argparse keeps a parser's arguments there only
            if action.dest == "name" and action.metavar == "NAME":
                action.completer = job_names  # type: ignore[attr-defined]
    argcomplete.autocomplete(cli.parser)


def job_names(prefix: str, parsed_args: argparse.Namespace, **_kw: Any) -> list[str]:
    """The names of the jobs in an existing SQLite database that start with ``prefix``."""
    from sqlalchemy.engine import make_url

    from jobtui.core.store import open_store

    try:
        url = resolve_url(getattr(parsed_args, "db", None))
        parsed = make_url(url)
        if parsed.get_backend_name() != "sqlite" or not parsed.database:
            return []
        if not os.path.isfile(parsed.database):
            return []
        store = open_store(url, read_only=True, init=False)
        try:
            names = {job.name for job in store.list_jobs(all_owners=store.sees_all)}
        finally:
            store.close()
    except Exception:
        return []  # no names then: a completion never prints an error into the prompt
    return sorted(n for n in names if n.startswith(prefix))
