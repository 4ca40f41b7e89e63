"""An heir's address, confirmed before it is needed, while the owner can still correct it: the
owner asks, the heir gets a neutral email with a one-time link, and the beneficiary shows
`emailConfirmedAt`.

The rules are the check-in link's (models.check_in_links): the token is an HMAC of the
outbox row id under a subkey of the key ring (every attempt to send the email carries the same
link; the outbox row holds the key id, never the token); the table keeps only its SHA-256
digest; single use; 30 days; every miss (malformed, unknown, used, expired, or an address
changed since) is the same 404 at the API, counted per client address. A link confirms the
address it went to only (the blind index at issue must still be the heir's). Changing the
address clears the confirmation (models.contents.beneficiaries.update). Decisions:
docs/capsule.md "An heir's address, confirmed early".
"""

from __future__ import annotations

import hashlib
import hmac
import re
from datetime import datetime, timedelta
from typing import TypedDict

from core.db import Pool, autocommit, transaction
from core.errors import Conflict, TooManyRequests
from core.files.crypto import KeyRing
from core.text.i18n import N_
from models import activity, plans
from models.common import Recorded, live_account, parse_id
from models.contents import beneficiaries
from models.delivery import outbox
from models.delivery.budget import Budget

PURPOSE = "email-confirmation"
KIND = "email_confirmation"
LIFETIME = timedelta(days=30)
# Emails an owner may have sent to one heir in a day: enough to retry, too few to pester.
PER_DAY = 3
TOKEN_RE = re.compile(r"[0-9a-f]{64}")


class Requested(TypedDict):
    outbox_id: str
    status: str  # the email's: pending, or deferred past the day's budget (models.delivery.budget)
    expires_at: datetime


class Confirmed(TypedDict):
    beneficiary_id: str
    email_confirmed_at: datetime
    already: bool  # the link had confirmed it before (`email_confirmed_at`: when it did)
    reader: Recorded  # the heir's language and zone as recorded: the page's words


def token_for(ring: KeyRing, *, key_id: str, outbox_id: str) -> str:
    """The link's 256-bit token (64 hex), the same at every rendering of one email."""
    return hmac.new(ring.subkey(key_id, PURPOSE), outbox_id.encode("ascii"), hashlib.sha256).hexdigest()


def url(*, base_url: str, token: str) -> str:
    return f"{base_url}/confirm-email/{token}"


def _digest(token: str) -> bytes:
    return hashlib.sha256(token.encode("ascii")).digest()


async def request(
    pool: Pool, ring: KeyRing, *, user_id: str, raw_id: str, now: datetime, budget: Budget
) -> Requested:
    """Queue the confirmation email to the heir's registered address (after COMMIT, the caller
    enqueues `outbox_id`). 404 for another owner's heir, 409 once the plan is released (their
    claim link has gone to that address), 429 past PER_DAY a day for one heir."""
    beneficiary_id = parse_id(raw=raw_id, what="Beneficiary")
    async with transaction(pool) as cur:
        row = await beneficiaries.ROWS.row(
            cur, user_id=user_id, row_id=beneficiary_id, lock=True, columns="id, email_bidx"
        )
        plan = await plans.get_or_create(cur, user_id=user_id)
        if plan["status"] == plans.RELEASED:
            raise Conflict("This plan has been released: the heirs' links have gone to their addresses.")
        await cur.execute(
            "SELECT created_at FROM email_confirmations WHERE beneficiary_id = %s AND created_at > %s"
            " ORDER BY created_at",
            (beneficiary_id, now - timedelta(days=1)),
        )
        recent = [r["created_at"] for r in await cur.fetchall()]
        if len(recent) >= PER_DAY:
            wait = recent[-PER_DAY] + timedelta(days=1) - now
            raise TooManyRequests(
                f"This address was already asked {PER_DAY} times today; try again tomorrow.",
                int(wait.total_seconds()) + 1,
            )
        key_id = ring.primary_id
        outbox_id = await outbox.add(
            cur,
            kind=KIND,
            plan_id=plan["id"],
            recipient_type="beneficiary",
            recipient_id=beneficiary_id,
            now=now,
            context={"keyId": key_id},
            budget=budget,
        )
        token = token_for(ring, key_id=key_id, outbox_id=outbox_id)
        await cur.execute(
            "INSERT INTO email_confirmations (digest, beneficiary_id, outbox_id, email_bidx, created_at,"
            " expires_at) VALUES (%s, %s, %s, %s, %s, %s)",
            (_digest(token), beneficiary_id, outbox_id, row["email_bidx"], now, now + LIFETIME),
        )
        await activity.record(
            cur,
            user_id=user_id,
            kind="beneficiary.email_confirmation_sent",
            entity_id=beneficiary_id,
            summary=N_("A beneficiary was asked to confirm that their email address reaches them"),
        )
        await cur.execute("SELECT status FROM outbox WHERE id = %s", (outbox_id,))
        status = (await cur.fetchone())["status"]
    return {"outbox_id": outbox_id, "status": status, "expires_at": now + LIFETIME}


# A link, while the address it went to is still the heir's and the owner's account is not
# being deleted; then live (it would confirm now) or used (it confirmed the address already).
_LINK = (
    "FROM email_confirmations c JOIN beneficiaries b ON b.id = c.beneficiary_id"
    " AND b.email_bidx = c.email_bidx"
    f" JOIN users u ON u.id = b.user_id AND {live_account(alias='u')}"
    " WHERE c.digest = %s"
)
_LIVE = f"{_LINK} AND c.used_at IS NULL AND c.expires_at > %s"
_USED = f"{_LINK} AND c.used_at IS NOT NULL AND b.email_confirmed_at IS NOT NULL"


async def reader_if_live(pool: Pool, *, token: str, now: datetime) -> Recorded | None:
    """The heir's recorded language and zone if the link would confirm now, else None: a read,
    for the page a GET shows (mail scanners fetch links; only the button's POST confirms)."""
    if not TOKEN_RE.fullmatch(token):
        return None
    async with autocommit(pool) as cur:
        await cur.execute(f"SELECT b.locale, b.time_zone {_LIVE}", (_digest(token), now))
        row = await cur.fetchone()
    return None if row is None else Recorded(locale=row["locale"], time_zone=row["time_zone"])


async def confirmed_before(pool: Pool, *, token: str) -> Confirmed | None:
    """The link was used, and the address it confirmed is still the heir's: opened again (a
    reload, the back button, the email a second time), it says so and when, rather than that it
    opens nothing. Not a miss: only the link's holder can know the token."""
    if not TOKEN_RE.fullmatch(token):
        return None
    async with autocommit(pool) as cur:
        await cur.execute(
            f"SELECT c.beneficiary_id::text AS beneficiary_id, c.used_at, b.locale, b.time_zone {_USED}",
            (_digest(token),),
        )
        row = await cur.fetchone()
    if row is None:
        return None
    return {
        "beneficiary_id": row["beneficiary_id"],
        "email_confirmed_at": row["used_at"],
        "already": True,
        "reader": Recorded(locale=row["locale"], time_zone=row["time_zone"]),
    }


async def confirm(pool: Pool, *, token: str, now: datetime) -> Confirmed | None:
    """Use the link: the heir's address is confirmed; a link used before says when
    (`confirmed_before`); None for every miss."""
    if not TOKEN_RE.fullmatch(token):
        return None
    async with transaction(pool) as cur:
        await cur.execute(
            "SELECT c.digest, c.beneficiary_id::text AS beneficiary_id, c.email_bidx, b.locale, b.time_zone"
            f" {_LIVE} FOR UPDATE OF c",
            (_digest(token), now),
        )
        link = await cur.fetchone()
        owner_id = None
        if link is not None:
            await cur.execute(
                "UPDATE email_confirmations SET used_at = %s WHERE digest = %s", (now, link["digest"])
            )
            # None is unreachable under the join; kept so a change cannot confirm another address.
            owner_id = await beneficiaries.confirm_email(
                cur, beneficiary_id=link["beneficiary_id"], email_bidx=bytes(link["email_bidx"]), now=now
            )
        if link is not None and owner_id is not None:
            await activity.record(
                cur,
                user_id=owner_id,
                kind="beneficiary.email_confirmed",
                entity_id=link["beneficiary_id"],
                summary=N_("A beneficiary confirmed that their email address reaches them"),
            )
    if link is None:
        return await confirmed_before(pool, token=token)
    if owner_id is None:
        return None
    return {
        "beneficiary_id": link["beneficiary_id"],
        "email_confirmed_at": now,
        "already": False,
        "reader": Recorded(locale=link["locale"], time_zone=link["time_zone"]),
    }
