"""The command line as a user runs it: ``python -m jobtui --db URL ...`` in a subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any


def cli_env(tmp_path: Path, extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment of a command: never the real default database, nor debug output."""
    env = {k: v for k, v in os.environ.items() if k not in ("JOBTUI_DB", "JOBTUI_DEBUG")}
    env["XDG_DATA_HOME"] = str(tmp_path / "xdg")  # never the real default database
    env.update(extra or {})
    return env


class Cli:
    """Runs ``python -m jobtui --db URL ...`` in a subprocess."""

    def __init__(self, url: str | None, tmp_path: Path) -> None:
        self.url = url
        self.tmp_path = tmp_path

    def __call__(
        self,
        *args: str,
        db: bool = True,
        env: dict[str, str] | None = None,
        stdin: str | None = None,
        ok: bool = True,
    ) -> subprocess.CompletedProcess[str]:
        argv = [sys.executable, "-m", "jobtui"]
        if db and self.url:
            argv += ["--db", self.url]
        proc = subprocess.run(
            [*argv, *args],
            capture_output=True,
            text=True,
            env=cli_env(self.tmp_path, env),
            input=stdin,
            timeout=60,
        )
        assert "Traceback" not in proc.stderr, proc.stderr
        if ok:
            assert proc.returncode == 0, (args, proc.stdout, proc.stderr)
        return proc

    def json(self, *args: str) -> Any:
        return json.loads(self(*args, "--json").stdout)
