"""An heir's request to check (the one owner of `heir_requests`) and what the heir hears back:
an acknowledgement when they ask, then the outcome. `waiting`: the deadline passed and the plan
goes on waiting (why: a guardian objects, the owner chose that it waits, or approvals are signed
on-chain); `well`: the owner checked in; `released`: the plan was released and their link now
opens. A final answer goes once per request (`heir_requests.outcome`); `waiting` may be followed
by a final one.
Decisions: docs/lifecycle.md ("An heir can ask").
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from core.db import Cursor
from models.delivery import outbox

RECEIVED = "heir_request_received"
OUTCOME = "heir_request_outcome"
Outcome = Literal["waiting", "well", "released"]
Why = Literal["objected", "owner_chose_wait", "onchain"]


async def record_in(
    cur: Cursor,
    *,
    request_id: str,
    plan_id: str,
    round_: int,
    beneficiary_id: str,
    note_sealed: str | None,
    now: datetime,
) -> list[str]:
    """The request's row (its note sealed by the caller) and the heir's own receipt of it, in
    the request's transaction; returns the outbox id to enqueue after COMMIT."""
    await cur.execute(
        "INSERT INTO heir_requests (id, plan_id, round, beneficiary_id, note_sealed, created_at)"
        " VALUES (%s, %s, %s, %s, %s, %s)",
        (request_id, plan_id, round_, beneficiary_id, note_sealed, now),
    )
    row_id = await outbox.add(
        cur,
        kind=RECEIVED,
        plan_id=plan_id,
        recipient_type="beneficiary",
        recipient_id=beneficiary_id,
        now=now,
        context={"requestId": request_id},
    )
    return [row_id]


async def tell_in(
    cur: Cursor,
    *,
    plan_id: str,
    outcome: Outcome,
    now: datetime,
    why: Why | None = None,
    until: datetime | None = None,
) -> list[str]:
    """Each heir whose request of this plan has no final answer yet is told `outcome` (one email
    per heir, however often they asked); returns the outbox ids to enqueue after COMMIT. `until`:
    when the objection that holds it lapses unless the owner checks in."""
    open_only = "outcome IS NULL" if outcome == "waiting" else "(outcome IS NULL OR outcome = 'waiting')"
    await cur.execute(
        f"UPDATE heir_requests SET outcome = %s, outcome_at = %s WHERE plan_id = %s AND {open_only}"
        " AND beneficiary_id IS NOT NULL RETURNING beneficiary_id::text AS beneficiary_id",
        (outcome, now, plan_id),
    )
    heirs = sorted({row["beneficiary_id"] for row in await cur.fetchall()})
    return [
        await outbox.add(
            cur,
            kind=OUTCOME,
            plan_id=plan_id,
            recipient_type="beneficiary",
            recipient_id=heir,
            now=now,
            context={"outcome": outcome, "why": why}
            | ({"lapsesAt": until.isoformat()} if until is not None else {}),
        )
        for heir in heirs
    ]
