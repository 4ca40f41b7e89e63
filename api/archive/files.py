"""Archive files over HTTP, for every route that stores or serves one (owner and capsule):
whether storage is there, and streaming a stored file's plaintext to the client, whole or one
byte range of it (RFC 9110 §14: 206 with `Content-Range`, 416, `Accept-Ranges: bytes`, a
strong `ETag`, `If-Range`), so a video seeks in a browser's player and a download resumes.

The decrypting readers underneath are `core.files.sealed_files.open_plaintext` and `open_range`.
"""

from __future__ import annotations

import hashlib
import logging
import re
import unicodedata
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import aclosing
from typing import Any
from urllib.parse import quote

from aiohttp import web
from aiohttp.hdrs import CONTENT_TYPE

from api.archive.ranges import ByteRange, Unsatisfiable, if_range_allows, parse_range
from api.keys import context
from core.errors import RETRY_SOON, AppError, RangeNotSatisfiable, ServiceUnavailable
from core.files.crypto import IntegrityError
from core.files.sealed_files import SealedFile, ServedFile, open_plaintext, open_range
from core.files.storage import ObjectNotFound, Storage, StorageError
from core.logging import request_id_var

log = logging.getLogger(__name__)

# Downloads are never rendered by the browser as a page of this origin.
ATTACHMENT_CSP = "default-src 'none'; sandbox"
# Media shown in place (the capsule's voice and video messages): the browser's own media
# viewer may load the media and style itself, nothing else; no script (an SVG photo either).
INLINE_CSP = "default-src 'none'; media-src 'self'; img-src 'self'; style-src 'unsafe-inline'; sandbox"

RANGE_NOTE = (
    " Honours a single `Range: bytes=…` (206 with `Content-Range`; only the 64 KiB encrypted segments"
    " the range touches are read and each is authenticated before it is sent), `If-Range` with the"
    " strong `ETag`; an unsatisfiable range is 416 with `Content-Range: bytes */<size>`; a multi-range"
    " request gets the whole file (200). Damage found after the first byte cuts the connection short:"
    " never unauthenticated bytes."
)

OnStart = Callable[[ByteRange | None], Awaitable[None]]


def require_storage(request: web.Request) -> Storage:
    ctx = context(request)
    storage = ctx.storage
    if storage is None:
        raise ServiceUnavailable("Object storage is not configured (STORAGE_URL); archive files are off.")
    return storage


def storage_down(what: str, where: dict[str, str], exc: StorageError) -> ServiceUnavailable:
    """Log an outage of the store (its error, never file content) and answer 503 for it, with
    when to try again (docs/operations.md: every 503 of a dependency that is down says so)."""
    log.warning(what, extra={**where, "error": str(exc)})
    return ServiceUnavailable("Object storage is unavailable; try again later.", headers=RETRY_SOON)


def content_disposition(file_name: str, disposition: str = "attachment") -> str:
    """With an ASCII fallback and the exact name as RFC 5987/6266 `filename*`."""
    fallback = unicodedata.normalize("NFKD", file_name).encode("ascii", "ignore").decode("ascii")
    fallback = re.sub(r'[^\x20-\x7e]|["\\%]', "_", fallback).strip() or "file"
    return f"{disposition}; filename=\"{fallback}\"; filename*=UTF-8''{quote(file_name, safe='')}"


def etag(file: SealedFile) -> str:
    """A strong entity tag for the stored ciphertext. An item's object is written once, under
    a fresh id, so the id and its size name its bytes for good; re-wrapping the data key under
    a new master key changes neither the ciphertext nor this tag."""
    identity = f"{file['id']}|{file['stored_bytes']}|{file['size_bytes']}"
    return '"' + hashlib.sha256(identity.encode()).hexdigest()[:32] + '"'


def _requested_range(request: web.Request, size: int, tag: str) -> ByteRange | None:
    if request.method not in ("GET", "HEAD") or not if_range_allows(request, tag):
        return None
    try:
        return parse_range(request.headers.get("Range"), size)
    except Unsatisfiable:
        raise RangeNotSatisfiable(
            f"The range is outside the file ({size} bytes).",
            headers={"Content-Range": f"bytes */{size}", "Accept-Ranges": "bytes"},
        ) from None


async def send_file(
    request: web.Request,
    storage: Storage,
    file: ServedFile,
    *,
    inline: bool = False,
    on_start: OnStart | None = None,
) -> web.StreamResponse:
    """Stream an available item's plaintext (owner and capsule downloads): whole, or the one
    byte range asked for (api/archive/ranges.py; only the segments it touches are read).

    Headers go out only with the first authenticated bytes, so damage found early (wrong
    key id, a flipped byte in the first segments sent) is an ordinary 500 error body. Damage
    found later aborts the connection: the client sees a response shorter than Content-Length,
    never bytes that failed authentication. `inline` serves media to be shown in place.
    `on_start(range or None)` runs once the first bytes are authenticated, before the headers
    go out (not for HEAD): e.g. to put a capsule download on the owner's timeline.
    """
    ctx = context(request)
    size, tag = file["size_bytes"], etag(file)
    wanted = _requested_range(request, size, tag)
    keys = ctx.ring
    where = {"itemId": file["id"], "keyId": file["key_id"]}
    if wanted is None:
        source = open_plaintext(storage, keys, file)
    else:
        source = open_range(storage, keys, file, start=wanted.start, stop=wanted.stop)
    async with aclosing(source) as chunks:
        first = await _first_chunk(chunks, where)
        if on_start is not None and request.method != "HEAD":
            await on_start(wanted)
        response = _response_for(file, tag, wanted, inline=inline)
        await response.prepare(request)
        if request.method == "HEAD":
            return response  # headers only: no need to read and decrypt the rest
        try:
            await response.write(first)
            async for chunk in chunks:
                await response.write(chunk)
        except (IntegrityError, StorageError) as exc:
            log.error("archive download aborted mid-stream", extra={**where, "error": str(exc)})
            if request.transport is not None:
                request.transport.abort()
            return response
        except ConnectionError:
            return response  # the client went away
    await response.write_eof()
    return response


async def _first_chunk(chunks: AsyncIterator[bytes], where: dict[str, Any]) -> bytes:
    """The first authenticated bytes, or the error body that replaces the whole response."""
    try:
        return await anext(chunks, b"")
    except IntegrityError as exc:
        log.error("archive integrity check failed; nothing sent", extra={**where, "error": str(exc)})
        raise AppError("The stored file failed its integrity check; nothing was sent.") from None
    except ObjectNotFound:
        log.error("archive object missing from storage", extra=where)
        raise AppError("The stored file is missing.") from None
    except StorageError as exc:
        raise storage_down("archive storage read failed", where, exc) from None


_DISPOSITION = {True: "inline", False: "attachment"}


def _response_for(
    file: ServedFile, tag: str, wanted: ByteRange | None, *, inline: bool
) -> web.StreamResponse:
    """The headers of a whole (200) or ranged (206) download, not yet sent."""
    response = web.StreamResponse(
        status=206 if wanted else 200,
        headers={
            CONTENT_TYPE: file["content_type"],
            "Content-Disposition": content_disposition(
                file["file_name"], "inline" if inline else "attachment"
            ),
            "Accept-Ranges": "bytes",
            "ETag": tag,
            "X-Content-Type-Options": "nosniff",
            "Cache-Control": "no-store",
            "Content-Security-Policy": INLINE_CSP if inline else ATTACHMENT_CSP,
            "X-Request-Id": request_id_var.get(),
        },
    )
    if wanted is not None:
        response.headers["Content-Range"] = wanted.content_range
    response.content_length = wanted.length if wanted else file["size_bytes"]
    return response
