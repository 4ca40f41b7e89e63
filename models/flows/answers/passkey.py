"""A guardian without a Stellar wallet answers from their page with a passkey: the first one
is created when they accept (the emailed link is the first proof), every later answer is an
assertion over a challenge bound to it (models.proofs.passkey), and each answer, once proved,
runs what its declaration names (models.flows.answers.declared), as the wallet path does.
Another passkey can be added after proving with one. Nothing is recorded for a refused answer.
docs/pages.md "A guardian with a passkey", docs/security.md "Guardians with a passkey".
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import TypedDict

from arq.connections import ArqRedis

from core.db import Pool, autocommit, transaction
from core.errors import BadRequest, Conflict, Unauthorized
from core.settings import Settings
from core.text.i18n import N_, _
from models import plans
from models.contents import guardian_passkeys
from models.delivery import outbox
from models.flows import verification
from models.flows.answers import declared
from models.flows.answers.acts import Answering
from models.flows.answers.asking import Asked
from models.flows.guardian_pages import GuardianPage
from models.plan.guardianships import invitation
from models.plan.guardianships.membership import Answerer, membership
from models.proofs import passkey
from models.proofs.passkey import PasskeyRequest


class Ceremony(TypedDict):
    """What the page runs: `create` (a new passkey) or `get` (an assertion), with the options
    for the browser (JSON) and the request the answer is posted to."""

    request_id: str
    ceremony: passkey.Ceremony
    action: str
    options: str


async def ask(
    pool: Pool,
    redis: ArqRedis,
    settings: Settings,
    *,
    page: GuardianPage,
    asked: Asked,
    now: datetime,
) -> Ceremony | str:
    """The ceremony one answer (checked already: models.flows.answers.asking) needs, or, for a
    decline before any passkey exists (the link is the proof), the answer itself in one word.
    The note the answer binds is bound into the challenge; the passkey page carries it
    unchanged."""
    assert page["plan_id"] is not None and page["status"] is not None
    answer, guardian_id = asked.answer, page["guardian"]["id"]
    async with autocommit(pool) as cur:
        keys = await guardian_passkeys.of_guardian(cur, guardian_id=guardian_id)
        plan = await plans.get_by_id(cur, plan_id=page["plan_id"])
    assert plan is not None
    creating = not keys
    if creating and answer.name == "decline" and answer.act is not None:
        answering = Answering(pool, redis, settings, _answerer(page, plan["verification_round"]), now)
        return await answer.act(answering=answering)
    if creating and answer.name != "accept":
        raise Conflict(N_("Accept first: your page asks you to create a passkey when you accept."))
    text = None
    if answer.binds == "attestation":
        text = await verification.issue_attestation(
            redis,
            settings,
            plan=plan,
            guardian_id=guardian_id,
            wallet_address=None,
            owner_wallet=page["plan"]["owner_wallet"],
            now=now,
            keep=False,
        )
    request = await passkey.issue(
        redis,
        purpose=answer.purpose,
        ceremony="create" if creating else "get",
        subject_id=guardian_id,
        plan_id=page["plan_id"],
        round_=plan["verification_round"],
        now=now,
        extra=asked.extra,
        text=text,
        note=asked.note,
    )
    if creating:
        options = passkey.creation_options(
            settings=settings,
            request=request,
            user_name=page["guardian"]["name"],
            # What the device's passkey list shows, in the guardian's language (the page asks inside it).
            display_name=_("{guardian}, guardian of {owner}'s plan").format(
                guardian=page["guardian"]["name"], owner=page["owner"]
            ),
            existing=keys,
        )
    else:
        options = passkey.request_options(settings=settings, request=request, passkeys=keys)
    return Ceremony(
        request_id=request["id"], ceremony=request["ceremony"], action=answer.name, options=options
    )


def _answerer(page: GuardianPage, round_: int) -> Answerer:
    return {
        "guardian_id": page["guardian"]["id"],
        "wallet_address": None,
        "accepted_at": None,
        "owner_id": "",
        "owner_wallet": page["plan"]["owner_wallet"],
        "plan_id": page["plan_id"],
        "status": page["status"],
        "verification_round": round_,
        "locale": page["locale"],
        "time_zone": page["time_zone"],
    }


async def take(
    pool: Pool,
    redis: ArqRedis,
    settings: Settings,
    *,
    guardian: Answerer,
    request_id: str,
    answer: str,
    note: str | None,
    now: datetime,
) -> str | Ceremony:
    """A passkey's answer to one of this guardian's requests: checked once (this request's
    challenge, this guardian's passkey, its counter), used up, then the answer runs. Returns
    what happened in one word, or the next ceremony (adding a passkey: create, after proving)."""
    if guardian["wallet_address"] is not None or guardian["plan_id"] is None:
        raise Conflict(passkey.USED)  # the owner recorded a wallet since: the page has a new link
    request = await passkey.peek(redis, request_id=request_id, subject_id=guardian["guardian_id"], now=now)
    if request["plan_id"] != guardian["plan_id"]:
        raise Conflict(passkey.USED)
    if request["ceremony"] == "create":
        return await _register(
            pool, redis, settings, guardian=guardian, request=request, answer=answer, now=now
        )
    passkey.require_note(request=request, note=note)
    credential_id = passkey.credential_id(answer=answer)
    async with transaction(pool) as cur:
        key = await guardian_passkeys.find(cur, credential_id=credential_id, lock=True)
        if key is None or key["guardian_id"] != guardian["guardian_id"]:
            raise Unauthorized(passkey.NOT_YOURS)
        count = passkey.check_assertion(settings=settings, request=request, answer=answer, passkey=key)
        await passkey.take(redis, request=request)
        await guardian_passkeys.set_sign_count(cur, credential_id=credential_id, sign_count=count)
    asked_for = declared.by_purpose(purpose=request["purpose"])
    if asked_for is None:
        raise BadRequest(N_("This request is not one of a guardian's"))
    if asked_for.name == "add_passkey":
        return await _next_registration(pool, redis, settings, guardian=guardian, request=request, now=now)
    if asked_for.binds == "attestation":
        text = request.get("text")
        if text is None:
            raise Conflict(passkey.USED)
        await verification.approve_attested(
            pool,
            redis,
            settings,
            user_id=None,
            guardian_id=guardian["guardian_id"],
            raw_plan_id=request["plan_id"],
            signed_round=request["round"],
            text=text,
            evidence=answer,
            now=now,
            source="passkey",
            used_up=True,  # the request holding the text was taken above, once
        )
        return "approved"
    if asked_for.act is None:
        raise BadRequest(N_("This request is not one of a guardian's"))
    answering = Answering(pool, redis, settings, guardian, now, extra=request["extra"], note=note or None)
    return await asked_for.act(answering=answering)


async def _register(
    pool: Pool,
    redis: ArqRedis,
    settings: Settings,
    *,
    guardian: Answerer,
    request: PasskeyRequest,
    answer: str,
    now: datetime,
) -> str:
    """A new passkey: verified, then kept in one transaction with the answer it came with
    (accepting; none when it is another passkey added after proving with the first), so a
    refused acceptance keeps no passkey."""
    new = passkey.check_registration(settings=settings, request=request, answer=answer)
    row_ids: list[str] = []
    outcome = "registered"
    async with transaction(pool) as cur:
        existing = await guardian_passkeys.of_guardian(cur, guardian_id=guardian["guardian_id"])
        accepting = request["purpose"] == "guardian.accept"
        if accepting and existing:
            raise Conflict(N_("You already have a passkey for this page: use it to answer."))
        if accepting:
            answered, row_ids = await invitation.answer_in(
                cur,
                settings.key_ring,
                user_id=None,
                plan_id=request["plan_id"],
                accept=True,
                now=now,
                reconfirm_after=timedelta(seconds=settings.guardian_reconfirm_interval_seconds),
                guardian_id=guardian["guardian_id"],
            )
            outcome = answered["invitation"]
        await passkey.take(redis, request=request)
        if not await guardian_passkeys.add(cur, passkey=new):
            raise Conflict(N_("This passkey is already registered."))
    await outbox.enqueue(redis, row_ids=row_ids)
    return outcome


async def _next_registration(
    pool: Pool,
    redis: ArqRedis,
    settings: Settings,
    *,
    guardian: Answerer,
    request: PasskeyRequest,
    now: datetime,
) -> Ceremony:
    """Proved with a passkey: now the ceremony that creates another one."""
    async with autocommit(pool) as cur:
        member = await membership(
            cur,
            settings.key_ring,
            user_id=None,
            plan_id=request["plan_id"],
            guardian_id=guardian["guardian_id"],
        )
        keys = await guardian_passkeys.of_guardian(cur, guardian_id=guardian["guardian_id"])
    follow = await passkey.issue(
        redis,
        purpose=declared.REGISTER,
        ceremony="create",
        subject_id=guardian["guardian_id"],
        plan_id=request["plan_id"],
        round_=request["round"],
        now=now,
    )
    options = passkey.creation_options(
        settings=settings,
        request=follow,
        user_name=member["guardian_name"],
        display_name=member["guardian_name"],
        existing=keys,
    )
    return Ceremony(request_id=follow["id"], ceremony="create", action="add_passkey", options=options)
