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
        ("bytes=\t10-19\t", (10, 20)),
        ("bytes=0010-0019", (10, 20)),  # leading zeros are digits too
        # An end past the size is clamped, however long: past 64 bits, past 19 digits.
        ("bytes=0-99999999999999999999", (0, SIZE)),
        ("bytes=5-18446744073709551616", (5, SIZE)),  # 2**64
        ("bytes=5-9223372036854775808", (5, SIZE)),  # 2**63
        ("bytes=5-" + "9" * 5000, (5, SIZE)),
        ("bytes=" + "0" * 40 + "7-" + "0" * 40 + "8", (7, 9)),
        # A suffix longer than any file: the whole representation, still as a range.
        ("bytes=-99999999999999999999", (0, SIZE)),
        ("bytes=-" + "9" * 5000, (0, SIZE)),
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
        "bytes=0-1,",
        "bytes=" + "9" * 30 + "-5",  # first > last, however large: invalid, ignored
        # Only ASCII digits and SP/HTAB: Unicode digits, spaces and lookalikes make the
        # header one that does not parse (ignored: the whole body), never a range.
        "bytes=\u0661-2",  # Arabic-Indic one
        "bytes=\uff10-2",  # fullwidth zero
        "bytes=0-\u0662",
        "bytes=-\u0665",
        "bytes=\u00b9-2",  # superscript one (str.isdigit() says yes)
        "bytes=\u09e6-2",  # Bengali zero
        "bytes=\U0001d7ce-2",  # mathematical bold zero
        "bytes=\u00a00-5",  # no-break space
        "bytes=0-5\u2003",  # em space
        "bytes\u2009=0-5",
        "b\u0131tes=0-5",  # dotless i
        "bytes=0\u20135",  # en dash
        "bytes=0-5\udcff",  # a raw byte that was not UTF-8, as aiohttp hands it over
    ],
)
def test_anything_else_is_the_whole_body(header: str | None) -> None:
    assert parse_range(header, SIZE) is None


@pytest.mark.parametrize(
    "header",
    [
        "bytes=1000-",
        "bytes=1000-1000",
        "bytes=5000-6000",
        "bytes=-0",
        "bytes=-000",
        # A start past 64 bits is past the size like any other: 416, not a crash or a 200.
        "bytes=99999999999999999999-",
        "bytes=18446744073709551616-18446744073709551617",
        "bytes=" + "9" * 30 + "-",
        "bytes=" + "9" * 5000 + "-" + "9" * 5000,
    ],
)
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
