"""A guardian's answers from their page: each one asked as a request (what is asked, of which
guardian), proved by a proof of models.proofs, then run by the very function behind the JSON
route, for the guardian row the page resolved (never derived again from strings).

`ask` checks an answer once (models.flows.answers.asking) and issues the request that proves
it: a wallet's signing request here, a passkey's ceremony in models.flows.answers.passkey.
`take_signed` takes a wallet's signed answer back and runs what its declaration
(models.flows.answers.declared) names. docs/pages.md "The guardian's page".
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from datetime import datetime

from arq.connections import ArqRedis

from core.db import Pool, autocommit
from core.errors import BadRequest, Conflict
from core.settings import Settings
from core.stellar import soroban
from core.stellar.soroban import SorobanGateway
from core.text.i18n import N_
from models import plans, wallet_requests
from models.account import users
from models.flows import onchain, verification
from models.flows.answers import asking, declared, passkey
from models.flows.answers.acts import Answering
from models.flows.guardian_pages import GuardianPage
from models.plan import approvals
from models.plan.guardianships.membership import Answerer
from models.proofs import challenge, contract_call
from models.wallet_requests import Prepared, WalletRequest

# An approval in contract mode: the approve_guardian call, proved on chain.
ONCHAIN = "guardian.approve_onchain"


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
) -> Prepared | passkey.Ceremony | str:
    """One answer asked from the page, checked once as its declaration says
    (models.flows.answers.asking), then the request that proves it: the guardian wallet's
    signing request, or, for a guardian without one, the passkey ceremony (or a decline before
    any passkey exists, answered at once: the link is the proof)."""
    asked = await asking.checked(
        redis,
        settings,
        page=page,
        action=action,
        reason=reason,
        beneficiary_id=beneficiary_id,
        change_id=change_id,
        note=note,
        client_ip=client_ip,
    )
    if page["guardian"]["wallet_address"] is None:
        return await passkey.ask(pool, redis, settings, page=page, asked=asked, now=now)
    return await _wallet_request(pool, redis, settings, gateway=gateway, page=page, asked=asked, now=now)


async def _wallet_request(
    pool: Pool,
    redis: ArqRedis,
    settings: Settings,
    *,
    gateway: SorobanGateway | None,
    page: GuardianPage,
    asked: asking.Asked,
    now: datetime,
) -> Prepared:
    """The signing request for one answer: a challenge for the guardian wallet (approve
    off-chain carries the attestation's SHA-256), or the approve_guardian call built through the
    RPC node (approve, contract mode). The note the answer binds is kept sealed beside the
    request until the wallet signs."""
    assert page["plan_id"] is not None and page["guardian"]["wallet_address"] is not None
    subject, wallet, answer = page["guardian"]["id"], page["guardian"]["wallet_address"], asked.answer
    if answer.binds == "answer":
        prepared = await challenge.issue(
            redis,
            settings,
            purpose=answer.purpose,
            subject_id=subject,
            signer=wallet,
            now=now,
            extra=asked.extra,
        )
        if answer.note:
            await wallet_requests.keep_note(
                redis,
                settings.key_ring,
                request_id=prepared["id"],
                note=asked.note,
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
            owner_wallet=page["plan"]["owner_wallet"],
            now=now,
            keep=False,
        )
        prepared = await challenge.issue(
            redis, settings, purpose=answer.purpose, subject_id=subject, signer=wallet, now=now, text=text
        )
        await wallet_requests.keep_text(
            redis, request_id=prepared["id"], text=text, expires_at=prepared["valid_until"], now=now
        )
        return prepared
    approvals.require_verifying(status=plan["status"])
    target: onchain.Target = {
        "function": "approve_guardian",
        "owner_id": plan["user_id"],
        "owner_wallet": page["plan"]["owner_wallet"],
        "plan_id": plan["id"],
        "signer": wallet,
        "guardian_id": subject,
        "beneficiary_id": None,
    }
    return await contract_call.issue(
        redis, gateway=gateway, purpose=ONCHAIN, subject_id=subject, target=target, now=now
    )


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
    run = _wallet_answer(request["purpose"])
    if run is None:
        raise BadRequest(N_("This signing request is not one of a guardian's"))
    note = await wallet_requests.note_of(redis, settings.key_ring, request_id=request["id"])
    answering = Answering(pool, redis, settings, guardian, now, extra=request["extra"], note=note)
    return await run(Signed(answering, gateway, request, signed_xdr))


async def _challenged(s: Signed) -> str:
    """An answer proved by a plain signed challenge: proved and used up first, then run."""
    a = s.answering
    answer = declared.by_purpose(purpose=s.request["purpose"])
    assert answer is not None and answer.act is not None
    await challenge.check(a.redis, a.settings, request=s.request, answer=s.answer)
    return await answer.act(answering=replace(a, user_id=await s.account()))


async def _approve(s: Signed) -> str:
    """The attestation kept with this request (whatever was asked from the page since), proved
    by the signed challenge that carries its digest, then recorded (verification.approve_attested)."""
    a = s.answering
    approvals.require_off_chain(contract_id=a.settings.service_contract_id)
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


def _wallet_answer(purpose: str) -> Callable[[Signed], Awaitable[str]] | None:
    """How a wallet's signed request for `purpose` is proved and run, from its declaration."""
    if purpose == ONCHAIN:
        return _approve_onchain
    answer = declared.by_purpose(purpose=purpose)
    if answer is None or answer.message is None:
        return None
    return _approve if answer.binds == "attestation" else _challenged
