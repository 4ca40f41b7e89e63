"""Range header parsing (RFC 9110 §14): which requests get 206, 200 or 416."""

from __future__ import annotations

import pytest

from api.archive.ranges import ByteRange, Unsatisfiable, parse_range

SIZE = 1000


@pytest.mark.parametrize(
    ("header", "expected"),
    [
        ("bytes=0-0", (0, 1)),
        ("bytes=0-499", (0, 500)),
        ("bytes=500-", (500, SIZE)),
        ("bytes=999-999", (999, SIZE)),
        ("bytes=900-5000", (900, SIZE)),  # last-pos past the end: the remainder
        ("bytes=-1", (999, SIZE)),
        ("bytes=-200", (800, SIZE)),
        ("bytes=-5000", (0, SIZE)),  # suffix longer than the file: all of it
        ("BYTES = 10-19 ", (10, 20)),  # unit case-insensitive, optional whitespace
        ("bytes= 10-19", (10, 20)),
    ],
)
def test_single_ranges_are_served_as_206(header: str, expected: tuple[int, int]) -> None:
    got = parse_range(header, SIZE)
    assert got == ByteRange(*expected, SIZE)
    assert got is not None and got.length == expected[1] - expected[0]
    assert got.content_range == f"bytes {expected[0]}-{expected[1] - 1}/{SIZE}"


@pytest.mark.parametrize(
    "header",
    [
        None,
        "",
        "bytes=0-1,5-9",  # multi-range: the whole body
        "bytes=0-1, -5",
        "bytes=",
        "bytes=-",
        "bytes=abc",
        "bytes=5-4",  # first > last: invalid, ignored
        "bytes=1-2-3",
        "bytes=+1-2",
        "bytes=0x1-2",
        "items=0-5",  # unknown unit
        "bytes 0-5",
        "bytes=" + "9" * 30 + "-",
        "bytes=0-1,",
    ],
)
def test_anything_else_is_the_whole_body(header: str | None) -> None:
    assert parse_range(header, SIZE) is None


@pytest.mark.parametrize("header", ["bytes=1000-", "bytes=1000-1000", "bytes=5000-6000", "bytes=-0"])
def test_unsatisfiable_ranges_raise(header: str) -> None:
    with pytest.raises(Unsatisfiable) as info:
        parse_range(header, SIZE)
    assert info.value.size == SIZE


def test_empty_and_one_byte_representations() -> None:
    with pytest.raises(Unsatisfiable):
        parse_range("bytes=0-", 0)
    assert parse_range("bytes=-1", 0) is None  # satisfiable, but there is nothing to slice
    assert parse_range("bytes=0-", 1) == ByteRange(0, 1, 1)
    assert parse_range("bytes=-1", 1) == ByteRange(0, 1, 1)
    assert parse_range("bytes=0-0", 1) == ByteRange(0, 1, 1)
    with pytest.raises(Unsatisfiable):
        parse_range("bytes=1-", 1)
