""" "I don't know this person": the link in an invitation or a confirmation request that stops
every further email from that account to that address (the one owner of `email_suppressions`).

The emails the owner causes by typing someone's address (models.delivery.budget.BUDGETED)
carry it until the person has accepted or confirmed: in the body, and as RFC 8058 one-click
headers for the mail client (`List-Unsubscribe: <https://…/stop-emails/<token>>`,
`List-Unsubscribe-Post: List-Unsubscribe=One-Click`). A GET of the link shows one button and
changes nothing (mail scanners fetch links); its POST, from the button or from the mail
client's one-click, suppresses the address for that account and tells the owner (an email and a
timeline entry, naming neither the address nor anything the person said), except in a corrected
heir address's confirmation (`GUARDIAN_TYPED`).

The token is the outbox row's id and an HMAC of it under a key-ring subkey (64 hex, checked
under every key of the ring, so a rotation breaks no link in a sent email); nothing is stored
for it. It suppresses the address the email went to (its blind index, `sent_to_bidx`), so an
owner who changes the address afterwards is not refused at the new one. Decisions:
docs/security.md, "Nobody's mail relay".
"""

from __future__ import annotations

import hashlib
import hmac
import re
import uuid
from datetime import datetime
from typing import Any, Literal, TypedDict

from core.db import Cursor, Pool, autocommit, transaction
from core.files.crypto import KeyRing
from core.text.i18n import N_
from models import activity, sealed_text
from models.common import live_account
from models.delivery import outbox
from models.delivery.budget import BUDGETED, answered

PURPOSE = "unknown-sender"
TOKEN_RE = re.compile(r"[0-9a-f]{64}")
PATH = "/stop-emails/"
# The owner's email telling them (models/mail/templates/kinds/recipient_unknown.html).
TOLD = "recipient_unknown"
# A corrected heir address's confirmation: the guardians typed that address, not the owner, who is
# told nothing; the change ends and the guardians are told instead (the lifecycle scan's
# models.plan.guardianships.address_changes.end_unreached reads this suppression).
GUARDIAN_TYPED = "address_confirmation"
# RFC 8058: the one-click POST a mail client sends to the List-Unsubscribe URL.
ONE_CLICK = "List-Unsubscribe=One-Click"


def _mac(ring: KeyRing, key_id: str, outbox_id: str) -> str:
    return hmac.new(ring.subkey(key_id, PURPOSE), outbox_id.encode("ascii"), hashlib.sha256).hexdigest()[:32]


def token_for(ring: KeyRing, *, outbox_id: str) -> str:
    return uuid.UUID(outbox_id).hex + _mac(ring, ring.primary_id, outbox_id)


def url(*, base_url: str, token: str) -> str:
    return f"{base_url}{PATH}{token}"


def headers(*, link: str) -> dict[str, str]:
    """The RFC 8058 headers the provider puts on the email."""
    return {"List-Unsubscribe": f"<{link}>", "List-Unsubscribe-Post": ONE_CLICK}


def carries_link(*, kind: str, recipient_type: str, answered: bool) -> bool:
    """Invitations and confirmation requests, until the person has accepted or confirmed."""
    return kind in BUDGETED and recipient_type != "owner" and not answered


def _outbox_id(ring: KeyRing, token: str) -> str | None:
    if not TOKEN_RE.fullmatch(token):
        return None
    outbox_id = str(uuid.UUID(token[:32]))
    for key_id in ring.key_ids:
        if hmac.compare_digest(token[32:], _mac(ring, key_id, outbox_id)):
            return outbox_id
    return None


_PERSON = (
    " LEFT JOIN guardians g ON o.recipient_type = 'guardian' AND g.id = o.recipient_id"
    " LEFT JOIN beneficiaries b ON o.recipient_type = 'beneficiary' AND b.id = o.recipient_id"
)

# The email a live link came in: one the link is offered in, sent (so its address is known),
# of an account that still exists; with whether its person has answered since.
_EMAIL = (
    "SELECT o.id::text AS id, o.kind, o.recipient_type, o.recipient_id::text AS recipient_id, o.plan_id::text"
    f" AS plan_id, p.user_id::text AS user_id, o.sent_to_bidx, u.name_sealed AS owner_name_sealed,"
    " u.grammatical_gender AS owner_gender,"
    " COALESCE(g.locale, b.locale) AS locale, COALESCE(g.time_zone, b.time_zone) AS time_zone,"
    f" {answered(guardian='g', heir='b', row='o')} AS answered"
    " FROM outbox o JOIN plans p ON p.id = o.plan_id JOIN users u ON u.id = p.user_id"
    + _PERSON
    + " WHERE o.id = %s AND o.kind = ANY(%s) AND o.sent_to_bidx IS NOT NULL"
    f" AND {live_account(alias='u')}"
)

# What a link does: nothing (None: it opens the 404 page), stop the emails ("open"), or nothing
# because the person accepted or confirmed since ("answered": the page says so in words).
State = Literal["open", "answered"]


class Link(TypedDict):
    """A live link and what its page says: its state, the email it came in (its `kind`), whose
    plan sent it (the owner's name, None if cleared, and how to refer to them) and its
    recipient's language and zone."""

    state: State
    kind: str
    owner_name: str | None
    owner_gender: str | None  # core.text.gender.GENDERS; None: not said
    locale: str | None
    time_zone: str | None


async def _email(cur: Cursor, ring: KeyRing, token: str) -> dict[str, Any] | None:
    outbox_id = _outbox_id(ring, token)
    if outbox_id is None:
        return None
    await cur.execute(_EMAIL, (outbox_id, list(BUDGETED)))
    row = await cur.fetchone()
    return None if row is None else dict(row)


def _state(ring: KeyRing, email: dict[str, Any] | None) -> Link | None:
    if email is None:
        return None
    owner = sealed_text.open_text(
        ring, table="users", column="name", row_id=email["user_id"], sealed=email["owner_name_sealed"]
    )
    return Link(
        state="answered" if email["answered"] else "open",
        kind=email["kind"],
        owner_name=owner,
        owner_gender=email["owner_gender"],
        locale=email["locale"],
        time_zone=email["time_zone"],
    )


async def state(pool: Pool, ring: KeyRing, *, token: str) -> Link | None:
    """What the link's page offers: a read (a GET changes nothing)."""
    async with autocommit(pool) as cur:
        return _state(ring, await _email(cur, ring, token))


async def suppress(pool: Pool, ring: KeyRing, *, token: str, now: datetime) -> tuple[Link | None, list[str]]:
    """The person does not know this account's owner: no email from the account reaches that
    address again (checked when a row is written and when it is sent), and the owner is told
    once (an email and a timeline entry). The link's state and the outbox ids to enqueue after
    COMMIT. Using the link again changes nothing more; nor does a link whose person has accepted
    or confirmed since: an old email's Unsubscribe must not silently drop someone the plan
    counts on (the owner can remove them)."""
    async with transaction(pool) as cur:
        email = await _email(cur, ring, token)
        link = _state(ring, email)
        if email is None or link is None or link["state"] != "open":
            return link, []
        await cur.execute(
            "INSERT INTO email_suppressions (user_id, email_bidx, outbox_id, created_at)"
            " VALUES (%s, %s, %s, %s) ON CONFLICT DO NOTHING RETURNING user_id",
            (email["user_id"], email["sent_to_bidx"], email["id"], now),
        )
        if await cur.fetchone() is None or email["kind"] == GUARDIAN_TYPED:
            return link, []
        person = "guardian" if email["recipient_type"] == "guardian" else "beneficiary"
        await activity.record(
            cur,
            user_id=email["user_id"],
            kind=f"{person}.email_refused",
            entity_id=email["recipient_id"],
            summary=N_("The guardian you named said they do not know you: nothing more goes to that address")
            if person == "guardian"
            else N_("The beneficiary you named said they do not know you: nothing more goes to that address"),
        )
        told = await outbox.add(
            cur,
            kind=TOLD,
            plan_id=email["plan_id"],
            recipient_type="owner",
            recipient_id=email["user_id"],
            now=now,
            context={f"{person}Id": email["recipient_id"]},
        )
    return link, [told]
