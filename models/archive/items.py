"""Archive items: their rows, and the lifecycle of a row from upload to delete.

Lifecycle (docs/archive.md): the API seals the upload into storage (core/files/sealed_files.py) and
then commits the item `pending` with its activity entry here; the `verify_archive_item` job
(workers/archive.py) checks the stored object and marks it `available`, or `failed` with a
reason. Every state change after the upload is one guarded UPDATE, so a rerun, a late job or a
concurrent delete can never move an item backwards. File-name and content-type rules are in
models/archive/upload_rules.py. This module is the one that writes `archive_items`: the owner's
side first, then the worker's (the verify job's bookkeeping, the scrub's verdicts, re-wrapping
data keys after a key rotation; workers/archive.py). Reads that change for other reasons live
beside it: models/archive/serving.py (opening a stored file) and models/archive/sweeps.py (the
sweepers' queries).
"""

from __future__ import annotations

import logging
from datetime import datetime
from typing import Any, TypedDict

import psycopg2
import psycopg2.errors
from arq.connections import ArqRedis

from core import queue
from core.db import Cursor, Pool, autocommit, fetch_one, transaction
from core.errors import Conflict, NotFound, validation_error
from core.files.crypto import KeyRing
from core.files.sealed_files import Sealed, object_key
from core.files.storage import Storage, StorageError
from core.text.i18n import N_
from models import activity, plans, sealed_text
from models.archive.upload_rules import MEDIA_FAMILIES
from models.common import Audience, OwnedRows, as_record, check_audience, parse_id

log = logging.getLogger(__name__)

TYPES = ("document", "photo", "video", "voice", "other")
# The timeline's sentence for each event of an item, by its type (whole sentences: a type's word
# agrees with its sentence in most languages).
SUMMARIES = {
    "created": {
        "document": N_("Archived a document"),
        "photo": N_("Archived a photo"),
        "video": N_("Archived a video"),
        "voice": N_("Archived a voice recording"),
        "other": N_("Archived a file"),
    },
    "deleted": {
        "document": N_("Deleted a document from the archive"),
        "photo": N_("Deleted a photo from the archive"),
        "video": N_("Deleted a video from the archive"),
        "voice": N_("Deleted a voice recording from the archive"),
        "other": N_("Deleted a file from the archive"),
    },
    "damaged": {
        "document": N_("A document in the archive was found damaged in storage"),
        "photo": N_("A photo in the archive was found damaged in storage"),
        "video": N_("A video in the archive was found damaged in storage"),
        "voice": N_("A voice recording in the archive was found damaged in storage"),
        "other": N_("A file in the archive was found damaged in storage"),
    },
    "restored": {
        "document": N_("A damaged document in the archive opens whole again"),
        "photo": N_("A damaged photo in the archive opens whole again"),
        "video": N_("A damaged video in the archive opens whole again"),
        "voice": N_("A damaged voice recording in the archive opens whole again"),
        "other": N_("A damaged file in the archive opens whole again"),
    },
}
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
STATUSES = ("pending", "available", "failed", "damaged")
MESSAGE_MEDIA_TYPES = tuple(MEDIA_FAMILIES)

VERIFY_JOB = "verify_archive_item"
DAMAGED_SENTENCE = (
    "The stored file was found damaged by the archive's regular check and can no longer be opened"
    " (status damaged); delete the item and upload the file again."
)
MEDIA_IN_USE = "The file is the media of a message; remove it from the message first."

# Title, description and file name are sealed at rest (models/sealed_text.py): `_record` opens them.
COLUMNS = (
    "i.id::text AS id, i.user_id::text AS user_id, i.type, i.category,"
    f" {sealed_text.select_list(table='archive_items', alias='i')},"
    " i.content_type, i.size_bytes, i.audience_all,"
    " i.status, i.failure_reason, i.sha256, i.damaged_at,"
    " i.created_at, i.updated_at, i.stored_at,"
    " ARRAY(SELECT a.beneficiary_id::text FROM archive_item_audience a"
    " WHERE a.item_id = i.id ORDER BY a.beneficiary_id) AS audience_ids"
)
# What opening the stored file needs beyond the public record (a core.files.sealed_files.SealedFile):
# never shown to the owner.
SEALED_COLUMNS = "i.storage_key, i.key_id, i.wrapped_key, i.stored_bytes"


class ArchiveItem(TypedDict):
    """The owner's view of an item (GET /api/archive/:id)."""

    id: str
    user_id: str
    title: str
    type: str
    category: str
    description: str | None
    file_name: str
    content_type: str
    size_bytes: int  # plaintext
    status: str
    failure_reason: str | None
    sha256: str | None  # hex; None only on items failed by migration 0004
    damaged_at: datetime | None  # when the scrub found the stored file no longer whole
    created_at: datetime
    updated_at: datetime
    stored_at: datetime | None
    audience: Audience


class SealedArchiveItem(ArchiveItem):
    """An item with what opening its file needs: a core.files.sealed_files.SealedFile.

    The sealed columns are NULL only on items failed by migration 0004, which are never
    opened (models.archive.serving.require_available first).
    """

    storage_key: str
    key_id: str
    wrapped_key: bytes
    stored_bytes: int


def _record(ring: KeyRing, row: dict[str, Any]) -> ArchiveItem:
    """Row -> the owner's view: texts opened, audience {all, beneficiary_ids}, sha256 as hex (and,
    with the sealed columns, the wrapped key as bytes rather than the driver's memoryview)."""
    record = sealed_text.open_row(ring, table="archive_items", row=row)
    audience_all = record.pop("audience_all")
    ids = record.pop("audience_ids")
    record["audience"] = {"all": audience_all, "beneficiary_ids": [] if audience_all else ids}
    digest = record.get("sha256")
    record["sha256"] = bytes(digest).hex() if digest is not None else None
    if record.get("wrapped_key") is not None:
        record["wrapped_key"] = bytes(record["wrapped_key"])
    return as_record(ArchiveItem, row=record)


ROWS = OwnedRows(table="archive_items", alias="i", columns=COLUMNS, what="Archive item", record=_record)


# --------------------------------------------------------------------------------------------
# Upload: the item row, after its file is sealed into storage
# --------------------------------------------------------------------------------------------


async def create(
    pool: Pool, ring: KeyRing, *, user_id: str, item_id: str, data: dict[str, Any], sealed: Sealed
) -> ArchiveItem:
    """Commit the item `pending` with its audience and activity entry, in one transaction.

    `data` holds the validated fields plus `file_name` and `content_type`.
    """
    audience = data["audience"]
    texts = sealed_text.sealed_values(
        ring,
        table="archive_items",
        row_id=item_id,
        values={
            "title": data.get("title") or data["file_name"],
            "description": data.get("description"),
            "file_name": data["file_name"],
        },
    )
    async with transaction(pool) as cur:
        await plans.guard_contents(cur, user_id=user_id)
        await cur.execute(
            "INSERT INTO archive_items (id, user_id, title_sealed, type, category, description_sealed,"
            " file_name_sealed,"
            " content_type, size_bytes, audience_all, storage_key, key_id, wrapped_key, stored_bytes,"
            " sha256, stored_at) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s,"
            " clock_timestamp())",
            (
                item_id,
                user_id,
                texts["title_sealed"],
                data["type"],
                data["category"],
                texts["description_sealed"],
                texts["file_name_sealed"],
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
            await check_audience(cur, user_id=user_id, audience=audience)
            await cur.execute(
                "INSERT INTO archive_item_audience (item_id, beneficiary_id) SELECT %s, unnest(%s::uuid[])",
                (item_id, audience["beneficiary_ids"]),
            )
        await activity.record(
            cur,
            user_id=user_id,
            kind="archive_item.created",
            entity_id=item_id,
            summary=SUMMARIES["created"][data["type"]],
            metadata={
                "fields": [f for f in ("title", "type", "category", "description", "audience") if f in data],
                "sizeBytes": sealed.size,
            },
        )
        return await ROWS.one(cur, ring, user_id=user_id, row_id=item_id)


async def enqueue_verify(redis: ArqRedis, *, item_id: str) -> bool:
    """Queue the verify job once per item, after the commit and from the sweeper, while the item
    is pending (core.queue.after_commit); True if this call queued it."""
    return await queue.after_commit(redis, VERIFY_JOB, item_id, row_id=item_id)


# --------------------------------------------------------------------------------------------
# Owner's reads and delete
# --------------------------------------------------------------------------------------------


# The owner's list and one row by id (GET routes), as models.common.OwnedRows reads them.
list_page = ROWS.list_page
get = ROWS.get


async def delete(pool: Pool, *, user_id: str, raw_id: str) -> str:
    """Remove row and audience, and queue the object's removal; return its key.

    The object key is recorded in archive_deletions in the same transaction, so the object
    is removed even if storage is down right now (the sweeper retries).
    """
    item_id = parse_id(raw=raw_id, what="Archive item")
    async with transaction(pool) as cur:
        await plans.guard_contents(cur, user_id=user_id)
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
        key = object_key(user_id, item_id)
        await cur.execute(
            "INSERT INTO archive_deletions (storage_key) VALUES (%s) ON CONFLICT DO NOTHING", (key,)
        )
        await activity.record(
            cur,
            user_id=user_id,
            kind="archive_item.deleted",
            entity_id=item_id,
            summary=SUMMARIES["deleted"][row["type"]],
        )
    return key


async def remove_object(pool: Pool, storage: Storage, *, key: str) -> bool:
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


async def queue_account_removals(cur: Cursor, *, user_id: str) -> list[str]:
    """Every object of an account being deleted, recorded in archive_deletions in the deletion's
    last transaction (the rows then cascade away): removed after it, retried by the sweeper."""
    await cur.execute(
        "WITH keys AS (SELECT storage_key FROM archive_items WHERE user_id = %s AND storage_key IS NOT NULL),"
        " queued AS (INSERT INTO archive_deletions (storage_key) SELECT storage_key FROM keys"
        " ON CONFLICT DO NOTHING) SELECT storage_key FROM keys",
        (user_id,),
    )
    return [row["storage_key"] for row in await cur.fetchall()]


async def check_media(cur: Cursor, *, user_id: str, media_id: str | None) -> str | None:
    """A message's media must be one of the owner's archive items of type photo, video or
    voice, in any status (it may still be pending); 400 otherwise. Returns the id as text."""
    if media_id is None:
        return None
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


# ============================================================================================
# The worker's side (workers/archive.py): it changes with the worker's policies (retries,
# sweeps, rotation), not with what an owner can do.
# ============================================================================================


class ClaimedItem(TypedDict):
    """A pending item the verify job counted an attempt at: a core.files.sealed_files.SealedFile."""

    id: str
    size_bytes: int
    stored_bytes: int
    storage_key: str
    key_id: str
    wrapped_key: bytes
    attempts: int


# --------------------------------------------------------------------------------------------
# The verify job's bookkeeping (workers/archive.py)
# --------------------------------------------------------------------------------------------


async def claim_attempt(pool: Pool, *, item_id: str) -> ClaimedItem | None:
    """Count one more attempt at a pending item and return it; None if it is not pending."""
    row = await fetch_one(
        pool,
        "UPDATE archive_items SET attempts = attempts + 1, updated_at = clock_timestamp()"
        " WHERE id = %s AND status = 'pending'"
        " RETURNING id::text AS id, size_bytes, stored_bytes, storage_key, key_id, wrapped_key, attempts",
        (item_id,),
    )
    if row is None:
        return None
    row["wrapped_key"] = bytes(row["wrapped_key"])
    return as_record(ClaimedItem, row=row)


async def mark_available(pool: Pool, *, item_id: str) -> bool:
    """`pending` -> `available`; False if the item is no longer pending (deleted, failed)."""
    row = await fetch_one(
        pool,
        "UPDATE archive_items SET status = 'available', failure_reason = NULL, updated_at = clock_timestamp()"
        " WHERE id = %s AND status = 'pending' RETURNING id",
        (item_id,),
    )
    return row is not None


async def mark_failed(pool: Pool, *, item_id: str, reason: str) -> bool:
    """Give up on a pending item; its object stays until the owner deletes the item."""
    row = await fetch_one(
        pool,
        "UPDATE archive_items SET status = 'failed', failure_reason = %s, updated_at = clock_timestamp()"
        " WHERE id = %s AND status = 'pending' RETURNING id",
        (reason, item_id),
    )
    return row is not None


# --------------------------------------------------------------------------------------------
# The scrub's verdicts (models/archive/scrub.py reads the files and keeps its own table)
# --------------------------------------------------------------------------------------------


async def mark_damaged(cur: Cursor, *, item_id: str, now: datetime) -> str | None:
    """`available` -> `damaged`, with its timeline entry; the owner's id, or None if the item is
    no longer available (deleted, or already damaged)."""
    await cur.execute(
        "UPDATE archive_items SET status = 'damaged', damaged_at = %s, failure_reason = %s,"
        " updated_at = clock_timestamp() WHERE id = %s AND status = 'available'"
        " RETURNING user_id::text AS user_id, type",
        (now, DAMAGED_SENTENCE, item_id),
    )
    row = await cur.fetchone()
    if row is None:
        return None
    await activity.record(
        cur,
        user_id=row["user_id"],
        kind="archive_item.damaged",
        entity_id=item_id,
        summary=SUMMARIES["damaged"][row["type"]],
    )
    owner: str = row["user_id"]
    return owner


async def mark_whole_again(cur: Cursor, *, item_id: str) -> bool:
    """`damaged` -> `available` once the scrub reads it whole again (an operator restored the
    object from a backup or an earlier version), with its timeline entry."""
    await cur.execute(
        "UPDATE archive_items SET status = 'available', damaged_at = NULL, failure_reason = NULL,"
        " updated_at = clock_timestamp() WHERE id = %s AND status = 'damaged'"
        " RETURNING user_id::text AS user_id, type",
        (item_id,),
    )
    row = await cur.fetchone()
    if row is None:
        return False
    await activity.record(
        cur,
        user_id=row["user_id"],
        kind="archive_item.restored",
        entity_id=item_id,
        summary=SUMMARIES["restored"][row["type"]],
    )
    return True


async def rewrap(pool: Pool, *, item_id: str, old_key_id: str, key_id: str, wrapped_key: bytes) -> bool:
    """Swap in a data key re-wrapped under `key_id`, unless someone else changed it meanwhile."""
    row = await fetch_one(
        pool,
        "UPDATE archive_items SET key_id = %s, wrapped_key = %s WHERE id = %s AND key_id = %s RETURNING id",
        (key_id, psycopg2.Binary(wrapped_key), item_id, old_key_id),
    )
    return row is not None
