"""Shell completion: ``jobtui completion SHELL`` and argcomplete's protocol, answered by
the real ``jobtui`` entry point in a subprocess."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from support.procs import jobtui_command

from jobtui.core.model import What
from jobtui.core.schedules import make_schedule
from jobtui.core.store import open_store


def run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*jobtui_command(), *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env=env,
    )


def complete(line: str, tmp_path: Path, **extra: str) -> list[str]:
    """What the shell would be offered after typing ``line`` (argcomplete's env protocol)."""
    out = tmp_path / "candidates"
    env = dict(
        os.environ,
        _ARGCOMPLETE="1",
        _ARGCOMPLETE_IFS="\n",
        COMP_LINE=line,
        COMP_POINT=str(len(line)),
        _ARGCOMPLETE_STDOUT_FILENAME=str(out),
    )
    env.pop("JOBTUI_DB", None)  # only what the test gives
    env.update(extra)
    done = run(env=env)
    assert done.returncode == 0, done.stderr
    # a lone candidate comes with the space the shell then types after it
    return [c.strip() for c in out.read_text().split("\n") if c.strip()]


@pytest.mark.parametrize(
    ("shell", "registration"),
    [
        ("bash", "complete -o nospace -o default -o bashdefault -F _python_argcomplete jobtui"),
        ("zsh", "#compdef jobtui"),
        ("fish", "complete --command jobtui"),
    ],
)
def test_completion_prints_the_script(shell: str, registration: str) -> None:
    done = run("completion", shell)
    assert done.returncode == 0, done.stderr
    assert registration in done.stdout


def test_completion_of_an_unknown_shell_exits_2() -> None:
    done = run("completion", "tcsh")
    assert done.returncode == 2
    (line,) = done.stderr.splitlines()
    assert "'tcsh'" in line and "bash, zsh, fish" in line


def test_verbs_and_options_complete(tmp_path: Path) -> None:
    assert "pause" in complete("jobtui pa", tmp_path)
    assert set(complete("jobtui worker --metrics-p", tmp_path)) == {
        "--metrics-port",
        "--metrics-per-job",
    }


def test_job_names_complete_from_a_sqlite_file(tmp_path: Path) -> None:
    db = tmp_path / "jobs.db"
    store = open_store(f"sqlite:///{db}")
    try:
        for name in ("nightly", "noon", "hourly"):
            store.submit(name, What("sql", "SELECT 1"), make_schedule("every", every="60"))
    finally:
        store.close()
    assert set(complete(f"jobtui --db {db} pause n", tmp_path)) == {"nightly", "noon"}
    assert "hourly" in complete("jobtui show h", tmp_path, JOBTUI_DB=str(db))
    # a database that does not exist is not created by a key press
    missing = tmp_path / "missing.db"
    assert complete(f"jobtui --db {missing} show n", tmp_path) == []
    assert not missing.exists()
