"""The archive's files in object storage: sealed as they stream in, opened as they stream out.

This is the pipeline over `core.files.storage` and `core.files.crypto` (format: docs/archive.md), with no
SQL: the row that records where a file is and under which wrapped key lives in
`models/archive/items.py`, and is handed in here as a `SealedFile`. Three uses:

- `seal` (the API, on upload): encrypt an upload as it streams in, straight into storage;
- `open_plaintext` (owner and capsule downloads): decrypt a stored file segment by segment;
- `open_range` (their HTTP Range requests): decrypt only the segments a byte range touches;
- `verify` (the worker, after upload): check the stored object is whole and opens;
- `read_through` (the worker's scrub): authenticate every segment of a stored file again.

Objects live at the deterministic key `archive/<owner>/<item>`, so the orphan sweeper can tell
from a key alone which item an object belongs to.
"""

from __future__ import annotations

import hashlib
import logging
import uuid
from collections.abc import AsyncGenerator, AsyncIterable, Sequence
from contextlib import aclosing
from dataclasses import dataclass
from typing import TypedDict, cast

from core.files.crypto import (
    HEADER_SIZE,
    IntegrityError,
    KeyRing,
    StreamEncryptor,
    UnknownKeyError,
    ciphertext_size,
    decrypt_range,
    decrypt_stream,
    final_segment_span,
    new_data_key,
    open_final_segment,
    segment_span,
)
from core.files.storage import ObjectNotFound, Storage, StorageError

log = logging.getLogger(__name__)

KEY_PREFIX = "archive/"
DOWNLOAD_CHUNK_SIZE = 1024 * 1024


class SealedFile(TypedDict):
    """What opening or checking a stored file needs (a row of models.archive.items has these keys)."""

    id: str  # the item id: bound into every segment and into the wrapped key
    storage_key: str
    key_id: str
    wrapped_key: bytes
    size_bytes: int  # plaintext
    stored_bytes: int  # ciphertext


class ServedFile(SealedFile):
    """A stored file as a download sends it: what opens it, and how it is named and typed."""

    file_name: str
    content_type: str


@dataclass(frozen=True)
class Sealed:
    """What `seal` stored for one upload: where, under which wrapped key, and of what."""

    storage_key: str
    key_id: str
    wrapped_key: bytes
    size: int  # plaintext bytes
    stored_bytes: int  # ciphertext bytes
    sha256: bytes  # of the plaintext


class VerificationFailed(Exception):
    """The stored object is not the ciphertext the item records: retrying cannot help."""


# --------------------------------------------------------------------------------------------
# Where objects live
# --------------------------------------------------------------------------------------------


def object_key(user_id: str, item_id: str) -> str:
    return f"{KEY_PREFIX}{user_id}/{item_id}"


def item_id_from_key(key: str) -> str | None:
    """The item id in `archive/<owner>/<item>`, or None for a key this module did not make."""
    parts = key.split("/")
    if len(parts) != 3 or f"{parts[0]}/" != KEY_PREFIX:
        return None
    try:
        uuid.UUID(parts[1])
        return str(uuid.UUID(parts[2]))
    except ValueError:
        return None


# --------------------------------------------------------------------------------------------
# Upload: seal into storage
# --------------------------------------------------------------------------------------------


async def seal(
    storage: Storage, keys: KeyRing, *, user_id: str, item_id: str, batches: AsyncIterable[Sequence[bytes]]
) -> Sealed:
    """Encrypt an upload as it streams in and put the ciphertext straight into storage.

    `batches` are lists of socket reads (~1 MiB together), hashed and sealed as they come,
    under a fresh data key wrapped under the primary key. Plaintext is never written
    anywhere. If the stream fails (413, the client hangs up, storage errors) the backend
    discards what it wrote and nothing is left behind.

    Sealing runs on the event loop (its cost per MiB is small next to the storage's). A thread was measured
    slower: the many short GIL-releasing calls of hashing and per-segment sealing wait on the
    busy event loop to get the GIL back.
    """
    data_key = new_data_key()
    key_id, wrapped_key = keys.wrap_data_key(data_key, item_id)
    encryptor = StreamEncryptor(data_key, item_id)
    digest = hashlib.sha256()
    size = 0

    async def ciphertext() -> AsyncGenerator[bytes, None]:
        nonlocal size
        async for batch in batches:
            sealed = []
            for piece in batch:
                size += len(piece)
                digest.update(piece)
                sealed.append(encryptor.update(piece))
            if out := b"".join(sealed):
                yield out
        yield encryptor.finalize()

    key = object_key(user_id, item_id)
    async with aclosing(ciphertext()) as source:
        stored_bytes = await storage.put_stream(key, source)
    return Sealed(key, key_id, wrapped_key, size, stored_bytes, digest.digest())


async def discard(storage: Storage, key: str) -> None:
    """Best effort after an upload that will not be committed; the orphan sweeper does the rest."""
    try:
        await storage.delete(key)
    except StorageError as exc:
        log.warning(
            "could not remove an uncommitted upload; the orphan sweeper will",
            extra={"key": key, "error": str(exc)},
        )


# --------------------------------------------------------------------------------------------
# Download: read the plaintext back (owner downloads, and the capsule's)
# --------------------------------------------------------------------------------------------


async def open_plaintext(storage: Storage, keys: KeyRing, file: SealedFile) -> AsyncGenerator[bytes, None]:
    """Stream a stored file's plaintext: fetch, then decrypt segment by segment.

    The data key is unwrapped before anything is fetched, so an unknown key id or a damaged
    wrapped key fails on the first `anext` (IntegrityError). Every chunk yielded has been
    authenticated; an IntegrityError (or StorageError) raised later means the rest is missing
    or forged, and a consumer streaming to a client must abort rather than end normally.
    """
    item_id = file["id"]
    data_key = keys.unwrap_data_key(file["key_id"], file["wrapped_key"], item_id)
    source = cast(AsyncGenerator[bytes, None], storage.get_stream(file["storage_key"], DOWNLOAD_CHUNK_SIZE))
    async with aclosing(source):
        async for chunk in decrypt_stream(data_key, item_id, source):
            yield chunk


async def open_range(
    storage: Storage, keys: KeyRing, file: SealedFile, *, start: int, stop: int
) -> AsyncGenerator[bytes, None]:
    """plaintext[start:stop] of a stored file, reading only the segments that hold it.

    The stored size fixes the segment layout, so the header (for the nonce prefix) and the
    touched segments are fetched in one ranged read, wherever they are in the object: the last
    MiB of a large file costs what the first does. Each segment is authenticated under its
    position and finality before any of it is yielded; the file's end was proven by `verify`.
    Failure semantics as for `open_plaintext` (the first `anext` fails on a bad key, a missing
    object or a damaged first batch; a later error means: abort the response).
    """
    item_id, key, size = file["id"], file["storage_key"], file["size_bytes"]
    data_key = keys.unwrap_data_key(file["key_id"], file["wrapped_key"], item_id)
    span = segment_span(size, start, stop)
    header = await storage.read_range(key, 0, HEADER_SIZE)
    source = cast(
        AsyncGenerator[bytes, None],
        storage.get_stream(key, DOWNLOAD_CHUNK_SIZE, start=span.offset, length=span.length),
    )
    async with aclosing(source):
        async for chunk in decrypt_range(data_key, item_id, header, size, start, stop, source):
            yield chunk


# --------------------------------------------------------------------------------------------
# The worker's check after upload
# --------------------------------------------------------------------------------------------


async def verify(storage: Storage, keys: KeyRing, file: SealedFile) -> None:
    """Check, from this host, that the file's object is whole and opens under its recorded key.

    Its length must be exactly the ciphertext length of the recorded plaintext size, and its
    final segment (read with its header, a few bytes to 64 KiB) must authenticate under the
    unwrapped data key and the item id: together that proves the stream is complete and
    sealed by this upload. Every other segment is authenticated whenever it is downloaded.
    Raises VerificationFailed (permanent), or StorageError / UnknownKeyError (worth a retry:
    storage is down, or this worker's ENCRYPTION_KEYS lags behind a rotation).
    """
    item_id, key, size = file["id"], file["storage_key"], file["size_bytes"]
    expected = ciphertext_size(size)
    try:
        actual = await storage.size(key)
    except ObjectNotFound:
        raise VerificationFailed("the stored object is missing") from None
    if actual != expected or file["stored_bytes"] != expected:
        raise VerificationFailed(f"the stored object has {actual} bytes, expected {expected}")
    offset, length = final_segment_span(size)
    header = await storage.read_range(key, 0, HEADER_SIZE)
    tail = await storage.read_range(key, offset, length)
    try:
        data_key = keys.unwrap_data_key(file["key_id"], file["wrapped_key"], item_id)
        open_final_segment(data_key, item_id, header, tail, size)
    except UnknownKeyError:
        raise
    except IntegrityError as exc:
        raise VerificationFailed(str(exc)) from None


async def read_through(
    storage: Storage, keys: KeyRing, file: SealedFile, *, start: int, stop: int
) -> AsyncGenerator[int, None]:
    """Authenticate plaintext[start:stop] of a stored file segment by segment, yielding how many
    bytes each chunk held (the scrub paces its reads on them); from 0, first `verify` (the
    object's length and its final segment). A whole pass from 0 to the size proves every AEAD
    tag. Raises VerificationFailed for a file that does not read whole (missing, wrong length,
    a segment that fails authentication); StorageError / UnknownKeyError as `verify` does.
    """
    if start == 0:
        await verify(storage, keys, file)
    try:
        async with aclosing(open_range(storage, keys, file, start=start, stop=stop)) as chunks:
            async for chunk in chunks:
                yield len(chunk)
    except UnknownKeyError:
        raise
    except IntegrityError as exc:
        raise VerificationFailed(str(exc)) from None
    except ObjectNotFound:
        raise VerificationFailed("the stored object is missing") from None
