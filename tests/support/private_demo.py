"""A DataTable subclass as the job table was before issue #16, for tests/architecture/test_console_privates.py
(its check must find the base class's internals used on ``self``)."""

from __future__ import annotations

from typing import Any

from textual.widgets import DataTable


class Old(DataTable[Any]):
    def f(self) -> Any:
        self._update_count += 1
        return self._data
