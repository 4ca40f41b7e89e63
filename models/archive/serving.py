"""Reading an archive item to open its stored file: the owner's download and export, and the
rules for when a file may be served.

The rows are models.archive.items' (the one writer of `archive_items`); this module only reads
them with their sealed columns, and changes with who may open what and when (docs/security.md,
"The owner's key"; docs/archive.md), not with the upload and verify lifecycle.
"""

from __future__ import annotations

from datetime import datetime

from core.clock import wire_time
from core.db import Cursor, Pool, autocommit
from core.errors import Conflict
from core.files.crypto import KeyRing
from models.archive import items
from models.archive.items import ArchiveItem, SealedArchiveItem
from models.common import as_record, parse_id

# Once the plan is released: the earliest moment a letter using this item as its media opens to
# its heirs (as models.claim.capsules `OPENS_AT` decides it); NULL when no letter uses it or the
# plan is not released.
_MEDIA_OPENS_AT = (
    "(SELECT min(CASE m.release_rule_kind WHEN 'on_release' THEN p.released_at"
    " WHEN 'on_date' THEN GREATEST(m.release_on_date::timestamp AT TIME ZONE 'UTC', p.released_at)"
    " ELSE p.released_at + m.release_after_days * interval '24 hours' END)"
    " FROM messages m JOIN plans p ON p.user_id = m.user_id AND p.status = 'Released'"
    " WHERE m.media_id = i.id) AS media_opens_at"
)


async def get_sealed(
    pool: Pool, ring: KeyRing, *, user_id: str, raw_id: str, now: datetime
) -> SealedArchiveItem:
    """The owner's item with storage key, key id and wrapped key (for downloads). Once the plan
    is released, the photo, video or recording of a letter that has not yet opened to its heirs
    is 409: whoever holds the owner's key must not play what was meant for later (docs/security.md,
    "The owner's key")."""
    item_id = parse_id(raw=raw_id, what="Archive item")
    async with autocommit(pool) as cur:
        row = await items.ROWS.row(
            cur,
            user_id=user_id,
            row_id=item_id,
            columns=f"{items.COLUMNS}, {items.SEALED_COLUMNS}, {_MEDIA_OPENS_AT}",
        )
    opens_at = row.pop("media_opens_at")
    if opens_at is not None and opens_at > now:
        raise Conflict(
            f"This file belongs to a letter that opens to its heirs on {wire_time(opens_at)}: after the "
            "release it is theirs to open first.",
            details={"opensAt": wire_time(opens_at)},
        )
    return as_record(SealedArchiveItem, row=items.ROWS.record(ring, row))


async def all_sealed(cur: Cursor, ring: KeyRing, *, user_id: str) -> list[SealedArchiveItem]:
    """Every item of the owner with what opening its file needs, oldest first, on the caller's
    cursor (the owner's export: its list of items and its files, from one read)."""
    await cur.execute(
        f"SELECT {items.COLUMNS}, {items.SEALED_COLUMNS} FROM archive_items i WHERE i.user_id = %s"
        " ORDER BY i.created_at, i.id",
        (user_id,),
    )
    return [as_record(SealedArchiveItem, row=items.ROWS.record(ring, row)) for row in await cur.fetchall()]


def require_available(*, item: ArchiveItem) -> None:
    """409 naming the status unless the ciphertext is stored and can be served."""
    status = item["status"]
    if status == "available":
        return
    message = {
        "pending": "The file is still being verified (status pending); try again shortly.",
        "damaged": items.DAMAGED_SENTENCE,
    }.get(status, "The file could not be stored (status failed); delete it and upload it again.")
    raise Conflict(message, extra={"itemStatus": status, "failureReason": item.get("failure_reason")})
