"""The config file's profiles on the command line: ``apply`` gives a verb the values of
the ``--profile`` chosen (the option is jobtui.cli.options'), and ``jobtui profiles``
lists them (``jobtui.core.config``, docs/configuration.md).

A profile fills only what the command line and the environment leave open:
command-line options > environment (``JOBTUI_DB``) > profile > built-in
defaults. The verb's options take the profile's values as their defaults
(argparse's ``set_defaults``) and the command line is parsed again, so an
option given on the command line wins however it is spelled.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from typing import Any

from jobtui.cli.output import PROG
from jobtui.cli.verbs import CommandLine
from jobtui.core import config
from jobtui.core.db import ENV_VAR
from jobtui.core.errors import InvalidInput

CONSOLE_VERBS = ("console", "serve", "demo")  # the verbs that start a console (theme)
NO_PROFILE_DB = ("demo",)  # makes its own SQLite database: a profile's url is not for it


def add_verbs(cli: CommandLine) -> None:
    p = cli.verb("profiles", "the config file's profiles (database URLs masked)", cmd_profiles)
    p.add_argument("--json", action="store_true", help="print the profiles as JSON")


def apply(cli: CommandLine, argv: Sequence[str], args: argparse.Namespace) -> argparse.Namespace:
    """``args`` with the chosen profile's values where nothing else gave one.

    InvalidInput (exit 2, nothing opened) for a bad config file or an unknown profile.
    """
    loaded = config.load()
    for warning in loaded.warnings:
        print(f"{PROG}: warning: {warning}", file=sys.stderr)
    profile = loaded.select(getattr(args, "profile", None))
    args.config = loaded
    args.profile_used = profile
    if profile is None or args.command is None:
        return args
    defaults = {
        k: v
        for k, v in profile.options.items()
        if hasattr(args, k) and not (k == "runners" and args.command == "demo")
    }
    if defaults:
        cli.parsers[args.command].set_defaults(**defaults)
        args = cli.parser.parse_args(argv)
        args.config, args.profile_used = loaded, profile
    if (
        profile.url
        and getattr(args, "db", None) is None
        and not os.environ.get(ENV_VAR)
        and args.command not in NO_PROFILE_DB
    ):
        args.db = profile.url
    if profile.theme and args.command in CONSOLE_VERBS:
        _check_theme(profile, loaded.path)
        args.theme = profile.theme
    return args


def profile_argv(args: argparse.Namespace) -> list[str]:
    """``--profile NAME`` of the profile in use, for a console started by this one
    (``serve``'s tabs), else nothing."""
    used = getattr(args, "profile_used", None)
    return ["--profile", used.name] if used is not None else []


def _check_theme(profile: config.Profile, path: Any) -> None:
    try:
        from textual.theme import BUILTIN_THEMES
    except ImportError:  # no console here: the verb says so itself
        return
    if profile.theme not in BUILTIN_THEMES:
        raise InvalidInput(
            f"invalid profiles.{profile.name}.theme = {profile.theme!r} in {path}: expected "
            f"one of Textual's themes: {', '.join(sorted(BUILTIN_THEMES))}"
        )


def cmd_profiles(args: argparse.Namespace) -> int:
    loaded: config.Config = args.config
    used: config.Profile | None = args.profile_used
    shown = [
        {
            **p.shown(),
            "default": p.name == loaded.default,
            "selected": used is not None and p.name == used.name,
        }
        for p in loaded.profiles.values()
    ]
    if args.json:
        print(json.dumps({"file": str(loaded.path), "exists": loaded.exists,
                          "profiles": shown}, indent=2))  # fmt: skip
        return 0
    if not loaded.exists:
        print(f"no config file at {loaded.path} (docs/configuration.md)")
        return 0
    print(f"profiles of {loaded.path} (* selected, default marked):")
    if not shown:
        print("  none ([profiles.NAME] tables)")
    for entry in shown:
        mark = "*" if entry["selected"] else " "
        extra = "  (default)" if entry["default"] else ""
        settings = [
            f"{k}={_plain(v)}"
            for k, v in entry.items()
            if k not in ("name", "url", "default", "selected") and (v is not None or k != "theme")
        ]
        url = entry["url"] or "(no url: $JOBTUI_DB or the default SQLite file)"
        print(f"{mark} {entry['name']}{extra}: {url}" + (f"  {' '.join(settings)}" if settings
                                                             else ""))  # fmt: skip
    return 0


def _plain(value: Any) -> str:
    if value is None:
        return "off"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)
