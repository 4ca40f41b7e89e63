"""JSON carried in a form field (core/text/bounded_json.py): bounded in size and depth, and
every failure one ValueError, never a RecursionError."""

from __future__ import annotations

import pytest

from core.text import bounded_json


def test_depth_counts_brackets_outside_strings_only() -> None:
    assert bounded_json.depth('{"a": [1, {"b": []}]}') == 4
    assert bounded_json.depth('{"a": "[[[[[[", "b": "\\"[[["}') == 1
    assert bounded_json.depth("") == 0


@pytest.mark.parametrize(
    "text",
    [
        "[" * 100_000 + "]" * 100_000,  # the probe: a RecursionError in the standard parser
        "[" * 33 + "]" * 33,
        '"' + "x" * (bounded_json.MAX_CHARS + 1) + '"',
        "not json",
        b"\xff\xfe",
        "",
    ],
    ids=["deep", "past the depth", "too long", "not JSON", "not UTF-8", "empty"],
)
def test_anything_out_of_bounds_is_unparsed(text: str | bytes) -> None:
    with pytest.raises(bounded_json.Unparsed):
        bounded_json.loads(text)


def test_json_within_the_bounds_parses() -> None:
    assert bounded_json.loads('{"a": ["[", {"b": null}]}') == {"a": ["[", {"b": None}]}
    assert bounded_json.loads(b"[[1]]") == [[1]]
    assert bounded_json.loads("[" * 32 + "]" * 32) is not None
