"""The owner hears of every change to the people in their plan and to their account: a
beneficiary's or guardian's address or wallet, a guardian or beneficiary added or removed, a
wallet linked or removed, the owner's own address (the previous address is told too).

Whoever holds the owner's key could otherwise redirect every heir quietly. Notices start once
the plan has left Draft (while drafting, the owner is still setting up). Changes within a minute
of the first one are one email: a digest row of the outbox gathers them and the sweep sends it
when the minute is over (models.delivery.outbox `add_to_digest`). The digest names the person
(the name sealed in the row under its own id, opened only at send), what changed and when;
never an address, a token or any value of the plan. Decisions: docs/security.md, "The owner's
key".
"""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta
from typing import Literal

from core.clock import wire_time
from core.db import Cursor
from core.files.crypto import KeyRing
from models import plans, sealed_text
from models.common import lock_owner
from models.delivery import outbox
from models.plans import DRAFT

# Changes within this long of the first one go out as one email.
WINDOW = timedelta(minutes=1)
NOTICE_LOCK = "owner-notices"

Change = Literal[
    "beneficiary_added",
    "beneficiary_removed",
    "beneficiary_email",
    "beneficiary_wallet",
    "guardian_added",
    "guardian_removed",
    "guardian_email",
    "guardian_wallet",
    "guardian_reinvited",
    "wallet_linked",
    "wallet_removed",
    "owner_email",
    "signed_in_wallet",
    "signed_in_passkey",
]


async def _live_plan(cur: Cursor, user_id: str) -> str | None:
    """The plan's id once it has been activated (any state but Draft); None otherwise."""
    await cur.execute("SELECT id, status FROM plans WHERE user_id = %s", (user_id,))
    plan = await cur.fetchone()
    return None if plan is None or plan["status"] == DRAFT else str(plan["id"])


async def tell_owner(
    cur: Cursor, ring: KeyRing, *, user_id: str, change: Change, name: str | None, now: datetime
) -> None:
    """Put one change in the owner's digest, in the transaction that makes it (call it last in
    that transaction: it takes the owner's notice lock). `name`: whom it concerns (a person's
    name, or a wallet address)."""
    plan_id = await _live_plan(cur, user_id)
    if plan_id is None:
        return
    await lock_owner(cur, scope=NOTICE_LOCK, user_id=user_id)
    seal_id = str(uuid.uuid4())
    entry = {
        "what": change,
        "at": wire_time(now),
        "sealId": seal_id,
        "nameSealed": sealed_text.seal(ring, table="outbox", column="change_name", row_id=seal_id, text=name),
    }
    await outbox.add_to_digest(cur, plan_id=plan_id, owner_id=user_id, change=entry, now=now, window=WINDOW)


async def tell_previous_address(
    cur: Cursor, ring: KeyRing, *, user_id: str, address: str, now: datetime
) -> list[str]:
    """The owner's previous address hears at once that the account's address changed (the new
    one gets the digest): a thief who changes it first would otherwise receive every notice.
    Returns the outbox row ids to enqueue after COMMIT."""
    plan_id = await _live_plan(cur, user_id)
    if plan_id is None:
        return []
    seal_id = str(uuid.uuid4())
    sealed = sealed_text.seal(ring, table="outbox", column="address", row_id=seal_id, text=address)
    row_id = await outbox.add(
        cur,
        kind="owner_email_changed",
        plan_id=plan_id,
        recipient_type="owner",
        recipient_id=user_id,
        now=now,
        context={"at": wire_time(now), "sealId": seal_id, "toSealed": sealed},
    )
    return [row_id]


async def guardians_short(
    cur: Cursor,
    *,
    user_id: str,
    now: datetime,
    cause: Literal["added", "removed"],
    short_before: bool = False,
) -> list[str]:
    """The owner's email (`guardians_short`) when a guardian added or removed leaves an Active
    plan fewer accepted guardians than the approvals it needs (a majority grows with every
    guardian added: the one just invited has not accepted yet). Nothing when it was already
    short before (`short_before`: the owner was told then, and readiness says so)."""
    plan = await plans.get(cur, user_id=user_id)
    if plan is None or plan["status"] != plans.ACTIVE or short_before:
        return []
    accepted, needed = await plans.acceptance(cur, plan=plan)
    if accepted >= needed:
        return []
    context = {"accepted": accepted, "needed": needed, "cause": cause}
    row_id = await outbox.add(
        cur,
        kind="guardians_short",
        plan_id=plan["id"],
        recipient_type="owner",
        recipient_id=user_id,
        now=now,
        context=context,
    )
    return [row_id]


async def short_now(cur: Cursor, *, user_id: str) -> bool:
    """Whether an Active plan already has fewer accepted guardians than the approvals it needs."""
    plan = await plans.get(cur, user_id=user_id)
    if plan is None or plan["status"] != plans.ACTIVE:
        return False
    accepted, needed = await plans.acceptance(cur, plan=plan)
    return accepted < needed
