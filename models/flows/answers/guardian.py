"""A guardian's answers from their page: each one asked as a request (what is asked, of which
guardian), proved by a proof of models.proofs, then run by the very function behind the JSON
route, for the guardian row the page resolved (never derived again from strings).

`ask` issues the request an answer needs; `take_signed` takes a wallet's signed answer back
and dispatches on its purpose through `WALLET_ANSWERS`; what each answer does once proved is
`ACTS`, shared with the passkey path (models.flows.answers.passkey). Add an answer to `ACTS`,
a proof to models.proofs. docs/pages.md "The guardian's page".
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from datetime import datetime, timedelta

from arq.connections import ArqRedis

from core import ratelimit
from core.db import Pool, autocommit
from core.errors import BadRequest, Conflict, NotFound, TooManyRequests
from core.settings import Settings
from core.stellar import soroban
from core.stellar.soroban import SorobanGateway
from core.text.i18n import N_
from models import address_links, plans, wallet_requests
from models.account import users
from models.flows import onchain, verification
from models.flows.answers import objections
from models.flows.guardian_pages import GuardianPage
from models.plan.guardianships import address_changes, address_suggestions, heirs, invitation, reconfirmation
from models.plan.guardianships.membership import Answerer
from models.plan.guardianships.open_addresses import OPEN
from models.proofs import challenge, contract_call
from models.wallet_requests import Prepared, WalletRequest


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
    note: str | None = None,
    change_id: str | None = None,
) -> Prepared:
    """The signing request for one answer: a challenge for the guardian wallet (accept,
    decline, report, object, resend; approve off-chain carries the attestation's SHA-256), or
    the approve_guardian call built through the RPC node (approve, contract mode). A report's
    or an objection's `note` is kept sealed beside the request until the wallet signs."""
    if action not in page["asks"]:
        raise Conflict(N_("That is not asked of you now; open your page again to see what is."))
    retry = await ratelimit.hit(redis, f"guardian-ask:ip:{client_ip}", settings.rate_limit_challenge_per_ip)
    if retry:
        raise TooManyRequests(N_("Too many signing requests from this address; try again in a minute"), retry)
    assert page["plan_id"] is not None and page["wallet_address"] is not None
    subject, wallet = page["guardian_id"], page["wallet_address"]
    extra = None
    if action in ("resend", "propose_address"):
        if beneficiary_id not in {b["beneficiary_id"] for b in page["beneficiaries"]}:
            raise NotFound("Beneficiary")
        extra = beneficiary_id
    if action == "propose_address":
        address_links.check_address(email=note)
    if action == "suggest_address":
        address_suggestions.unpacked(note=note)
    if action in ("agree_address", "stop_address"):
        extra = change_asked(page=page, action=action, change_id=change_id)
    if action == "report" and reason:  # one of four words, no personal text: it may ride along
        if reason not in plans.REPORT_REASONS:
            raise BadRequest(N_("That reason is not one of the list: choose one from the list, or none."))
        extra = reason
    if action != "approve":
        prepared = await challenge.issue(
            redis,
            settings,
            purpose=f"guardian.{action}",
            subject_id=subject,
            signer=wallet,
            now=now,
            extra=extra,
        )
        if action in ("report", "object", "propose_address", "suggest_address"):
            await wallet_requests.keep_note(
                redis,
                settings.key_ring,
                request_id=prepared["id"],
                note=note,
                expires_at=prepared["valid_until"],
                now=now,
            )
        return prepared
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
            keep=False,
        )
        prepared = await challenge.issue(
            redis, settings, purpose="guardian.approve", subject_id=subject, signer=wallet, now=now, text=text
        )
        await wallet_requests.keep_text(
            redis, request_id=prepared["id"], text=text, expires_at=prepared["valid_until"], now=now
        )
        return prepared
    onchain.require_verification(status=plan["status"])
    target: onchain.Target = {
        "function": "approve_guardian",
        "owner_id": plan["user_id"],
        "owner_wallet": page["owner_wallet"],
        "plan_id": plan["id"],
        "signer": wallet,
        "guardian_id": subject,
        "beneficiary_id": None,
    }
    return await contract_call.issue(
        redis, gateway=gateway, purpose="guardian.approve_onchain", subject_id=subject, target=target, now=now
    )


def change_asked(*, page: GuardianPage, action: str, change_id: str | None) -> str:
    """The proposed heir address an agree or stop answer is about: one the page shows (404)."""
    change = next((c for c in page["address_changes"] if c["id"] == change_id), None)
    if (
        change is None
        or change["status"] not in OPEN
        or (action == "agree_address" and (change["status"] != "pending" or change["agreed_by_me"]))
    ):
        raise NotFound("Address change")
    return change["id"]


@dataclass(frozen=True)
class Answering:
    """One answer being run, once proved: who answers (as the page resolved them), what the
    request carried, and what running it needs."""

    pool: Pool
    redis: ArqRedis
    settings: Settings
    guardian: Answerer
    now: datetime
    extra: str | None = None  # what the request carried: a report's reason word, an heir's id
    note: str | None = None  # a report's or objection's note (posted with a passkey's assertion,
    # or kept sealed beside a wallet's request: wallet_requests.keep_note)
    user_id: str | None = None  # the proved wallet's account; None for a passkey guardian

    @property
    def plan_id(self) -> str:
        assert self.guardian["plan_id"] is not None
        return self.guardian["plan_id"]

    @property
    def reconfirm_interval(self) -> timedelta:
        return timedelta(seconds=self.settings.guardian_reconfirm_interval_seconds)


async def _answer(a: Answering, *, accept: bool) -> str:
    answered = await invitation.answer(
        a.pool,
        a.redis,
        a.settings.key_ring,
        user_id=a.user_id,
        guardian_id=a.guardian["guardian_id"],
        raw_plan_id=a.plan_id,
        accept=accept,
        now=a.now,
        reconfirm_after=a.reconfirm_interval,
    )
    return answered["invitation"]


async def _accept(a: Answering) -> str:
    return await _answer(a, accept=True)


async def _decline(a: Answering) -> str:
    return await _answer(a, accept=False)


async def _report(a: Answering) -> str:
    await verification.report(
        a.pool,
        a.redis,
        a.settings,
        user_id=a.user_id,
        guardian_id=a.guardian["guardian_id"],
        raw_plan_id=a.plan_id,
        note=a.note,
        reason=a.extra,
        now=a.now,
    )
    return "reported"


async def _reconfirm(a: Answering) -> str:
    await reconfirmation.reconfirm(
        a.pool,
        a.settings.key_ring,
        user_id=a.user_id,
        guardian_id=a.guardian["guardian_id"],
        raw_plan_id=a.plan_id,
        now=a.now,
        interval=a.reconfirm_interval,
    )
    return "reconfirmed"


async def _resend(a: Answering) -> str:
    await heirs.resend_link(
        a.pool,
        a.redis,
        a.settings.key_ring,
        user_id=a.user_id,
        guardian_id=a.guardian["guardian_id"],
        raw_plan_id=a.plan_id,
        raw_beneficiary_id=a.extra or "",
        now=a.now,
    )
    return "sent"


async def _object(a: Answering) -> str:
    await objections.object_to(
        a.pool,
        a.redis,
        a.settings,
        user_id=a.user_id,
        guardian_id=a.guardian["guardian_id"],
        raw_plan_id=a.plan_id,
        note=a.note,
        now=a.now,
    )
    return "objected"


async def _withdraw_objection(a: Answering) -> str:
    await objections.withdraw(
        a.pool,
        a.redis,
        a.settings,
        user_id=a.user_id,
        guardian_id=a.guardian["guardian_id"],
        raw_plan_id=a.plan_id,
        now=a.now,
    )
    return "withdrawn"


async def _propose_address(a: Answering) -> str:
    proposal = await address_changes.propose(
        a.pool,
        a.redis,
        a.settings.key_ring,
        user_id=a.user_id,
        guardian_id=a.guardian["guardian_id"],
        raw_plan_id=a.plan_id,
        raw_beneficiary_id=a.extra or "",
        email=address_links.check_address(email=a.note),
        now=a.now,
    )
    return proposal["status"]


async def _suggest_address(a: Answering) -> str:
    return await address_suggestions.suggest(
        a.pool,
        a.redis,
        a.settings.key_ring,
        user_id=a.user_id,
        guardian_id=a.guardian["guardian_id"],
        raw_plan_id=a.plan_id,
        suggestion=address_suggestions.unpacked(note=a.note),
        now=a.now,
    )


async def _agree_address(a: Answering) -> str:
    change = await address_changes.agree(
        a.pool,
        a.redis,
        a.settings.key_ring,
        user_id=a.user_id,
        guardian_id=a.guardian["guardian_id"],
        raw_plan_id=a.plan_id,
        raw_change_id=a.extra or "",
        now=a.now,
    )
    return change["status"]


async def _stop_address(a: Answering) -> str:
    change = await address_changes.stop(
        a.pool,
        a.redis,
        a.settings.key_ring,
        user_id=a.user_id,
        guardian_id=a.guardian["guardian_id"],
        raw_plan_id=a.plan_id,
        raw_change_id=a.extra or "",
        now=a.now,
    )
    return change["status"]


Act = Callable[[Answering], Awaitable[str]]
# What each answer does once proved, by the request's purpose, whatever proved it (a wallet's
# signed challenge here, a passkey's assertion in models.flows.answers.passkey). An approval is
# not here: what proves it is bound to the attestation text (`_approve`, `passkey.approve`).
ACTS: dict[str, Act] = {
    "guardian.accept": _accept,
    "guardian.decline": _decline,
    "guardian.reconfirm": _reconfirm,
    "guardian.report": _report,
    "guardian.resend": _resend,
    "guardian.object": _object,
    "guardian.withdraw_objection": _withdraw_objection,
    "guardian.propose_address": _propose_address,
    "guardian.suggest_address": _suggest_address,
    "guardian.agree_address": _agree_address,
    "guardian.stop_address": _stop_address,
}


@dataclass(frozen=True)
class Signed:
    """A wallet's signed answer to one of its requests."""

    answering: Answering
    gateway: SorobanGateway | None
    request: WalletRequest
    answer: str

    async def account(self) -> str:
        """The account of the proved guardian wallet (found, or created as a first sign-in
        would): the JSON routes' records name it."""
        a = self.answering
        assert a.guardian["wallet_address"] is not None
        user = await users.sign_in(a.pool, a.settings.key_ring, wallet_address=a.guardian["wallet_address"])
        return user["id"]


async def take_signed(
    pool: Pool,
    redis: ArqRedis,
    settings: Settings,
    *,
    gateway: SorobanGateway | None,
    guardian: Answerer,
    request_id: str,
    signed_xdr: str,
    now: datetime,
) -> str:
    """A signed envelope posted to one of this guardian's requests: proved once (the
    transaction asked for, signed by the guardian wallet: 400 otherwise, the request still
    usable), used up, then the answer runs for the guardian row. Returns what happened, in one
    word."""
    request = await wallet_requests.peek(
        redis, request_id=request_id, subject_id=guardian["guardian_id"], now=now
    )
    if request["signer"] != guardian["wallet_address"] or guardian["plan_id"] is None:
        raise Conflict(wallet_requests.USED)  # the wallet changed since: the page has a new link
    run = WALLET_ANSWERS.get(request["purpose"])
    if run is None:
        raise BadRequest(N_("This signing request is not one of a guardian's"))
    note = await wallet_requests.note_of(redis, settings.key_ring, request_id=request["id"])
    answering = Answering(pool, redis, settings, guardian, now, extra=request["extra"], note=note)
    return await run(Signed(answering, gateway, request, signed_xdr))


async def _challenged(s: Signed) -> str:
    """An answer proved by a plain signed challenge: proved and used up first, then run."""
    a = s.answering
    await challenge.check(a.redis, a.settings, request=s.request, answer=s.answer)
    return await ACTS[s.request["purpose"]](replace(a, user_id=await s.account()))


async def _approve(s: Signed) -> str:
    """The attestation kept with this request (whatever was asked from the page since), proved
    by the signed challenge that carries its digest, then recorded (verification.approve_attested)."""
    a = s.answering
    if a.settings.service_contract_id:
        raise Conflict(
            N_("This service approves releases on-chain: sign the approve_guardian request instead.")
        )
    signed_round = a.guardian["verification_round"]
    text = await wallet_requests.text_of(a.redis, request_id=s.request["id"])
    if text is None:
        raise Conflict(wallet_requests.USED)
    evidence = await challenge.check(a.redis, a.settings, request=s.request, answer=s.answer, text=text)
    await verification.approve_attested(
        a.pool,
        a.redis,
        a.settings,
        user_id=await s.account(),
        guardian_id=a.guardian["guardian_id"],
        raw_plan_id=a.plan_id,
        signed_round=signed_round,
        text=text,
        evidence=evidence,
        now=a.now,
        used_up=True,  # the request holding the text was used up by the check, once
    )
    return "approved"


async def _approve_onchain(s: Signed) -> str:
    a = s.answering
    if s.gateway is None:
        raise soroban.not_configured()
    envelope = contract_call.decode(gateway=s.gateway, request=s.request, answer=s.answer)
    target = onchain.guardian_approval_of(guardian=a.guardian)
    checked = await contract_call.take(
        a.redis, gateway=s.gateway, request=s.request, envelope=envelope, target=target, now=a.now
    )
    row = await onchain.submit(
        a.pool,
        a.redis,
        target=target,
        checked=checked,
        xdr=s.answer,
        now=a.now,
        signer_user_id=await s.account(),
    )
    return row["status"]


# Each answer a guardian wallet's signed request can carry, by the request's purpose.
WALLET_ANSWERS: dict[str, Callable[[Signed], Awaitable[str]]] = {
    **{purpose: _challenged for purpose in ACTS},
    "guardian.approve": _approve,
    "guardian.approve_onchain": _approve_onchain,
}
