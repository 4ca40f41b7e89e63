"""Reading a multipart/form-data body as it streams in: bounded text fields, one file streamed.

Nothing here holds a whole body. aiohttp's reader reports a malformed body as ValueError,
RuntimeError or AssertionError and a client that went away as ConnectionError or
HttpProcessingError; every one of them becomes a 400 here, so callers see only core.errors.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Collection
from typing import Any

from aiohttp import BodyPartReader, MultipartReader, web
from aiohttp.http_exceptions import HttpProcessingError
from multidict import MultiDict

from core.errors import BadRequest, PayloadTooLarge, RequestTimeout, validation_error

MULTIPART_ERRORS = (ValueError, RuntimeError, AssertionError)
MAX_FIELD_BYTES = 16 * 1024
READ_SIZE = 256 * 1024  # one socket read
# A client may upload slowly, but not stall: no single read waits longer than this (then 408).
IDLE_READ_SECONDS = 30
BATCH_SIZE = 1024 * 1024  # reads are handed on in lists of about this much (sealed together)


def too_large(limit: int) -> PayloadTooLarge:
    return PayloadTooLarge(f"The file exceeds the upload limit of {limit} bytes.")


class StreamingForm:
    """A multipart body read in order: text fields until the file part, the file, the rest.

    At most `max_parts` parts in all (400 past that); a second file part is a 400. Fields
    read before the file can be validated before a byte of it is read.
    """

    def __init__(self, reader: MultipartReader, *, file_field: str, max_parts: int) -> None:
        self._file_field = file_field
        self._parts = self._iter_parts(reader, max_parts)
        self._seen_file = False

    @classmethod
    async def open(
        cls, request: web.Request, *, max_body: int, file_limit: int, file_field: str = "file", max_parts: int
    ) -> StreamingForm:
        """413 if the declared length exceeds `max_body` (the file's `file_limit` plus room for
        fields), before anything is read; 400 unless the body is multipart/form-data."""
        if (request.content_length or 0) > max_body:
            raise too_large(file_limit)
        if request.content_type != "multipart/form-data":
            raise BadRequest("Content-Type must be multipart/form-data")
        try:
            reader = await request.multipart()
        except MULTIPART_ERRORS:
            raise BadRequest("Malformed multipart body") from None
        return cls(reader, file_field=file_field, max_parts=max_parts)

    async def read_fields(
        self, wanted: Collection[str], *, every: MultiDict[str] | None = None
    ) -> tuple[dict[str, str], BodyPartReader | None]:
        """The text fields up to the file part (or the end), and that part (None at the end).

        Every text part is read (at most MAX_FIELD_BYTES, UTF-8); only `wanted` names are
        kept, and a blank value counts as not given (HTML forms send every field). `every`, when
        given, also receives each wanted value, repeats kept (a page's list is a name repeated).
        """
        values: dict[str, str] = {}
        async for part in self._parts:
            if part.name == self._file_field:
                if self._seen_file:
                    raise validation_error({self._file_field: ["Send one file per upload."]})
                self._seen_file = True
                return values, part
            name = part.name or "field"
            text = await _read_text(part, name)
            if name in wanted and text.strip():
                values[name] = text
                if every is not None:
                    every.add(name, text)
        return values, None

    async def _iter_parts(self, reader: MultipartReader, max_parts: int) -> AsyncIterator[BodyPartReader]:
        for _ in range(max_parts + 1):
            part = await _next_part(reader)
            if part is None:
                return
            if not isinstance(part, BodyPartReader):
                raise BadRequest("Nested multipart bodies are not accepted")
            yield part
        raise BadRequest(f"Too many form fields (at most {max_parts})")


async def file_batches(part: BodyPartReader, limit: int) -> AsyncIterator[list[bytes]]:
    """The file part as lists of socket reads of ~BATCH_SIZE together (no copying); 413 past
    `limit` bytes, 400 if empty. Both are raised inside whatever consumes the batches (the
    storage write, which then discards what it wrote)."""
    total = 0
    batch: list[bytes] = []
    batched = 0
    while data := await _read_chunk(part, READ_SIZE):
        total += len(data)
        if total > limit:
            raise too_large(limit)
        batch.append(data)
        batched += len(data)
        if batched >= BATCH_SIZE:
            yield batch
            batch, batched = [], 0
    if total == 0:
        raise validation_error({"file": ["The file is empty."]})
    if batch:
        yield batch


async def _read_chunk(part: BodyPartReader, size: int) -> bytes:
    try:
        async with asyncio.timeout(IDLE_READ_SECONDS):
            return await part.read_chunk(size)
    except TimeoutError:
        raise RequestTimeout(f"The upload stalled (nothing received for {IDLE_READ_SECONDS} s)") from None
    except MULTIPART_ERRORS:
        raise BadRequest("Malformed multipart body") from None
    except (ConnectionError, HttpProcessingError):
        # The client went away or the body ended early: a 400 in the access log, not a 500 trace.
        raise BadRequest("The upload was interrupted") from None


async def _next_part(reader: MultipartReader) -> Any:
    try:
        async with asyncio.timeout(IDLE_READ_SECONDS):
            return await reader.next()
    except TimeoutError:
        raise RequestTimeout(f"The upload stalled (nothing received for {IDLE_READ_SECONDS} s)") from None
    except MULTIPART_ERRORS:
        raise BadRequest("Malformed multipart body") from None


async def _read_text(part: BodyPartReader, name: str) -> str:
    data = bytearray()
    while chunk := await _read_chunk(part, 8192):
        data += chunk
        if len(data) > MAX_FIELD_BYTES:
            raise validation_error({name: [f"Longer than {MAX_FIELD_BYTES} bytes."]})
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise validation_error({name: ["Not valid UTF-8."]}) from None
