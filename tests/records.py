"""Check a record at run time against its TypedDict: mypy trusts the declaration, this test
keeps the declaration true to what the SQL really returns (keys and value types)."""

from __future__ import annotations

import types
import typing
from typing import Any, Union, get_args, get_origin, get_type_hints, is_typeddict


def assert_record(value: Any, record_type: Any, where: str = "record") -> None:
    """Fail naming the first key missing, extra or of the wrong type (recursing into nested
    TypedDicts, lists and unions)."""
    assert isinstance(value, dict), f"{where}: {type(value).__name__}, not a dict"
    hints = get_type_hints(record_type)
    required = record_type.__required_keys__
    assert required <= value.keys(), f"{where}: missing {sorted(required - value.keys())}"
    assert value.keys() <= hints.keys(), f"{where}: undeclared {sorted(value.keys() - hints.keys())}"
    for key, hint in hints.items():
        if key in value:
            _check(value[key], hint, f"{where}.{key}")


def _check(value: Any, hint: Any, where: str) -> None:
    origin = get_origin(hint)
    if hint is Any:
        return
    if is_typeddict(hint):
        assert_record(value, hint, where)
    elif origin in (Union, types.UnionType):
        errors = []
        for option in get_args(hint):
            try:
                _check(value, option, where)
                return
            except AssertionError as exc:
                errors.append(str(exc))
        raise AssertionError(f"{where}: {value!r} matches none of {hint} ({'; '.join(errors)})")
    elif origin is list:
        assert isinstance(value, list), f"{where}: {type(value).__name__}, not a list"
        (item,) = get_args(hint)
        for index, element in enumerate(value):
            _check(element, item, f"{where}[{index}]")
    elif origin is dict:
        assert isinstance(value, dict), f"{where}: {type(value).__name__}, not a dict"
    elif origin is typing.Literal:
        assert value in get_args(hint), f"{where}: {value!r} not in {get_args(hint)}"
    elif hint is type(None):
        assert value is None, f"{where}: {value!r}, not None"
    else:
        assert isinstance(value, hint), f"{where}: {type(value).__name__} {value!r}, not {hint.__name__}"
