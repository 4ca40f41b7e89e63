"""The one check every answer asked from a guardian's page goes through, whatever will prove it
(a wallet's signed request, models.flows.answers.guardian, or a passkey, models.flows.answers.
passkey): asked now, its proof possible in this service's mode, the per-address rate, and what
it carries, each read from its declaration (models.flows.answers.declared). The two proofs
differ only in how the answer is proved, never in what is checked.
"""

from __future__ import annotations

from dataclasses import dataclass

from arq.connections import ArqRedis

from core import ratelimit
from core.errors import BadRequest, Conflict, NotFound, TooManyRequests
from core.settings import Settings
from core.text.i18n import N_
from models import address_links, plans
from models.flows.answers import declared
from models.flows.answers.declared import Declared
from models.flows.guardian_pages import GuardianPage
from models.plan import approvals
from models.plan.guardianships import address_suggestions
from models.plan.guardianships.open_addresses import OPEN

NOT_ASKED = N_("That is not asked of you now; open your page again to see what is.")
TOO_MANY = N_("Too many requests from this address; try again in a minute")


@dataclass(frozen=True)
class Asked:
    """An answer that passed its checks: its declaration, what the request carries (a reason
    word, an heir's or a change's id) and the note its proof binds (None when it has none)."""

    answer: Declared
    extra: str | None
    note: str | None


async def checked(
    redis: ArqRedis,
    settings: Settings,
    *,
    page: GuardianPage,
    action: str,
    reason: str | None,
    beneficiary_id: str | None,
    change_id: str | None,
    note: str | None,
    client_ip: str,
) -> Asked:
    """The answer `action` asked from this page, checked as its declaration says (409 not
    asked now or not provable here, 429 past RATE_LIMIT_CHALLENGE_PER_IP a minute, 400/404 for
    what it carries)."""
    answer = declared.BY_NAME.get(action)
    if answer is None or action not in page["asks"]:
        raise Conflict(NOT_ASKED)
    if declared.needs_a_wallet(answer=answer, page=page, contract_id=settings.service_contract_id):
        approvals.require_off_chain(contract_id=settings.service_contract_id)
    retry = await ratelimit.hit(redis, f"guardian-ask:ip:{client_ip}", settings.rate_limit_challenge_per_ip)
    if retry:
        raise TooManyRequests(TOO_MANY, retry)
    extra = carried(
        answer=answer, page=page, reason=reason, beneficiary_id=beneficiary_id, change_id=change_id
    )
    return Asked(answer=answer, extra=extra, note=bound_note(answer=answer, note=note))


def carried(
    *,
    answer: Declared,
    page: GuardianPage,
    reason: str | None,
    beneficiary_id: str | None,
    change_id: str | None,
) -> str | None:
    """What the request carries beside the answer: a report's reason word (one of four, no
    personal text: it may ride along), an heir the page lists, a change the page shows."""
    if answer.carries == "reason":
        if reason and reason not in plans.REPORT_REASONS:
            raise BadRequest(N_("That reason is not one of the list: choose one from the list, or none."))
        return reason or None
    if answer.carries == "heir":
        if beneficiary_id not in {b["beneficiary_id"] for b in page["heirs"]["links"]}:
            raise NotFound("Beneficiary")
        return beneficiary_id
    if answer.carries == "change":
        return change_asked(page=page, action=answer.name, change_id=change_id)
    return None


def bound_note(*, answer: Declared, note: str | None) -> str | None:
    """The note the proof binds, checked as what it is (a proposed address, a suggestion); none
    for an answer that carries none."""
    if answer.note == "address":
        address_links.check_address(email=note)
    elif answer.note == "suggestion":
        address_suggestions.unpacked(note=note)
    return note if answer.note else None


def change_asked(*, page: GuardianPage, action: str, change_id: str | None) -> str:
    """The proposed heir address an agree or stop answer is about: one the page shows (404)."""
    change = next((c for c in page["heirs"]["changes"] if c["id"] == change_id), None)
    if (
        change is None
        or change["status"] not in OPEN
        or (action == "agree_address" and (change["status"] != "pending" or change["agreed_by_me"]))
    ):
        raise NotFound("Address change")
    return change["id"]
