"""Each guardian's own page, `<PUBLIC_BASE_URL>/guardian/<token>` (#26): whose plan, its state,
the verification running, what is asked of this guardian now, and every answer as a SEP-7
signing request proving the guardian wallet the owner recorded.

The token (models.guardian_links) is a capability, like an heir's link: it shows the
page; acting still needs the wallet. Once the wallet has signed, the account holding it is
found (or created, as a first sign-in would) and the very functions behind the JSON routes
run with it: `invitation.answer`, `verification.report`, `heirs.resend_link`,
`onchain.guardian_submit`; an off-chain approval goes through `verification.approve_by_challenge`,
beside the message-signature `approve`. Nothing of the plan's contents is shown, and no heir to
a guardian who has not accepted. docs/pages.md "The guardian's page".
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Literal, TypedDict

from arq.connections import ArqRedis
from stellar_sdk import TransactionEnvelope

from core import ratelimit
from core.db import Cursor, Pool, autocommit
from core.errors import BadRequest, Conflict, NotFound, TooManyRequests
from core.files.crypto import KeyRing
from core.settings import Settings
from core.stellar import sep7, sep10, soroban, soroban_check
from core.stellar.soroban import SorobanGateway
from models import activity, guardian_links, plans, sealed_text, wallet_requests
from models.account import users
from models.chain import transactions
from models.claim import claim_links
from models.common import as_record, live_account
from models.flows import onchain, verification
from models.plan.guardianships import heirs, invitation, reconfirmation
from models.plans import ACTIVE, APPROVED, DRAFT, FROZEN, PENDING, RELEASED, Plan

Action = Literal["accept", "decline", "reconfirm", "report", "approve", "resend"]
ACTIONS: tuple[Action, ...] = ("accept", "decline", "reconfirm", "report", "approve", "resend")


class Report(TypedDict):
    guardian_name: str | None
    note: str | None
    reason: str | None  # plans.REPORT_REASONS, or None when the guardian gave none (#25)
    created_at: datetime


class GuardianPage(TypedDict):
    """What the page shows a guardian: the plan's state and progress, never its contents."""

    guardian_id: str
    guardian_name: str
    wallet_address: str
    invitation: str  # pending | accepted | declined
    reconfirm_asked_at: datetime | None  # asked to confirm they can still act (#24), unanswered
    unresponsive_since: datetime | None  # that request went unanswered past its grace
    owner_name: str | None
    owner_wallet: str
    owner: str  # the words naming the owner: their name, or their wallet (users.known_as)
    plan_id: str | None
    status: str | None  # None: the owner has no plan yet
    verification_reason: str | None
    verification_started_at: datetime | None
    deadline: datetime | None  # the verification's, if the owner set one
    reports: list[Report]  # this round's
    approvals: int
    threshold: int
    approved_by_me: bool
    ready_at: datetime | None
    # Accepted, in verification: the latest sign-in with the owner's wallet this round (#25).
    owner_key_used_at: datetime | None
    # Once accepted and the plan released or ready: each heir's link delivery (names only).
    beneficiaries: list[claim_links.LinkDelivery]
    asks: list[Action]  # what is asked of this guardian now


async def open_by_token(pool: Pool, ring: KeyRing, *, token: str) -> GuardianPage | None:
    """The page behind a guardian's link, by the token's digest; None for anything else."""
    async with autocommit(pool) as cur:
        await cur.execute(
            "SELECT g.id::text AS id, g.user_id::text AS owner_id,"
            f" {sealed_text.select_list(table='guardians', alias='g', columns=('name',))},"
            " g.wallet_address, g.accepted_at, g.declined_at, g.reconfirm_asked_at, g.unresponsive_since,"
            f" {sealed_text.select_list(table='users', alias='o', columns=('name',), prefix='owner_')},"
            " o.wallet_address AS owner_wallet, p.id::text AS plan_id,"
            f" {activity.KEY_USED_AT_SQL} AS owner_key_used_at"
            " FROM guardians g JOIN users o ON o.id = g.user_id LEFT JOIN plans p ON p.user_id = g.user_id"
            f" WHERE g.page_token_digest = %s AND {live_account(alias='o')}",
            (guardian_links.digest(token=token),),
        )
        sealed_row = await cur.fetchone()
        if sealed_row is None:
            return None
        row = sealed_text.open_row(ring, table="guardians", row=sealed_row)
        row = sealed_text.open_row(ring, table="users", row=row, id_key="owner_id", prefix="owner_")
        plan = None if row["plan_id"] is None else await plans.get_by_id(cur, plan_id=row["plan_id"])
        reports: list[Report] = []
        approvals, approved_by_me, threshold = 0, False, 0
        links: list[claim_links.LinkDelivery] = []
        # Only a guardian who accepted learns more than the plan's state, as on the JSON route: the
        # link may have reached a mistyped address, and a report's note is nobody else's to read.
        accepted = row["accepted_at"] is not None
        if plan is not None and plan["status"] != DRAFT and accepted:
            threshold = await plans.threshold_now(cur, plan=plan)
            reports, approvals, approved_by_me = await _round(cur, ring, plan, row["id"])
            if _heirs_hold_links(plan):
                links = (await claim_links.deliveries(cur, ring, plan_ids=[plan["id"]])).get(
                    str(plan["id"]), []
                )
    state = "accepted" if accepted else "declined" if row["declined_at"] else "pending"
    verifying = plan is not None and plan["status"] == PENDING and accepted
    page = GuardianPage(
        guardian_id=row["id"],
        guardian_name=row["name"],
        wallet_address=row["wallet_address"],
        invitation=state,
        reconfirm_asked_at=row["reconfirm_asked_at"] if row["accepted_at"] else None,
        unresponsive_since=row["unresponsive_since"] if row["accepted_at"] else None,
        owner_name=row["owner_name"],
        owner_wallet=row["owner_wallet"],
        owner=users.known_as(name=row["owner_name"], wallet=row["owner_wallet"]),
        plan_id=row["plan_id"],
        status=None if plan is None else plan["status"],
        verification_reason=plan["verification_reason"] if plan and verifying else None,
        verification_started_at=plan["verification_started_at"] if plan and verifying else None,
        deadline=_deadline(plan) if accepted else None,
        reports=reports,
        approvals=approvals,
        threshold=threshold,
        approved_by_me=approved_by_me,
        ready_at=plan["ready_at"] if plan and plan["status"] == APPROVED and accepted else None,
        owner_key_used_at=row["owner_key_used_at"]
        if plan and plan["status"] in FROZEN and accepted
        else None,
        beneficiaries=links,
        asks=[],
    )
    page["asks"] = _asks(page, plan)
    return page


def _heirs_hold_links(plan: Plan) -> bool:
    return plan["status"] == RELEASED or (plan["status"] == APPROVED and plan["ready_at"] is not None)


def _deadline(plan: Plan | None) -> datetime | None:
    if plan is None or plan["status"] != PENDING or not plan["verification_timeout_seconds"]:
        return None
    started = plan["verification_started_at"]
    return None if started is None else started + timedelta(seconds=plan["verification_timeout_seconds"])


async def _round(cur: Cursor, ring: KeyRing, plan: Plan, guardian_id: str) -> tuple[list[Report], int, bool]:
    """This verification round's reports (who, when, their note) and approvals."""
    if plan["status"] not in (PENDING, APPROVED, RELEASED) or plan["verification_round"] == 0:
        return [], 0, False
    db = cur
    await db.execute(
        f"SELECT id::text AS id, {sealed_text.select_list(table='plan_reports', alias='r')}, reason,"
        " created_at FROM plan_reports r WHERE plan_id = %s AND round = %s ORDER BY created_at, id",
        (plan["id"], plan["verification_round"]),
    )
    reports = [
        as_record(
            Report,
            row={
                k: v for k, v in sealed_text.open_row(ring, table="plan_reports", row=r).items() if k != "id"
            },
        )
        for r in await db.fetchall()
    ]
    await db.execute(
        "SELECT count(*) AS n, bool_or(guardian_id = %s) AS mine FROM plan_approvals"
        " WHERE plan_id = %s AND round = %s AND voided_at IS NULL",
        (guardian_id, plan["id"], plan["verification_round"]),
    )
    counts = await db.fetchone()
    return reports, int(counts["n"]), bool(counts["mine"])


def _asks(page: GuardianPage, plan: Plan | None) -> list[Action]:
    """What the guardian can answer now (the model functions refuse anything else anyway)."""
    status = page["status"]
    if plan is None or status is None:
        return []
    if page["invitation"] != "accepted":
        if status == RELEASED:
            return []
        # A guardian does not step down in the middle of a verification (invitation.answer).
        return ["accept"] if status in FROZEN else ["accept", "decline"]
    asks: list[Action] = []
    asked = page["reconfirm_asked_at"] is not None or page["unresponsive_since"] is not None
    if asked and status in (ACTIVE, PENDING, APPROVED):
        asks.append("reconfirm")
    if status == ACTIVE:
        asks.append("report")
    if status == PENDING and not page["approved_by_me"]:
        asks.append("approve")
    if page["beneficiaries"]:
        asks.append("resend")
    if status not in FROZEN and status != RELEASED:
        asks.append("decline")
    return asks


def message(*, page: GuardianPage, action: Action, heir: str | None = None) -> str:
    """The words a wallet shows for this request (SEP-7 `msg`): the verb and the people."""
    owner = page["owner"]
    templates = {
        "accept": "Accept being a guardian for {owner}'s plan",
        "decline": "Decline being a guardian for {owner}'s plan",
        "reconfirm": "Confirm you can still act as a guardian for {owner}'s plan",
        "report": "Report that {owner} has died or can no longer act",
        "approve": "Approve the release of {owner}'s plan, as their guardian",
        "resend": "Send {heir}'s link again, for {owner}'s plan",
    }
    return sep7.message(templates[action], owner=owner, heir=heir)


async def ask(
    pool: Pool,
    redis: ArqRedis,
    settings: Settings,
    *,
    gateway: SorobanGateway | None,
    page: GuardianPage,
    action: str,
    beneficiary_id: str | None,
    reason: str | None,
    client_ip: str,
    now: datetime,
) -> wallet_requests.Prepared:
    """The signing request for one answer: a challenge for the guardian wallet (accept,
    decline, report, resend; approve off-chain carries the attestation's SHA-256), or the
    approve_guardian call built through the RPC node (approve, contract mode)."""
    if action not in page["asks"]:
        raise Conflict("That is not asked of you now; open your page again to see what is.")
    retry = await ratelimit.hit(redis, f"guardian-ask:ip:{client_ip}", settings.rate_limit_challenge_per_ip)
    if retry:
        raise TooManyRequests("Too many signing requests from this address; try again in a minute", retry)
    assert page["plan_id"] is not None
    subject, wallet = page["guardian_id"], page["wallet_address"]
    extra = None
    if action == "resend":
        if beneficiary_id not in {b["beneficiary_id"] for b in page["beneficiaries"]}:
            raise NotFound("Beneficiary")
        extra = beneficiary_id
    if action == "report" and reason:  # one of four words, no personal text: it may ride along
        if reason not in plans.REPORT_REASONS:
            raise BadRequest(f"reason: one of {', '.join(plans.REPORT_REASONS)}, or none")
        extra = reason
    if action != "approve":
        return await wallet_requests.challenge(
            redis,
            settings,
            purpose=f"guardian.{action}",
            subject_id=subject,
            signer=wallet,
            now=now,
            extra=extra,
        )
    async with autocommit(pool) as cur:
        plan = await plans.get_by_id(cur, plan_id=page["plan_id"])
    assert plan is not None
    if gateway is None:
        text = await verification.issue_attestation(
            redis,
            settings,
            plan=plan,
            guardian_id=subject,
            wallet_address=wallet,
            owner_wallet=page["owner_wallet"],
            now=now,
        )
        return await wallet_requests.challenge(
            redis, settings, purpose="guardian.approve", subject_id=subject, signer=wallet, now=now, text=text
        )
    onchain.require_verification(status=plan["status"])
    built = await gateway.build(
        function="approve_guardian", owner=page["owner_wallet"], signer=wallet, now=now
    )
    tx_hash = TransactionEnvelope.from_xdr(built["xdr"], built["network_passphrase"]).hash_hex()
    request_id = await wallet_requests.issue(
        redis,
        purpose="guardian.approve_onchain",
        subject_id=subject,
        signer=wallet,
        tx_hash=tx_hash,
        expires_at=built["valid_until"],
        now=now,
    )
    return {
        "id": request_id,
        "purpose": "guardian.approve_onchain",
        "signer": wallet,
        "xdr": built["xdr"],
        "valid_until": built["valid_until"],
    }


async def take_signed(
    pool: Pool,
    redis: ArqRedis,
    settings: Settings,
    *,
    gateway: SorobanGateway | None,
    page: GuardianPage,
    request_id: str,
    signed_xdr: str,
    now: datetime,
) -> str:
    """A signed envelope posted to one of this guardian's requests: checked (the transaction
    asked for, signed by the guardian wallet: 400/401 otherwise, the request still usable),
    used up, then the JSON route's model function runs for the wallet's account. Returns what
    happened, in one word."""
    request = await wallet_requests.peek(
        redis, request_id=request_id, subject_id=page["guardian_id"], now=now
    )
    if request["signer"] != page["wallet_address"]:
        raise Conflict(wallet_requests.USED)  # the wallet changed since: the page has a new link
    assert page["plan_id"] is not None
    plan_id, ring = page["plan_id"], settings.key_ring
    if request["purpose"] == "guardian.approve_onchain":
        if gateway is None:
            raise soroban.not_configured()
        envelope = soroban_check.decode(signed_xdr)
        wallet_requests.require_hash(request=request, tx_hash=envelope.hash(gateway.passphrase).hex())
        soroban_check.check_signed(
            envelope,
            contract_id=gateway.contract_id,
            passphrase=gateway.passphrase,
            function="approve_guardian",
            owner=page["owner_wallet"],
            signer=page["wallet_address"],
            now=now,
        )
        await wallet_requests.take(redis, request=request)
        user = await users.sign_in(pool, ring, wallet_address=page["wallet_address"])
        row, _created = await onchain.guardian_submit(
            pool,
            user_id=user["id"],
            raw_plan_id=plan_id,
            xdr=signed_xdr,
            contract_id=gateway.contract_id,
            passphrase=gateway.passphrase,
            now=now,
        )
        if row["status"] == "pending":
            await transactions.enqueue_relay(redis, tx_hash=row["hash"])
        return row["status"]
    # A challenge: first prove the wallet (nothing used up yet), then act as its account.
    sep10.verify(
        signed_xdr,
        server_key=settings.uri_request_signing_key.public_key,
        client=request["signer"],
        home_domain=sep7.origin_domain(settings.public_base_url),
        passphrase=settings.stellar_network_passphrase,
    )
    user_id = (await users.sign_in(pool, ring, wallet_address=page["wallet_address"]))["id"]
    if request["purpose"] == "guardian.approve":
        await verification.approve_by_challenge(
            pool,
            redis,
            settings,
            user_id=user_id,
            raw_plan_id=plan_id,
            request=request,
            signed_xdr=signed_xdr,
            now=now,
        )
        return "approved"
    await wallet_requests.take_challenge(redis, settings, request=request, signed_xdr=signed_xdr)
    if request["purpose"] in ("guardian.accept", "guardian.decline"):
        accept = request["purpose"] == "guardian.accept"
        answer = await invitation.answer(
            pool,
            redis,
            ring,
            user_id=user_id,
            raw_plan_id=plan_id,
            accept=accept,
            now=now,
            reconfirm_after=timedelta(seconds=settings.guardian_reconfirm_interval_seconds),
        )
        return answer["invitation"]
    if request["purpose"] == "guardian.report":
        await verification.report(
            pool,
            redis,
            settings,
            user_id=user_id,
            raw_plan_id=plan_id,
            note=None,
            reason=request["extra"],
            now=now,
        )
        return "reported"
    if request["purpose"] == "guardian.reconfirm":
        await reconfirmation.reconfirm(
            pool,
            ring,
            user_id=user_id,
            raw_plan_id=plan_id,
            now=now,
            interval=timedelta(seconds=settings.guardian_reconfirm_interval_seconds),
        )
        return "reconfirmed"
    if request["purpose"] == "guardian.resend":
        await heirs.resend_link(
            pool,
            redis,
            ring,
            user_id=user_id,
            raw_plan_id=plan_id,
            raw_beneficiary_id=request["extra"] or "",
            now=now,
        )
        return "sent"
    raise BadRequest("This signing request is not one of a guardian's")
