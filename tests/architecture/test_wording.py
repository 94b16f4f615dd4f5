"""User-facing text names things by what they are, not by the project's history.

Every verb's ``--help`` (through the real ``python -m jobtui`` for ``run``),
the docstrings and messages in jobtui/, and the documentation say what a thing
is: no "the seed's ...", no "issue #N" a reader cannot look up.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

from jobtui.cli.parser import build_parser

ROOT = Path(__file__).resolve().parents[2]
HISTORY = re.compile(r"\bseeds?\b|\bseed's\b|\bissue #\d+|\bthe issue's\b", re.IGNORECASE)


def _helps(parser: argparse.ArgumentParser, path: str = "jobtui") -> Iterator[tuple[str, str]]:
    yield path, parser.format_help()
    for action in parser._actions:  # argparse keeps its subparsers only here
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _helps(sub, f"{path} {name}")


def test_jobtui_run_help_says_what_it_does() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "jobtui", "run", "--help"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
        env={**os.environ, "COLUMNS": "400"},  # one line: argparse wraps at hyphens
    ).stdout
    assert "seed" not in out.lower()
    flat = " ".join(out.split())
    assert "Run one job's schedule in the foreground" in flat
    assert "job$run loop of a stored-procedure job runner" in flat
    assert "(exit 0)" in flat and "(exit 3)" in flat and "(exit 130" in flat


def test_no_verbs_help_names_the_projects_history() -> None:
    helps = dict(_helps(build_parser()))
    assert {"jobtui run", "jobtui list", "jobtui events adopt"} <= set(helps)
    for path, text in helps.items():
        assert not HISTORY.search(text), (path, HISTORY.search(text))


def test_no_code_or_doc_text_names_the_projects_history() -> None:
    files = [*ROOT.joinpath("jobtui").rglob("*.py"), *ROOT.joinpath("docs").glob("*.md")]
    files.append(ROOT / "README.md")
    found = [
        f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
        for path in files
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if HISTORY.search(line)
    ]
    assert found == []
