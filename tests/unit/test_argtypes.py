"""A call job's --arg values against its procedure's numeric parameter types (issue 26)."""

from __future__ import annotations

import pytest

from jobtui.core.argtypes import check_arg
from jobtui.core.errors import InvalidInput


def _check(value: str, data_type: str, dtd: str) -> None:
    check_arg(value, position=2, name="n", data_type=data_type, dtd=dtd, target="app.p")


@pytest.mark.parametrize(
    ("value", "data_type", "dtd"),
    [
        ("12", "int", "int(11)"),
        (" -5 ", "int", "int(11)"),
        ("2147483647", "int", "int(11)"),
        ("255", "tinyint", "tinyint(3) unsigned"),
        ("18446744073709551615", "bigint", "bigint(20) unsigned"),
        ("12.5", "decimal", "decimal(10,2)"),
        ("1e3", "double", "double"),
        ("abc", "varchar", "varchar(5)"),  # text: the server's business
        ("not a date", "datetime", "datetime"),  # left to the server
    ],
)
def test_accepted(value: str, data_type: str, dtd: str) -> None:
    _check(value, data_type, dtd)


@pytest.mark.parametrize(
    ("value", "data_type", "dtd", "message"),
    [
        ("abc", "int", "int(11)", "parameter 2 (n) of app.p is INT(11): expected a whole number"),
        ("1.5", "int", "int(11)", "expected a whole number"),
        ("", "bigint", "bigint(20)", "expected a whole number"),
        ("2147483648", "int", "int(11)", "from -2147483648 to 2147483647"),
        ("-1", "int", "int(10) unsigned", "from 0 to 4294967295"),
        ("256", "tinyint", "tinyint(3) unsigned", "from 0 to 255"),
        ("abc", "decimal", "decimal(10,2)", "expected a number such as 12.5"),
        ("nan", "double", "double", "expected a number"),
        ("inf", "double", "double", "expected a number"),
    ],
)
def test_refused(value: str, data_type: str, dtd: str, message: str) -> None:
    with pytest.raises(InvalidInput) as info:
        _check(value, data_type, dtd)
    assert message in str(info.value)
    assert str(info.value).startswith(f"invalid --arg {value!r}")
