"""A guardian tells the owner, before the release, that an heir's address may be wrong, from their
page: the guardian is not shown whom the owner chose (the heirs are listed to guardians only once
they hold their links), so they name the person as they know them, give the address they know
and, if they like, a note. It goes to the owner, who decides by editing the address themselves
(as a proposal through the JSON route does before the release:
models.plan.guardianships.address_changes). Nothing is matched against the plan's heirs: an
answer that said "no such heir" would tell the guardian who is in the plan.

The three texts travel as one (`packed`: JSON) wherever a page's answer carries a note: sealed
beside a wallet's signing request, bound by its digest into a passkey's challenge. Nothing is
stored but the owner's email (the texts sealed in its context, opened at send) and the owner's
timeline entry (the guardian, never the texts). Decisions: docs/lifecycle.md ("A corrected heir
address").
"""

from __future__ import annotations

import json
import uuid
from datetime import datetime
from typing import TypedDict

from arq.connections import ArqRedis

from core import ratelimit
from core.db import Cursor, Pool, transaction
from core.errors import BadRequest, Conflict, TooManyRequests
from core.files.crypto import KeyRing
from core.text import bounded_json
from core.text.cleaning import clean_block, clean_line
from core.text.i18n import N_, _
from models import address_links, sealed_text
from models.delivery import outbox
from models.delivery.announce import Email, Entry, announce
from models.plan.guardianships.membership import locked
from models.plans import APPROVED, RELEASED, Plan

KIND = "address_suggested"
# Packed, even escaped, the three stay within the 2000 characters a page's note may have.
NAME_LIMIT = 200
NOTE_LIMIT = 500
PER_DAY = 5  # a guardian's suggestions a day: each is an email to the owner
DAY = 24 * 3600


class Suggestion(TypedDict):
    heir: str  # the person, as the guardian knows them
    email: str
    note: str | None


def checked(*, heir: str | None, email: str | None, note: str | None) -> Suggestion:
    """The page's three fields, cleaned and checked: 400 in words for a missing name, an address
    that does not look like one, or a text too long."""
    name = clean_line(heir or "").strip()
    if not name:
        raise BadRequest(_("Say whom the address is for, as you know them."))
    if len(name) > NAME_LIMIT:
        raise BadRequest(
            _("The name is longer than {limit} characters; shorten it and try again.").format(
                limit=NAME_LIMIT
            )
        )
    words = clean_block(note or "").strip()
    if len(words) > NOTE_LIMIT:
        raise BadRequest(
            _("The note is longer than {limit} characters; shorten it and try again.").format(
                limit=NOTE_LIMIT
            )
        )
    address = address_links.check_address(email=clean_line(email or ""))
    return {"heir": name, "email": address, "note": words or None}


def packed(*, suggestion: Suggestion) -> str:
    """The suggestion as one note (JSON of texts cleaned already: a page's note field carries it
    unchanged)."""
    return json.dumps(suggestion, sort_keys=True, ensure_ascii=False)


def unpacked(*, note: str | None) -> Suggestion:
    """A note `packed` made, checked again (400 for anything else)."""
    try:
        data = bounded_json.loads(note or "")
    except bounded_json.Unparsed:
        data = None
    if not isinstance(data, dict) or not all(
        isinstance(data.get(k), str | None) for k in Suggestion.__annotations__
    ):
        raise BadRequest(_("Fill in the name and the address on your page, then press the button again."))
    return checked(heir=data.get("heir"), email=data.get("email"), note=data.get("note"))


async def suggest(
    pool: Pool,
    redis: ArqRedis,
    ring: KeyRing,
    *,
    user_id: str | None,
    guardian_id: str | None,
    raw_plan_id: str,
    suggestion: Suggestion,
    now: datetime,
) -> str:
    """An accepted guardian's suggestion, to the owner (an email with a check-in link, and their
    timeline). Before the heirs hold their links only (409 after: the page lists the heirs then,
    and a new address needs the guardians' agreement); at most PER_DAY a day per guardian (429)."""
    seal_id = str(uuid.uuid4())
    async with transaction(pool) as cur:
        plan, member = await locked(
            cur, ring, user_id=user_id, raw_plan_id=raw_plan_id, guardian_id=guardian_id
        )
        if plan["status"] == RELEASED or (plan["status"] == APPROVED and plan["ready_at"] is not None):
            raise Conflict(
                _(
                    "The heirs have their links now: propose the address beside the heir's name on your "
                    "page, where the other guardians agree to it."
                )
            )
        retry = await ratelimit.hit(redis, f"address-suggest:{member['guardian_id']}", PER_DAY, DAY)
        if retry:
            raise TooManyRequests(
                _("You have sent several addresses today; send the next one tomorrow."), retry
            )

        def sealed(column: str, text: str | None) -> str | None:
            return sealed_text.seal(ring, table="outbox", column=column, row_id=seal_id, text=text)

        row_ids = await announce(
            cur,
            plan_id=plan["id"],
            owner_id=plan["user_id"],
            now=now,
            owner=Email(
                KIND,
                {
                    "guardianId": member["guardian_id"],
                    "sealId": seal_id,
                    "proposedSealed": sealed("proposed_address", suggestion["email"]),
                    "heirNameSealed": sealed("heir_name", suggestion["heir"]),
                    "noteSealed": sealed("note", suggestion["note"]),
                },
            ),
            timeline=Entry(
                "beneficiary.address_suggested",
                N_(
                    "A guardian told you that the email address of someone you chose may be wrong, and "
                    "suggested another: you decide, by editing it"
                ),
                {"actor": "guardian", "guardianId": member["guardian_id"]},
            ),
        )
    await outbox.enqueue(redis, row_ids=row_ids)
    return "suggested"


async def to_owner(
    cur: Cursor, ring: KeyRing, *, plan: Plan, guardian_id: str, heir_id: str, email: str, now: datetime
) -> list[str]:
    """Before the release, a guardian's proposed address for an heir the owner decides on
    (models.plan.guardianships.address_changes.propose): the owner's email, the address sealed in
    its context and opened at send, and their timeline entry (the guardian's id, never the address)."""
    seal_id = str(uuid.uuid4())
    return await announce(
        cur,
        plan_id=plan["id"],
        owner_id=plan["user_id"],
        now=now,
        owner=Email(
            "address_proposed",
            {
                "beneficiaryId": heir_id,
                "guardianId": guardian_id,
                "sealId": seal_id,
                "proposedSealed": sealed_text.seal(
                    ring, table="outbox", column="proposed_address", row_id=seal_id, text=email
                ),
            },
        ),
        timeline=Entry(
            "beneficiary.address_proposed",
            N_(
                "A guardian proposed a new email address for one of your beneficiaries: you decide, by "
                "editing it"
            ),
            {"actor": "guardian", "guardianId": guardian_id},
            entity_id=heir_id,
        ),
    )
