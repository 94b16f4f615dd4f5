"""The config file and its profiles (issue 27, docs/configuration.md).

Real ``python -m jobtui`` processes with a temporary ``$XDG_CONFIG_HOME``:
each source of a setting beats the next (command line > environment >
profile > built-in default), a bad file is one line naming the file and the
key with exit 2 and creates nothing, and ``jobtui profiles`` masks passwords.
The console takes the profile's theme and refresh (Pilot).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from support.console import console

from jobtui.cli.parser import parse_args
from jobtui.console import state
from jobtui.core.store import open_store


def _write(home: Path, text: str, mode: int = 0o600) -> Path:
    path = home / "jobtui" / "config.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(mode)
    return path


def _run(home: Path, *args: str, env: dict[str, str] | None = None) -> Any:
    full = {
        k: v
        for k, v in os.environ.items()
        if k not in ("JOBTUI_DB", "JOBTUI_PROFILE", "JOBTUI_CONFIG", "JOBTUI_DEBUG")
    }
    full["XDG_CONFIG_HOME"] = str(home)
    full["XDG_DATA_HOME"] = str(home / "data")  # never the real default database
    full.update(env or {})
    proc = subprocess.run(
        [sys.executable, "-m", "jobtui", *args],
        capture_output=True,
        text=True,
        env=full,
        timeout=60,
    )
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc


def _names(home: Path, *args: str, env: dict[str, str] | None = None) -> list[str]:
    proc = _run(home, *args, "list", "--json", env=env)
    assert proc.returncode == 0, proc.stderr
    return [j["name"] for j in json.loads(proc.stdout)]


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """Three SQLite databases, each with one job named after it, and profiles for two."""
    for name in ("a", "b", "c"):
        store = open_store(f"sqlite:///{tmp_path / name}.db")
        try:
            from jobtui.core.model import What
            from jobtui.core.schedules import make_schedule

            store.submit(f"job-{name}", What("sql", "SELECT 1"), make_schedule("every", every=60))
        finally:
            store.close()
    _write(
        tmp_path,
        f"""default = "a"
[profiles.a]
url = "{tmp_path / "a.db"}"
keep_runs = 7
keep_days = "off"
[profiles.b]
url = "sqlite:///{tmp_path / "b.db"}"
refresh = 2.5
theme = "nord"
""",
    )
    return tmp_path


def test_the_database_comes_from_each_source_in_order(home: Path) -> None:
    c = str(home / "c.db")
    assert _names(home) == ["job-a"]  # the file's default
    assert _names(home, env={"JOBTUI_PROFILE": "b"}) == ["job-b"]  # env beats default
    assert _names(home, "--profile", "a", env={"JOBTUI_PROFILE": "b"}) == ["job-a"]
    # the option on the verb too
    proc = _run(home, "list", "--profile", "b", "--json")
    assert [j["name"] for j in json.loads(proc.stdout)] == ["job-b"]
    # JOBTUI_DB beats every profile; --db beats JOBTUI_DB
    assert _names(home, "--profile", "b", env={"JOBTUI_DB": c}) == ["job-c"]
    assert _names(home, "--db", c, env={"JOBTUI_PROFILE": "b"}) == ["job-c"]
    assert _names(home, "--db", str(home / "a.db"), env={"JOBTUI_DB": c}) == ["job-a"]


def test_options_come_from_the_profile_unless_given(home: Path) -> None:
    proc = _run(home, "prune", "--dry-run", "--json")
    got = json.loads(proc.stdout)
    assert (got["keep_runs"], got["keep_days"]) == (7, None)  # profile a
    proc = _run(home, "prune", "--dry-run", "--json", "--keep-runs", "3", "--keep-d", "5")
    got = json.loads(proc.stdout)
    assert (got["keep_runs"], got["keep_days"]) == (3, 5.0)  # the command line wins
    # no profile at all: the built-in defaults
    builtin = json.loads(_run(home, "--db", str(home / "c.db"), "prune", "--dry-run", "--json",
                              env={"JOBTUI_CONFIG": str(_write(home / "empty", ""))}).stdout)  # fmt: skip
    assert builtin["keep_runs"] != 7


def test_profiles_lists_them_with_passwords_masked(tmp_path: Path) -> None:
    opt = tmp_path / "my.cnf"
    opt.write_text("[client]\nuser = ops\npassword = x\n")
    path = _write(
        tmp_path,
        """default = "prod"
[profiles.prod]
url = "mysql+pymysql://ops:hunter2@db1/jobs"
[profiles.safe]
url = "mysql+pymysql://ops@db1/jobs"
option_file = "OPT"
runners = 2
""".replace("OPT", str(opt)),
        mode=0o644,
    )
    proc = _run(tmp_path, "profiles")
    assert proc.returncode == 0, proc.stderr
    assert "hunter2" not in proc.stdout + proc.stderr
    assert "prod  (default): mysql+pymysql://ops:***@db1/jobs" in proc.stdout
    assert "?read_default_file=" in proc.stdout and "my.cnf" in proc.stdout
    assert "runners=2" in proc.stdout
    # a password in a file others may read: accepted, with a warning naming the file
    assert f"warning: {path} holds a database password (profile prod)" in proc.stderr
    listed = json.loads(_run(tmp_path, "profiles", "--json").stdout)
    assert [p["name"] for p in listed["profiles"]] == ["prod", "safe"]
    path.chmod(0o600)
    assert "warning" not in _run(tmp_path, "profiles").stderr
    # no file: nothing to list, no error
    assert "no config file" in _run(tmp_path / "none", "profiles").stdout


BAD = [
    ('colour = "red"\n', "unknown key 'colour'", "accepted at the top are default"),
    ('[profiles.a]\nurl = "x.db"\ncolour = 1\n', "unknown key 'colour' in [profiles.a]",
     "accepted are url, option_file, theme, refresh, runners, keep_runs"),
    ('[profiles.a]\nrefresh = "fast"\n', "invalid profiles.a.refresh = 'fast'",
     "a number of seconds from 0.1 to 3600"),
    ("[profiles.a]\nrunners = 1.5\n", "invalid profiles.a.runners = 1.5", "a whole number"),
    ('[profiles.a]\nkeep_days = "never"\n', "invalid profiles.a.keep_days", 'or "off"'),
    ("[profiles.a]\nurl = 5\n", "invalid profiles.a.url = 5", "a database URL"),
    ('[profiles.a]\nurl = "mysql+pymysql:/u:pw@h/db"\n', "profiles.a.url in", "two slashes"),
    ('[profiles.a]\noption_file = "~/.my.cnf"\n', "option_file needs a url", "mysql+pymysql"),
    ('default = "b"\n[profiles.a]\n', "invalid default = 'b'", "(defined: a)"),
    ("[profiles.a\n", "not TOML", "[profiles.NAME] tables"),
    ('[profiles."a b"]\n', "invalid profile name 'a b'", "letters, digits"),
]  # fmt: skip


@pytest.mark.parametrize(("text", "what", "accepted"), BAD)
def test_a_bad_file_is_one_line_exit_2_and_nothing_made(
    tmp_path: Path, text: str, what: str, accepted: str
) -> None:
    path = _write(tmp_path, text)
    proc = _run(tmp_path, "submit", "j", "--sql", "SELECT 1", "--every", "60")
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("jobtui: error: "), proc.stderr
    assert str(path) in lines[0] and what in lines[0] and accepted in lines[0], lines[0]
    assert "pw" not in lines[0].replace(str(path), "")
    assert not (tmp_path / "data").exists()  # no default database was created


def test_unknown_profile_and_missing_config_file(home: Path) -> None:
    proc = _run(home, "--profile", "zz", "list")
    assert proc.returncode == 2
    assert "unknown profile 'zz' (--profile)" in proc.stderr and "defines a, b" in proc.stderr
    proc = _run(home, "list", env={"JOBTUI_PROFILE": "zz"})
    assert proc.returncode == 2 and "(JOBTUI_PROFILE)" in proc.stderr
    proc = _run(home, "list", env={"JOBTUI_CONFIG": str(home / "nope.toml")})
    assert proc.returncode == 2 and "invalid $JOBTUI_CONFIG" in proc.stderr
    # JOBTUI_CONFIG names another file
    other = _write(home / "other", '[profiles.x]\nurl = "' + str(home / "c.db") + '"\n')
    assert _names(home, "--profile", "x", env={"JOBTUI_CONFIG": str(other)}) == ["job-c"]


def test_a_theme_no_console_knows_is_refused(home: Path) -> None:
    _write(home, '[profiles.a]\ntheme = "plaid"\nurl = "' + str(home / "a.db") + '"\n')
    proc = _run(home, "--profile", "a", "console")
    assert proc.returncode == 2
    assert "invalid profiles.a.theme = 'plaid'" in proc.stderr and "nord" in proc.stderr


async def test_the_console_takes_theme_and_refresh_from_the_profile(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home))
    state.save(theme="dracula")  # remembered from last time: the profile's wins
    args = parse_args(["--profile", "b", "console"])
    assert (args.db, args.refresh, args.theme) == (f"sqlite:///{home / 'b.db'}", 2.5, "nord")
    async with console(args.db, refresh=args.refresh, theme=args.theme) as (app, _pilot, _s):
        assert app.theme == "nord"
        assert app.refresh_interval == 2.5
    # the command line beats the profile; no profile theme: the remembered one
    args = parse_args(["--profile", "a", "console", "--refresh", "0.5"])
    assert (args.refresh, getattr(args, "theme", None)) == (0.5, None)
    async with console(args.db, refresh=args.refresh, theme=None) as (app, _pilot, _s):
        assert app.theme == "dracula"


def test_serve_hands_the_profile_to_its_tabs(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from jobtui.cli.console import console_argv

    monkeypatch.setenv("XDG_CONFIG_HOME", str(home))
    argv = console_argv(parse_args(["--profile", "b", "serve"]))
    assert argv[argv.index("--profile") + 1] == "b"
    assert argv[argv.index("--refresh") + 1] == "2.5"
    # the default profile (a): named too, so that the tabs' own reading cannot differ
    argv = console_argv(parse_args(["serve"]))
    assert argv[argv.index("--profile") + 1] == "a"
