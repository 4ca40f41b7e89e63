"""The path to release every trigger shares: verification starts (a guardian's report, a missed
grace period), the threshold is reached, the cancel window ends (ready on-chain, or released),
the owner's verification deadline passes.

The `*_in(cur, …)` functions are the transitions themselves, for callers that own the
transaction (the scheduler, guardian routes, the on-chain path): the guarded transition
(models.plans), its Family Timeline entry and its outbox rows are written on that
cursor; each returns the outbox row ids it wrote, to enqueue after COMMIT, or None when the
plan was not in the state it moves from (one way to say "did not move").
The owner's side (activation, check-in, the veto) is models.flows.lifecycle. Decisions: docs/lifecycle.md.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from core.clock import wire_time
from core.db import Cursor
from core.files.crypto import KeyRing
from core.text import i18n
from core.text.i18n import N_, _
from models import plans
from models.delivery import letters
from models.delivery.announce import Email, Entry, announce
from models.plan import heir_answers, objections
from models.plan.approvals import approved_on_chain
from models.plans import ACTIVE, APPROVED, PENDING, RELEASED, Actor, Plan, transition, update_schedule


def deadline_facts(*, plan: Plan) -> dict[str, Any]:
    """The round's deadline as guardians' emails state it (models/mail/templates/shared.html): when,
    what happens then, and whether the owner chose it or it is the service's default."""
    deadline = plans.verification_deadline(plan=plan)
    return {
        "deadlineAt": None if deadline is None else deadline.isoformat(),
        "onTimeout": plan["on_verification_timeout"],
        "deadlineChosen": plan["deadline_chosen_at"] is not None,
    }


async def resume_deadline_in(
    cur: Cursor, *, plan: Plan, now: datetime, contract_configured: bool
) -> list[str]:
    """After the last standing objection went (withdrawn or lapsed, on the locked plan, already
    recounted): a deadline that releases and passed while it stood comes back. The owner's final
    warning goes now, and the deadline falls the warning interval after it
    (models.plans.verification_deadline), its stage not done yet. Before the deadline nothing
    moves: a warning that fell due meanwhile goes at the next scan. Returns outbox ids."""
    resumes = (
        plan["status"] == PENDING
        and not plan["objections"]
        and plan["verification_timed_out_at"] is not None
        and plan["on_verification_timeout"] == "release"
        and not contract_configured
    )
    if not resumes:
        return []
    after = {**plan, "deadline_warned_at": now, "verification_timed_out_at": None}
    stages = plans.verification_stages(plan=after)  # type: ignore[arg-type]
    timeout_at = next(index for index, (label, _) in enumerate(stages) if label == plans.TIMEOUT)
    moved = await plans.update_schedule(
        cur,
        plan_id=plan["id"],
        values={
            "verification_timed_out_at": None,
            "verification_stage_done": min(plan["verification_stage_done"], timeout_at),
        },
    )
    warnings = plans.owner_warnings(plan=moved)
    return await warn_owner_in(cur, plan=moved, now=now, stage=plans.FINAL_WARNING, stages_done=len(warnings))


async def start_verification_in(
    cur: Cursor,
    *,
    plan: Plan,
    now: datetime,
    actor: Actor,
    actor_name: str | None,
    reason: str,
    warning_seconds: int,
    ring: KeyRing | None = None,
    about: dict[str, Any] | None = None,
) -> list[str] | None:
    """Active → PendingVerification; owner and every guardian emailed. None if it was not Active.
    `ring` seals `actor_name` (a guardian's) in the transition row. The approvals the round
    needs are frozen now (`round_threshold`), and so is the owner's warning interval before a
    deadline that releases (`warning_seconds`, PLAN_DEADLINE_WARNING_SECONDS). `about` adds
    facts to the emails' context (an heir's request: `beneficiaryId`, `requestId`)."""
    needed = await plans.threshold_now(cur, plan=plan)
    moved = await transition(
        cur,
        plan_id=plan["id"],
        from_statuses=(ACTIVE,),
        to_status=PENDING,
        now=now,
        actor=actor,
        actor_name=actor_name,
        ring=ring,
        reason=reason,
        values={
            "verification_round": plan["verification_round"] + 1,
            "verification_started_at": now,
            "verification_reason": reason,
            "verification_stage_done": 0,
            "verification_timed_out_at": None,
            "round_threshold": needed,
            "deadline_stage_done": 0,
            "deadline_warned_at": None,
            "deadline_warning_seconds": warning_seconds,
            "objections": 0,
            "objection_due_at": None,
        },
    )
    if moved is None:
        return None
    context = {"reason": reason, **(about or {}), **deadline_facts(plan=moved)}
    summary = {
        "guardian_report": N_(
            "A guardian reported that you may have died or cannot act; guardians were asked to verify. "
            "Check in to stop it."
        ),
        "beneficiary_request": N_(
            "One of your beneficiaries asked us to verify whether you have died or cannot act; guardians "
            "were asked to verify. Check in to stop it."
        ),
    }.get(
        reason,
        N_(
            "No check-in before the end of the grace period; guardians were asked to verify. Check in to "
            "stop it."
        ),
    )
    return await announce(
        cur,
        plan_id=plan["id"],
        owner_id=plan["user_id"],
        now=now,
        owner=Email("verification_started", context),
        guardians=Email("verification_requested", context),
        timeline=Entry(
            "plan.verification_started",
            summary,
            {"actor": actor, "reason": reason},
        ),
    )


async def approve_in(
    cur: Cursor, *, plan: Plan, now: datetime, actor: Actor, last_guardian_id: str
) -> list[str] | None:
    """PendingVerification → Approved (threshold reached): the cancel window starts now. None if
    it was not PendingVerification."""
    release_at = now + timedelta(seconds=plan["cancel_window_seconds"])
    onchain = await approved_on_chain(cur, plan=plan)
    moved = await transition(
        cur,
        plan_id=plan["id"],
        from_statuses=(PENDING,),
        to_status=APPROVED,
        now=now,
        actor=actor,
        reason="threshold_reached",
        values={"approved_at": now, "release_at": release_at},
    )
    if moved is None:
        return None
    # On-chain, nobody is released "on" a date: the heirs are emailed then, and one of them
    # finalises. The emails say so (models.mail.emails), rather than promise a date that will
    # not come.
    context = {"releaseAt": release_at.isoformat(), "onchain": onchain}
    return await announce(
        cur,
        plan_id=plan["id"],
        owner_id=plan["user_id"],
        now=now,
        owner=Email("plan_approved", context),
        guardians=Email(
            "plan_approved_guardian", context, exclude=[last_guardian_id] if last_guardian_id else []
        ),
        timeline=Entry(
            "plan.approved",
            N_(
                "Guardians approved the release; when the cancel window ends your beneficiaries get their "
                "links and one of them finalises it on-chain, unless you check in"
            )
            if onchain
            else N_(
                "Guardians approved the release; it happens when the cancel window ends unless you check in"
            ),
            {"actor": actor, "releaseAt": wire_time(release_at), "onchain": onchain},
        ),
    )


async def ready_in(cur: Cursor, *, plan: Plan, now: datetime) -> list[str] | None:
    """Contract mode, cancel window over: the plan is ready to finalise. Every beneficiary is
    emailed their claim link now (finalize_release needs it), the owner and guardians are told.
    Once per approval: None if it was already ready (or no longer Approved)."""
    if not await plans.mark_ready(cur, plan_id=plan["id"], now=now):
        return None
    return await announce(
        cur,
        plan_id=plan["id"],
        owner_id=plan["user_id"],
        now=now,
        beneficiaries=Email("claim_link", {"stage": "ready"}),
        owner=Email("plan_ready"),
        guardians=Email("plan_ready_guardian"),
        timeline=Entry(
            "plan.ready_to_finalize",
            N_(
                "The cancel window ended: each beneficiary was sent their link, and the release "
                "happens when one of them finalises it on-chain"
            ),
            {"actor": "scheduler"},
        ),
    )


async def release_in(cur: Cursor, *, plan_id: str, now: datetime, actor: Actor) -> list[str] | None:
    """Approved → Released: every beneficiary is emailed their claim link. None if not Approved.

    The scheduler calls this when the cancel window has passed and no contract is configured;
    the on-chain path calls it once finalize_release is confirmed.
    """
    moved = await transition(
        cur,
        plan_id=plan_id,
        from_statuses=(APPROVED,),
        to_status=RELEASED,
        now=now,
        actor=actor,
        reason="released",
        values={"released_at": now},
    )
    if moved is None:
        return None
    # Letters that open later announce themselves then (models/delivery/letters.py).
    await letters.schedule(cur, plan_id=plan_id, owner_id=moved["user_id"], released_at=now)
    told = await heir_answers.tell_in(cur, plan_id=plan_id, outcome="released", now=now)
    return told + await announce(
        cur,
        plan_id=plan_id,
        owner_id=moved["user_id"],
        now=now,
        beneficiaries=Email("claim_link", {"stage": "released"}),
        guardians=Email("plan_released_guardian"),
        timeline=Entry(
            "plan.released",
            N_("The plan was released; each beneficiary was sent their claim link"),
            {"actor": actor},
        ),
    )


async def warn_owner_in(cur: Cursor, *, plan: Plan, now: datetime, stage: str, stages_done: int) -> list[str]:
    """The owner's warning before a verification deadline that releases (halfway, or the final
    one), with a check-in link; the final one moves the deadline to at least the warning
    interval from now (after an outage it has not passed unannounced). Once per round: the
    stage moves with the outbox row, on the locked plan."""
    values: dict[str, Any] = {"deadline_stage_done": stages_done}
    if stage == plans.FINAL_WARNING:
        values["deadline_warned_at"] = now
    moved = await update_schedule(cur, plan_id=plan["id"], values=values)
    deadline = plans.verification_deadline(plan=moved)
    started_at = plan["verification_started_at"]
    assert deadline is not None and started_at is not None  # a round in PendingVerification
    return await announce(
        cur,
        plan_id=plan["id"],
        owner_id=plan["user_id"],
        now=now,
        owner=Email(
            "deadline_warning",
            {
                "stage": stage,
                "deadlineAt": deadline.isoformat(),
                "startedAt": started_at.isoformat(),
                "deadlineChosen": plan["deadline_chosen_at"] is not None,
            },
        ),
        timeline=Entry(
            "plan.deadline_warning",
            lambda: (
                _("Final warning sent: unless you check in, your plan will be released after {when}")
                if stage == plans.FINAL_WARNING
                else _("Reminder sent: unless you check in, your plan will be released after {when}")
            ).format(when=i18n.when(deadline)),
            {"actor": "scheduler", "stage": stage, "deadlineAt": wire_time(deadline)},
        ),
    )


async def verification_timeout_in(
    cur: Cursor, *, plan: Plan, now: datetime, release: bool, stages_done: int
) -> list[str] | None:
    """The owner's verification deadline passed with approvals below the threshold and no
    check-in (the plan is locked and PendingVerification). `release`: to Approved, the cancel
    window still running; otherwise the plan goes on waiting. Either way the owner (with a
    check-in link) and the guardians are told, once: the scheduler moves `stages_done` past
    the deadline in the same transaction. None if the plan was not PendingVerification."""
    until: datetime | None = None  # when the objection that holds it lapses
    if release:
        release_at = now + timedelta(seconds=plan["cancel_window_seconds"])
        moved = await transition(
            cur,
            plan_id=plan["id"],
            from_statuses=(PENDING,),
            to_status=APPROVED,
            now=now,
            actor="scheduler",
            reason="verification_timeout",
            values={"approved_at": now, "release_at": release_at, "verification_stage_done": stages_done},
        )
        if moved is None:
            return None
        context: dict[str, Any] = {
            "outcome": "release",
            "releaseAt": release_at.isoformat(),
            **deadline_facts(plan=plan),
        }
        summary = (
            N_(
                "The verification deadline you chose passed without enough guardian approvals: as you "
                "chose, the plan will be released when the cancel window ends, unless you check in"
            )
            if plan["deadline_chosen_at"] is not None
            else N_(
                "The verification deadline passed without enough guardian approvals: as every plan is set "
                "unless its owner chooses otherwise, it will be released when the cancel window ends, unless "
                "you check in"
            )
        )
    else:
        await update_schedule(
            cur,
            plan_id=plan["id"],
            values={"verification_timed_out_at": now, "verification_stage_done": stages_done},
        )
        # It would have released, but a guardian objects (models.flows.answers.objections): it waits.
        objected = bool(plan["objections"]) and plan["on_verification_timeout"] == "release"
        context = {"outcome": "wait", "objected": objected, **deadline_facts(plan=plan)}
        until = await objections.holds_until(cur, plan=plan) if objected else None
        if until is not None:
            context["lapsesAt"] = until.isoformat()  # until when the objection holds it back
        summary = (
            N_(
                "The verification deadline passed without enough guardian approvals: a guardian objects, so "
                "the plan goes on waiting for your guardians or your check-in"
            )
            if objected
            else N_(
                "The verification deadline passed without enough guardian approvals: as you chose, the "
                "plan goes on waiting for your guardians or your check-in"
            )
            if plan["deadline_chosen_at"] is not None
            else N_(
                "The verification deadline passed without enough guardian approvals: as every plan is set "
                "unless its owner chooses otherwise, it goes on waiting for your guardians or your check-in"
            )
        )
    told = (
        []
        if release
        else await heir_answers.tell_in(
            cur,
            plan_id=plan["id"],
            outcome="waiting",
            now=now,
            why="objected"
            if context["objected"]
            else ("owner_chose_wait" if plan["on_verification_timeout"] == "wait" else "onchain"),
            until=until if not release else None,
        )
    )
    return told + await announce(
        cur,
        plan_id=plan["id"],
        owner_id=plan["user_id"],
        now=now,
        owner=Email("verification_timeout", context),
        guardians=Email("verification_timeout_guardian", context),
        timeline=Entry(
            "plan.verification_timed_out", summary, {"actor": "scheduler", "outcome": context["outcome"]}
        ),
    )
