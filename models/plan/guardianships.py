"""The guardian's side: plans where one of the signed-in account's wallets is a guardian.

A guardian account sees only those plans (any other plan id is 404, like a missing one) and
nothing of their contents, Drafts included: that is where an invitation is answered. Once it
has accepted, it can report that the owner has died or cannot act, and approve a release by
signing a single-use attestation with the guardian wallet the owner recorded; before, both
are 403. Decisions: docs/lifecycle.md.
"""

from __future__ import annotations

import math
import secrets
import uuid
from datetime import datetime, timedelta
from typing import Literal, TypedDict

from arq.connections import ArqRedis

from core import challenges
from core.clock import wire_time
from core.db import Cursor, Pool, autocommit, transaction
from core.errors import BadRequest, Conflict, Forbidden, NotFound, TooManyRequests, Unauthorized
from core.files.crypto import KeyRing
from core.settings import Settings
from core.stellar.wallet import decode_signature, verify_signature
from models import activity, sealed_text
from models.claim import wallets
from models.common import as_record, parse_id
from models.contents import guardians
from models.delivery import claim_links, outbox
from models.plan import approvals, lifecycle, plans
from models.plan.plans import (
    ACTIVE,
    APPROVED,
    DRAFT,
    FROZEN,
    PENDING,
    RELEASED,
    Plan,
    effective_threshold,
    get_by_id,
)

# Plan, verification round, guardian: an attestation issued before the owner's veto is not
# found in the next round, so it cannot approve a release the guardian never saw.
ATTESTATION_KEY = "legacy:attestation:{}:{}:{}"
ATTESTATION_TTL = timedelta(minutes=10)


InvitationState = Literal["pending", "accepted", "declined"]


class Guardianship(TypedDict):
    plan_id: str
    owner_name: str | None
    owner_wallet: str
    status: str
    threshold: int
    approvals: int
    approved_by_me: bool
    reported_by_me: bool
    release_at: datetime | None
    invitation: InvitationState
    invited_at: datetime | None
    accepted_at: datetime | None
    declined_at: datetime | None
    ready_at: datetime | None  # contract mode: links sent, the release awaits a beneficiary
    # Once released or ready: each heir's claim-link delivery (names only; empty before).
    beneficiaries: list[claim_links.LinkDelivery]
    # Wallets heirs proved in place of a lost one, waiting for the guardians (docs/soroban.md).
    wallet_changes: list[wallets.WalletChange]


class Membership(TypedDict):
    """The guardian row (of the plan's owner) that one of the caller's wallets is."""

    guardian_id: str
    guardian_name: str
    wallet_address: str
    owner_wallet: str
    accepted_at: datetime | None


class Answer(TypedDict):
    """A guardian's answer to an invitation, and the plan's status at that moment."""

    invitation: InvitationState
    status: str


_GUARDIAN_OF = (
    "FROM plans p JOIN guardians g ON g.user_id = p.user_id"
    " JOIN user_wallets w ON w.wallet_address = g.wallet_address AND w.user_id = %s"
    " JOIN users o ON o.id = p.user_id"
    # Never the owner's own account, even through a guardian wallet it linked later.
    " WHERE w.user_id <> p.user_id"
)
# Of an account's guardian rows on one plan (two linked wallets), the accepted one acts first.
_FIRST_ROW = "(g.accepted_at IS NULL), g.created_at"


def _state(accepted_at: datetime | None, declined_at: datetime | None) -> InvitationState:
    return "accepted" if accepted_at else "declined" if declined_at else "pending"


async def list_for(pool: Pool, ring: KeyRing, user_id: str) -> list[Guardianship]:
    """Every plan the caller guards or is invited to guard (Drafts too), with its verification
    progress and the caller's answer; no contents."""
    async with autocommit(pool) as cur:
        await cur.execute(
            "SELECT DISTINCT ON (p.id) p.id AS plan_id, o.id AS owner_id,"
            f" {sealed_text.select_list('users', 'o', ('name',), prefix='owner_')}, o.wallet_address AS"
            " owner_wallet,"
            " p.status, p.guardian_threshold, p.release_at, p.ready_at, g.invited_at, g.accepted_at,"
            " g.declined_at,"
            " (SELECT count(*) FROM guardians gg WHERE gg.user_id = p.user_id) AS guardians,"
            " (SELECT count(*) FROM plan_approvals a WHERE a.plan_id = p.id AND a.round = "
            "p.verification_round"
            "   AND a.voided_at IS NULL AND p.verification_round > 0) AS approvals,"
            " EXISTS (SELECT 1 FROM plan_approvals a WHERE a.plan_id = p.id AND a.round = "
            "p.verification_round"
            "   AND a.voided_at IS NULL AND a.approver_user_id = %s) AS approved_by_me,"
            " EXISTS (SELECT 1 FROM plan_reports r WHERE r.plan_id = p.id AND r.round = p.verification_round"
            "   AND r.reporter_user_id = %s) AS reported_by_me "
            f"{_GUARDIAN_OF} ORDER BY p.id, {_FIRST_ROW}",
            (user_id, user_id, user_id),
        )
        rows = await cur.fetchall()
        links = await claim_links.deliveries(cur, ring, [row["plan_id"] for row in rows])
        changes = await wallets.pending_changes(
            cur, ring, plan_ids=[row["plan_id"] for row in rows], guardian_user_id=user_id
        )
    result = []
    for sealed_row in rows:
        row = sealed_text.open_row(ring, "users", sealed_row, id_key="owner_id", prefix="owner_")
        threshold = row["guardian_threshold"] or row["guardians"] // 2 + 1
        verified = row["status"] in (PENDING, APPROVED, RELEASED)  # the round's approvals still stand
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
                release_at=row["release_at"],
                invitation=_state(row["accepted_at"], row["declined_at"]),
                invited_at=row["invited_at"],
                accepted_at=row["accepted_at"],
                declined_at=row["declined_at"],
                ready_at=row["ready_at"] if row["status"] == APPROVED else None,
                beneficiaries=links.get(str(row["plan_id"]), []),
                wallet_changes=changes.get(str(row["plan_id"]), []),
            )
        )
    return result


async def _membership(cur: Cursor, ring: KeyRing, user_id: str, plan_id: str) -> Membership:
    await cur.execute(
        "SELECT g.id AS guardian_id,"
        f" {sealed_text.select_list('guardians', 'g', ('name',), prefix='guardian_')},"
        " g.wallet_address, o.wallet_address AS owner_wallet, g.accepted_at "
        f"{_GUARDIAN_OF} AND p.id = %s ORDER BY {_FIRST_ROW} LIMIT 1",
        (user_id, plan_id),
    )
    row = await cur.fetchone()
    if row is None:
        raise NotFound("Plan")
    return as_record(
        Membership, sealed_text.open_row(ring, "guardians", row, id_key="guardian_id", prefix="guardian_")
    )


def require_accepted(accepted_at: datetime | None) -> None:
    """403 for a guardian who has not accepted (or has declined): they do not count yet."""
    if accepted_at is None:
        raise Forbidden(
            "You have not accepted to guard this plan: accept the invitation first "
            "(POST /api/legacy/guardianships/{planId}/accept); only accepted guardians report or approve."
        )


async def _locked(cur: Cursor, ring: KeyRing, user_id: str, raw_plan_id: str) -> tuple[Plan, Membership]:
    """The plan (locked) and the caller's accepted guardian row; 404, 403 or 409 (a draft)."""
    plan_id = parse_id(raw_plan_id, "Plan")
    member = await _membership(cur, ring, user_id, plan_id)
    require_accepted(member["accepted_at"])
    plan = await get_by_id(cur, plan_id, lock=True)
    if plan is None:
        raise NotFound("Plan")
    if plan["status"] == DRAFT:
        raise Conflict("This plan is not active yet: there is nothing to report or approve.")
    return plan, member


async def answer(
    pool: Pool, redis: ArqRedis, ring: KeyRing, *, user_id: str, raw_plan_id: str, accept: bool, now: datetime
) -> Answer:
    """Accept or decline the invitation to guard this plan (every guardian row of the plan whose
    wallet is the caller's). Answering again the same way changes nothing. A decline is told
    to the owner; it is refused while guardians verify (409: a guardian does not step down in
    the middle of a verification) and accepting is refused once the plan is released."""
    plan_id = parse_id(raw_plan_id, "Plan")
    async with transaction(pool) as cur:
        await _membership(cur, ring, user_id, plan_id)
        plan = await get_by_id(cur, plan_id, lock=True)
        if plan is None:
            raise NotFound("Plan")
        if plan["status"] == RELEASED:
            raise Conflict("This plan has already been released.")
        if not accept and plan["status"] in FROZEN:
            raise Conflict(
                "Guardians are verifying this plan right now: you cannot step down until the verification "
                "ends. If you are unsure, do nothing: the plan waits."
            )
        await cur.execute(
            "SELECT g.id, g.accepted_at, g.declined_at FROM guardians g"
            " JOIN user_wallets w ON w.wallet_address = g.wallet_address AND w.user_id = %s"
            " WHERE g.user_id = %s ORDER BY g.created_at FOR UPDATE OF g",
            (user_id, plan["user_id"]),
        )
        rows = await cur.fetchall()
        answered = "accepted_at" if accept else "declined_at"
        changing = [r for r in rows if r[answered] is None]
        row_ids: list[str] = []
        for row in changing:
            await guardians.record_answer(cur, row["id"], accept=accept, now=now)
            await activity.record(
                cur,
                user_id=plan["user_id"],
                kind="guardian.accepted" if accept else "guardian.declined",
                entity_id=row["id"],
                summary="A guardian "
                + ("accepted to guard your plan" if accept else "declined to guard your plan"),
                metadata={"actor": "guardian", "guardianId": str(row["id"])},
            )
            if not accept:
                row_ids.append(
                    await outbox.add(
                        cur,
                        kind="guardian_declined",
                        plan_id=plan["id"],
                        recipient_type="owner",
                        recipient_id=plan["user_id"],
                        now=now,
                        context={"guardianId": str(row["id"])},
                    )
                )
    await outbox.enqueue(redis, row_ids)
    return Answer(invitation="accepted" if accept else "declined", status=plan["status"])


def _cooldown(plan: Plan, settings: Settings, now: datetime) -> None:
    """429 while the owner's last veto is more recent than PLAN_REPORT_COOLDOWN_SECONDS: a report
    emails the owner and every guardian, and the owner has just said they are well."""
    vetoed = plan["last_vetoed_at"]
    if plan["status"] != ACTIVE or vetoed is None:
        return
    until = vetoed + timedelta(seconds=settings.plan_report_cooldown_seconds)
    if now < until:
        raise TooManyRequests(
            f"The owner checked in and stopped the last verification at {wire_time(vetoed)}. To spare them "
            f"and the other guardians an alarm a day, a new report is possible from {wire_time(until)}.",
            math.ceil((until - now).total_seconds()),
        )


async def report(
    pool: Pool,
    redis: ArqRedis,
    settings: Settings,
    *,
    user_id: str,
    raw_plan_id: str,
    note: str | None,
    now: datetime,
) -> None:
    """Active → PendingVerification at once; in verification the report is recorded, no more.
    The guardian's name and note are sealed (models/sealed_text.py); the timeline names no one."""
    ring = settings.key_ring
    report_id = str(uuid.uuid4())
    texts = sealed_text.sealed_values(ring, "plan_reports", report_id, {"note": note})
    async with transaction(pool) as cur:
        plan, member = await _locked(cur, ring, user_id, raw_plan_id)
        if plan["status"] == RELEASED:
            raise Conflict("This plan has already been released.")
        _cooldown(plan, settings, now)
        row_ids: list[str] = []
        if plan["status"] == ACTIVE:
            row_ids = (
                await lifecycle.start_verification_in(
                    cur,
                    plan=plan,
                    now=now,
                    actor="guardian",
                    actor_name=member["guardian_name"],
                    reason="guardian_report",
                    ring=ring,
                )
                or []
            )
            round_ = plan["verification_round"] + 1
        else:
            round_ = plan["verification_round"]
        texts.update(
            sealed_text.sealed_values(
                ring, "plan_reports", report_id, {"guardian_name": member["guardian_name"]}
            )
        )
        await cur.execute(
            "INSERT INTO plan_reports (id, plan_id, round, guardian_id, guardian_name_sealed,"
            " reporter_user_id, note_sealed, created_at) VALUES (%s, %s, %s, %s, %s, %s, %s, %s)",
            (
                report_id,
                plan["id"],
                round_,
                member["guardian_id"],
                texts["guardian_name_sealed"],
                user_id,
                texts["note_sealed"],
                now,
            ),
        )
        await plans.timeline(
            cur,
            user_id=plan["user_id"],
            kind="guardian.reported",
            plan_id=plan["id"],
            summary="A guardian reported that you may have died or cannot act",
            metadata={"actor": "guardian", "guardianId": str(member["guardian_id"]), "withNote": bool(note)},
        )
    await outbox.enqueue(redis, row_ids)


async def attestation(
    pool: Pool, redis: ArqRedis, settings: Settings, *, user_id: str, raw_plan_id: str, now: datetime
) -> str:
    """The text the guardian signs to approve; single use, 10 minutes, one outstanding per guardian."""
    async with autocommit(pool) as cur:
        plan, member = await _locked(cur, settings.key_ring, user_id, raw_plan_id)
    if plan["status"] != PENDING:
        raise Conflict(
            f"Approvals are accepted only while the plan is being verified; it is {plan['status']}."
        )
    message = (
        f"{settings.service_name}: guardian attestation\n\n"
        f"I, the guardian holding wallet {member['wallet_address']}, approve the release of the legacy plan "
        f"{plan['id']} of the owner with wallet {member['owner_wallet']}.\n"
        "I have good reason to believe the owner has died or can no longer act.\n\n"
        f"Nonce: {secrets.token_hex(32)}\n"
        f"Issued At: {wire_time(now)}\n"
        f"Expiration Time: {wire_time(now + ATTESTATION_TTL)}"
    )
    key = ATTESTATION_KEY.format(plan["id"], plan["verification_round"], member["guardian_id"])
    await redis.set(key, message, ex=int(ATTESTATION_TTL.total_seconds()))
    return message


async def record_approval(
    cur: Cursor,
    ring: KeyRing,
    *,
    plan: Plan,
    guardian_id: str,
    guardian_name: str,
    wallet_address: str,
    approver_user_id: str | None,
    now: datetime,
    source: str = "attestation",
    message: str | None = None,
    signature: str | None = None,
    tx_hash: str | None = None,
) -> list[str]:
    """Store one approval of the current round on a locked PendingVerification plan; at the
    threshold, move to Approved. Returns outbox row ids to enqueue after COMMIT.

    Shared by the attestation route and the on-chain path (source "onchain", tx_hash).
    """
    if plan["status"] != PENDING:
        raise Conflict(
            f"Approvals are accepted only while the plan is being verified; it is {plan['status']}."
        )
    await approvals.record(
        cur,
        ring,
        plan_id=plan["id"],
        round_number=plan["verification_round"],
        guardian_id=guardian_id,
        guardian_name=guardian_name,
        wallet_address=wallet_address,
        approver_user_id=approver_user_id,
        source=source,
        message=message,
        signature=signature,
        tx_hash=tx_hash,
        now=now,
    )
    await plans.timeline(
        cur,
        user_id=plan["user_id"],
        kind="guardian.approved",
        plan_id=plan["id"],
        summary="A guardian approved the release",
        metadata={"actor": "guardian", "guardianId": guardian_id, "source": source},
    )
    await cur.execute(
        "SELECT count(*) AS approvals, (SELECT count(*) FROM guardians WHERE user_id = %s) AS guardians"
        " FROM plan_approvals WHERE plan_id = %s AND round = %s AND voided_at IS NULL",
        (plan["user_id"], plan["id"], plan["verification_round"]),
    )
    counts = await cur.fetchone()
    if counts["approvals"] < effective_threshold(plan, counts["guardians"]):
        return []
    moved = await lifecycle.approve_in(
        cur, plan=plan, now=now, actor="guardian", last_guardian_id=guardian_id
    )
    return moved or []


async def approve(
    pool: Pool,
    redis: ArqRedis,
    settings: Settings,
    *,
    user_id: str,
    raw_plan_id: str,
    signature: str,
    now: datetime,
) -> None:
    """Check the signature over the outstanding attestation, burn it, record the approval."""
    if settings.service_contract_id:
        raise Conflict(
            "This service approves releases on-chain: POST /api/legacy/guardianships/{planId}/approve/build, "
            "sign the returned approve_guardian transaction with your guardian wallet, and POST it to "
            "/api/legacy/guardianships/{planId}/submit."
        )
    raw_signature = decode_signature(signature)
    if raw_signature is None:
        raise BadRequest(
            ["signature: Must be a 64-byte ed25519 signature, base64 (88 chars) or hex (128 chars)."],
            details={"signature": ["Not a valid signature encoding."]},
        )
    ring = settings.key_ring
    async with autocommit(pool) as cur:
        plan, member = await _locked(cur, ring, user_id, raw_plan_id)
    key = ATTESTATION_KEY.format(plan["id"], plan["verification_round"], member["guardian_id"])
    message = await redis.get(key)
    message = message.decode() if isinstance(message, bytes) else message
    if message is None:
        raise Unauthorized("No valid attestation to sign (expired or already used); request a new one")
    if not verify_signature(member["wallet_address"], message, raw_signature):
        raise Unauthorized("The signature does not match the attestation for your guardian wallet")
    if not await challenges.consume_key(redis, key, message):
        raise Unauthorized("No valid attestation to sign (expired or already used); request a new one")
    async with transaction(pool) as cur:
        signed_round = plan["verification_round"]
        plan, member = await _locked(cur, ring, user_id, raw_plan_id)
        if plan["verification_round"] != signed_round:
            raise Unauthorized("The attestation was for an earlier verification; request a new one")
        row_ids = await record_approval(
            cur,
            ring,
            plan=plan,
            guardian_id=member["guardian_id"],
            guardian_name=member["guardian_name"],
            wallet_address=member["wallet_address"],
            approver_user_id=user_id,
            now=now,
            message=message,
            signature=signature.strip(),
        )
    await outbox.enqueue(redis, row_ids)


async def resend_link(
    pool: Pool,
    redis: ArqRedis,
    ring: KeyRing,
    *,
    user_id: str,
    raw_plan_id: str,
    raw_beneficiary_id: str,
    now: datetime,
) -> claim_links.LinkDelivery:
    """A guardian asks for an heir's link to be emailed again, to the heir's registered address
    only: once the plan is released or ready (409 before); the heir's own limit applies (429)."""
    beneficiary_id = parse_id(raw_beneficiary_id, "Beneficiary")
    async with transaction(pool) as cur:
        plan, member = await _locked(cur, ring, user_id, raw_plan_id)
        if not (plan["status"] == RELEASED or (plan["status"] == APPROVED and plan["ready_at"] is not None)):
            raise Conflict(
                "Links are sent once the plan is released (or ready to finalise on-chain); it is not yet."
            )
        await cur.execute(
            "SELECT 1 FROM beneficiaries WHERE id = %s AND user_id = %s", (beneficiary_id, plan["user_id"])
        )
        if await cur.fetchone() is None:
            raise NotFound("Beneficiary")
        row_ids, retry = await claim_links.send_again(
            cur, beneficiary_id=beneficiary_id, now=now, by="guardian", guardian_id=member["guardian_id"]
        )
        if retry:
            raise TooManyRequests(
                f"This link was already sent again {claim_links.PER_BENEFICIARY} times in the last 24 hours.",
                retry,
            )
        delivery = (await claim_links.deliveries(cur, ring, [plan["id"]]))[str(plan["id"])]
    await outbox.enqueue(redis, row_ids)
    return next(d for d in delivery if d["beneficiary_id"] == beneficiary_id)


async def approve_wallet_change(
    pool: Pool, ring: KeyRing, *, user_id: str, raw_plan_id: str, raw_change_id: str, now: datetime
) -> wallets.ChangeStatus:
    """A guardian approves the wallet an heir proved in place of a lost one; at the plan's
    threshold it is bound to the heir. Only while the plan is released or ready (409 before)."""
    change_id = parse_id(raw_change_id, "Wallet change")
    async with transaction(pool) as cur:
        plan, member = await _locked(cur, ring, user_id, raw_plan_id)
        if not (plan["status"] == RELEASED or (plan["status"] == APPROVED and plan["ready_at"] is not None)):
            raise Conflict(
                "Wallets are approved once the plan is released (or ready to finalise); it is not yet."
            )
        return await wallets.approve_change(
            cur,
            plan_id=plan["id"],
            owner_id=plan["user_id"],
            change_id=change_id,
            guardian_id=member["guardian_id"],
            approver_user_id=user_id,
            now=now,
        )
