"""A plain (non-editable) ``pip install .`` gives a working ``jobtui``, styles included.

The package is built from a copy of the source tree and installed into a
fresh virtual environment with ``--no-deps``; the dependencies come from the
environment running the tests through a ``.pth`` file, so no download of
them is needed. Every command runs from a directory outside the source tree,
so nothing can be imported from the checkout by accident.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import subprocess
import sys
import sysconfig
from collections.abc import Iterator
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
SKIP_DIRS = {
    ".git",
    ".venv",
    "build",
    "dist",
    "__pycache__",
    ".hypothesis",
    ".pytest_cache",
    ".mypy_cache",
    ".ruff_cache",
    "screenshots",
    "tests",
    "bench",
}


def _ignore(_dir: str, names: list[str]) -> set[str]:
    return {n for n in names if n in SKIP_DIRS or n.endswith((".egg-info", ".db", ".pyc"))}


class Installed:
    def __init__(self, venv: Path, workdir: Path) -> None:
        self.venv = venv
        self.workdir = workdir
        self.bin = venv / "bin"
        self.env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "JOBTUI_DB")}
        self.env["HOME"] = str(workdir)  # the default database lands here, not in ~
        self.env["XDG_DATA_HOME"] = str(workdir / "data")

    def run(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            list(args),
            cwd=self.workdir,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )

    def jobtui(self, *args: str) -> subprocess.CompletedProcess[str]:
        return self.run(str(self.bin / "jobtui"), *args)

    def python(self, code: str) -> subprocess.CompletedProcess[str]:
        return self.run(str(self.bin / "python"), "-c", code)


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Installed]:
    root = tmp_path_factory.mktemp("install")
    source = root / "src"
    shutil.copytree(REPO, source, ignore=_ignore)
    venv = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    # dependencies: visible from this environment, after the venv's own packages
    purelib = Path(
        subprocess.run(
            [
                str(venv / "bin" / "python"),
                "-c",
                "import sysconfig; print(sysconfig.get_paths()['purelib'])",
            ],
            check=True,
            capture_output=True,
            text=True,
        ).stdout.strip()
    )
    ours = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
    (purelib / "zz_test_dependencies.pth").write_text("\n".join(sorted(ours)) + "\n")
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--no-deps"]
    done = subprocess.run(
        [*pip, "--no-build-isolation", str(source)], capture_output=True, text=True, timeout=600
    )
    if done.returncode != 0:  # this environment lacks a recent setuptools/wheel: build isolated
        done = subprocess.run([*pip, str(source)], capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout + done.stderr
    workdir = root / "elsewhere"
    workdir.mkdir()
    yield Installed(venv, workdir)


def test_the_installed_package_is_the_one_imported(installed: Installed) -> None:
    done = installed.python("import jobtui, jobtui.core.store; print(jobtui.__file__)")
    assert done.returncode == 0, done.stderr
    path = Path(done.stdout.strip()).resolve()
    assert installed.venv.resolve() in path.parents, path
    assert "site-packages" in path.parts


def test_styles_ship_in_the_wheel(installed: Installed) -> None:
    done = installed.python(
        "import json; from importlib.resources import files; "
        "base = files('jobtui.styles'); "
        "print(json.dumps(sorted(p.name for p in base.iterdir() if p.name.endswith('.tcss'))))"
    )
    assert done.returncode == 0, done.stderr
    shipped = json.loads(done.stdout)
    in_repo = sorted(p.name for p in (REPO / "styles").glob("*.tcss"))
    assert in_repo, "the source tree has no styles/*.tcss"
    assert shipped == in_repo
    # and the console finds them there, not in a source tree
    done = installed.python(
        "from jobtui.console.app import css_paths; print('\\n'.join(map(str, css_paths())))"
    )
    assert done.returncode == 0, done.stderr
    for line in done.stdout.split():
        path = Path(line).resolve()
        assert path.is_file(), path
        assert installed.venv.resolve() in path.parents, path


def test_console_script_version(installed: Installed) -> None:
    done = installed.jobtui("--version")
    assert done.returncode == 0, done.stderr
    assert "0.1.0" in done.stdout + done.stderr


def test_console_script_works_on_sqlite(installed: Installed) -> None:
    db = f"sqlite:///{installed.workdir / 'jobs.db'}"
    done = installed.jobtui("--db", db, "list", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == []
    done = installed.jobtui("--db", db, "submit", "hello", "--sql", "SELECT 1", "--every", "60")
    assert done.returncode == 0, done.stderr
    done = installed.jobtui("--db", db, "list", "--json")
    assert done.returncode == 0, done.stderr
    jobs = json.loads(done.stdout)
    assert [(j["name"], j["status"]) for j in jobs] == [("hello", "ENABLED")]
    # the distribution ships no action: the demo ones exist only in a demo database
    done = installed.python(
        "from importlib.metadata import entry_points; "
        "print(len(entry_points(group='jobtui.actions')))"
    )
    assert done.returncode == 0 and done.stdout.strip() == "0", done.stdout + done.stderr
    for name in ("demo.noop", "demo.export_csv"):
        done = installed.jobtui("--db", db, "submit", "bad", "--action", name, "--once")
        assert done.returncode == 2
        assert f"unknown action {name!r}: registered actions are none" in done.stderr
        assert "Traceback" not in done.stderr
    demo = installed.workdir / "demo.db"
    done = installed.python(
        f"from jobtui.console.demo import create_demo; create_demo({str(demo)!r})"
    )
    assert done.returncode == 0, done.stderr
    done = installed.jobtui(
        "--db", f"sqlite:///{demo}", "submit", "nap", "--action", "demo.sleep", "--once"
    )
    assert done.returncode == 0, done.stderr


def test_default_database_is_in_the_data_directory(installed: Installed) -> None:
    done = installed.jobtui("init")
    assert done.returncode == 0, done.stderr
    assert (installed.workdir / "data" / "jobtui" / "jobtui.db").is_file()


def test_every_module_of_the_source_tree_is_installed(installed: Installed) -> None:
    in_repo = sorted(
        ".".join(p.relative_to(REPO).with_suffix("").parts)
        for p in (REPO / "jobtui").rglob("*.py")
        if "__pycache__" not in p.parts
    )
    done = installed.python(
        "import json, pkgutil, jobtui; "
        "print(json.dumps(sorted(['jobtui'] + [m.name for m in "
        "pkgutil.walk_packages(jobtui.__path__, 'jobtui.')])))"
    )
    assert done.returncode == 0, done.stderr
    shipped = set(json.loads(done.stdout))
    expected = {m.removesuffix(".__init__") for m in in_repo}
    assert expected <= shipped, f"not installed: {sorted(expected - shipped)}"
    done = installed.python("import jobtui.console.app, jobtui.cli, jobtui.core.runner.pool")
    assert done.returncode == 0, done.stderr


def test_help_points_at_what_an_installed_user_has(installed: Installed) -> None:
    done = installed.run(str(installed.bin / "jobtui"), "--help")
    assert done.returncode == 0, done.stderr
    flat = " ".join(done.stdout.split())
    assert "`jobtui VERB --help` shows a verb's options" in flat
    # a docs/ file is named only as part of the source tree, which this install lacks
    assert "docs/cli.md" in flat and "in jobtui's source tree, not in an installed package" in flat
    site = installed.venv / "lib"
    assert not list(site.rglob("docs/cli.md"))
    done = installed.jobtui("serve", "--help")
    assert done.returncode == 0, done.stderr
    assert "--allow-remote" in done.stdout


async def test_serve_runs_the_installed_console(installed: Installed) -> None:
    """The installed `jobtui serve` starts this installation's console for a tab."""
    import socket

    import aiohttp

    db = f"sqlite:///{installed.workdir / 'served.db'}"
    done = installed.jobtui("--db", db, "submit", "served-job", "--sql", "SELECT 1", "--once")
    assert done.returncode == 0, done.stderr
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    out = installed.workdir / "serve.out"
    with out.open("wb") as sink:
        proc = subprocess.Popen(
            [str(installed.bin / "jobtui"), "--db", db, "serve", "--port", str(port)],
            cwd=installed.workdir,
            env={**installed.env, "PYTHONUNBUFFERED": "1"},
            stdout=sink,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        seen = b""
        async with aiohttp.ClientSession() as http:
            for _ in range(300):
                if b"jobtui serve: the console for" in out.read_bytes():
                    break
                assert proc.poll() is None, out.read_text()
                await asyncio.sleep(0.1)
            # what the page's script does: open the websocket, and the tab's console starts
            url = f"ws://127.0.0.1:{port}/ws?width=120&height=30"
            async with http.ws_connect(url) as ws:
                async with asyncio.timeout(60):
                    while b"served-job" not in seen:
                        message = await ws.receive()
                        assert message.type == aiohttp.WSMsgType.BINARY, (message, out.read_text())
                        seen += message.data
        proc.send_signal(signal.SIGINT)
        assert proc.wait(30) == 0, out.read_text()
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(10)
