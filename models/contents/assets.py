"""Assets: what the plan hands on, each with a label and an exact decimal amount.

Amounts are Decimals end to end (a decimal string on the wire, NUMERIC in SQL), never floats.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from decimal import Decimal
from typing import Any, TypedDict, cast

from core.db import Cursor, Pool, autocommit, transaction
from models import activity
from models.common import changed_values, delete_owned, fetch_owned, parse_id, update_row, wire_names
from models.pagination import Page, PageRequest, fetch_page
from models.plan import plans

COLUMNS = "id, user_id, label, amount, asset_code, description, created_at, updated_at"
EDITABLE = ("label", "amount", "asset_code", "description")


class Asset(TypedDict):
    """A row of `assets`, as the owner sees it."""

    id: uuid.UUID
    user_id: uuid.UUID
    label: str
    amount: Decimal  # exact, with the scale the client sent
    asset_code: str | None
    description: str | None
    created_at: datetime
    updated_at: datetime


async def _get(cur: Cursor, user_id: str, row_id: str, lock: bool = False) -> Asset:
    row = await fetch_owned(cur, f"SELECT {COLUMNS} FROM assets", user_id, row_id, "Asset", lock)
    return cast(Asset, row)


async def list_page(pool: Pool, *, user_id: str, page: PageRequest) -> Page[Asset]:
    async with autocommit(pool) as cur:
        result = await fetch_page(cur, f"SELECT {COLUMNS} FROM assets WHERE user_id = %s", [user_id], page)
    return cast("Page[Asset]", result)


async def get(pool: Pool, *, user_id: str, raw_id: str) -> Asset:
    row_id = parse_id(raw_id, "Asset")
    async with autocommit(pool) as cur:
        return await _get(cur, user_id, row_id)


async def create(pool: Pool, *, user_id: str, data: dict[str, Any]) -> Asset:
    async with transaction(pool) as cur:
        await plans.guard_contents(cur, user_id)
        await cur.execute(
            "INSERT INTO assets (user_id, label, amount, asset_code, description)"
            f" VALUES (%s, %s, %s, %s, %s) RETURNING {COLUMNS}",
            (user_id, data["label"], data["amount"], data.get("asset_code"), data.get("description")),
        )
        row: Asset = await cur.fetchone()
        await activity.record(
            cur,
            user_id=user_id,
            kind="asset.created",
            entity_id=row["id"],
            summary="Asset added",
            metadata={"fields": wire_names(c for c in EDITABLE if c in data)},
        )
    return row


async def update(pool: Pool, *, user_id: str, raw_id: str, changes: dict[str, Any]) -> Asset:
    """Apply the fields given; an unchanged value writes nothing and records nothing.

    "12.50" → "12.5" is a change: the amount is stored as the client wrote it.
    """
    row_id = parse_id(raw_id, "Asset")
    async with transaction(pool) as cur:
        await plans.guard_contents(cur, user_id)
        row = await _get(cur, user_id, row_id, lock=True)
        proposed = {c: changes[c] for c in EDITABLE if c in changes}
        diff = changed_values(row, proposed)
        if "amount" in proposed and str(proposed["amount"]) != str(row["amount"]):
            diff["amount"] = proposed["amount"]  # equal value, new notation: still shown back as sent
        if diff:
            row = cast(Asset, await update_row(cur, "assets", row_id, diff, EDITABLE, COLUMNS))
            await activity.record(
                cur,
                user_id=user_id,
                kind="asset.updated",
                entity_id=row_id,
                summary="Asset updated",
                metadata={"fields": wire_names(diff)},
            )
    return row


async def delete(pool: Pool, *, user_id: str, raw_id: str) -> None:
    row_id = parse_id(raw_id, "Asset")
    async with transaction(pool) as cur:
        await plans.guard_contents(cur, user_id)
        await delete_owned(cur, "assets", user_id, row_id, "Asset")
        await activity.record(
            cur, user_id=user_id, kind="asset.deleted", entity_id=row_id, summary="Asset removed"
        )
