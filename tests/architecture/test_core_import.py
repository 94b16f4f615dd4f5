"""The core stays headless: no jobtui.core module imports Textual.

Each module is imported in a fresh interpreter (an import in this test
process would be hidden by whatever other tests already imported).
"""

from __future__ import annotations

import pkgutil
import subprocess
import sys

import pytest

import jobtui.core

CORE_MODULES = sorted(f"jobtui.core.{m.name}" for m in pkgutil.iter_modules(jobtui.core.__path__))


def test_the_core_has_the_modules_the_design_names() -> None:
    expected = {
        "jobtui.core.model",
        "jobtui.core.schema",
        "jobtui.core.schedules",
        "jobtui.core.store",
        "jobtui.core.transitions",
        "jobtui.core.actions",
        "jobtui.core.db",
    }
    assert expected <= set(CORE_MODULES)


PROBE = """
import importlib, sys
importlib.import_module(sys.argv[1])
loaded = sorted(m for m in sys.modules if m == "textual" or m.startswith("textual."))
print(",".join(loaded))
"""


@pytest.mark.parametrize("module", ["jobtui.core", *CORE_MODULES])
def test_core_module_does_not_import_textual(module: str) -> None:
    result = subprocess.run(
        [sys.executable, "-c", PROBE, module],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "", f"{module} imported {result.stdout.strip()}"


def test_the_probe_can_fail() -> None:
    """The same probe does see Textual when a module imports it."""
    result = subprocess.run(
        [sys.executable, "-c", PROBE, "textual.app"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert "textual" in result.stdout.split(",")
