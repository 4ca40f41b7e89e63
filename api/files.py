"""Archive files over HTTP, for every route that stores or serves one (owner and capsule):
whether storage is there, and streaming a stored file's plaintext to the client.

The decrypting reader underneath is `core.sealed_files.open_plaintext`.
"""

from __future__ import annotations

import logging
import re
import unicodedata
from contextlib import aclosing
from urllib.parse import quote

from aiohttp import web
from aiohttp.hdrs import CONTENT_TYPE

from api.keys import SETTINGS, STORAGE
from core.crypto import IntegrityError
from core.errors import AppError, ServiceUnavailable
from core.logging import request_id_var
from core.sealed_files import open_plaintext
from core.storage import ObjectNotFound, Storage, StorageError
from models.archive import SealedArchiveItem

log = logging.getLogger(__name__)


def require_storage(request: web.Request) -> Storage:
    storage = request.app[STORAGE]
    if storage is None:
        raise ServiceUnavailable("Object storage is not configured (STORAGE_URL); archive files are off.")
    return storage


def storage_down(what: str, where: dict[str, str], exc: StorageError) -> ServiceUnavailable:
    """Log an outage of the store (its error, never file content) and answer 503 for it."""
    log.warning(what, extra={**where, "error": str(exc)})
    return ServiceUnavailable("Object storage is unavailable; try again later.")


def content_disposition(file_name: str) -> str:
    """`attachment` with an ASCII fallback and the exact name as RFC 5987/6266 `filename*`."""
    fallback = unicodedata.normalize("NFKD", file_name).encode("ascii", "ignore").decode("ascii")
    fallback = re.sub(r'[^\x20-\x7e]|["\\%]', "_", fallback).strip() or "file"
    return f"attachment; filename=\"{fallback}\"; filename*=UTF-8''{quote(file_name, safe='')}"


async def send_file(request: web.Request, storage: Storage, item: SealedArchiveItem) -> web.StreamResponse:
    """Stream an available item's plaintext to the client (owner and capsule downloads).

    Headers go out only with the first authenticated bytes, so damage found early (wrong
    key id, a flipped byte in the first segments) is an ordinary 500 error body. Damage found
    later aborts the connection: the client sees a response shorter than Content-Length,
    never bytes that failed authentication.
    """
    where = {"itemId": item["id"], "keyId": item["key_id"]}
    async with aclosing(open_plaintext(storage, request.app[SETTINGS].key_ring, item)) as chunks:
        try:
            first = await anext(chunks, b"")
        except IntegrityError as exc:
            log.error("archive integrity check failed; nothing sent", extra={**where, "error": str(exc)})
            raise AppError("The stored file failed its integrity check; nothing was sent.") from None
        except ObjectNotFound:
            log.error("archive object missing from storage", extra=where)
            raise AppError("The stored file is missing.") from None
        except StorageError as exc:
            raise storage_down("archive storage read failed", where, exc) from None
        response = web.StreamResponse(
            headers={
                CONTENT_TYPE: item["content_type"],
                "Content-Disposition": content_disposition(item["file_name"]),
                "X-Content-Type-Options": "nosniff",
                "Cache-Control": "no-store",
                "Content-Security-Policy": "default-src 'none'; sandbox",
                "X-Request-Id": request_id_var.get(),
            }
        )
        response.content_length = item["size_bytes"]
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
