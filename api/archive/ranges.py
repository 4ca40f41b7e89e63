"""HTTP Range requests (RFC 9110 §14) for the decrypted downloads: parse, validate, describe.

Only single `bytes=` ranges are served as 206: that is what media players and download
resumers send. A multi-range request is answered with the whole body (200), which §14.2
allows and which spares clients a multipart/byteranges body nobody here needs. A Range
header that does not parse is ignored (200), as §14.2 says; one that parses but cannot be
satisfied is 416 with `Content-Range: bytes */<size>`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from aiohttp import web

_RANGE_SPEC = re.compile(r"(\d*)-(\d*)")
# Digits beyond this are not a file size anyone stores; refusing them keeps int() cheap.
_MAX_DIGITS = 19


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
    if header is None:
        return None
    unit, sep, spec = header.partition("=")
    if not sep or unit.strip().lower() != "bytes":
        return None  # an unknown range unit is ignored (§14.2)
    parts = [p.strip() for p in spec.split(",")]
    if len(parts) != 1:
        return None  # multi-range (or an empty list element): the whole body
    match = _RANGE_SPEC.fullmatch(parts[0])
    if match is None:
        return None
    first, last = match.groups()
    if len(first) > _MAX_DIGITS or len(last) > _MAX_DIGITS or not (first or last):
        return None
    if not first:  # suffix range: the last N bytes
        suffix = int(last)
        if suffix == 0:
            raise Unsatisfiable(size)
        if size == 0:
            return None  # §14.1.1: satisfiable, but the whole (empty) body is all there is
        return ByteRange(max(0, size - suffix), size, size)
    start = int(first)
    if last and int(last) < start:
        return None  # first > last is an invalid range: ignored (§14.1.1)
    if start >= size:
        raise Unsatisfiable(size)
    stop = size if not last else min(int(last) + 1, size)
    return ByteRange(start, stop, size)


def if_range_allows(request: web.Request, etag: str) -> bool:
    """If-Range (§13.1.5): honour Range only while the client's copy is still current.

    Only a strong entity tag can match (we send no Last-Modified, so a date never does);
    a mismatch means "send me the whole thing", never an error.
    """
    value = request.headers.get("If-Range")
    if value is None:
        return True
    return value.strip() == etag
