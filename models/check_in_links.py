"""One-time check-in links: a check-in without a wallet, from any lifecycle email to the owner.

Why derived rather than stored: an outbox row holds references, never a secret, and every
attempt to send one email must carry the same link (the provider keeps the first under its
Idempotency-Key). So the token is an HMAC of the outbox row id under a subkey of the key ring,
made when the email is rendered, and the table keeps only its SHA-256 digest, with the id of
the key it was made under (a retry after a key rotation renders the same link). A link is
single use and ends at the first check-in of any kind: every check-in deletes all the plan's
links (`end_all_in`, under the plan's row lock). Decisions: docs/lifecycle.md ("Check-in links").
"""

from __future__ import annotations

import hashlib
import hmac
import re
from datetime import datetime, timedelta
from typing import Any

from core.db import Cursor, Pool, autocommit
from core.files.crypto import KeyRing
from models.common import Recorded

PURPOSE = "check-in-link"
LIFETIME = timedelta(days=30)
# Owner emails about a risk to the plan: "are you still there?", a release ahead, and a change
# they may not have made (someone else may hold their key). Each carries its own link: checking
# in is what stops a release, and it works from the email itself, wallet or not.
KINDS = frozenset(
    {
        "check_in_reminder",
        "grace_started",
        "verification_started",
        "plan_approved",
        "plan_ready",
        "verification_timeout",
        "deadline_warning",
        "guardian_objected",
        "objection_withdrawn",
        "objection_check_in_reminder",
        "objection_lapsed",
        "account_changes",
        "owner_email_changed",
    }
)
TOKEN_RE = re.compile(r"[0-9a-f]{64}")


def token_for(ring: KeyRing, *, key_id: str, outbox_id: str) -> str:
    """The link's 256-bit token (64 hex), the same at every rendering of one email."""
    subkey = ring.subkey(key_id, PURPOSE)
    return hmac.new(subkey, str(outbox_id).encode("ascii"), hashlib.sha256).hexdigest()


def digest(*, token: str) -> bytes:
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).digest()


def url(*, base_url: str, token: str) -> str:
    return f"{base_url}/check-in/{token}"


async def issue(cur: Cursor, *, outbox_id: str, plan_id: str, now: datetime) -> None:
    """A link for this owner email, valid 30 days; its digest is stored when it is rendered."""
    await cur.execute(
        "INSERT INTO check_in_links (outbox_id, plan_id, created_at, expires_at) VALUES (%s, %s, %s, %s)",
        (outbox_id, plan_id, now, now + LIFETIME),
    )


async def remember(cur: Cursor, ring: KeyRing, *, outbox_ids: list[str]) -> None:
    """Store the digest of each link rendered for the first time, under the ring's primary key,
    in one statement. A link that a check-in has meanwhile ended stays ended (nothing to update)."""
    if not outbox_ids:
        return
    key_id = ring.primary_id
    values = ", ".join(["(%s::uuid, %s::bytea)"] * len(outbox_ids))
    params: list[Any] = []
    for outbox_id in outbox_ids:
        params += [outbox_id, digest(token=token_for(ring, key_id=key_id, outbox_id=outbox_id))]
    await cur.execute(
        "UPDATE check_in_links l SET digest = v.digest, key_id = %s"
        f" FROM (VALUES {values}) AS v(outbox_id, digest)"
        " WHERE l.outbox_id = v.outbox_id AND l.digest IS NULL",
        [key_id, *params],
    )


async def plan_of(cur: Cursor, *, token: str, now: datetime) -> Any | None:
    """The plan a live link belongs to; None for a malformed, unknown, used or expired token."""
    if not TOKEN_RE.fullmatch(token):
        return None
    await cur.execute(
        "SELECT plan_id FROM check_in_links WHERE digest = %s AND expires_at > %s", (digest(token=token), now)
    )
    row = await cur.fetchone()
    return None if row is None else row["plan_id"]


async def reader_if_live(pool: Pool, *, token: str, now: datetime) -> Recorded | None:
    """The owner's recorded language and zone if the link would check in now, else None: a read,
    for the page a GET of the link shows (mail scanners fetch links; only the form's POST checks
    in) and for the words of the page the POST answers with."""
    if not TOKEN_RE.fullmatch(token):
        return None
    async with autocommit(pool) as cur:
        await cur.execute(
            "SELECT u.locale, u.time_zone FROM check_in_links l JOIN plans p ON p.id = l.plan_id"
            " JOIN users u ON u.id = p.user_id WHERE l.digest = %s AND l.expires_at > %s",
            (digest(token=token), now),
        )
        row = await cur.fetchone()
    return None if row is None else Recorded(locale=row["locale"], time_zone=row["time_zone"])


async def end_all_in(cur: Cursor, *, plan_id: str) -> None:
    """Every link of the plan ends: called by each check-in, with the plan row locked."""
    await cur.execute("DELETE FROM check_in_links WHERE plan_id = %s", (plan_id,))
