"""The owner's side of the plan lifecycle: activation, deactivation and the check-in (proof of
life; in verification, the owner's veto), by the route or a one-time link; a wallet sign-in
counts as a check-in only while the plan is Active.

Each public function here is one transaction: the guarded transition (models.plans), its
Family Timeline entry and its outbox rows commit together, and the delivery jobs are
enqueued after COMMIT. The path to release the other triggers share (guardians, the
scheduler, the contract) is models.flows.release_path. Decisions: docs/lifecycle.md.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any, TypedDict

from arq.connections import ArqRedis

from core.db import Cursor, Pool, autocommit, transaction
from core.errors import Conflict
from core.files.crypto import KeyRing
from core.text.i18n import N_
from models import activity, check_in_links, plans
from models.common import lock_owner
from models.contents import early_links
from models.contents.beneficiaries import ALLOCATION_LOCK
from models.delivery import outbox
from models.delivery.announce import Email, Entry, announce
from models.delivery.budget import Budget
from models.plan import approvals, heir_answers
from models.plan.plan_settings import facts
from models.plan.readiness import readiness
from models.plans import ACTIVE, DRAFT, FROZEN, RELEASED, Plan, get_or_create, transition, update_schedule


def _fresh_cycle(plan: Plan, now: datetime) -> dict[str, Any]:
    """Schedule columns of a cycle starting now (activation, check-in)."""
    return {
        "last_check_in_at": now,
        "check_in_due_at": now + timedelta(seconds=plan["check_in_interval_seconds"]),
        "stage_done": 0,
    }


def _activation_facts(*, plan: Plan) -> dict[str, Any]:
    timeout = plan["verification_timeout_seconds"]
    return {
        "dueAt": plan["check_in_due_at"].isoformat() if plan["check_in_due_at"] else None,
        "onTimeout": plan["on_verification_timeout"],
        "deadlineDays": timeout // 86400 if timeout else None,
    }


async def activate(
    pool: Pool,
    ring: KeyRing,
    redis: ArqRedis,
    *,
    user_id: str,
    now: datetime,
    budget: Budget,
    contract: bool = False,
) -> None:
    """Draft → Active, if ready: 409 with the problems in `details` otherwise. Heirs are emailed
    their link now if the owner chose so (models.contents.early_links, under `budget`)."""
    async with transaction(pool) as cur:
        # Same order as the beneficiary routes (allocation lock, then the plan row): no deadlock,
        # and no allocation can change between this check and COMMIT.
        await lock_owner(cur, scope=ALLOCATION_LOCK, user_id=user_id)
        plan = await get_or_create(cur, user_id=user_id, lock=True)
        if plan["status"] != DRAFT:
            raise Conflict(f"Only a Draft plan can be activated; this one is {plan['status']}.")
        problems = readiness(plan=plan, known=await facts(cur, ring, user_id=user_id), contract=contract)
        if problems:
            raise Conflict(
                "The plan is not ready to activate.",
                details={"readiness": {"ready": False, "problems": problems}},
            )
        moved = await transition(
            cur,
            plan_id=plan["id"],
            from_statuses=(DRAFT,),
            to_status=ACTIVE,
            now=now,
            actor="owner",
            reason="activated",
            values={"activated_at": now, **_fresh_cycle(plan, now)},
        )
        told = [] if moved is None else await early_links.send_in(cur, plan=moved, now=now, budget=budget)
        # What happens from now on, told once by email: when the first check-in is due, and what
        # the verification's deadline does.
        activated = None if moved is None else Email("plan_activated", _activation_facts(plan=moved))
        told += await announce(
            cur,
            plan_id=plan["id"],
            owner_id=user_id,
            now=now,
            owner=activated,
            timeline=Entry(
                "plan.activated", N_("Plan activated: check-ins are now expected"), {"actor": "owner"}
            ),
        )
    await outbox.enqueue(redis, row_ids=told)


async def deactivate(pool: Pool, *, user_id: str, now: datetime) -> None:
    async with transaction(pool) as cur:
        plan = await get_or_create(cur, user_id=user_id, lock=True)
        moved = await transition(
            cur,
            plan_id=plan["id"],
            from_statuses=(ACTIVE,),
            to_status=DRAFT,
            now=now,
            actor="owner",
            reason="deactivated",
            values={"check_in_due_at": None, "stage_done": 0},
        )
        if moved is None:
            raise Conflict(f"Only an Active plan can be deactivated; this one is {plan['status']}.")
        await announce(
            cur,
            plan_id=plan["id"],
            owner_id=user_id,
            now=now,
            timeline=Entry(
                "plan.deactivated", N_("Plan returned to draft: no check-ins expected"), {"actor": "owner"}
            ),
        )


CHECK_IN_VIA = {
    "check_in": N_("Checked in"),
    "sign_in": N_("Checked in by signing in with your wallet"),
    "link": N_("Checked in with the link from an email"),
}


async def check_in_in(cur: Cursor, *, plan: Plan, now: datetime, via: str) -> list[str]:
    """Proof of life on a locked plan: a new cycle; in verification, the owner's veto. Every
    check-in ends all the plan's check-in links (each is single use, and a check-in of any
    kind answers the question they ask).

    Returns the outbox row ids to enqueue after COMMIT.
    """
    user_id, plan_id = plan["user_id"], plan["id"]
    row_ids: list[str] = []
    await check_in_links.end_all_in(cur, plan_id=plan_id)
    if plan["status"] in FROZEN:
        await transition(
            cur,
            plan_id=plan_id,
            from_statuses=FROZEN,
            to_status=ACTIVE,
            now=now,
            actor="owner",
            reason="vetoed",
            values={
                **_fresh_cycle(plan, now),
                "verification_started_at": None,
                "verification_reason": None,
                "approved_at": None,
                "release_at": None,
                "verification_stage_done": 0,
                "verification_timed_out_at": None,
                "last_vetoed_at": now,
                "report_reason": None,
                "ready_at": None,
                "round_threshold": None,
                "deadline_stage_done": 0,
                "deadline_warned_at": None,
            },
        )
        await approvals.void_round(cur, plan_id=plan_id, round_number=plan["verification_round"], now=now)
        row_ids += await announce(
            cur,
            plan_id=plan_id,
            owner_id=user_id,
            now=now,
            guardians=Email("false_alarm"),
            # Contract mode: the heirs were sent their links when it became ready; they hear, in
            # neutral words, that the release is off.
            beneficiaries=Email("release_stopped") if plan["ready_at"] is not None else None,
            timeline=Entry(
                "plan.vetoed",
                N_(
                    "You checked in: the release was stopped and your guardians were told it was a false "
                    "alarm"
                ),
                {"actor": "owner", "from": plan["status"], "via": via},
            ),
        )
        row_ids += await heir_answers.tell_in(cur, plan_id=plan_id, outcome="well", now=now)
    else:
        await update_schedule(cur, plan_id=plan_id, values=_fresh_cycle(plan, now))
    await announce(
        cur,
        plan_id=plan_id,
        owner_id=user_id,
        now=now,
        timeline=Entry("plan.check_in", CHECK_IN_VIA[via], {"actor": "owner", "via": via}),
    )
    return row_ids


def _refuse_explicit_check_in(plan: Plan) -> None:
    """409 in Draft (nothing to reset) and Released (too late), for the route and the link alike."""
    if plan["status"] == DRAFT:
        raise Conflict("The plan is a draft: activate it first; there is no check-in to make yet.")
    if plan["status"] == RELEASED:
        raise Conflict("The plan has been released; a check-in can no longer stop it.")


async def check_in(pool: Pool, redis: ArqRedis, *, user_id: str, now: datetime) -> None:
    """POST /api/legacy/check-in."""
    async with transaction(pool) as cur:
        plan = await get_or_create(cur, user_id=user_id, lock=True)
        _refuse_explicit_check_in(plan)
        row_ids = await check_in_in(cur, plan=plan, now=now, via="check_in")
    await outbox.enqueue(redis, row_ids=row_ids)


class LinkCheckIn(TypedDict):
    """What a check-in by link may tell whoever holds the link: the plan's state, nothing more."""

    status: str
    next_check_in_due_at: datetime | None


async def check_in_by_link(pool: Pool, redis: ArqRedis, *, token: str, now: datetime) -> LinkCheckIn | None:
    """A check-in with the one-time link of an owner email (the API route and the HTML page
    both call this). Counts exactly as POST /api/legacy/check-in, 409 included (a refused link
    is not used up). None when the token opens nothing (malformed, unknown, used, expired):
    the caller answers that miss, the same for all four.

    The plan row is locked before the link is read again: links are deleted only under that
    lock (by any check-in), so of two uses of one link exactly one finds it.
    """
    async with transaction(pool) as cur:
        plan_id = await check_in_links.plan_of(cur, token=token, now=now)
        if plan_id is None:
            return None
        plan = await plans.get_by_id(cur, plan_id=plan_id, lock=True)
        if plan is None or await check_in_links.plan_of(cur, token=token, now=now) != plan_id:
            return None
        _refuse_explicit_check_in(plan)
        row_ids = await check_in_in(cur, plan=plan, now=now, via="link")
        plan = await plans.get_by_id(cur, plan_id=plan_id)
    await outbox.enqueue(redis, row_ids=row_ids)
    assert plan is not None
    return LinkCheckIn(status=plan["status"], next_check_in_due_at=plan["check_in_due_at"])


async def check_in_on_sign_in(pool: Pool, redis: ArqRedis, *, user_id: str, now: datetime) -> None:
    """A wallet sign-in by the owner. In Active it counts as a check-in. While guardians verify
    (PendingVerification, Approved, ready included) it is not a veto: whoever holds the seed
    phrase after a death could otherwise stop the release by signing in "to look"; the plan stays
    as it is and the timeline records that the key was used (docs/lifecycle.md, "Sign-in is not
    a veto"). Nothing happens in Draft or Released."""
    live = (ACTIVE, *FROZEN)
    async with autocommit(pool) as cur:  # most sign-ins have nothing to do: one cheap read
        await cur.execute("SELECT status FROM plans WHERE user_id = %s", (user_id,))
        row = await cur.fetchone()
    if row is None or row["status"] not in live:
        return
    async with transaction(pool) as cur:
        plan = await plans.get(cur, user_id=user_id, lock=True)
        if plan is None or plan["status"] not in live:
            return
        if plan["status"] in FROZEN:
            await announce(
                cur,
                plan_id=plan["id"],
                owner_id=user_id,
                now=now,
                timeline=Entry(
                    activity.SIGNED_IN_DURING_VERIFICATION,
                    N_(
                        "Someone signed in with your wallet while your guardians verify your plan. "
                        "Signing in does not stop the verification: only a check-in does"
                    ),
                    # The round: the plan's accepted guardians see this round's latest sign-in.
                    {"actor": "owner", "status": plan["status"], "round": plan["verification_round"]},
                ),
            )
            return
        row_ids = await check_in_in(cur, plan=plan, now=now, via="sign_in")
    await outbox.enqueue(redis, row_ids=row_ids)
