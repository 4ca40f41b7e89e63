"""A sign-in a browser has started on `/sign-in` and not finished: kept in Redis, named by an
unguessable id that lives only in that browser's cookie (only its SHA-256 is a key here).

A wallet usually answers from another device (a phone), with no cookie of the browser: its
signing request's callback names a separate request id (models/wallet_requests.py), whose
record points here by the digest. When the wallet's answer is proven, the pending sign-in is
marked so; the browser that holds the cookie is signed in on its next request, once (`take`).
Nothing personal is kept: the wallet's public key, ids, the short code both screens show, the
unsigned challenge (public) and where to go after. docs/security.md, "Signing in from the pages".
"""

from __future__ import annotations

import hashlib
import json
import math
import secrets
from datetime import UTC, datetime, timedelta
from typing import TypedDict

from redis.asyncio import Redis

KEY = "owner:sign-in:{}"
# Letters and digits nobody confuses when reading them aloud or off a phone (no 0/O, 1/I/L).
_CODE_ALPHABET = "ABCDEFGHJKMNPQRSTUVWXYZ23456789"
_TAKE_PROVEN = """
local value = redis.call('GET', KEYS[1])
if not value then return nil end
local record = cjson.decode(value)
if record['proven'] then redis.call('DEL', KEYS[1]) return value end
return nil
"""
_MARK_PROVEN = """
local value = redis.call('GET', KEYS[1])
if not value then return 0 end
local record = cjson.decode(value)
record['proven'] = true
redis.call('SET', KEYS[1], cjson.encode(record), 'KEEPTTL')
return 1
"""


class PendingSignIn(TypedDict):
    digest: str  # hex SHA-256 of the browser's cookie: the key, and the wallet request's subject
    wallet: str | None  # the wallet named (None: a passkey sign-in)
    code: str  # the short code the SEP-7 message and the waiting page both show
    request_id: str | None  # the wallet's signing request (its callback's id)
    xdr: str | None  # the unsigned challenge the request asks to sign (public)
    text: str | None  # the spec's challenge text, for a wallet that signs messages (public)
    valid_until: datetime
    next: str  # a path under /plan
    proven: bool


class Started(TypedDict):
    cookie: str
    pending: PendingSignIn


def digest(*, cookie: str) -> str:
    return hashlib.sha256(cookie.encode()).hexdigest()


def new_code() -> str:
    """Six characters, shown as two groups of three ("K7P-4QX")."""
    raw = "".join(secrets.choice(_CODE_ALPHABET) for _ in range(6))
    return f"{raw[:3]}-{raw[3:]}"


def _record(raw: bytes | str) -> PendingSignIn:
    data = json.loads(raw)
    return {
        "digest": data["digest"],
        "wallet": data["wallet"],
        "code": data["code"],
        "request_id": data["request_id"],
        "xdr": data["xdr"],
        "text": data.get("text"),
        "valid_until": datetime.fromtimestamp(data["valid_until"], UTC),
        "next": data["next"],
        "proven": bool(data.get("proven")),
    }


def begin(*, wallet: str | None, next_path: str, ttl_seconds: int, now: datetime) -> Started:
    """A new pending sign-in (not kept yet: `keep` stores it once its signing request exists)."""
    cookie = secrets.token_urlsafe(32)
    pending: PendingSignIn = {
        "digest": digest(cookie=cookie),
        "wallet": wallet,
        "code": new_code(),
        "request_id": None,
        "xdr": None,
        "text": None,
        "valid_until": now + timedelta(seconds=ttl_seconds),
        "next": next_path,
        "proven": False,
    }
    return {"cookie": cookie, "pending": pending}


async def keep(redis: Redis, *, pending: PendingSignIn, now: datetime) -> None:
    ttl = max(1, math.ceil((pending["valid_until"] - now).total_seconds()))
    record = {**pending, "valid_until": pending["valid_until"].timestamp()}
    await redis.set(KEY.format(pending["digest"]), json.dumps(record), ex=ttl)


async def by_digest(redis: Redis, *, digest_hex: str, now: datetime) -> PendingSignIn | None:
    """The live pending sign-in under this digest (expired by the service's clock: None)."""
    raw = await redis.get(KEY.format(digest_hex))
    if raw is None:
        return None
    pending = _record(raw)
    return pending if pending["valid_until"] > now else None


async def of_cookie(redis: Redis, *, cookie: str | None, now: datetime) -> PendingSignIn | None:
    if not cookie or len(cookie) > 128:
        return None
    return await by_digest(redis, digest_hex=digest(cookie=cookie), now=now)


async def mark_proven(redis: Redis, *, pending: PendingSignIn) -> bool:
    """The wallet answered: the browser holding the cookie may now be signed in, once."""
    return bool(await redis.eval(_MARK_PROVEN, 1, KEY.format(pending["digest"])))  # type: ignore[misc]


async def take_proven(redis: Redis, *, cookie: str, now: datetime) -> PendingSignIn | None:
    """The pending sign-in of this cookie, used up, if its wallet has answered; else None."""
    raw = await redis.eval(_TAKE_PROVEN, 1, KEY.format(digest(cookie=cookie)))  # type: ignore[misc]
    if raw is None:
        return None
    pending = _record(raw)
    return pending if pending["valid_until"] > now else None


async def drop(redis: Redis, *, cookie: str) -> None:
    await redis.delete(KEY.format(digest(cookie=cookie)))
