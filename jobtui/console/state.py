"""What the console remembers between runs (the chosen theme), as state: a small JSON
file in ``$XDG_STATE_HOME/jobtui/`` (``~/.local/state/jobtui/``), not configuration.

Read once at start, written when it changes. A file that cannot be read or parsed is
ignored (the defaults apply); one that cannot be written is reported by the caller.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

STATE_FILE = "console.json"


def state_dir() -> Path:
    """``$XDG_STATE_HOME/jobtui`` (``~/.local/state/jobtui`` when unset or not absolute,
    as the XDG base directory spec says)."""
    base = os.environ.get("XDG_STATE_HOME", "")
    root = Path(base) if base and os.path.isabs(base) else Path.home() / ".local" / "state"
    return root / "jobtui"


def load() -> dict[str, Any]:
    """The remembered state, or {} when there is none or it is unreadable."""
    try:
        data = json.loads((state_dir() / STATE_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def save(**values: Any) -> None:
    """Remember ``values`` (merged into what is there), atomically; OSError when it cannot."""
    folder = state_dir()
    folder.mkdir(parents=True, exist_ok=True)
    data = load() | values
    tmp = folder / f".{STATE_FILE}.{os.getpid()}"
    tmp.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    tmp.replace(folder / STATE_FILE)
