"""Assets: what the plan hands on, each with a label and an exact decimal amount, or none: a
thing (a piano, a ring) has no amount and no asset code, and goes whole to its audience.

Amounts are Decimals end to end (a decimal string on the wire), never floats. Label, description
and amount are sealed at rest (models/sealed_text.py): the amount as the decimal string the owner
sent, so "12.50" comes back "12.50". Nothing adds or compares amounts in SQL; their bounds are
the request schema's (api/contents/assets.py). Decision: docs/sealed-text.md. Each asset has an
audience like messages and archive items (every beneficiary, the default, or a list of the
owner's own): an heir's capsule lists only the assets addressed to them (docs/capsule.md).
"""

from __future__ import annotations

import uuid
from datetime import datetime
from decimal import Decimal
from typing import Any, TypedDict

from core.db import Cursor, Pool, transaction
from core.errors import BadRequest
from core.files.crypto import KeyRing
from core.text.i18n import N_
from models import activity, plans, sealed_text
from models.common import (
    Audience,
    OwnedRows,
    as_record,
    changed_values,
    check_audience,
    parse_id,
    update_row,
    wire_names,
)

COLUMNS = (
    f"id, user_id, {sealed_text.select_list(table='assets', alias='assets')},"
    " asset_code, created_at, updated_at,"
    " audience_all, ARRAY(SELECT a.beneficiary_id::text FROM asset_audience a"
    " WHERE a.asset_id = assets.id ORDER BY a.beneficiary_id) AS audience_ids"
)
EDITABLE = ("label", "amount", "asset_code", "description")
WRITABLE_COLUMNS = sealed_text.writable(table="assets", columns=EDITABLE)


class Asset(TypedDict):
    """A row of `assets`, as the owner sees it."""

    id: str
    user_id: str
    label: str
    amount: Decimal | None  # exact, with the scale the client sent; None: a thing (`is_thing`)
    asset_code: str | None
    description: str | None
    created_at: datetime
    updated_at: datetime
    # Who sees it in their capsule: everyone (the default) or the listed beneficiaries.
    audience: Audience


def _record(ring: KeyRing, row: dict[str, Any]) -> Asset:
    """Row → record: texts opened, the amount back to a Decimal with the scale it was sent with,
    audience {all, beneficiary_ids} from its two columns."""
    record = sealed_text.open_row(ring, table="assets", row=row)
    record["amount"] = None if record["amount"] is None else Decimal(str(record["amount"]))
    audience_all = record.pop("audience_all")
    ids = record.pop("audience_ids")
    record["audience"] = {"all": audience_all, "beneficiary_ids": [] if audience_all else ids}
    return as_record(Asset, row=record)


THING_WITH_CURRENCY = (
    "An asset with an asset code is an amount of that currency: give its amount, or set assetCode to "
    "null for a thing (an asset without an amount)."
)


def is_thing(*, amount: Decimal | None, asset_code: str | None) -> bool:
    """A thing is an asset recorded without an amount, and so without a currency: it is not
    divided, it goes whole to everyone it is for (docs/capsule.md "Things")."""
    return amount is None and asset_code is None


def _check_thing(*, amount: Decimal | None, asset_code: str | None) -> None:
    if amount is None and asset_code is not None:
        raise BadRequest(THING_WITH_CURRENCY, details={"amount": [THING_WITH_CURRENCY]})


async def _set_audience(cur: Cursor, user_id: str, asset_id: str, audience: Audience) -> None:
    """Replace the asset's audience; listed ids must be the owner's own beneficiaries (400)."""
    await check_audience(cur, user_id=user_id, audience=audience)
    await cur.execute(
        "UPDATE assets SET audience_all = %s, updated_at = clock_timestamp() WHERE id = %s",
        (audience["all"], asset_id),
    )
    await cur.execute("DELETE FROM asset_audience WHERE asset_id = %s", (asset_id,))
    if not audience["all"]:
        await cur.execute(
            "INSERT INTO asset_audience (asset_id, beneficiary_id) SELECT %s, unnest(%s::uuid[])",
            (asset_id, audience["beneficiary_ids"]),
        )


def _same_audience(a: Audience, b: Audience) -> bool:
    return a["all"] == b["all"] and set(a["beneficiary_ids"]) == set(b["beneficiary_ids"])


ROWS = OwnedRows(table="assets", columns=COLUMNS, what="Asset", record=_record)
# The owner's list and one row by id (GET routes), as models.common.OwnedRows reads them.
list_page = ROWS.list_page
get = ROWS.get


async def create(pool: Pool, ring: KeyRing, *, user_id: str, data: dict[str, Any]) -> Asset:
    _check_thing(amount=data.get("amount"), asset_code=data.get("asset_code"))
    asset_id = str(uuid.uuid4())
    texts = sealed_text.sealed_values(
        ring,
        table="assets",
        row_id=asset_id,
        values={c: data.get(c) for c in ("label", "amount", "description")},
    )
    async with transaction(pool) as cur:
        await plans.guard_contents(cur, user_id=user_id)
        await cur.execute(
            "INSERT INTO assets (id, user_id, label_sealed, amount_sealed, asset_code, description_sealed)"
            f" VALUES (%s, %s, %s, %s, %s, %s) RETURNING {COLUMNS}",
            (
                asset_id,
                user_id,
                texts["label_sealed"],
                texts["amount_sealed"],
                data.get("asset_code"),
                texts["description_sealed"],
            ),
        )
        row = _record(ring, await cur.fetchone())
        if "audience" in data:
            await _set_audience(cur, user_id, asset_id, data["audience"])
            row = await ROWS.one(cur, ring, user_id=user_id, row_id=asset_id)
        await activity.record(
            cur,
            user_id=user_id,
            kind="asset.created",
            entity_id=row["id"],
            summary=N_("Asset added"),
            metadata={"fields": wire_names(columns=(c for c in (*EDITABLE, "audience") if c in data))},
        )
    return row


async def update(pool: Pool, ring: KeyRing, *, user_id: str, raw_id: str, changes: dict[str, Any]) -> Asset:
    """Apply the fields given; an unchanged value writes nothing and records nothing.

    "12.50" → "12.5" is a change: the amount is stored as the client wrote it.
    """
    row_id = parse_id(raw=raw_id, what="Asset")
    async with transaction(pool) as cur:
        await plans.guard_contents(cur, user_id=user_id)
        row = await ROWS.one(cur, ring, user_id=user_id, row_id=row_id, lock=True)
        proposed = {c: changes[c] for c in EDITABLE if c in changes}
        diff = changed_values(current=row, changes=proposed)
        merged = {**row, **proposed}
        _check_thing(amount=merged["amount"], asset_code=merged["asset_code"])
        if "amount" in proposed and str(proposed["amount"]) != str(row["amount"]):
            diff["amount"] = proposed["amount"]  # equal value, new notation: still shown back as sent
        if "audience" in changes and not _same_audience(row["audience"], changes["audience"]):
            diff["audience"] = changes["audience"]
        if diff:
            if "audience" in diff:
                await _set_audience(cur, user_id, row_id, diff["audience"])
            columns = {c: v for c, v in diff.items() if c in EDITABLE}
            if columns:
                values = sealed_text.sealed_values(ring, table="assets", row_id=row_id, values=columns)
                await update_row(cur, table="assets", row_id=row_id, values=values, allowed=WRITABLE_COLUMNS)
            row = await ROWS.one(cur, ring, user_id=user_id, row_id=row_id)
            await activity.record(
                cur,
                user_id=user_id,
                kind="asset.updated",
                entity_id=row_id,
                summary=N_("Asset updated"),
                metadata={"fields": wire_names(columns=diff)},
            )
    return row


async def delete(pool: Pool, *, user_id: str, raw_id: str) -> None:
    row_id = parse_id(raw=raw_id, what="Asset")
    async with transaction(pool) as cur:
        await plans.guard_contents(cur, user_id=user_id)
        await ROWS.delete(cur, user_id=user_id, row_id=row_id)
        await activity.record(
            cur, user_id=user_id, kind="asset.deleted", entity_id=row_id, summary=N_("Asset removed")
        )
