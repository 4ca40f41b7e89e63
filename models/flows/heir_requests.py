"""An heir's request to verify: through their claim link, an heir who believes
the owner has died asks the guardians to verify. It starts a verification as a guardian's
report does (actor `beneficiary`, reason `beneficiary_request`); the owner is emailed with a
check-in link naming the heir and has the whole verification, its deadline included, to say
no. This is Bitwarden Emergency Access's model. Decisions: docs/lifecycle.md ("An heir can ask").
"""

from __future__ import annotations

import math
import uuid
from datetime import datetime, timedelta
from typing import TypedDict

from arq.connections import ArqRedis

from core.db import Pool, transaction
from core.errors import Conflict, TooManyRequests
from core.settings import Settings
from core.text import i18n
from core.text.i18n import N_, _
from models import plans, sealed_text
from models.account import users
from models.claim.capsules import Capsule
from models.delivery import outbox
from models.delivery.announce import Entry, announce
from models.flows import release_path
from models.flows.scheduler import release_possible
from models.plan import heir_answers
from models.plans import ACTIVE, FROZEN, get_by_id


class Asked(TypedDict):
    """What the heir is told happens next: the round's deadline and whether it releases."""

    deadline_at: datetime | None
    releases: bool


async def request(
    pool: Pool, redis: ArqRedis, settings: Settings, *, capsule: Capsule, note: str | None, now: datetime
) -> Asked:
    """Start a verification at the heir's request: only on an Active plan whose owner allows it
    (409 otherwise, in plain words), not within PLAN_REPORT_COOLDOWN_SECONDS of the owner's last
    veto (429). The note is sealed with the request row, never on the timeline; the heir is
    emailed a receipt, and later the outcome (models.plan.heir_answers)."""
    ring = settings.key_ring
    request_id = str(uuid.uuid4())
    sealed = sealed_text.sealed_values(ring, table="heir_requests", row_id=request_id, values={"note": note})
    async with transaction(pool) as cur:
        plan = (
            None
            if capsule["plan_id"] is None
            else await get_by_id(cur, plan_id=capsule["plan_id"], lock=True)
        )
        if plan is None or plan["status"] != ACTIVE:
            status = None if plan is None else plan["status"]
            if status == plans.APPROVED:
                raise Conflict(
                    N_(
                        "The guardians have already approved this plan's release: there is nothing more "
                        "to ask. You will be emailed when it is released."
                    ),
                    details={"status": status},
                )
            if status in FROZEN:
                raise Conflict(
                    N_(
                        "The guardians are already verifying this plan: there is nothing more to ask. "
                        "You will be emailed if it is released."
                    ),
                    details={"status": status},
                )
            raise Conflict(
                N_("This plan is not active, so there is nothing to ask: it has already been released.")
                if status == plans.RELEASED
                else N_("This plan is not active, so there is nothing to ask: the owner has not started it."),
                details={"status": status},
            )
        if not plan["allow_beneficiary_requests"]:
            raise Conflict(N_("The owner of this plan has chosen not to take requests from beneficiaries."))
        vetoed = plan["last_vetoed_at"]
        if vetoed is not None:
            until = vetoed + timedelta(seconds=settings.plan_report_cooldown_seconds)
            if now < until:
                owner = users.known_as(name=capsule["owner_name"], wallet=capsule["owner_wallet"])
                # In the reader's language: the page asks inside it (api/claim/heir_requests.py).
                raise TooManyRequests(
                    _(
                        "{owner} checked in on {checked} and said they are well. A new request is possible "
                        "from {again}."
                    ).format(owner=owner, checked=i18n.when(vetoed), again=i18n.when(until)),
                    math.ceil((until - now).total_seconds()),
                )
        row_ids = await release_path.start_verification_in(
            cur,
            plan=plan,
            now=now,
            actor="beneficiary",
            actor_name=capsule["name"],
            ring=ring,
            reason="beneficiary_request",
            warning_seconds=settings.plan_deadline_warning_seconds,
            about={"beneficiaryId": capsule["beneficiary_id"], "requestId": request_id},
        )
        row_ids = [
            *(row_ids or []),
            *await heir_answers.record_in(
                cur,
                request_id=request_id,
                plan_id=plan["id"],
                round_=plan["verification_round"] + 1,
                beneficiary_id=capsule["beneficiary_id"],
                note_sealed=sealed["note_sealed"],
                now=now,
            ),
        ]
        await announce(
            cur,
            plan_id=plan["id"],
            owner_id=plan["user_id"],
            now=now,
            timeline=Entry(
                "beneficiary.requested_verification",
                N_("One of your beneficiaries asked us to verify whether you have died or cannot act"),
                {"actor": "beneficiary", "beneficiaryId": capsule["beneficiary_id"], "withNote": bool(note)},
            ),
        )
        started = await get_by_id(cur, plan_id=plan["id"]) or plan
    await outbox.enqueue(redis, row_ids=row_ids)
    return {
        "deadline_at": plans.verification_deadline(plan=started),
        "releases": release_possible(plan=started, contract_configured=bool(settings.service_contract_id)),
    }
