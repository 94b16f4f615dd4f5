"""``CommandLine``: the top parser, and the verbs each verb module adds to it.

A verb module has an ``add_*`` function that takes the ``CommandLine`` and calls
``verb(name, help, handler)`` for each of its verbs; the parser it gets back
already has the options every verb takes (``--db``, ``--profile``).
``jobtui.cli.parser.build`` calls those functions in the order ``jobtui --help``
lists the verbs.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

from jobtui.cli.options import db_option, profile_option

Handler = Callable[[argparse.Namespace], int]


class CommandLine:
    """The whole command line: its parser, and each verb's parser and handler.

    ``parser`` comes with its own options already added: the verbs follow them.
    """

    def __init__(self, parser: argparse.ArgumentParser) -> None:
        self.parser = parser
        self._verbs = parser.add_subparsers(dest="command", metavar="VERB")
        self.parsers: dict[str, argparse.ArgumentParser] = {}
        self.handlers: dict[str, Handler] = {}

    def verb(self, name: str, help_text: str, handler: Handler) -> argparse.ArgumentParser:
        """Add the verb ``name``, run by ``handler``; return its parser for its options."""
        p = self._verbs.add_parser(name, help=help_text, description=help_text)
        db_option(p, top=False)
        profile_option(p, top=False)
        self.parsers[name] = p
        self.handlers[name] = handler
        return p

    def run(self, args: argparse.Namespace) -> int:
        """Run the verb ``args`` name; return its exit code."""
        return self.handlers[args.command](args)
