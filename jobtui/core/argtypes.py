"""A call job's literal arguments against its procedure's parameter types (MySQL/MariaDB).

``--arg`` values are text, bound as parameters; the server converts them when
the job runs. A value it cannot convert to a numeric parameter (``abc`` for
an INT) would fail every run, so the submit refuses it and says which
parameter takes what. Other types (dates, text) are left to the server.
"""

from __future__ import annotations

import math
import re

from jobtui.core.errors import InvalidInput

# DATA_TYPE of information_schema.PARAMETERS -> bits of the signed integer
_INT_BITS = {"tinyint": 8, "smallint": 16, "mediumint": 24, "int": 32, "integer": 32, "bigint": 64}
_DECIMAL = {"decimal", "numeric", "float", "double", "real"}
_INTEGER_TEXT = re.compile(r"[+-]?[0-9]+")


def check_arg(
    value: str, *, position: int, name: str | None, data_type: str, dtd: str, target: str
) -> None:
    """InvalidInput unless ``value`` converts to the parameter's numeric type."""
    kind = data_type.lower()
    param = f"parameter {position} ({name or '?'}) of {target} is {dtd.upper()}"
    text = value.strip()
    if kind in _INT_BITS:
        bits, unsigned = _INT_BITS[kind], "unsigned" in dtd.lower()
        low, high = (0, 2**bits - 1) if unsigned else (-(2 ** (bits - 1)), 2 ** (bits - 1) - 1)
        if not _INTEGER_TEXT.fullmatch(text):
            raise InvalidInput(f"invalid --arg {value!r}: {param}: expected a whole number")
        if not low <= int(text) <= high:
            raise InvalidInput(
                f"invalid --arg {value!r}: {param}: expected a whole number from {low} to {high}"
            )
    elif kind in _DECIMAL:
        try:
            number = float(text)
        except ValueError:
            number = math.nan
        if not math.isfinite(number) or text.lower() in ("inf", "nan"):
            raise InvalidInput(f"invalid --arg {value!r}: {param}: expected a number such as 12.5")
