"""A guardian's objection during a verification: "This is a mistake: I know they are alive or
able to act", with an optional note, and its withdrawal.

One answer per guardian and round: objecting takes back their approval, approving takes back
their objection (models.flows.verification `record_approval`). While an objection stands the
deadline does not release (the plan waits at it, as with "wait"); approvals that reach the
threshold still do, and the owner's check-in stays the one veto. Withdrawn after the deadline,
the last objection brings the owner a final warning and a deadline the warning interval away.
The owner (with a check-in link) and the other accepted guardians are told each time, with
the guardian's name and note. docs/lifecycle.md "Objections".
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from arq.connections import ArqRedis

from core.db import Cursor, Pool, transaction
from core.errors import Conflict
from core.files.crypto import KeyRing
from core.settings import Settings
from core.text.i18n import N_
from models import sealed_text
from models.delivery import outbox
from models.delivery.announce import Email, Entry, announce
from models.flows import release_path
from models.plan import approvals, objections
from models.plan.guardianships.membership import locked
from models.plans import APPROVED, PENDING, Plan

NOT_NOW = N_("There is no verification running: there is nothing to object to.")
TOO_LATE = N_(
    "Enough guardians have already approved the release, so an objection can no longer stop it: only "
    "the owner's check-in can. If you know they are alive, please tell them, and the other guardians, at "
    "once."
)


def _note_context(ring: KeyRing, guardian_id: str, note: str | None) -> dict[str, Any]:
    """What the emails need: who (their name is read at send time) and the note, sealed in the
    row's context and opened only at send (models.delivery.deliveries)."""
    context: dict[str, Any] = {"guardianId": guardian_id}
    if note:
        seal_id = str(uuid.uuid4())
        context |= {
            "sealId": seal_id,
            "noteSealed": sealed_text.seal(ring, table="outbox", column="note", row_id=seal_id, text=note),
        }
    return context


async def object_to(
    pool: Pool,
    redis: ArqRedis,
    settings: Settings,
    *,
    user_id: str | None,
    raw_plan_id: str,
    note: str | None,
    now: datetime,
    guardian_id: str | None = None,
) -> datetime:
    """The guardian objects in this round (their approval, if any, taken back); the owner and
    the other accepted guardians are emailed. 409 outside a verification, once the threshold
    is reached, or when they already object. With `guardian_id` (a guardian's page), that row.
    Returns when the objection lapses unless the owner checks in first."""
    ring = settings.key_ring
    async with transaction(pool) as cur:
        plan, member = await locked(
            cur, ring, user_id=user_id, raw_plan_id=raw_plan_id, guardian_id=guardian_id
        )
        if plan["status"] == APPROVED:
            raise Conflict(TOO_LATE)
        if plan["status"] != PENDING:
            raise Conflict(NOT_NOW)
        gid = str(member["guardian_id"])
        took_back = await approvals.withdraw(cur, plan=plan, guardian_id=gid)
        window = settings.plan_objection_check_in_seconds
        lapses_at = await objections.record(
            cur, ring, plan=plan, guardian_id=gid, note=note, now=now, window_seconds=window
        )
        if lapses_at is None:
            raise Conflict(N_("You already object in this verification. You can withdraw your objection."))
        await objections.recount(cur, plan=plan)
        context = _note_context(ring, gid, note) | {
            "approvalWithdrawn": took_back,
            "lapsesAt": lapses_at.isoformat(),
        }
        row_ids = await announce(
            cur,
            plan_id=plan["id"],
            owner_id=plan["user_id"],
            now=now,
            owner=Email("guardian_objected", context),
            guardians=Email("guardian_objected_guardian", context, exclude=[gid]),
            timeline=Entry(
                "guardian.objected",
                N_(
                    "A guardian says this verification is a mistake: they know you are alive or able to act; "
                    "they took back their approval"
                )
                if took_back
                else N_(
                    "A guardian says this verification is a mistake: they know you are alive or able to act"
                ),
                {
                    "actor": "guardian",
                    "guardianId": gid,
                    "withNote": bool(note),
                    "approvalWithdrawn": took_back,
                },
            ),
        )
    await outbox.enqueue(redis, row_ids=row_ids)
    return lapses_at


async def withdraw(
    pool: Pool,
    redis: ArqRedis,
    settings: Settings,
    *,
    user_id: str | None,
    raw_plan_id: str,
    now: datetime,
    guardian_id: str | None = None,
) -> None:
    """The guardian's standing objection withdrawn (409 if none stands); told as it was given."""
    ring = settings.key_ring
    async with transaction(pool) as cur:
        plan, member = await locked(
            cur, ring, user_id=user_id, raw_plan_id=raw_plan_id, guardian_id=guardian_id
        )
        if plan["status"] not in (PENDING, APPROVED) or not await objections.withdraw(
            cur, plan=plan, guardian_id=str(member["guardian_id"]), now=now
        ):
            raise Conflict(N_("You have no objection standing in this verification."))
        row_ids = await withdrawn_in(
            cur,
            plan=plan,
            guardian_id=str(member["guardian_id"]),
            now=now,
            contract_configured=bool(settings.service_contract_id),
            approved=False,
        )
    await outbox.enqueue(redis, row_ids=row_ids)


async def withdrawn_in(
    cur: Cursor, *, plan: Plan, guardian_id: str, now: datetime, contract_configured: bool, approved: bool
) -> list[str]:
    """After a withdrawal (the row already marked, on the locked plan): the count kept, the
    owner and the other guardians told (`approved`: by approving). When it was the last one
    and the deadline already passed while it stood, a deadline that releases comes back: the
    owner's final warning now, and the deadline the warning interval from now."""
    moved = await objections.recount(cur, plan=plan)
    context = {"guardianId": guardian_id, "approved": approved}
    row_ids = await announce(
        cur,
        plan_id=plan["id"],
        owner_id=plan["user_id"],
        now=now,
        owner=Email("objection_withdrawn", context),
        guardians=Email("objection_withdrawn_guardian", context, exclude=[guardian_id]),
        timeline=Entry(
            "guardian.objection_withdrawn",
            N_("A guardian withdrew their objection and approved the release")
            if approved
            else N_("A guardian withdrew their objection"),
            {"actor": "guardian", "guardianId": guardian_id, "approved": approved},
        ),
    )
    return row_ids + await release_path.resume_deadline_in(
        cur, plan=moved, now=now, contract_configured=contract_configured
    )
