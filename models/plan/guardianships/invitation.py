"""The guardian's list of plans (invitations included) and their answer: accept or decline."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any, Literal, TypedDict

from arq.connections import ArqRedis

from core.db import Cursor, Pool, autocommit, transaction
from core.errors import Conflict, NotFound
from core.files.crypto import KeyRing
from core.text.i18n import N_
from models import activity, plans, sealed_text
from models.claim import claim_links, wallet_changes
from models.common import parse_id
from models.contents import guardians
from models.delivery import outbox
from models.delivery.announce import Email, Entry, announce
from models.plan.guardianships import open_addresses
from models.plan.guardianships.membership import FIRST_ROW, GUARDIAN_OF, membership
from models.plans import ACTIVE, APPROVED, FROZEN, PENDING, RELEASED, Plan, get_by_id

InvitationState = Literal["pending", "accepted", "declined"]
NOT_DURING_A_ROUND = (
    "Guardians are verifying this plan right now, and you had not accepted when it began: you can "
    "accept once the verification ends. The guardians who accepted and the deadline carry it."
)


class Guardianship(TypedDict):
    plan_id: str
    owner_name: str | None
    owner_wallet: str
    status: str
    threshold: int
    approvals: int
    approved_by_me: bool
    reported_by_me: bool
    objected_at: datetime | None  # their standing objection in this verification (None: none)
    objection_lapses_at: datetime | None  # when it lapses unless the owner checks in first
    release_at: datetime | None
    invitation: InvitationState
    invited_at: datetime | None
    accepted_at: datetime | None
    declined_at: datetime | None
    # Reconfirmation: the last confirmation, a request within its grace, since when one went
    # unanswered past it, and whether a confirmation is asked now (either, before the release, as
    # the guardian's page asks). Nothing until the guardian accepts.
    reconfirmed_at: datetime | None
    reconfirm_asked_at: datetime | None
    unresponsive_since: datetime | None
    reconfirmation_asked: bool
    ready_at: datetime | None  # contract mode: links sent, the release awaits a beneficiary
    # The latest sign-in with the owner's wallet during this verification: not a veto.
    owner_key_used_at: datetime | None
    # Once released or ready: each heir's claim-link delivery (names only; empty before).
    beneficiaries: list[claim_links.LinkDelivery]
    # Wallets heirs proved in place of a lost one, waiting for the guardians (docs/soroban.md).
    wallet_changes: list[wallet_changes.WalletChange]
    # Corrected heir addresses still running, once released or ready (docs/lifecycle.md).
    address_changes: list[open_addresses.ListedChange]


class Answer(TypedDict):
    """A guardian's answer to an invitation, and the plan's status at that moment."""

    invitation: InvitationState
    status: str


def _invited_only(row: dict[str, Any], threshold: int) -> Guardianship:
    """What a guardian who has not accepted (or declined) sees: who asks, the plan's state, and
    their own invitation."""
    return Guardianship(
        plan_id=row["plan_id"],
        owner_name=row["owner_name"],
        owner_wallet=row["owner_wallet"],
        status=row["status"],
        threshold=threshold,
        approvals=0,
        approved_by_me=False,
        reported_by_me=False,
        objected_at=None,
        objection_lapses_at=None,
        release_at=None,
        invitation=_state(row["accepted_at"], row["declined_at"]),
        invited_at=row["invited_at"],
        accepted_at=None,
        declined_at=row["declined_at"],
        reconfirmed_at=None,
        reconfirm_asked_at=None,
        unresponsive_since=None,
        reconfirmation_asked=False,
        ready_at=None,
        owner_key_used_at=None,
        beneficiaries=[],
        wallet_changes=[],
        address_changes=[],
    )


def _state(accepted_at: datetime | None, declined_at: datetime | None) -> InvitationState:
    return "accepted" if accepted_at else "declined" if declined_at else "pending"


async def list_for(pool: Pool, ring: KeyRing, *, user_id: str) -> list[Guardianship]:
    """Every plan the caller guards or is invited to guard (Drafts too), with its verification
    progress and the caller's answer; no contents. A guardian who has not accepted (invited, or
    declined) sees only the owner, the plan's state and their own invitation: nothing about the
    heirs, the approvals, the release, the owner's key being used or their reconfirmation until
    they take the role on (an invitation alone shows nothing of the plan)."""
    async with autocommit(pool) as cur:
        await cur.execute(
            "SELECT DISTINCT ON (p.id) p.id AS plan_id, o.id AS owner_id, g.id::text AS guardian_id,"
            f" {sealed_text.select_list(table='users', alias='o', columns=('name',), prefix='owner_')},"
            " o.wallet_address AS owner_wallet,"
            " p.status, p.guardian_threshold, p.round_threshold, p.release_at, p.ready_at, g.invited_at,"
            " g.accepted_at, g.declined_at, g.reconfirmed_at, g.reconfirm_asked_at, g.unresponsive_since,"
            f" {activity.KEY_USED_AT_SQL} AS owner_key_used_at,"
            " (SELECT count(*) FROM guardians gg WHERE gg.user_id = p.user_id AND gg.declined_at IS NULL)"
            " AS standing,"
            " (SELECT count(*) FROM plan_approvals a WHERE a.plan_id = p.id AND a.round = "
            "p.verification_round"
            "   AND a.voided_at IS NULL AND p.verification_round > 0) AS approvals,"
            " EXISTS (SELECT 1 FROM plan_approvals a WHERE a.plan_id = p.id AND a.round = "
            "p.verification_round"
            "   AND a.voided_at IS NULL AND a.approver_user_id = %s) AS approved_by_me,"
            " EXISTS (SELECT 1 FROM plan_reports r WHERE r.plan_id = p.id AND r.round = p.verification_round"
            "   AND r.reporter_user_id = %s) AS reported_by_me,"
            " (SELECT ob.created_at FROM plan_objections ob WHERE ob.plan_id = p.id"
            "   AND ob.round = p.verification_round AND ob.guardian_id = g.id AND ob.withdrawn_at IS NULL)"
            " AS objected_at,"
            " (SELECT ob.lapses_at FROM plan_objections ob WHERE ob.plan_id = p.id"
            "   AND ob.round = p.verification_round AND ob.guardian_id = g.id AND ob.withdrawn_at IS NULL)"
            " AS objection_lapses_at "
            f"{GUARDIAN_OF} ORDER BY p.id, {FIRST_ROW}",
            (user_id, user_id, user_id),
        )
        rows = await cur.fetchall()
        guarded = [row["plan_id"] for row in rows if row["accepted_at"] is not None]
        links = await claim_links.deliveries(cur, ring, plan_ids=guarded)
        changes = await wallet_changes.pending_changes(cur, ring, plan_ids=guarded, guardian_user_id=user_id)
        # Only where the heirs hold their links (their names are on the list already).
        guardian_of = {str(r["plan_id"]): r["guardian_id"] for r in rows if links.get(str(r["plan_id"]))}
        addresses = await open_addresses.of_plans(cur, ring, guardian_of=guardian_of)
    result = []
    for sealed_row in rows:
        row = sealed_text.open_row(ring, table="users", row=sealed_row, id_key="owner_id", prefix="owner_")
        threshold = plans.threshold(plan=row, standing=row["standing"])
        verified = row["status"] in (PENDING, APPROVED, RELEASED)  # the round's approvals still stand
        if row["accepted_at"] is None:
            result.append(_invited_only(row, threshold))
            continue
        result.append(
            Guardianship(
                plan_id=row["plan_id"],
                owner_name=row["owner_name"],
                owner_wallet=row["owner_wallet"],
                status=row["status"],
                threshold=threshold,
                approvals=row["approvals"],
                approved_by_me=bool(row["approved_by_me"]) and verified,
                reported_by_me=bool(row["reported_by_me"]) and row["status"] != ACTIVE,
                objected_at=row["objected_at"] if row["status"] in FROZEN else None,
                objection_lapses_at=row["objection_lapses_at"] if row["status"] in FROZEN else None,
                release_at=row["release_at"],
                invitation=_state(row["accepted_at"], row["declined_at"]),
                invited_at=row["invited_at"],
                accepted_at=row["accepted_at"],
                declined_at=row["declined_at"],
                reconfirmed_at=row["reconfirmed_at"],
                reconfirm_asked_at=row["reconfirm_asked_at"],
                unresponsive_since=row["unresponsive_since"],
                reconfirmation_asked=(row["reconfirm_asked_at"] or row["unresponsive_since"]) is not None
                and row["status"] in (ACTIVE, PENDING, APPROVED),
                ready_at=row["ready_at"] if row["status"] == APPROVED else None,
                owner_key_used_at=row["owner_key_used_at"] if row["status"] in FROZEN else None,
                beneficiaries=links.get(str(row["plan_id"]), []),
                wallet_changes=changes.get(str(row["plan_id"]), []),
                address_changes=addresses.get(str(row["plan_id"]), []),
            )
        )
    return result


async def answer(
    pool: Pool,
    redis: ArqRedis,
    ring: KeyRing,
    *,
    user_id: str | None,
    raw_plan_id: str,
    accept: bool,
    now: datetime,
    reconfirm_after: timedelta,
    guardian_id: str | None = None,
) -> Answer:
    """Accept or decline the invitation to guard this plan (every guardian row of the plan whose
    wallet is the caller's). Answering again the same way changes nothing. A decline is told
    to the owner; it is refused while guardians verify (409: a guardian does not step down in
    the middle of a verification). Accepting is refused while guardians verify (409: only those
    who had accepted when the round began answer in it) and once the plan is released. With
    `guardian_id` (a guardian's page), that one row answers."""
    async with transaction(pool) as cur:
        answered, row_ids = await answer_in(
            cur,
            ring,
            user_id=user_id,
            plan_id=parse_id(raw=raw_plan_id, what="Plan"),
            accept=accept,
            now=now,
            reconfirm_after=reconfirm_after,
            guardian_id=guardian_id,
        )
    await outbox.enqueue(redis, row_ids=row_ids)
    return answered


async def answer_in(
    cur: Cursor,
    ring: KeyRing,
    *,
    user_id: str | None,
    plan_id: str,
    accept: bool,
    now: datetime,
    reconfirm_after: timedelta,
    guardian_id: str | None = None,
) -> tuple[Answer, list[str]]:
    """`answer` inside the caller's transaction (a passkey created with the acceptance is kept
    only if the acceptance is), with the outbox rows to enqueue once it commits."""
    await membership(cur, ring, user_id=user_id, plan_id=plan_id, guardian_id=guardian_id)
    plan = await _answerable_plan(cur, plan_id=plan_id, accept=accept)
    rows = await _answering_rows(cur, plan=plan, user_id=user_id, guardian_id=guardian_id)
    answered = "accepted_at" if accept else "declined_at"
    changing = [r for r in rows if r[answered] is None]
    if accept and changing and plan["status"] in FROZEN:
        # Whoever reads a guardian's mailbox could otherwise take the role on mid-round and
        # approve or object in it: a round is carried by those who had accepted when it began.
        raise Conflict(NOT_DURING_A_ROUND)
    row_ids: list[str] = []
    for row in changing:
        row_ids += await _record_one(
            cur, plan=plan, guardian_id=row["id"], accept=accept, now=now, reconfirm_after=reconfirm_after
        )
    return Answer(invitation="accepted" if accept else "declined", status=plan["status"]), row_ids


async def _answerable_plan(cur: Cursor, *, plan_id: str, accept: bool) -> Plan:
    """The plan, locked, if it can take this answer now."""
    plan = await get_by_id(cur, plan_id=plan_id, lock=True)
    if plan is None:
        raise NotFound("Plan")
    if plan["status"] == RELEASED:
        raise Conflict("This plan has already been released.")
    if not accept and plan["status"] in FROZEN:
        raise Conflict(
            "Guardians are verifying this plan right now: you cannot step down until the verification "
            "ends. If you are unsure, do nothing: the plan waits."
        )
    return plan


async def _answering_rows(
    cur: Cursor, *, plan: Plan, user_id: str | None, guardian_id: str | None
) -> list[dict[str, Any]]:
    """The guardian rows this answer is for, locked: the one named, or every row of the plan's
    owner naming one of the user's wallets."""
    if guardian_id is not None:
        await cur.execute(
            "SELECT g.id, g.accepted_at, g.declined_at FROM guardians g WHERE g.id = %s FOR UPDATE",
            (guardian_id,),
        )
    else:
        await cur.execute(
            "SELECT g.id, g.accepted_at, g.declined_at FROM guardians g"
            " JOIN user_wallets w ON w.wallet_address = g.wallet_address AND w.user_id = %s"
            " WHERE g.user_id = %s ORDER BY g.created_at FOR UPDATE OF g",
            (user_id, plan["user_id"]),
        )
    rows: list[dict[str, Any]] = await cur.fetchall()
    return rows


async def _record_one(
    cur: Cursor, *, plan: Plan, guardian_id: Any, accept: bool, now: datetime, reconfirm_after: timedelta
) -> list[str]:
    """One guardian's answer, and who hears of it: the outbox rows to enqueue."""
    await guardians.record_answer(
        cur, guardian_id=guardian_id, accept=accept, now=now, reconfirm_after=reconfirm_after
    )
    # Either answer is told to the owner, with whether the plan can still be released.
    accepted, needed = await plans.acceptance(cur, plan=plan)
    context = {"guardianId": str(guardian_id), "accepted": accepted, "needed": needed}
    return await announce(
        cur,
        plan_id=plan["id"],
        owner_id=plan["user_id"],
        now=now,
        owner=Email("guardian_accepted" if accept else "guardian_declined", context),
        timeline=Entry(
            "guardian.accepted" if accept else "guardian.declined",
            N_("A guardian accepted to guard your plan")
            if accept
            else N_("A guardian declined to guard your plan"),
            {"actor": "guardian", "guardianId": str(guardian_id)},
            entity_id=guardian_id,
        ),
    )
