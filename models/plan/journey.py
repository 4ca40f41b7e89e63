"""What the owner reads about their plan: the overview (GET /api/legacy) and the journey.

Read-only; one autocommit cursor. Email shows as notifications (kind, recipient role, status,
times), never bodies or addresses.
"""

from __future__ import annotations

from datetime import datetime
from typing import TypedDict

from core.db import Cursor, Pool, autocommit
from core.files.crypto import KeyRing
from core.text import i18n
from core.text.i18n import N_, _, ngettext
from models import sealed_text
from models.common import as_record, speaking_to
from models.delivery import history
from models.plan import objections
from models.plan.approvals import approved_on_chain
from models.plan.plan_settings import Facts, facts
from models.plan.readiness import readiness, warnings
from models.plans import (
    ACTIVE,
    APPROVED,
    DRAFT,
    PENDING,
    RELEASED,
    STATUSES,
    NewPlan,
    Plan,
    get_or_create,
    threshold,
    verification_deadline,
)


class ApprovalEntry(TypedDict):
    guardian_id: str
    name: str
    approved_at: datetime | None
    objected_at: datetime | None  # this round, a mistake, they say (models.flows.answers.objections)
    objection_lapses_at: datetime | None  # unless the owner checks in, that objection lapses then


class Overview(TypedDict):
    plan: Plan
    facts: Facts
    threshold: int
    approvals: list[ApprovalEntry]
    approval_count: int
    objection_count: int
    problems: list[str]
    warnings: list[str]
    notifications: list[history.Notice]
    # While guardians verify: one sentence on who started it, what happens next, and that only
    # an explicit check-in stops it (a sign-in does not). None otherwise.
    verification_notice: str | None


class Step(TypedDict):
    status: str
    state: str  # done | current | upcoming
    at: datetime | None


class Transition(TypedDict):
    from_status: str
    to_status: str
    actor: str
    actor_name: str | None
    reason: str
    at: datetime


class Verification(TypedDict):
    """The running verification round (PendingVerification or Approved), deadline included."""

    round: int
    started_at: datetime
    reason: str | None
    deadline_at: datetime | None  # None: no deadline (verificationTimeoutSeconds null)
    on_timeout: str
    timed_out_at: datetime | None
    waiting: bool  # the deadline passed and, as the owner chose, the plan goes on waiting


class Journey(TypedDict):
    plan: Plan
    steps: list[Step]
    transitions: list[Transition]
    notifications: list[history.Notice]
    verification: Verification | None


def verification(*, plan: Plan) -> Verification | None:
    started = plan["verification_started_at"]
    if plan["status"] not in (PENDING, APPROVED) or started is None:
        return None
    return Verification(
        round=plan["verification_round"],
        started_at=started,
        reason=plan["verification_reason"],
        deadline_at=verification_deadline(plan=plan),
        on_timeout=plan["on_verification_timeout"],
        timed_out_at=plan["verification_timed_out_at"],
        waiting=plan["status"] == PENDING and plan["verification_timed_out_at"] is not None,
    )


async def overview(
    pool: Pool, ring: KeyRing, *, user_id: str, defaults: NewPlan | None = None, contract: bool = False
) -> Overview:
    """The owner's plan as GET /api/legacy shows it (created with `defaults` if it is new)."""
    async with autocommit(pool) as cur:
        plan = await get_or_create(cur, user_id=user_id, defaults=defaults)
        known = await facts(cur, ring, user_id=user_id)
        # Every guardian who has not declined, with the time they approved or objected in the
        # current round (None if not): a declined guardian no longer counts.
        await cur.execute(
            "SELECT g.id AS guardian_id,"
            f" {sealed_text.select_list(table='guardians', alias='g', columns=('name',))},"
            " a.created_at AS approved_at, ob.created_at AS objected_at, ob.lapses_at AS objection_lapses_at"
            " FROM guardians g"
            " LEFT JOIN plan_approvals a ON a.plan_id = %s AND a.round = %s AND a.voided_at IS NULL"
            "  AND (a.wallet_address = g.wallet_address"
            "   OR (g.wallet_address IS NULL AND a.guardian_id = g.id)) AND %s > 0"
            " LEFT JOIN plan_objections ob ON ob.plan_id = %s AND ob.round = %s AND ob.withdrawn_at IS NULL"
            "  AND ob.guardian_id = g.id AND %s IN ('PendingVerification', 'Approved')"
            " WHERE g.user_id = %s AND g.declined_at IS NULL ORDER BY g.created_at, g.id",
            (
                plan["id"],
                plan["verification_round"],
                plan["verification_round"],
                plan["id"],
                plan["verification_round"],
                plan["status"],
                user_id,
            ),
        )
        approvals = [
            as_record(
                ApprovalEntry,
                row=sealed_text.open_row(ring, table="guardians", row=row, id_key="guardian_id"),
            )
            for row in await cur.fetchall()
        ]
        notifications = await history.notices(cur, plan_id=plan["id"])
        needed = threshold(plan=plan, standing=known["standing_guardians"])
        # The sentences are the owner's: in their language, times in their zone.
        async with speaking_to(cur, table="users", row_id=user_id):
            notice = await _verification_notice(cur, ring, plan, needed=needed)
            problems = (
                readiness(plan=plan, known=known, contract=contract)
                if plan["status"] in (DRAFT, ACTIVE)
                else []
            )
            advice = warnings(plan=plan, known=known) if plan["status"] != RELEASED else []
    return Overview(
        plan=plan,
        facts=known,
        threshold=needed,
        approvals=approvals,
        approval_count=sum(1 for a in approvals if a["approved_at"] is not None),
        objection_count=sum(1 for a in approvals if a["objected_at"] is not None),
        problems=problems,
        warnings=advice,
        notifications=notifications,
        verification_notice=notice,
    )


ONLY_CHECK_IN = N_(
    "only an explicit check-in stops it (with your wallet, or with the check-in link in our emails, "
    "which needs none): signing in with your wallet does not"
)
# What the guardian's report said, by its reason (models.flows.verification).
REPORT_SAID = {
    "death": N_(
        "Your guardian {guardian} reported on {when} that you have died, and your guardians were asked to "
        "verify your plan"
    ),
    "incapacity": N_(
        "Your guardian {guardian} reported on {when} that you can no longer act for yourself, and your "
        "guardians were asked to verify your plan"
    ),
    "unreachable": N_(
        "Your guardian {guardian} reported on {when} that they cannot reach you, and your guardians were "
        "asked to verify your plan"
    ),
}
REPORT_SAID_OTHER = N_(
    "Your guardian {guardian} reported on {when} that you may have died or can no longer act, and your "
    "guardians were asked to verify your plan"
)


async def _verification_notice(cur: Cursor, ring: KeyRing, plan: Plan, *, needed: int) -> str | None:
    """The sentence GET /api/legacy shows while a verification runs (docs/lifecycle.md, "Sign-in
    is not a veto"): whoever opens the account with the owner's key learns what is under way and
    that signing in changes nothing. Three clauses, each whole (who started it, what happens
    next, what stops it), joined by a sentence translators may reorder."""
    started = plan["verification_started_at"]
    if plan["status"] not in (PENDING, APPROVED) or started is None:
        return None
    who = _(
        "No check-in arrived before your grace period ended, so on {when} your guardians were asked to "
        "verify your plan"
    ).format(when=i18n.when(started))
    if plan["verification_reason"] == "guardian_report":
        await cur.execute(
            "SELECT r.id,"
            f" {sealed_text.select_list(table='plan_reports', alias='r', columns=('guardian_name',))},"
            " r.created_at"
            " FROM plan_reports r WHERE r.plan_id = %s AND r.round = %s ORDER BY r.created_at, r.id LIMIT 1",
            (plan["id"], plan["verification_round"]),
        )
        row = await cur.fetchone()
        if row is not None:
            report = sealed_text.open_row(ring, table="plan_reports", row=row)
            said = REPORT_SAID.get(plan["report_reason"] or "", REPORT_SAID_OTHER)
            who = _(said).format(guardian=report["guardian_name"], when=i18n.when(report["created_at"]))
        else:
            who = _("A guardian reported on {when} that you may have died or can no longer act").format(
                when=i18n.when(started)
            )
    elif plan["verification_reason"] == "beneficiary_request":
        who = _(
            "One of your beneficiaries asked on {when} that your guardians verify whether you have died or "
            "can no longer act, and your guardians were asked to verify your plan"
        ).format(when=i18n.when(started))
    next_ = await _what_next(cur, plan, needed=needed)
    # Translators: the verification notice, three clauses: who started it; what happens next; what stops it.
    return _("{who}; {next}; {only_check_in}.").format(who=who, next=next_, only_check_in=_(ONLY_CHECK_IN))


async def _what_next(cur: Cursor, plan: Plan, *, needed: int) -> str:
    """The notice's middle clause: what happens next in this verification."""
    if plan["status"] == APPROVED and plan["ready_at"] is not None:
        return _(
            "your guardians approved it, and since {when} your beneficiaries have their links: the release "
            "happens when one of them finalises it on-chain"
        ).format(when=i18n.when(plan["ready_at"]))
    if plan["status"] == APPROVED:
        on_chain = await approved_on_chain(cur, plan=plan)
        if plan["release_at"] is None:
            return (
                _(
                    "your guardians approved it: at the end of your cancel window your beneficiaries are "
                    "sent their links and one of them can finalise the release on-chain"
                )
                if on_chain
                else _(
                    "your guardians approved it: at the end of your cancel window your beneficiaries are "
                    "sent their links and the plan is released"
                )
            )
        return (
            _(
                "your guardians approved it: at {when} your beneficiaries are sent their links and one of "
                "them can finalise the release on-chain"
            )
            if on_chain
            else _(
                "your guardians approved it: at {when} your beneficiaries are sent their links and the plan "
                "is released"
            )
        ).format(when=i18n.when(plan["release_at"]))
    deadline = verification_deadline(plan=plan)
    approvals = ngettext("{count} guardian approval", "{count} guardian approvals", needed).format(
        count=i18n.number(needed)
    )
    if deadline is None:
        return _(
            "there is no deadline: once {approvals} are in, the release follows after your cancel window"
        ).format(approvals=approvals)
    if plan["on_verification_timeout"] == "release" and plan["objections"]:
        # A guardian objects (models.flows.answers.objections): the deadline cannot release.
        until = await objections.holds_until(cur, plan=plan)
        return _(
            "a guardian objects that you are alive or able to act, so the deadline, {when}, cannot release "
            "the plan until {until}, when the objection lapses unless you have checked in: it waits until "
            "then, or until {approvals} are in"
        ).format(when=i18n.when(deadline), approvals=approvals, until=i18n.when(until or deadline))
    if plan["on_verification_timeout"] == "release":
        return _(
            "if fewer than {approvals} are in by the deadline, {when}, the plan is released after your "
            "cancel window all the same"
        ).format(when=i18n.when(deadline), approvals=approvals)
    return _(
        "if fewer than {approvals} are in by the deadline, {when}, the plan goes on waiting for them"
    ).format(when=i18n.when(deadline), approvals=approvals)


def _step_times(plan: Plan) -> dict[str, datetime | None]:
    return {
        DRAFT: plan["created_at"],
        ACTIVE: plan["activated_at"],
        PENDING: plan["verification_started_at"],
        APPROVED: plan["approved_at"],
        RELEASED: plan["released_at"],
    }


READY_STEP = "ReadyToFinalize"


def _steps(plan: Plan, contract_configured: bool) -> list[Step]:
    """The five states in order; with a contract (or once it happened) `ReadyToFinalize` sits
    before `Released`: the cancel window's end, when the heirs get their links. On-chain the
    release has no date of its own (a beneficiary finalises it), so none is promised."""
    current = STATUSES.index(plan["status"])
    times = _step_times(plan)
    steps = [
        Step(
            status=status,
            state="done" if index < current else "current" if index == current else "upcoming",
            at=times[status] if index <= current else (plan["release_at"] if status == RELEASED else None),
        )
        for index, status in enumerate(STATUSES)
    ]
    ready_at = plan["ready_at"]
    if ready_at is None and not (contract_configured and plan["status"] != RELEASED):
        return steps
    if ready_at is not None:
        state = "done" if plan["status"] == RELEASED else "current"
        if state == "current":
            steps[STATUSES.index(APPROVED)]["state"] = "done"
    else:
        state = "upcoming"
    steps.insert(
        STATUSES.index(RELEASED), Step(status=READY_STEP, state=state, at=ready_at or plan["release_at"])
    )
    if plan["status"] != RELEASED:
        steps[-1]["at"] = None
    return steps


async def journey(
    pool: Pool,
    ring: KeyRing,
    *,
    user_id: str,
    contract_configured: bool = False,
    defaults: NewPlan | None = None,
) -> Journey:
    async with autocommit(pool) as cur:
        plan = await get_or_create(cur, user_id=user_id, defaults=defaults)
        await cur.execute(
            "SELECT t.id, t.from_status, t.to_status, t.actor,"
            f" {sealed_text.select_list(table='plan_transitions', alias='t')},"
            " t.reason, t.at FROM plan_transitions t WHERE t.plan_id = %s ORDER BY t.seq",
            (plan["id"],),
        )
        transitions = []
        for row in await cur.fetchall():
            record = sealed_text.open_row(ring, table="plan_transitions", row=row)
            del record["id"]
            transitions.append(as_record(Transition, row=record))
        notifications = await history.notices(cur, plan_id=plan["id"])
    steps = _steps(plan, contract_configured)
    return Journey(
        plan=plan,
        steps=steps,
        transitions=transitions,
        notifications=notifications,
        verification=verification(plan=plan),
    )
