"""A guardian's report that the owner has died or cannot act, the attestation they sign, and
the approval it records (at the threshold, the plan moves to Approved)."""

from __future__ import annotations

import math
import secrets
import uuid
from datetime import datetime, timedelta

from arq.connections import ArqRedis

from core import challenges
from core.clock import spelled, wire_time
from core.db import Cursor, Pool, autocommit, transaction
from core.errors import Conflict, TooManyRequests, Unauthorized
from core.files.crypto import KeyRing
from core.settings import Settings
from core.text.i18n import N_
from models import plans, sealed_text
from models.delivery import outbox
from models.delivery.announce import Entry, announce
from models.flows import release_path
from models.flows.answers import objections
from models.plan import approvals
from models.plan import objections as plan_objections
from models.plan.guardianships.membership import guarded, locked
from models.plans import ACTIVE, RELEASED, Plan
from models.proofs import message

# Plan, verification round, guardian: an attestation issued before the owner's veto is not
# found in the next round, so it cannot approve a release the guardian never saw.
ATTESTATION_KEY = "legacy:attestation:{}:{}:{}"
ATTESTATION_TTL = timedelta(minutes=10)


def _cooldown(plan: Plan, settings: Settings, now: datetime) -> None:
    """429 while the owner's last veto is more recent than PLAN_REPORT_COOLDOWN_SECONDS: a report
    emails the owner and every guardian, and the owner has just said they are well."""
    vetoed = plan["last_vetoed_at"]
    if plan["status"] != ACTIVE or vetoed is None:
        return
    until = vetoed + timedelta(seconds=settings.plan_report_cooldown_seconds)
    if now < until:
        raise TooManyRequests(
            f"The owner checked in on {spelled(vetoed)} and stopped the last verification. To spare them "
            f"and the other guardians an alarm a day, a new report is possible from {spelled(until)}.",
            math.ceil((until - now).total_seconds()),
        )


async def report(
    pool: Pool,
    redis: ArqRedis,
    settings: Settings,
    *,
    user_id: str | None,
    raw_plan_id: str,
    note: str | None,
    reason: str | None,
    now: datetime,
    guardian_id: str | None = None,
) -> None:
    """Active → PendingVerification at once; in verification the report is recorded, no more.
    The guardian's name and note are sealed (models/sealed_text.py); the timeline names no one.
    `reason` (plans.REPORT_REASONS, optional) chooses the words of the emails and the heir's
    page: the round keeps the first one given. With `guardian_id` (a guardian's page), that row
    reports."""
    ring = settings.key_ring
    report_id = str(uuid.uuid4())
    texts = sealed_text.sealed_values(ring, table="plan_reports", row_id=report_id, values={"note": note})
    async with transaction(pool) as cur:
        plan, member = await locked(
            cur, ring, user_id=user_id, raw_plan_id=raw_plan_id, guardian_id=guardian_id
        )
        if plan["status"] == RELEASED:
            raise Conflict("This plan has already been released.")
        _cooldown(plan, settings, now)
        row_ids: list[str] = []
        if plan["status"] == ACTIVE:
            row_ids = (
                await release_path.start_verification_in(
                    cur,
                    plan=plan,
                    now=now,
                    actor="guardian",
                    actor_name=member["guardian_name"],
                    reason="guardian_report",
                    warning_seconds=settings.plan_deadline_warning_seconds,
                    ring=ring,
                    about={"reporterId": str(member["guardian_id"])},  # their own email: "you told us"
                )
                or []
            )
            round_ = plan["verification_round"] + 1
        else:
            round_ = plan["verification_round"]
        texts.update(
            sealed_text.sealed_values(
                ring,
                table="plan_reports",
                row_id=report_id,
                values={"guardian_name": member["guardian_name"]},
            )
        )
        await cur.execute(
            "INSERT INTO plan_reports (id, plan_id, round, guardian_id, guardian_name_sealed,"
            " reporter_user_id, note_sealed, created_at, reason) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)",
            (
                report_id,
                plan["id"],
                round_,
                member["guardian_id"],
                texts["guardian_name_sealed"],
                user_id,
                texts["note_sealed"],
                now,
                reason,
            ),
        )
        if reason is not None:
            await plans.note_report_reason(cur, plan_id=plan["id"], reason=reason)
        await announce(
            cur,
            plan_id=plan["id"],
            owner_id=plan["user_id"],
            now=now,
            timeline=Entry(
                "guardian.reported",
                N_("A guardian reported that you may have died or cannot act"),
                {
                    "actor": "guardian",
                    "guardianId": str(member["guardian_id"]),
                    "withNote": bool(note),
                    "reason": reason,
                },
            ),
        )
    await outbox.enqueue(redis, row_ids=row_ids)


async def attestation(
    pool: Pool, redis: ArqRedis, settings: Settings, *, user_id: str, raw_plan_id: str, now: datetime
) -> str:
    """The text the guardian signs to approve; single use, 10 minutes, one outstanding per guardian."""
    async with autocommit(pool) as cur:
        plan, member = await guarded(cur, settings.key_ring, user_id=user_id, raw_plan_id=raw_plan_id)
    return await issue_attestation(
        redis,
        settings,
        plan=plan,
        guardian_id=member["guardian_id"],
        wallet_address=member["wallet_address"],
        owner_wallet=member["owner_wallet"],
        now=now,
    )


async def issue_attestation(
    redis: ArqRedis,
    settings: Settings,
    *,
    plan: Plan,
    guardian_id: str,
    wallet_address: str | None,
    owner_wallet: str,
    now: datetime,
    keep: bool = True,
) -> str:
    """The attestation text for this guardian and round, kept outstanding (the last one issued
    is the one that counts): signed as a message (`approve`) or, from the guardian's page, as a
    challenge transaction carrying its SHA-256 (models.proofs.challenge, `approve_attested`).
    `keep=False`: the caller's own one-time request holds it (a passkey's), so a later ask from
    the page cannot replace the text the guardian is proving."""
    approvals.require_verifying(status=plan["status"])
    message = (
        f"{settings.service_name}: guardian attestation\n\n"
        + (
            f"I, the guardian holding wallet {wallet_address}, "
            if wallet_address
            else f"I, the guardian {guardian_id} answering with my passkey, "
        )
        + f"approve the release of the legacy plan "
        f"{plan['id']} of the owner with wallet {owner_wallet}.\n"
        "I have good reason to believe the owner has died or can no longer act.\n\n"
        f"Nonce: {secrets.token_hex(32)}\n"
        f"Issued At: {wire_time(now)}\n"
        f"Expiration Time: {wire_time(now + ATTESTATION_TTL)}"
    )
    if keep:
        key = ATTESTATION_KEY.format(plan["id"], plan["verification_round"], guardian_id)
        await redis.set(key, message, ex=int(ATTESTATION_TTL.total_seconds()))
    return message


async def record_approval(
    cur: Cursor,
    ring: KeyRing,
    *,
    plan: Plan,
    approval: approvals.Approval,
    now: datetime,
) -> list[str]:
    """Store one approval of the current round on a locked PendingVerification plan; at the
    threshold, move to Approved. Returns outbox row ids to enqueue after COMMIT.

    Shared by the attestation route and the on-chain path (source "onchain", tx_hash: a
    contract is configured). The guardian's objection in this round, if any, is withdrawn.
    """
    guardian_id, source = approval.guardian_id, approval.source
    approvals.require_verifying(status=plan["status"])
    row_ids: list[str] = []
    if await plan_objections.withdraw(cur, plan=plan, guardian_id=guardian_id, now=now):
        # One answer per guardian and round: approving takes their objection back (told as such).
        row_ids = await objections.withdrawn_in(
            cur,
            plan=plan,
            guardian_id=guardian_id,
            now=now,
            contract_configured=source == "onchain",
            approved=True,
        )
    await approvals.record(
        cur, ring, plan_id=plan["id"], round_number=plan["verification_round"], approval=approval, now=now
    )
    await announce(
        cur,
        plan_id=plan["id"],
        owner_id=plan["user_id"],
        now=now,
        timeline=Entry(
            "guardian.approved",
            N_("A guardian approved the release"),
            {"actor": "guardian", "guardianId": guardian_id, "source": source},
        ),
    )
    await cur.execute(
        f"SELECT count(*) AS approvals, ({plans.STANDING_GUARDIANS}) AS standing"
        " FROM plan_approvals WHERE plan_id = %s AND round = %s AND voided_at IS NULL",
        (plan["user_id"], plan["id"], plan["verification_round"]),
    )
    counts = await cur.fetchone()
    if counts["approvals"] < plans.threshold(plan=plan, standing=counts["standing"]):
        return row_ids
    moved = await release_path.approve_in(
        cur, plan=plan, now=now, actor="guardian", last_guardian_id=guardian_id
    )
    return row_ids + (moved or [])


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
    """Check the signature over the outstanding attestation (models.proofs.message), burn it,
    record the approval."""
    approvals.require_off_chain(contract_id=settings.service_contract_id)
    raw = message.decode(answer=signature)
    async with autocommit(pool) as cur:
        plan, member = await guarded(cur, settings.key_ring, user_id=user_id, raw_plan_id=raw_plan_id)
    signed_round = plan["verification_round"]
    text = await outstanding(
        redis, plan_id=str(plan["id"]), round_=signed_round, guardian_id=member["guardian_id"]
    )
    if member["wallet_address"] is None:
        raise Conflict("You answer with a passkey: approve from your guardian page (the link in our emails).")
    message.check(wallet_address=member["wallet_address"], text=text, signature=raw)
    await approve_attested(
        pool,
        redis,
        settings,
        user_id=user_id,
        guardian_id=member["guardian_id"],
        raw_plan_id=raw_plan_id,
        signed_round=signed_round,
        text=text,
        evidence=signature.strip(),
        now=now,
    )


NO_ATTESTATION = "No valid attestation to sign (expired or already used); request a new one"


async def outstanding(redis: ArqRedis, *, plan_id: str, round_: int, guardian_id: str) -> str:
    """The attestation this guardian may sign in this round (401 when none is outstanding)."""
    text = await redis.get(ATTESTATION_KEY.format(plan_id, round_, guardian_id))
    if text is None:
        raise Unauthorized(NO_ATTESTATION)
    return text.decode() if isinstance(text, bytes) else text


async def approve_attested(
    pool: Pool,
    redis: ArqRedis,
    settings: Settings,
    *,
    user_id: str | None,
    guardian_id: str,
    raw_plan_id: str,
    signed_round: int,
    text: str,
    evidence: str,
    now: datetime,
    source: str = "attestation",
    used_up: bool = False,
) -> None:
    """An approval whose attestation `text` was proved (any proof: models.proofs): the
    attestation burnt once (`used_up`: its own one-time request was, a passkey's), then the
    approval recorded in the round it was signed for, under the plan's lock (in the
    transaction that holds it)."""
    approvals.require_off_chain(contract_id=settings.service_contract_id)
    ring = settings.key_ring
    async with transaction(pool) as cur:
        plan, member = await locked(
            cur, ring, user_id=user_id, raw_plan_id=raw_plan_id, guardian_id=guardian_id
        )
        if plan["verification_round"] != signed_round:
            raise Unauthorized("The attestation was for an earlier verification; request a new one")
        key = ATTESTATION_KEY.format(plan["id"], signed_round, member["guardian_id"])
        if not used_up and not await challenges.consume_key(redis, key, text):
            raise Unauthorized(NO_ATTESTATION)
        approval = approvals.Approval(
            guardian_id=member["guardian_id"],
            guardian_name=member["guardian_name"],
            wallet_address=member["wallet_address"],
            approver_user_id=user_id,
            source=source,
            message=text,
            signature=evidence,
        )
        row_ids = await record_approval(cur, ring, plan=plan, approval=approval, now=now)
    await outbox.enqueue(redis, row_ids=row_ids)
