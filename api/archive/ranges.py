"""HTTP Range requests (RFC 9110 §14) for the decrypted downloads: parse, validate, describe.

Only single `bytes=` ranges are served as 206: that is what media players and download
resumers send. A multi-range request is answered with the whole body (200), which §14.2
allows and which spares clients a multipart/byteranges body nobody here needs. A Range
header that does not parse is ignored (200), as §14.2 says; one that parses but cannot be
satisfied is 416 with `Content-Range: bytes */<size>`.

The grammar is ASCII: positions are `DIGIT` (0-9 only; the regex digit class and `int()` also take
Arabic-Indic, fullwidth and other Unicode digits) and whitespace is SP/HTAB. A header with
any other character does not parse, so it is ignored. A position of any length is read; one
past 19 significant digits is larger than any size stored (a bigint), so it is taken as that
bound instead of being converted: an end past the size is clamped, a start past it is 416.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from aiohttp import web

_RANGE_SPEC = re.compile(r"([0-9]*)-([0-9]*)")
_OWS = " \t"
# A position with more significant digits than this is past any size a bigint holds (2**63 - 1
# has 19 digits, and 10**19 exceeds it): it is read as BEYOND rather than converted.
_MAX_DIGITS = 19
BEYOND = 10**_MAX_DIGITS


@dataclass(frozen=True)
class ByteRange:
    """plaintext[start:stop] of a representation of `size` bytes (stop exclusive)."""

    start: int
    stop: int
    size: int

    @property
    def length(self) -> int:
        return self.stop - self.start

    @property
    def content_range(self) -> str:
        return f"bytes {self.start}-{self.stop - 1}/{self.size}"


class Unsatisfiable(Exception):
    """The range parses but selects nothing of the representation (416)."""

    def __init__(self, size: int) -> None:
        super().__init__(f"Range not satisfiable for a representation of {size} bytes")
        self.size = size


def parse_range(header: str | None, size: int) -> ByteRange | None:
    """The one range to serve as 206, or None to serve the whole body as 200.

    Raises Unsatisfiable for a well-formed single range that selects nothing.
    """
    if header is None or not header.isascii():
        return None  # non-ASCII (a Unicode digit or space) is outside the grammar: ignored
    unit, sep, spec = header.partition("=")
    if not sep or unit.strip(_OWS).lower() != "bytes":
        return None  # an unknown range unit is ignored (§14.2)
    parts = [p.strip(_OWS) for p in spec.split(",")]
    if len(parts) != 1:
        return None  # multi-range (or an empty list element): the whole body
    match = _RANGE_SPEC.fullmatch(parts[0])
    if match is None:
        return None
    first, last = match.groups()
    if not (first or last):
        return None
    if not first:  # suffix range: the last N bytes
        return _suffix_range(_position(last), size)
    return _span_range(_position(first), _position(last) if last else None, size)


def _suffix_range(suffix: int, size: int) -> ByteRange | None:
    """`bytes=-N`: the last N bytes."""
    if suffix == 0:
        raise Unsatisfiable(size)
    if size == 0:
        return None  # §14.1.1: satisfiable, but the whole (empty) body is all there is
    return ByteRange(max(0, size - suffix), size, size)


def _span_range(start: int, end: int | None, size: int) -> ByteRange | None:
    """`bytes=first-` or `bytes=first-last`."""
    if end is not None and end < start:
        return None  # first > last is an invalid range: ignored (§14.1.1)
    if start >= size:
        raise Unsatisfiable(size)
    stop = size if end is None else min(end + 1, size)  # an end past the size is clamped
    return ByteRange(start, stop, size)


def _position(digits: str) -> int:
    """ASCII digits as a byte position, or BEYOND (past any stored size) without converting
    a long run of digits: leading zeros are allowed and do not count."""
    significant = digits.lstrip("0")
    if len(significant) > _MAX_DIGITS:
        return BEYOND
    return int(significant) if significant else 0


def if_range_allows(request: web.Request, etag: str) -> bool:
    """If-Range (§13.1.5): honour Range only while the client's copy is still current.

    Only a strong entity tag can match (we send no Last-Modified, so a date never does);
    a mismatch means "send me the whole thing", never an error.
    """
    value = request.headers.get("If-Range")
    if value is None:
        return True
    return value.strip() == etag
