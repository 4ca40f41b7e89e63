"""Messages to beneficiaries: private content, a release rule, and an audience.

The release rule {kind, value} is stored as typed columns (kind, a date or a day count) so
the capsule can decide visibility in SQL. The audience is either everyone (`audience_all`) or
the rows of `message_audience`, which reference the owner's own beneficiaries; deleting a
beneficiary removes its rows (see `remove_from_audiences`). Content never leaves this module
except in the owner's own responses: activity metadata names fields, never values.

Lock order, to rule out deadlocks with beneficiary deletion: audience beneficiaries first
(FOR KEY SHARE), then the message row.
"""

from __future__ import annotations

import uuid
from datetime import UTC, date, datetime, time, timedelta
from typing import Any, Literal, TypedDict, get_args

from core.db import Cursor, Pool, transaction
from core.files.crypto import KeyRing
from core.text import i18n
from core.text.i18n import N_, ngettext
from models import activity, plans, sealed_text
from models.archive import items
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
from models.pagination import Page, PageRequest

ReleaseKind = Literal["on_release", "on_date", "after_release"]
RELEASE_KINDS: tuple[ReleaseKind, ...] = get_args(ReleaseKind)
EDITABLE = ("title", "content", "release_rule", "audience", "media_id")
WRITABLE_COLUMNS = sealed_text.writable(
    table="messages",
    columns=(
        "title",
        "content",
        "release_rule_kind",
        "release_on_date",
        "release_after_days",
        "audience_all",
        "media_id",
    ),
)
# Title and content are sealed at rest (models/sealed_text.py): `_record` opens them.
COLUMNS = (
    f"m.id, m.user_id, {sealed_text.select_list(table='messages', alias='m')}, m.release_rule_kind,"
    " m.release_on_date, m.release_after_days,"
    " m.audience_all, m.media_id::text AS media_id, m.created_at, m.updated_at,"
    " ARRAY(SELECT a.beneficiary_id::text FROM message_audience a WHERE a.message_id = m.id"
    " ORDER BY a.beneficiary_id) AS audience_ids,"
    " (SELECT p.released_at FROM plans p WHERE p.user_id = m.user_id AND p.status = 'Released')"
    " AS plan_released_at"
)


class ReleaseRule(TypedDict):
    kind: ReleaseKind
    value: date | int | None  # on_date: the date; after_release: days; on_release: None


class Message(TypedDict):
    """The owner's view of a message (content included: it never goes anywhere else)."""

    id: str
    user_id: str
    title: str | None
    # None on the owner's routes once the plan is released and the letter has not yet opened to
    # its heirs (docs/security.md, "A released account holds no keys to the heirs").
    content: str | None
    # When the letter opens to its heirs, once the plan is released (None before: not known yet).
    opens_at: datetime | None
    media_id: str | None  # an archive item's id
    created_at: datetime
    updated_at: datetime
    release_rule: ReleaseRule
    audience: Audience


def _record(ring: KeyRing, row: dict[str, Any]) -> Message:
    """Row → domain record: title and content opened, release_rule {kind, value} and audience
    {all, beneficiary_ids}."""
    record = sealed_text.open_row(ring, table="messages", row=row)
    kind = record.pop("release_rule_kind")
    on_date = record.pop("release_on_date")
    days = record.pop("release_after_days")
    record["release_rule"] = {"kind": kind, "value": on_date if kind == "on_date" else days}
    audience_all = record.pop("audience_all")
    ids = record.pop("audience_ids")
    record["audience"] = {"all": audience_all, "beneficiary_ids": [] if audience_all else ids}
    released = record.pop("plan_released_at")
    record["opens_at"] = (
        None if released is None else opens_at(rule=record["release_rule"], released_at=released)
    )
    return as_record(Message, row=record)


def opens_at(*, rule: ReleaseRule, released_at: datetime) -> datetime:
    """When a letter opens to its heirs, as the capsule decides it (models.claim.capsules
    `OPENS_AT`): at the release, at 00:00 UTC of its date (never before the release), or N
    times 24 hours after the release."""
    value = rule["value"]
    if rule["kind"] == "on_date" and isinstance(value, date):
        return max(datetime.combine(value, time(0), tzinfo=UTC), released_at)
    if rule["kind"] == "after_release" and isinstance(value, int):
        return released_at + timedelta(hours=24 * value)
    return released_at


def _withheld(message: Message, now: datetime) -> Message:
    """The owner's view after release: no text of a letter that has not opened to its heirs
    yet. Whoever holds a dead owner's key must not read what was meant for later."""
    if message["opens_at"] is not None and message["opens_at"] > now:
        return {**message, "content": None}
    return message


async def list_for_owner(
    pool: Pool, ring: KeyRing, *, user_id: str, page: PageRequest, now: datetime
) -> Page[Message]:
    """GET /api/messages: the owner's letters, newest first; after release without the text of
    those not yet open to their heirs (`_withheld`). The export reads `list_page` (409 after
    release)."""
    result = await list_page(pool, ring, user_id=user_id, page=page)
    return Page([_withheld(m, now) for m in result.items], result.next_cursor)


async def get_for_owner(pool: Pool, ring: KeyRing, *, user_id: str, raw_id: str, now: datetime) -> Message:
    """GET /api/messages/:id, withheld as `list_for_owner`."""
    return _withheld(await get(pool, ring, user_id=user_id, raw_id=raw_id), now)


def _rule_columns(rule: ReleaseRule) -> dict[str, Any]:
    kind, value = rule["kind"], rule["value"]
    return {
        "release_rule_kind": kind,
        "release_on_date": value if kind == "on_date" else None,
        "release_after_days": value if kind == "after_release" else None,
    }


def _same_audience(a: Audience, b: Audience) -> bool:
    return a["all"] == b["all"] and set(a["beneficiary_ids"]) == set(b["beneficiary_ids"])


async def _set_audience(cur: Cursor, message_id: str, audience: Audience) -> None:
    await cur.execute("DELETE FROM message_audience WHERE message_id = %s", (message_id,))
    if not audience["all"]:
        await cur.execute(
            "INSERT INTO message_audience (message_id, beneficiary_id) SELECT %s, unnest(%s::uuid[])",
            (message_id, audience["beneficiary_ids"]),
        )


ROWS = OwnedRows(table="messages", alias="m", columns=COLUMNS, what="Message", record=_record)
# The owner's list and one row by id (GET routes), as models.common.OwnedRows reads them.
list_page = ROWS.list_page
get = ROWS.get


async def create(pool: Pool, ring: KeyRing, *, user_id: str, data: dict[str, Any]) -> Message:
    message_id = str(uuid.uuid4())
    texts = sealed_text.sealed_values(
        ring,
        table="messages",
        row_id=message_id,
        values={"title": data.get("title"), "content": data["content"]},
    )
    async with transaction(pool) as cur:
        await plans.guard_contents(cur, user_id=user_id)
        await check_audience(cur, user_id=user_id, audience=data["audience"])
        media_id = await items.check_media(cur, user_id=user_id, media_id=data.get("media_id"))
        rule = _rule_columns(data["release_rule"])
        await cur.execute(
            "INSERT INTO messages (id, user_id, title_sealed, content_sealed, release_rule_kind,"
            " release_on_date, release_after_days, audience_all, media_id)"
            " VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)",
            (
                message_id,
                user_id,
                texts["title_sealed"],
                texts["content_sealed"],
                rule["release_rule_kind"],
                rule["release_on_date"],
                rule["release_after_days"],
                data["audience"]["all"],
                media_id,
            ),
        )
        await _set_audience(cur, message_id, data["audience"])
        await activity.record(
            cur,
            user_id=user_id,
            kind="message.created",
            entity_id=message_id,
            summary=N_("Message written"),
            metadata={"fields": wire_names(columns=(c for c in EDITABLE if c in data))},
        )
        return await ROWS.one(cur, ring, user_id=user_id, row_id=message_id)


async def update(pool: Pool, ring: KeyRing, *, user_id: str, raw_id: str, changes: dict[str, Any]) -> Message:
    """Apply the fields given; an unchanged value writes nothing and records nothing."""
    row_id = parse_id(raw=raw_id, what="Message")
    async with transaction(pool) as cur:
        await plans.guard_contents(cur, user_id=user_id)
        if "audience" in changes:
            await check_audience(cur, user_id=user_id, audience=changes["audience"])
        if changes.get("media_id") is not None:
            changes = {
                **changes,
                "media_id": await items.check_media(cur, user_id=user_id, media_id=changes["media_id"]),
            }
        current = await ROWS.one(cur, ring, user_id=user_id, row_id=row_id, lock=True)
        diff = changed_values(current=current, changes={c: changes[c] for c in EDITABLE if c in changes})
        if "audience" in diff and _same_audience(current["audience"], diff["audience"]):
            del diff["audience"]
        if not diff:
            return current
        columns = sealed_text.sealed_values(
            ring,
            table="messages",
            row_id=row_id,
            values={c: diff[c] for c in ("title", "content", "media_id") if c in diff},
        )
        if "release_rule" in diff:
            columns.update(_rule_columns(diff["release_rule"]))
        if "audience" in diff:
            columns["audience_all"] = diff["audience"]["all"]
            await _set_audience(cur, row_id, diff["audience"])
        await update_row(cur, table="messages", row_id=row_id, values=columns, allowed=WRITABLE_COLUMNS)
        await activity.record(
            cur,
            user_id=user_id,
            kind="message.updated",
            entity_id=row_id,
            summary=N_("Message updated"),
            metadata={"fields": wire_names(columns=diff)},
        )
        return await ROWS.one(cur, ring, user_id=user_id, row_id=row_id)


async def delete(pool: Pool, *, user_id: str, raw_id: str) -> None:
    row_id = parse_id(raw=raw_id, what="Message")
    async with transaction(pool) as cur:
        await plans.guard_contents(cur, user_id=user_id)
        await ROWS.delete(cur, user_id=user_id, row_id=row_id)
        await activity.record(
            cur, user_id=user_id, kind="message.deleted", entity_id=row_id, summary=N_("Message deleted")
        )


async def remove_from_audiences(cur: Cursor, *, beneficiary_id: str) -> tuple[list[str], list[str]]:
    """Take a beneficiary out of every audience, before it is deleted.

    Returns (ids of the messages it was in, ids of those now without any recipient). Such a
    message keeps an empty audience (nobody) rather than widening to everyone: a private
    message must never reach someone it was not addressed to. The owner can re-address it.
    """
    await cur.execute(
        "WITH removed AS (DELETE FROM message_audience WHERE beneficiary_id = %s RETURNING message_id)"
        " UPDATE messages m SET updated_at = clock_timestamp() FROM removed r WHERE m.id = r.message_id"
        " RETURNING m.id::text AS id, NOT EXISTS (SELECT 1 FROM message_audience a"
        " WHERE a.message_id = m.id AND a.beneficiary_id <> %s) AS emptied",
        (beneficiary_id, beneficiary_id),
    )
    rows = await cur.fetchall()
    affected = sorted(row["id"] for row in rows)
    return affected, sorted(row["id"] for row in rows if row["emptied"])


def removed_heir_summary(*, emptied: int) -> activity.Summary:
    """The timeline's sentence for a beneficiary removed, saying how many letters it left with
    nobody to receive them (`remove_from_audiences`); "(s)" as the English always wrote it."""
    if not emptied:
        return N_("Beneficiary removed")
    return lambda: ngettext(
        "Beneficiary removed; {count} message(s) now have no recipients",
        "Beneficiary removed; {count} message(s) now have no recipients",
        emptied,
    ).format(count=i18n.number(emptied))
