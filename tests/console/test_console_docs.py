"""docs/console.md names the demo's jobs as jobtui demo makes them, and no other."""

from __future__ import annotations

import re
from pathlib import Path

from jobtui.console.demo import create_demo
from jobtui.core.store import open_store

DOC = Path(__file__).resolve().parents[2] / "docs" / "console.md"


def test_the_demo_described_is_the_demo_made(tmp_path: Path) -> None:
    store = open_store(create_demo(str(tmp_path / "demo.db")))
    made = {job.name for job in store.list_jobs()}
    store.close()
    text = DOC.read_text()
    start = text.index("`jobtui demo` (re)creates")
    paragraph = text[start : text.index("\n\n", start)]
    named = set(re.findall(r"`([a-z0-9]+(?:-[a-z0-9]+)+|heartbeat|tick|flaky)`", paragraph))
    assert named <= made, named - made
    assert made <= named, made - named
    words = [
        "zero",
        "one",
        "two",
        "three",
        "four",
        "five",
        "six",
        "seven",
        "eight",
        "nine",
        "ten",
        "eleven",
        "twelve",
        "thirteen",
        "fourteen",
        "fifteen",
    ]
    assert f"with {words[len(made)]} varied jobs" in paragraph
    assert "CSV" not in paragraph
