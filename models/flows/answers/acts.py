"""What each guardian answer does once proved, whatever proved it (a wallet's signed request,
models.flows.answers.guardian, or a passkey's assertion, models.flows.answers.passkey): one
function per answer, each the very function behind the JSON route, for the guardian row the
page resolved. The declaration (models.flows.answers.declared) names the one each answer runs.
An approval is not here: what proves it is bound to the attestation text.
"""

from __future__ import annotations

from collections.abc import Awaitable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Protocol

from arq.connections import ArqRedis

from core.db import Pool
from core.settings import Settings
from models import address_links
from models.flows import verification
from models.flows.answers import objections
from models.plan.guardianships import address_changes, address_suggestions, heirs, invitation, reconfirmation
from models.plan.guardianships.membership import Answerer


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


async def accept(*, answering: Answering) -> str:
    a = answering
    return await _answer(a, accept=True)


async def decline(*, answering: Answering) -> str:
    a = answering
    return await _answer(a, accept=False)


async def report(*, answering: Answering) -> str:
    a = answering
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


async def reconfirm(*, answering: Answering) -> str:
    a = answering
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


async def resend(*, answering: Answering) -> str:
    a = answering
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


async def object_(*, answering: Answering) -> str:
    a = answering
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


async def withdraw_objection(*, answering: Answering) -> str:
    a = answering
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


async def propose_address(*, answering: Answering) -> str:
    a = answering
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


async def suggest_address(*, answering: Answering) -> str:
    a = answering
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


async def agree_address(*, answering: Answering) -> str:
    a = answering
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


async def stop_address(*, answering: Answering) -> str:
    a = answering
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


class Act(Protocol):
    """The one function that performs an answer, once proved."""

    def __call__(self, *, answering: Answering) -> Awaitable[str]: ...
