"""Regenerate the console screenshots (SVG) by driving the real app headless.

    python screenshots/generate.py [--out screenshots] [--seconds 12]

Creates a fresh demo database in a temporary directory, opens the console
hosting runners on it (App.run_test), lets the jobs cycle for a few seconds,
and saves one SVG per screen with App.save_screenshot. Nothing is drawn by
hand; run it again after a visual change and commit the SVGs.
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from pathlib import Path
from typing import Any

from jobtui.console.app import JobtuiApp, make_app
from jobtui.console.demo import create_demo
from jobtui.core.store import open_store

SIZE = (120, 34)


async def settle(app: JobtuiApp, pilot: Any) -> None:
    for _ in range(2):
        await app.workers.wait_for_complete()
        await pilot.pause()


async def select(app: JobtuiApp, pilot: Any, name: str) -> None:
    table = app.main_screen.table
    job = next(j for j in table.jobs.values() if j.name == name)
    table.select_job(job.id)
    await pilot.pause()


async def shoot(out: Path, seconds: float) -> list[Path]:
    with tempfile.TemporaryDirectory(prefix="jobtui-shots-") as tmp:
        url = create_demo(str(Path(tmp) / "demo.db"))
        store = open_store(url)
        app = make_app(store, runners=3)
        saved: list[Path] = []

        def save(name: str) -> None:
            app.save_screenshot(filename=f"{name}.svg", path=str(out))
            saved.append(out / f"{name}.svg")

        async with app.run_test(size=SIZE) as pilot:
            deadline = time.monotonic() + seconds
            while time.monotonic() < deadline:
                await pilot.pause(0.25)
            await select(app, pilot, "long-etl")
            await settle(app, pilot)
            save("main")

            await select(app, pilot, "always-fails")
            await pilot.press("enter")
            await settle(app, pilot)
            save("details")
            await pilot.press("escape")

            await select(app, pilot, "rollup-5min")
            await pilot.press("e")
            await settle(app, pilot)
            await pilot.pause(0.5)
            await settle(app, pilot)
            save("edit")
            await pilot.press("escape")

            await pilot.press("l")
            await settle(app, pilot)
            await pilot.pause(0.5)
            save("runlog")
            await pilot.press("escape")

            await pilot.press("question_mark")
            await pilot.pause()
            save("help")
            await pilot.press("escape")

            await select(app, pilot, "long-etl")
            await pilot.press("a")
            await pilot.pause()
            save("abort-confirm")
            await pilot.press("y")
            await settle(app, pilot)

            app.stop_runners(grace=0.0, abort=True)
            await settle(app, pilot)
        store.close()
        return saved


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(Path(__file__).resolve().parent))
    parser.add_argument("--seconds", type=float, default=12.0, help="let the demo run first")
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for path in asyncio.run(shoot(out, args.seconds)):
        print(path)


if __name__ == "__main__":
    main()
