"""The encrypted archive: item records, sealing uploads into storage, the verify job's bookkeeping.

Lifecycle (docs/archive.md): the API encrypts the upload as it streams in, puts the ciphertext
in storage, and commits the item `pending` with its activity entry; the `verify_archive_item`
job (workers/archive.py) checks from a worker host that the stored object is whole and opens
under the recorded key, then marks it `available`, or `failed` with a reason. Every state
change after the upload is one guarded UPDATE, so a rerun, a late job or a concurrent delete
can never move an item backwards.

Objects live at the deterministic key `archive/<owner>/<item>`, so the orphan sweeper can
tell from a key alone which item an object belongs to.
"""

from __future__ import annotations

import hashlib
import logging
import re
import unicodedata
import uuid
from collections.abc import AsyncGenerator, AsyncIterable, Collection, Sequence
from contextlib import aclosing
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, cast

import psycopg2
import psycopg2.errors
from arq.connections import ArqRedis
from arq.constants import result_key_prefix
from arq.jobs import Job, JobStatus

from core.crypto import (
    HEADER_SIZE,
    IntegrityError,
    KeyRing,
    StreamEncryptor,
    UnknownKeyError,
    ciphertext_size,
    decrypt_stream,
    final_segment_span,
    new_data_key,
    open_final_segment,
)
from core.db import Cursor, Pool, autocommit, fetch_all, fetch_one, transaction
from core.errors import Conflict, NotFound, validation_error
from core.storage import ObjectNotFound, Storage, StorageError
from models import activity
from models.common import check_audience, fetch_owned, parse_id
from models.pagination import Page, PageRequest, fetch_page

log = logging.getLogger(__name__)

TYPES = ("document", "photo", "video", "voice", "other")
CATEGORIES = (
    "legal",
    "financial",
    "medical",
    "insurance",
    "property",
    "digital_accounts",
    "personal",
    "other",
)
STATUSES = ("pending", "available", "failed")
# Types whose content must be of one media family: a "photo" that is a PDF is refused.
MEDIA_FAMILIES = {"photo": "image/", "video": "video/", "voice": "audio/"}
MESSAGE_MEDIA_TYPES = tuple(MEDIA_FAMILIES)

VERIFY_JOB = "verify_archive_item"
KEY_PREFIX = "archive/"
UPLOAD_CHUNK_SIZE = 1024 * 1024  # socket reads are sealed in batches of about this much
DOWNLOAD_CHUNK_SIZE = 1024 * 1024
MAX_FILE_NAME = 200
MEDIA_IN_USE = "The file is the media of a message; remove it from the message first."

COLUMNS = (
    "i.id, i.user_id, i.title, i.type, i.category, i.description, i.file_name, i.content_type,"
    " i.size_bytes, i.audience_all, i.status, i.failure_reason, i.sha256, i.created_at, i.updated_at,"
    " i.stored_at, ARRAY(SELECT a.beneficiary_id::text FROM archive_item_audience a"
    " WHERE a.item_id = i.id ORDER BY a.beneficiary_id) AS audience_ids"
)
# What a download needs beyond the public record: never shown to the owner.
SEALED_COLUMNS = "i.storage_key, i.key_id, i.wrapped_key"

# Controls, quotes, path and shell specials, and bidi overrides (which can disguise "exe.pdf").
_UNSAFE_NAME_CHARS = re.compile(r"[\x00-\x1f\x7f-\x9f\"'`/\\:*?<>|;\u200e\u200f\u202a-\u202e\u2066-\u2069]+")
_MEDIA_TOKEN = r"[a-z0-9][a-z0-9!#$&^_.+-]{0,126}"  # noqa: S105 - a regex, not a secret
_MEDIA_TYPE_RE = re.compile(rf"{_MEDIA_TOKEN}/{_MEDIA_TOKEN}")
_CHARSET_RE = re.compile(r"charset\s*=\s*\"?([A-Za-z0-9._:-]{1,40})\"?", re.IGNORECASE)


@dataclass(frozen=True)
class Sealed:
    """What the API stored for one upload: where, under which wrapped key, and of what."""

    storage_key: str
    key_id: str
    wrapped_key: bytes
    size: int  # plaintext bytes
    stored_bytes: int  # ciphertext bytes
    sha256: bytes  # of the plaintext


class VerificationFailed(Exception):
    """The stored object is not the ciphertext the item records: retrying cannot help."""


# --------------------------------------------------------------------------------------------
# Rules on upload metadata
# --------------------------------------------------------------------------------------------


def sanitize_file_name(raw: str | None) -> str:
    """A name safe in Content-Disposition and on any disk: basename only, no controls, quotes
    or separators, NFC, at most MAX_FILE_NAME characters (the extension kept when trimming)."""
    # Browsers escape '"', CR and LF in multipart file names as %22, %0D, %0A (WHATWG).
    name = re.sub(r"%(22|0[dDaA])", "_", unicodedata.normalize("NFC", raw or ""))
    name = re.split(r"[/\\]", name)[-1]
    name = _UNSAFE_NAME_CHARS.sub("_", name)
    name = " ".join(name.split()).strip(" .")
    if len(name) > MAX_FILE_NAME:
        stem, dot, ext = name.rpartition(".")
        if dot and 0 < len(ext) <= 16:
            name = stem[: MAX_FILE_NAME - len(ext) - 1] + "." + ext
        else:
            name = name[:MAX_FILE_NAME]
    return name or "file"


def normalize_content_type(raw: str | None) -> str:
    """`type/subtype` lowercased, plus a charset if one was given; anything else is octet-stream.

    The value is echoed in the download's Content-Type, so nothing outside this grammar may
    pass (no header injection, no odd parameters).
    """
    if not raw:
        return "application/octet-stream"
    essence, _, params = raw.partition(";")
    essence = essence.strip().lower()
    if not _MEDIA_TYPE_RE.fullmatch(essence):
        return "application/octet-stream"
    charset = _CHARSET_RE.search(params)
    return f"{essence}; charset={charset.group(1).lower()}" if charset else essence


def check_content_type(item_type: str, content_type: str) -> None:
    """A photo must be an image, a video a video and a voice note audio (400 otherwise)."""
    family = MEDIA_FAMILIES.get(item_type)
    if family and not content_type.startswith(family):
        raise validation_error(
            {"type": [f"A {item_type} must be uploaded with a {family}* content type, not {content_type}."]}
        )


def storage_key(user_id: Any, item_id: Any) -> str:
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


def job_id(item_id: Any) -> str:
    return f"archive:{item_id}"


def _record(row: dict[str, Any]) -> dict[str, Any]:
    """Row -> the owner's view: audience {all, beneficiary_ids}, sha256 as hex."""
    record = dict(row)
    audience_all = record.pop("audience_all")
    ids = record.pop("audience_ids")
    record["audience"] = {"all": audience_all, "beneficiary_ids": [] if audience_all else ids}
    digest = record.get("sha256")
    record["sha256"] = bytes(digest).hex() if digest is not None else None
    return record


# --------------------------------------------------------------------------------------------
# Upload: sealing into storage, then the item row
# --------------------------------------------------------------------------------------------


async def seal_upload(
    storage: Storage, keys: KeyRing, user_id: str, item_id: str, batches: AsyncIterable[Sequence[bytes]]
) -> Sealed:
    """Encrypt an upload as it streams in and put the ciphertext straight into storage.

    `batches` are lists of socket reads (~UPLOAD_CHUNK_SIZE together), hashed and sealed
    as they come, under a fresh data key wrapped under the primary key. Plaintext is never
    written anywhere. If the stream fails (413, the client hangs up, storage errors) the
    backend discards what it wrote and nothing is left behind.

    Sealing runs on the event loop: about 1 ms per MiB (SHA-256 ~1.9 GB/s, AES-GCM ~4 GB/s).
    A thread was measured slower (bench/README.md): the many short GIL-releasing calls of
    hashing and per-segment sealing wait on the busy event loop to get the GIL back.
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

    key = storage_key(user_id, item_id)
    async with aclosing(ciphertext()) as source:
        stored_bytes = await storage.put_stream(key, source)
    return Sealed(key, key_id, wrapped_key, size, stored_bytes, digest.digest())


async def discard_upload(storage: Storage, key: str) -> None:
    """Best effort after an upload that will not be committed; the orphan sweeper does the rest."""
    try:
        await storage.delete(key)
    except StorageError as exc:
        log.warning(
            "could not remove an uncommitted upload; the orphan sweeper will",
            extra={"key": key, "error": str(exc)},
        )


async def _get(cur: Cursor, user_id: str, item_id: str, sealed: bool = False) -> dict[str, Any]:
    columns = f"{COLUMNS}, {SEALED_COLUMNS}" if sealed else COLUMNS
    return await fetch_owned(
        cur, f"SELECT {columns} FROM archive_items i", user_id, item_id, "Archive item", alias="i"
    )


async def create(
    pool: Pool, user_id: str, item_id: str, data: dict[str, Any], sealed: Sealed
) -> dict[str, Any]:
    """Commit the item `pending` with its audience and activity entry, in one transaction.

    `data` holds the validated fields plus `file_name` and `content_type`.
    """
    audience = data["audience"]
    async with transaction(pool) as cur:
        await cur.execute(
            "INSERT INTO archive_items (id, user_id, title, type, category, description, file_name,"
            " content_type, size_bytes, audience_all, storage_key, key_id, wrapped_key, stored_bytes,"
            " sha256, stored_at) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s,"
            " clock_timestamp())",
            (
                item_id,
                user_id,
                data.get("title") or data["file_name"],
                data["type"],
                data["category"],
                data.get("description"),
                data["file_name"],
                data["content_type"],
                sealed.size,
                audience["all"],
                sealed.storage_key,
                sealed.key_id,
                psycopg2.Binary(sealed.wrapped_key),
                sealed.stored_bytes,
                psycopg2.Binary(sealed.sha256),
            ),
        )
        if not audience["all"] and audience["beneficiary_ids"]:
            await check_audience(cur, user_id, audience)
            await cur.execute(
                "INSERT INTO archive_item_audience (item_id, beneficiary_id) SELECT %s, unnest(%s::uuid[])",
                (item_id, audience["beneficiary_ids"]),
            )
        await activity.record(
            cur,
            user_id=user_id,
            kind="archive_item.created",
            entity_id=item_id,
            summary=f"Archived a {data['type']}",
            metadata={
                "fields": [f for f in ("title", "type", "category", "description", "audience") if f in data],
                "sizeBytes": sealed.size,
            },
        )
        row = await _get(cur, user_id, item_id)
    return _record(row)


async def enqueue_verify(redis: ArqRedis, item_id: str) -> bool:
    """Queue the verify job once per item; True if this call queued it.

    The job id is derived from the item, so a second enqueue while one is queued or running
    is refused (it will run). arq also refuses an id whose finished result it still keeps;
    that result is stale if the item is still pending (the job died before finishing its
    bookkeeping), so it is dropped and the job queued again.
    """
    jid = job_id(item_id)
    if await redis.enqueue_job(VERIFY_JOB, item_id, _job_id=jid) is not None:
        return True
    status = await Job(jid, redis, _queue_name=redis.default_queue_name).status()
    if status is not JobStatus.complete:
        return False
    await redis.delete(result_key_prefix + jid)
    return await redis.enqueue_job(VERIFY_JOB, item_id, _job_id=jid) is not None


# --------------------------------------------------------------------------------------------
# Owner's reads and delete
# --------------------------------------------------------------------------------------------


async def list_page(pool: Pool, user_id: str, page: PageRequest) -> Page:
    async with autocommit(pool) as cur:
        result = await fetch_page(
            cur, f"SELECT {COLUMNS} FROM archive_items i WHERE i.user_id = %s", [user_id], page, "i."
        )
    return Page([_record(row) for row in result.items], result.next_cursor)


async def get(pool: Pool, user_id: str, raw_id: str, sealed: bool = False) -> dict[str, Any]:
    """The owner's item; `sealed` adds storage key, key id and wrapped key (for downloads)."""
    item_id = parse_id(raw_id, "Archive item")
    async with autocommit(pool) as cur:
        return _record(await _get(cur, user_id, item_id, sealed))


def require_available(item: dict[str, Any]) -> None:
    """409 naming the status unless the ciphertext is stored and can be served."""
    status = item["status"]
    if status == "available":
        return
    message = (
        "The file is still being verified (status pending); try again shortly."
        if status == "pending"
        else "The file could not be stored (status failed); delete it and upload it again."
    )
    raise Conflict(message, extra={"itemStatus": status, "failureReason": item.get("failure_reason")})


async def delete(pool: Pool, user_id: str, raw_id: str) -> str:
    """Remove row and audience, and queue the object's removal; return its key.

    The object key is recorded in archive_deletions in the same transaction, so the object
    is removed even if storage is down right now (the sweeper retries).
    """
    item_id = parse_id(raw_id, "Archive item")
    async with transaction(pool) as cur:
        await cur.execute(
            "SELECT m.id::text AS id FROM messages m WHERE m.media_id = %s AND m.user_id = %s ORDER BY m.id",
            (item_id, user_id),
        )
        attached = [row["id"] for row in await cur.fetchall()]
        if attached:
            raise Conflict(MEDIA_IN_USE, extra={"messageIds": attached})
        try:
            await cur.execute(
                "DELETE FROM archive_items WHERE id = %s AND user_id = %s RETURNING type", (item_id, user_id)
            )
        except psycopg2.errors.ForeignKeyViolation:
            raise Conflict(MEDIA_IN_USE) from None  # attached by a message committed just now
        row = await cur.fetchone()
        if row is None:
            raise NotFound("Archive item")
        key = storage_key(user_id, item_id)
        await cur.execute(
            "INSERT INTO archive_deletions (storage_key) VALUES (%s) ON CONFLICT DO NOTHING", (key,)
        )
        await activity.record(
            cur,
            user_id=user_id,
            kind="archive_item.deleted",
            entity_id=item_id,
            summary=f"Deleted a {row['type']} from the archive",
        )
    return key


async def remove_object(pool: Pool, storage: Storage, key: str) -> bool:
    """Delete an object listed in archive_deletions, then its entry; False if storage failed."""
    try:
        await storage.delete(key)
    except StorageError as exc:
        async with autocommit(pool) as cur:
            await cur.execute(
                "UPDATE archive_deletions SET attempts = attempts + 1, last_attempt_at = clock_timestamp()"
                " WHERE storage_key = %s",
                (key,),
            )
        log.warning("archive object removal failed; will retry", extra={"key": key, "error": str(exc)})
        return False
    async with autocommit(pool) as cur:
        await cur.execute("DELETE FROM archive_deletions WHERE storage_key = %s", (key,))
    return True


async def check_media(cur: Cursor, user_id: str, media_id: Any) -> str | None:
    """A message's media must be one of the owner's archive items of type photo, video or
    voice, in any status (it may still be pending); 400 otherwise. Returns the id as text."""
    if media_id is None:
        return None
    media_id = str(media_id)
    # KEY SHARE: a concurrent delete of the item waits for this transaction, then gets a 409.
    await cur.execute(
        "SELECT type FROM archive_items WHERE id = %s AND user_id = %s FOR KEY SHARE", (media_id, user_id)
    )
    row = await cur.fetchone()
    if row is None:
        raise validation_error({"mediaId": ["Not one of your archive items."]})
    if row["type"] not in MESSAGE_MEDIA_TYPES:
        kinds = ", ".join(MESSAGE_MEDIA_TYPES)
        raise validation_error({"mediaId": [f"Must be an archive item of type {kinds}, not {row['type']}."]})
    return media_id


# --------------------------------------------------------------------------------------------
# Reading the plaintext back (owner downloads, and the capsule's)
# --------------------------------------------------------------------------------------------


async def plaintext(storage: Storage, keys: KeyRing, item: dict[str, Any]) -> AsyncGenerator[bytes, None]:
    """Stream an available item's plaintext: fetch, then decrypt segment by segment.

    The data key is unwrapped before anything is fetched, so an unknown key id or a damaged
    wrapped key fails on the first `anext` (IntegrityError). Every chunk yielded has been
    authenticated; an IntegrityError (or StorageError) raised later means the rest is missing
    or forged, and a consumer streaming to a client must abort rather than end normally.
    """
    item_id = str(item["id"])
    data_key = keys.unwrap_data_key(item["key_id"], bytes(item["wrapped_key"]), item_id)
    source = cast(AsyncGenerator[bytes, None], storage.get_stream(item["storage_key"], DOWNLOAD_CHUNK_SIZE))
    async with aclosing(source):
        async for chunk in decrypt_stream(data_key, item_id, source):
            yield chunk


# --------------------------------------------------------------------------------------------
# The verify job's bookkeeping (workers/archive.py)
# --------------------------------------------------------------------------------------------


async def claim_attempt(pool: Pool, item_id: str) -> dict[str, Any] | None:
    """Count one more attempt at a pending item and return it; None if it is not pending."""
    return await fetch_one(
        pool,
        "UPDATE archive_items SET attempts = attempts + 1, updated_at = clock_timestamp()"
        " WHERE id = %s AND status = 'pending'"
        " RETURNING id::text AS id, size_bytes, stored_bytes, storage_key, key_id, wrapped_key, attempts",
        (item_id,),
    )


async def verify_stored(storage: Storage, keys: KeyRing, item: dict[str, Any]) -> None:
    """Check, from this host, that the item's object is whole and opens under its recorded key.

    Its length must be exactly the ciphertext length of the recorded plaintext size, and its
    final segment (read with its header, a few bytes to 64 KiB) must authenticate under the
    unwrapped data key and the item id: together that proves the stream is complete and
    sealed by this upload. Every other segment is authenticated whenever it is downloaded.
    Raises VerificationFailed (permanent), or StorageError / UnknownKeyError (worth a retry:
    storage is down, or this worker's ENCRYPTION_KEYS lags behind a rotation).
    """
    item_id, key, size = str(item["id"]), item["storage_key"], item["size_bytes"]
    expected = ciphertext_size(size)
    try:
        actual = await storage.size(key)
    except ObjectNotFound:
        raise VerificationFailed("the stored object is missing") from None
    if actual != expected or item["stored_bytes"] != expected:
        raise VerificationFailed(f"the stored object has {actual} bytes, expected {expected}")
    offset, length = final_segment_span(size)
    header = await storage.read_range(key, 0, HEADER_SIZE)
    tail = await storage.read_range(key, offset, length)
    try:
        data_key = keys.unwrap_data_key(item["key_id"], bytes(item["wrapped_key"]), item_id)
        open_final_segment(data_key, item_id, header, tail, size)
    except UnknownKeyError:
        raise
    except IntegrityError as exc:
        raise VerificationFailed(str(exc)) from None


async def mark_available(pool: Pool, item_id: str) -> bool:
    """`pending` -> `available`; False if the item is no longer pending (deleted, failed)."""
    row = await fetch_one(
        pool,
        "UPDATE archive_items SET status = 'available', failure_reason = NULL, updated_at = clock_timestamp()"
        " WHERE id = %s AND status = 'pending' RETURNING id",
        (item_id,),
    )
    return row is not None


async def mark_failed(pool: Pool, item_id: str, reason: str) -> bool:
    """Give up on a pending item; its object stays until the owner deletes the item."""
    row = await fetch_one(
        pool,
        "UPDATE archive_items SET status = 'failed', failure_reason = %s, updated_at = clock_timestamp()"
        " WHERE id = %s AND status = 'pending' RETURNING id",
        (reason, item_id),
    )
    return row is not None


async def exists(pool: Pool, item_id: str) -> bool:
    return await fetch_one(pool, "SELECT 1 FROM archive_items WHERE id = %s", (item_id,)) is not None


# --------------------------------------------------------------------------------------------
# The sweeper's queries
# --------------------------------------------------------------------------------------------


async def stale_pending(pool: Pool, older_than: timedelta, limit: int = 500) -> list[str]:
    """Pending items nothing has touched for a while: their job may have been lost."""
    rows = await fetch_all(
        pool,
        "SELECT id::text AS id FROM archive_items WHERE status = 'pending'"
        " AND updated_at < clock_timestamp() - %s ORDER BY updated_at LIMIT %s",
        (older_than, limit),
    )
    return [row["id"] for row in rows]


async def pending_deletions(pool: Pool, limit: int = 500) -> list[str]:
    rows = await fetch_all(
        pool, "SELECT storage_key FROM archive_deletions ORDER BY created_at LIMIT %s", (limit,)
    )
    return [row["storage_key"] for row in rows]


async def known_ids(pool: Pool, item_ids: Collection[str]) -> set[str]:
    """Which of these item ids still have a row."""
    rows = await fetch_all(
        pool, "SELECT id::text AS id FROM archive_items WHERE id = ANY(%s::uuid[])", (list(item_ids),)
    )
    return {row["id"] for row in rows}


async def wrapped_under_other_keys(
    pool: Pool, key_id: str, after: str, limit: int = 500
) -> list[dict[str, Any]]:
    """Items whose data key is wrapped under another key than `key_id`, by id after `after`."""
    return await fetch_all(
        pool,
        "SELECT id::text AS id, key_id, wrapped_key FROM archive_items"
        " WHERE key_id <> %s AND id > %s::uuid ORDER BY id LIMIT %s",
        (key_id, after, limit),
    )


async def rewrap(pool: Pool, item_id: str, old_key_id: str, key_id: str, wrapped_key: bytes) -> bool:
    """Swap in a data key re-wrapped under `key_id`, unless someone else changed it meanwhile."""
    row = await fetch_one(
        pool,
        "UPDATE archive_items SET key_id = %s, wrapped_key = %s WHERE id = %s AND key_id = %s RETURNING id",
        (key_id, psycopg2.Binary(wrapped_key), item_id, old_key_id),
    )
    return row is not None
