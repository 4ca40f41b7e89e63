"""What the outbox says of emails already written: the owner's notifications (`notices`), whether
a person's current address bounced (`address_bounced`, for readiness), and the claim-link
history that resend limits and the heirs' list read (`recent_resends`, `latest_claim_links`).

Reads only: models.delivery.outbox is the one writer of `outbox`. They change with what the
owner and the routes are shown, not with how emails are queued and sent.
"""

from __future__ import annotations

from datetime import datetime
from typing import TypedDict

from core.db import Cursor, Pool, autocommit
from models.common import as_records
from models.delivery.outbox import RecipientType


class Notice(TypedDict):
    """What the owner sees of an email: that it went out, to whom (by role) and when, and what
    the provider later said of it (delivered, bounced…); no body."""

    id: str
    kind: str
    recipient_type: str
    status: str
    created_at: datetime
    finished_at: datetime | None
    delivery: str | None
    delivery_at: datetime | None


async def notices(cur: Cursor, *, plan_id: str, limit: int = 50) -> list[Notice]:
    await cur.execute(
        "SELECT id, kind, recipient_type, status, created_at, finished_at, delivery, delivery_at"
        " FROM outbox WHERE plan_id = %s ORDER BY created_at DESC, id DESC LIMIT %s",
        (plan_id, limit),
    )
    return as_records(Notice, rows=await cur.fetchall())


async def unsettled(pool: Pool, *, row_ids: list[str]) -> int:
    """How many of these rows are still to be sent (a deletion waits for its goodbyes)."""
    async with autocommit(pool) as cur:
        await cur.execute(
            "SELECT count(*)::int AS n FROM outbox WHERE id = ANY(%s::uuid[]) AND status = 'pending'",
            (row_ids,),
        )
        row = await cur.fetchone()
    return int(row["n"])


def address_bounced(*, recipient_type: RecipientType, alias: str) -> str:
    """SQL: true when the latest provider outcome for this person's current address (row `alias`
    of their table) was a bounce or a complaint. A changed address has another blind index, so
    the old bounces stop counting; a later `delivered` to the same address clears it."""
    return (
        "COALESCE((SELECT d.delivery IN ('bounced', 'complained') FROM outbox d"
        f" WHERE d.recipient_type = '{recipient_type}' AND d.recipient_id = {alias}.id"
        " AND d.delivery IN ('delivered', 'bounced', 'complained')"
        f" AND d.sent_to_bidx = {alias}.email_bidx ORDER BY d.delivery_at DESC LIMIT 1), false)"
    )


async def recent_resends(cur: Cursor, *, beneficiary_id: str, since: datetime, by: str) -> list[datetime]:
    """When this beneficiary's link was emailed again on request (stage `resend`) by `by`
    (`beneficiary`: the public route, `guardian`), after `since`. A row from before the two
    allowances were split (no `by`) counts as a public one."""
    await cur.execute(
        "SELECT created_at FROM outbox WHERE kind = 'claim_link' AND recipient_id = %s"
        " AND context->>'stage' = 'resend' AND COALESCE(context->>'by', 'beneficiary') = %s"
        " AND created_at > %s ORDER BY created_at",
        (beneficiary_id, by, since),
    )
    return [row["created_at"] for row in await cur.fetchall()]


async def latest_claim_links(cur: Cursor, *, beneficiary_ids: list[str]) -> dict[str, tuple[str, datetime]]:
    """Each beneficiary's latest claim-link email: its status, and when it ended (or was queued)."""
    if not beneficiary_ids:
        return {}
    await cur.execute(
        "SELECT DISTINCT ON (recipient_id) recipient_id::text AS id, status,"
        " COALESCE(finished_at, created_at) AS at FROM outbox"
        " WHERE kind = 'claim_link' AND recipient_id = ANY(%s::uuid[])"
        " ORDER BY recipient_id, created_at DESC, id DESC",
        (list(beneficiary_ids),),
    )
    return {row["id"]: (row["status"], row["at"]) for row in await cur.fetchall()}
