"""The files a released capsule serves: a document it lists, a message's media once the message
has opened, and the owner's timeline entry for a download.

The rules for which files a token may reach are the capsule's (models.claim.capsules: its
audience filter, release rules and shown statuses); this module turns a match into what
streaming needs (a core.files.sealed_files.ServedFile), and a damaged file into a 409 in words.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from core.db import Pool, fetch_one, transaction
from core.errors import Conflict, NotFound
from core.files.crypto import KeyRing
from core.files.sealed_files import ServedFile
from core.text.i18n import N_
from models import activity, sealed_text
from models.claim import capsules
from models.claim.capsules import Capsule
from models.common import as_record, parse_id

DAMAGED = (
    "This file was found damaged in storage by the service's regular check and can no longer be opened;"
    " everything else in the capsule is unaffected."
)

# What a download needs to stream an item (a core.files.sealed_files.ServedFile; never shown).
_SERVED_COLUMNS = (
    "i.id::text AS id, i.storage_key, i.key_id, i.wrapped_key, i.size_bytes, i.stored_bytes,"
    " i.file_name_sealed, i.content_type, i.status"
)


def _served(ring: KeyRing, row: dict[str, Any]) -> ServedFile:
    """A file to stream; a damaged one is a 409 in words (models.archive.serving.require_available)."""
    if row["status"] != "available":
        raise Conflict(DAMAGED, extra={"itemStatus": row["status"]})
    record = sealed_text.open_row(
        ring, table="archive_items", row={k: v for k, v in row.items() if k != "status"}
    )
    return as_record(ServedFile, row={**record, "wrapped_key": bytes(row["wrapped_key"])})


async def document_for_download(pool: Pool, ring: KeyRing, *, capsule: Capsule, raw_id: str) -> ServedFile:
    """One of the documents the capsule lists, with what streaming it needs; 404 otherwise."""
    item_id = parse_id(raw=raw_id, what="Document")
    if not capsules.is_released(capsule=capsule):
        raise NotFound("Document")
    row = await fetch_one(
        pool,
        f"SELECT {_SERVED_COLUMNS} FROM archive_items i WHERE i.id = %(id)s AND {capsules.DOCUMENT_FILTER}",
        {"id": item_id, "owner": capsule["owner_id"], "beneficiary": capsule["beneficiary_id"]},
    )
    if row is None:
        raise NotFound("Document")
    return _served(ring, row)


async def media_for_message(
    pool: Pool, ring: KeyRing, *, capsule: Capsule, raw_id: str, now: datetime
) -> ServedFile:
    """The media of a message the capsule shows as opened; a sealed one's is 404, like a stranger's."""
    message_id = parse_id(raw=raw_id, what="Media")
    released_at = capsule["released_at"]
    if not capsules.is_released(capsule=capsule) or released_at is None:
        raise NotFound("Media")
    row = await fetch_one(
        pool,
        f"SELECT {_SERVED_COLUMNS} FROM messages m JOIN archive_items i ON i.id = m.media_id"
        f" WHERE m.id = %(id)s AND m.user_id = %(owner)s AND {capsules.ADDRESSED}"
        f" AND i.status IN {capsules.SHOWN} AND {capsules.OPENS_AT} <= %(now)s",
        {
            "id": message_id,
            "owner": capsule["owner_id"],
            "beneficiary": capsule["beneficiary_id"],
            "released": released_at,
            "now": now,
        },
    )
    if row is None:
        raise NotFound("Media")
    return _served(ring, row)


async def record_download(pool: Pool, *, capsule: Capsule, document_id: str) -> None:
    """`capsule.document_downloaded` on the owner's timeline: ids only, no names or titles."""
    async with transaction(pool) as cur:
        await activity.record(
            cur,
            user_id=capsule["owner_id"],
            kind="capsule.document_downloaded",
            entity_id=capsule["beneficiary_id"],
            summary=N_("A beneficiary downloaded a document from their capsule"),
            metadata={"documentId": document_id},
        )
