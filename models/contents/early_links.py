"""Heirs told early (the plan setting `notify_beneficiaries_on_activation`): each heir is emailed
their link once while the plan is Active, in neutral words (the plan exists, the page opens
nothing until the release, and from it they may ask the guardians to check), so an heir can ask
before anything is released.

These are emails an owner causes by typing an address: they are budgeted
(models.delivery.budget.BUDGETED) and carry "I don't know this person", as invitations do.
An heir's outbox row of this kind keeps it once per heir, whatever turns the setting on and off
(the plan row's lock, taken by each caller, orders them). Decisions: docs/lifecycle.md ("An heir
can ask").
"""

from __future__ import annotations

from datetime import datetime

from core.db import Cursor
from core.text import i18n
from core.text.i18n import _, ngettext
from models import activity
from models.delivery import outbox
from models.delivery.budget import Budget
from models.plans import ACTIVE, Plan

KIND = "early_heir_link"


async def send_in(
    cur: Cursor,
    *,
    plan: Plan,
    now: datetime,
    budget: Budget,
    beneficiary_id: str | None = None,
    readdressed: bool = False,
) -> list[str]:
    """Each heir of the plan not told yet (or only `beneficiary_id`) gets their link, when the
    plan is Active and its owner chose so; returns the outbox ids to enqueue after COMMIT.
    `readdressed`: the owner just changed `beneficiary_id`'s address, so their link goes again, to
    the new one, unless an email of theirs still waits to be sent (it reads the address at send,
    so it goes there anyway). The link is the same: the old email's keeps working."""
    if plan["status"] != ACTIVE or not plan["notify_beneficiaries_on_activation"]:
        return []
    if readdressed:
        if beneficiary_id is None:
            raise ValueError("readdressed names the one heir whose address changed")
        if await _waiting(cur, beneficiary_id=beneficiary_id):
            return []
    await cur.execute(
        "SELECT b.id::text AS id FROM beneficiaries b WHERE b.user_id = %s"
        " AND (%s::uuid IS NULL OR b.id = %s::uuid)"
        " AND (%s OR NOT EXISTS (SELECT 1 FROM outbox o WHERE o.kind = %s AND o.recipient_id = b.id))"
        " ORDER BY b.created_at, b.id",
        (plan["user_id"], beneficiary_id, beneficiary_id, readdressed, KIND),
    )
    heirs = await cur.fetchall()
    row_ids = [
        await outbox.add(
            cur,
            kind=KIND,
            plan_id=plan["id"],
            recipient_type="beneficiary",
            recipient_id=heir["id"],
            now=now,
            context={"mayAsk": plan["allow_beneficiary_requests"]},
            budget=budget,
        )
        for heir in heirs
    ]
    if heirs:
        count = len(heirs)
        await activity.record(
            cur,
            user_id=plan["user_id"],
            kind="plan.heirs_told",
            entity_id=plan["id"],
            summary=lambda: (
                _(
                    "A beneficiary was emailed their link again, at the address you changed: it opens "
                    "nothing until the release"
                )
                if readdressed
                else _(
                    "A beneficiary was emailed their link, as you chose: it opens nothing until the release"
                )
                if count == 1
                else ngettext(
                    "{count} beneficiary was emailed their link, as you chose: it opens nothing until the "
                    "release",
                    "{count} beneficiaries were emailed their links, as you chose: they open nothing until "
                    "the release",
                    count,
                ).format(count=i18n.number(count))
            ),
            metadata={"actor": "owner", "beneficiaries": count, "readdressed": readdressed},
        )
    return row_ids


async def _waiting(cur: Cursor, *, beneficiary_id: str) -> bool:
    """Whether the heir's early email still waits and no delivery job holds it: it reads the
    address when a job claims it, so it goes to the new one. Locked until the change commits, so
    no job claims it and reads the old address meanwhile. One a job holds already may have read the
    old address (outbox.claim reads it as it claims, then sends with no connection held): not
    waiting, the link goes again."""
    await cur.execute(
        "SELECT 1 FROM outbox WHERE kind = %s AND recipient_id = %s AND status = 'pending'"
        " AND claimed_by IS NULL FOR UPDATE",
        (KIND, beneficiary_id),
    )
    return bool(await cur.fetchall())
