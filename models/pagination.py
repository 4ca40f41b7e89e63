"""Keyset pagination shared by every list: newest first, stable under concurrent inserts.

A cursor is the (created_at, id) of the last row served, base64url-encoded so clients treat
it as opaque. `WHERE (created_at, id) < cursor` never repeats a row and never skips one that
existed when the walk began, unlike OFFSET, which shifts when rows are inserted.
"""

from __future__ import annotations

import base64
import binascii
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Generic, TypeVar

from core.db import Cursor

DEFAULT_LIMIT = 50
MAX_LIMIT = 200


@dataclass(frozen=True)
class PageRequest:
    limit: int = DEFAULT_LIMIT
    after: tuple[datetime, str] | None = None


T = TypeVar("T")


@dataclass(frozen=True)
class Page(Generic[T]):
    items: list[T]
    next_cursor: str | None


def encode_cursor(*, created_at: datetime, row_id: str) -> str:
    raw = f"{created_at.isoformat()}|{row_id}".encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(*, cursor: str) -> tuple[datetime, str]:
    """Raise ValueError for anything that is not a cursor this service issued."""
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
        stamp, row_id = raw.split("|", 1)
        created_at = datetime.fromisoformat(stamp)
        uuid.UUID(row_id)
    except (ValueError, UnicodeDecodeError, binascii.Error):
        raise ValueError("Invalid cursor.") from None
    if created_at.tzinfo is None:
        raise ValueError("Invalid cursor.")
    try:  # PostgreSQL refuses offsets past ±15:59 that Python accepts: compare in UTC
        return created_at.astimezone(UTC), row_id
    except OverflowError:
        raise ValueError("Invalid cursor.") from None


async def fetch_page(
    cur: Cursor, *, sql: str, params: list[Any], page: PageRequest, prefix: str = ""
) -> Page[dict[str, Any]]:
    """Run `sql` (a SELECT ending in a WHERE clause) one page at a time.

    `prefix` qualifies created_at/id when the query joins tables (e.g. "b.").
    """
    params = list(params)
    if page.after is not None:
        sql += f" AND ({prefix}created_at, {prefix}id) < (%s, %s::uuid)"
        params.extend(page.after)
    sql += f" ORDER BY {prefix}created_at DESC, {prefix}id DESC LIMIT %s"
    params.append(page.limit + 1)
    await cur.execute(sql, params)
    rows: list[dict[str, Any]] = await cur.fetchall()
    if len(rows) <= page.limit:
        return Page(rows, None)
    rows = rows[: page.limit]
    last = rows[-1]
    return Page(rows, encode_cursor(created_at=last["created_at"], row_id=last["id"]))
