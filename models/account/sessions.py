"""The owner's page sessions: what a browser signed in to `/plan` holds, kept on the server.

The browser's cookie holds an opaque id; only its SHA-256 is kept here, so a copy of this table
opens no session. A session is valid while the account's session generation is the one it was
opened under (sign out everywhere, removing a wallet and deleting the account raise it, as they
end the API's tokens), before `expires_at` (at most JWT_TTL_SECONDS after sign-in) and while it
was used within the idle limit (SESSION_IDLE_SECONDS). A session a passkey opened goes with
that passkey (the foreign key cascades). Read on every owner page in one statement that also
notes the visit. Decisions: docs/security.md, "The owner's page session".
"""

from __future__ import annotations

import hashlib
import secrets
from datetime import datetime, timedelta
from typing import TypedDict

from core.db import Pool, autocommit, transaction
from core.files.crypto import KeyRing
from models.common import as_record
from models.delivery import owner_notices


class OwnerSession(TypedDict):
    """A live page session, as the owner's pages read it (with the account's language and zone)."""

    id: str
    user_id: str
    form_token: str
    passkey_id: bytes | None
    expires_at: datetime
    locale: str | None
    time_zone: str | None


class Opened(TypedDict):
    """A session just opened: the cookie's value (never kept here) and its lifetime."""

    cookie: str
    form_token: str
    expires_at: datetime


def digest(*, cookie: str) -> bytes:
    return hashlib.sha256(cookie.encode()).digest()


async def open_session(
    pool: Pool,
    ring: KeyRing,
    *,
    user_id: str,
    generation: int,
    wallet_address: str | None,
    passkey_id: bytes | None,
    replacing: str | None,
    lifetime_seconds: int,
    idle_seconds: int,
    now: datetime,
) -> Opened:
    """A fresh session (a new id: the one the browser held before, `replacing`, ends here, so a
    session id planted before sign-in is worth nothing after it). The account's ended and idle
    sessions are cleared on the way. The owner is told (the account-changes digest, once the
    plan has left Draft): a sign-in they did not make is how a stolen key shows itself."""
    cookie = secrets.token_urlsafe(32)
    form_token = secrets.token_urlsafe(24)
    expires_at = now + timedelta(seconds=lifetime_seconds)
    async with transaction(pool) as cur:
        if replacing:
            await cur.execute("DELETE FROM owner_sessions WHERE digest = %s", (digest(cookie=replacing),))
        await cur.execute(
            "DELETE FROM owner_sessions WHERE user_id = %s AND (expires_at <= %s OR last_seen_at <= %s"
            " OR generation <> %s)",
            (user_id, now, now - timedelta(seconds=idle_seconds), generation),
        )
        await cur.execute(
            "INSERT INTO owner_sessions (digest, user_id, generation, passkey_id, form_token, created_at,"
            " last_seen_at, expires_at) VALUES (%s, %s, %s, %s, %s, %s, %s, %s)",
            (digest(cookie=cookie), user_id, generation, passkey_id, form_token, now, now, expires_at),
        )
        await owner_notices.tell_owner(
            cur,
            ring,
            user_id=user_id,
            change="signed_in_passkey" if passkey_id is not None else "signed_in_wallet",
            name=wallet_address or "passkey",
            now=now,
        )
    return {"cookie": cookie, "form_token": form_token, "expires_at": expires_at}


async def current(pool: Pool, *, cookie: str, idle_seconds: int, now: datetime) -> OwnerSession | None:
    """The live session this cookie names, its visit noted (which restarts the idle limit); None
    when it is unknown, ended (another generation), expired or idle too long."""
    if not cookie or len(cookie) > 128:
        return None
    async with autocommit(pool) as cur:
        await cur.execute(
            "UPDATE owner_sessions s SET last_seen_at = %s FROM users u"
            " WHERE s.digest = %s AND u.id = s.user_id AND u.session_generation = s.generation"
            " AND s.expires_at > %s AND s.last_seen_at > %s"
            " RETURNING s.id::text AS id, s.user_id::text AS user_id, s.form_token, s.passkey_id,"
            " s.expires_at, u.locale, u.time_zone",
            (now, digest(cookie=cookie), now, now - timedelta(seconds=idle_seconds)),
        )
        row = await cur.fetchone()
    if row is None:
        return None
    passkey_id = row["passkey_id"]
    return as_record(
        OwnerSession, row={**row, "passkey_id": None if passkey_id is None else bytes(passkey_id)}
    )


async def end(pool: Pool, *, cookie: str) -> None:
    """Sign this browser out (its row goes; nothing else of the account changes)."""
    async with autocommit(pool) as cur:
        await cur.execute("DELETE FROM owner_sessions WHERE digest = %s", (digest(cookie=cookie),))


async def purge(pool: Pool, *, idle_seconds: int, now: datetime) -> int:
    """Delete every session past its lifetime or idle limit, or ended by its account's session
    generation; returns how many. (Nothing reads them again: this only keeps the table small.)"""
    async with autocommit(pool) as cur:
        await cur.execute(
            "DELETE FROM owner_sessions s USING users u WHERE u.id = s.user_id AND (s.expires_at <= %s"
            " OR s.last_seen_at <= %s OR s.generation <> u.session_generation)",
            (now, now - timedelta(seconds=idle_seconds)),
        )
        return int(cur.rowcount)
