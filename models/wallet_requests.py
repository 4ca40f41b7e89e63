"""Signing requests a page shows a wallet (SEP-7): what the service keeps of each, in Redis, to
take the signed envelope back exactly once.

A record holds the request id, its purpose (`heir.prove`, `heir.finalize_release`,
`guardian.accept`, ...), the person it is for (a beneficiary or guardian id), the wallet that
must sign, the unsigned transaction's hash and when it expires: ids, a public key and a hash,
no name, no message, no personal text (the words a wallet shows live only in the URI on the
page; a note typed with the answer is kept apart, sealed: `keep_note`). A request lives exactly
as long as its transaction's time bound and is used once: a page loaded after that builds a
fresh one. docs/pages.md "Asking a wallet".
"""

from __future__ import annotations

import json
import math
import secrets
import uuid
from datetime import UTC, datetime, timedelta
from typing import TypedDict

from redis.asyncio import Redis

from core.errors import BadRequest, Conflict, NotFound
from core.files.crypto import KeyRing
from core.text.i18n import N_
from models import sealed_text

KEY = "sep7:request:{}"
PURPOSES = (
    "heir.prove",
    "heir.finalize_release",
    "heir.claim_assets",
    "guardian.accept",
    "guardian.decline",
    "guardian.reconfirm",
    "guardian.report",
    "guardian.approve",
    "guardian.approve_onchain",
    "guardian.resend",
    "guardian.object",
    "guardian.withdraw_objection",
    "guardian.propose_address",
    "guardian.suggest_address",
    "guardian.agree_address",
    "guardian.stop_address",
    "owner.sign_in",
    "owner.link_wallet",
)
_TAKE = """
local value = redis.call('GET', KEYS[1])
if value then redis.call('DEL', KEYS[1]) end
return value
"""
USED = N_("This signing request was already used or has expired; open the page again for a fresh one.")


class WalletRequest(TypedDict):
    id: str
    purpose: str
    subject_id: str  # the beneficiary or guardian the request is for
    signer: str  # the wallet that must sign (public key)
    tx_hash: str  # hex hash of the unsigned transaction (signing does not change it)
    expires_at: datetime
    extra: str | None  # what the action needs: a beneficiary's id (resend), a report's reason word


async def issue(
    redis: Redis,
    *,
    purpose: str,
    subject_id: str,
    signer: str,
    tx_hash: str,
    expires_at: datetime,
    now: datetime,
    extra: str | None = None,
) -> str:
    """Keep a new request until its transaction expires; its id goes in the callback URL."""
    assert purpose in PURPOSES, purpose
    request_id = secrets.token_urlsafe(16)
    record = {
        "purpose": purpose,
        "subject_id": subject_id,
        "signer": signer,
        "tx_hash": tx_hash,
        "expires_at": expires_at.timestamp(),
        "extra": extra,
    }
    ttl = max(1, math.ceil((expires_at - now).total_seconds()))
    await redis.set(KEY.format(request_id), json.dumps(record), ex=ttl)
    return request_id


def _record(request_id: str, raw: bytes | str) -> WalletRequest:
    data = json.loads(raw)
    return {
        "id": request_id,
        "purpose": data["purpose"],
        "subject_id": data["subject_id"],
        "signer": data["signer"],
        "tx_hash": data["tx_hash"],
        "expires_at": datetime.fromtimestamp(data["expires_at"], UTC),
        "extra": data.get("extra"),
    }


async def peek(redis: Redis, *, request_id: str, subject_id: str, now: datetime) -> WalletRequest:
    """The live request of this id for this person; 404 when it is someone else's (a callback
    under another token), 409 when it is used or expired."""
    if not (0 < len(request_id) <= 64):
        raise NotFound("Signing request")
    raw = await redis.get(KEY.format(request_id))
    if raw is None:
        raise Conflict(USED)
    request = _record(request_id, raw)
    if request["subject_id"] != subject_id:
        raise NotFound("Signing request")
    if request["expires_at"] <= now:
        raise Conflict(USED)
    return request


async def find(redis: Redis, *, request_id: str, purpose: str, now: datetime) -> WalletRequest:
    """The live request of this id and purpose, for a callback whose path names no person (the
    owner's sign-in: the request's subject is the browser's pending sign-in). 404 for another
    purpose's, 409 when used or expired."""
    if not (0 < len(request_id) <= 64):
        raise NotFound("Signing request")
    raw = await redis.get(KEY.format(request_id))
    if raw is None:
        raise Conflict(USED)
    request = _record(request_id, raw)
    if request["purpose"] != purpose:
        raise NotFound("Signing request")
    if request["expires_at"] <= now:
        raise Conflict(USED)
    return request


async def take(redis: Redis, *, request: WalletRequest) -> None:
    """Use the request up (once: two callbacks racing, only one gets past here)."""
    raw = await redis.eval(_TAKE, 1, KEY.format(request["id"]))  # type: ignore[misc]
    if raw is None:
        raise Conflict(USED)


def require_hash(*, request: WalletRequest, tx_hash: str) -> None:
    """400 unless the signed envelope is the transaction this request asked for."""
    if tx_hash != request["tx_hash"]:
        raise BadRequest(
            f"This is not the transaction this request asked the wallet {request['signer']} to sign. Sign "
            "the one shown on the page and paste it again."
        )


class Prepared(TypedDict):
    """A request as a page shows it: its id (for the callback) and the unsigned envelope."""

    id: str
    purpose: str
    signer: str
    xdr: str
    valid_until: datetime


SHOWN_KEY = "sep7:shown:{}:{}"
# A request kept for reuse is shown again only while the person still has this long to sign it.
REUSE_MARGIN = timedelta(minutes=1)


async def reusable(redis: Redis, *, subject_id: str, purpose: str, now: datetime) -> Prepared | None:
    """The request last prepared for this person and purpose, while it is unused and far enough
    from its time bound: pressing the button again shows it rather than building another."""
    raw = await redis.get(SHOWN_KEY.format(subject_id, purpose))
    if raw is None:
        return None
    data = json.loads(raw)
    prepared: Prepared = {
        "id": data["id"],
        "purpose": purpose,
        "signer": data["signer"],
        "xdr": data["xdr"],
        "valid_until": datetime.fromtimestamp(data["valid_until"], UTC),
    }
    if prepared["valid_until"] - REUSE_MARGIN <= now or not await redis.exists(KEY.format(prepared["id"])):
        return None  # used up (taken) or about to expire
    return prepared


async def keep_for_reuse(redis: Redis, *, subject_id: str, prepared: Prepared, now: datetime) -> None:
    """Remember a prepared request (ids, a public key, the unsigned XDR: nothing personal) until
    its time bound."""
    record = {
        "id": prepared["id"],
        "signer": prepared["signer"],
        "xdr": prepared["xdr"],
        "valid_until": prepared["valid_until"].timestamp(),
    }
    ttl = max(1, math.ceil((prepared["valid_until"] - now).total_seconds()))
    await redis.set(SHOWN_KEY.format(subject_id, prepared["purpose"]), json.dumps(record), ex=ttl)


NOTE_KEY = "sep7:note:{}"
TEXT_KEY = "wallet_request:text:{}"


async def keep_note(
    redis: Redis, ring: KeyRing, *, request_id: str, note: str | None, expires_at: datetime, now: datetime
) -> None:
    """The note a person typed with their answer (a report, an objection), kept apart from the
    request and sealed (models/sealed_text.py), until the request's time bound: their wallet
    signs the request later, maybe on another device, and the answer needs the words then."""
    if not note:
        return
    seal_id = str(uuid.uuid4())
    sealed = sealed_text.seal(ring, table="wallet_requests", column="note", row_id=seal_id, text=note)
    ttl = max(1, math.ceil((expires_at - now).total_seconds()))
    await redis.set(NOTE_KEY.format(request_id), json.dumps({"id": seal_id, "sealed": sealed}), ex=ttl)


async def note_of(redis: Redis, ring: KeyRing, *, request_id: str) -> str | None:
    """The note kept with this request (`keep_note`), or None."""
    raw = await redis.get(NOTE_KEY.format(request_id))
    if raw is None:
        return None
    data = json.loads(raw)
    return sealed_text.open_text(
        ring, table="wallet_requests", column="note", row_id=data["id"], sealed=data["sealed"]
    )


async def keep_text(redis: Redis, *, request_id: str, text: str, expires_at: datetime, now: datetime) -> None:
    """The attestation text a request's challenge carries the digest of, kept with that request:
    another ask from the page issues another text and never replaces this one."""
    ttl = max(1, math.ceil((expires_at - now).total_seconds()))
    await redis.set(TEXT_KEY.format(request_id), text, ex=ttl)


async def text_of(redis: Redis, *, request_id: str) -> str | None:
    """The text kept with this request (`keep_text`), or None."""
    raw = await redis.get(TEXT_KEY.format(request_id))
    return raw.decode() if isinstance(raw, bytes) else raw
