"""The chosen theme is remembered across restarts, as state in $XDG_STATE_HOME/jobtui/."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.console import seed, settle

from jobtui.console import state
from jobtui.console.app import make_app
from jobtui.core.store import open_store


async def test_the_theme_is_remembered_on_restart(
    sqlite_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "xdg-state"
    monkeypatch.setenv("XDG_STATE_HOME", str(home))
    seed(open_store(sqlite_url))
    store = open_store(sqlite_url)
    app = make_app(store, refresh=0.2)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        default = app.theme
        assert default != "nord"
        app.theme = "nord"  # what ctrl+p → Theme does
        await pilot.pause(0.2)
    saved = json.loads((home / "jobtui" / "console.json").read_text())
    assert saved == {"theme": "nord"}

    app = make_app(store, refresh=0.2)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        assert app.theme == "nord"
    store.close()


async def test_an_unknown_or_broken_state_is_ignored(
    sqlite_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "xdg-state"
    monkeypatch.setenv("XDG_STATE_HOME", str(home))
    (home / "jobtui").mkdir(parents=True)
    (home / "jobtui" / "console.json").write_text('{"theme": "no-such-theme"}')
    seed(open_store(sqlite_url))
    store = open_store(sqlite_url)
    app = make_app(store, refresh=0.2)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        assert app.theme == "textual-dark"
    (home / "jobtui" / "console.json").write_text("{not json")
    assert state.load() == {}
    store.close()


def test_state_dir_follows_xdg(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    assert state.state_dir() == tmp_path / "jobtui"
    monkeypatch.setenv("XDG_STATE_HOME", "relative/path")  # not absolute: ignored
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert state.state_dir() == tmp_path / "home" / ".local" / "state" / "jobtui"
