"""The project stays ruff clean, and the core stays mypy clean (config in pyproject.toml)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
# Python sources only: newer ruff versions also format code blocks in Markdown
SOURCES = [p for p in ("jobtui", "tests", "bench", "styles") if (REPO / p).is_dir()]


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", *args], cwd=REPO, capture_output=True, text=True, timeout=600
    )


def test_ruff_check() -> None:
    done = _run("ruff", "check", "--no-cache", *SOURCES)
    assert done.returncode == 0, done.stdout + done.stderr


def test_ruff_format() -> None:
    done = _run("ruff", "format", "--check", "--no-cache", *SOURCES)
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.slow
def test_mypy_core() -> None:
    done = _run("mypy", "--no-incremental", "jobtui/core")
    assert done.returncode == 0, done.stdout + done.stderr
