"""The heir's wallet: proven through their claim token before it may build or submit a claim.

Without a proof, anything signed by a wallet W was accepted through any sibling's token, and
the first confirmed claim bound W to whichever beneficiary submitted it: the
signed envelope is public once it reaches the network, so a sibling could take another heir's
claim. Now a wallet is bound to one beneficiary before it is used, by the owner (recorded in
the plan) or by the heir signing a challenge through their token (`challenge`, `verify`), and
the on-chain routes take only the bound wallet (models.flows.onchain). Decisions: docs/soroban.md
"Beneficiary wallets".
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from datetime import UTC, datetime, timedelta

from arq.connections import ArqRedis
from redis.asyncio import Redis

from core import challenges, ratelimit
from core.clock import wire_time
from core.db import Cursor, Pool, transaction
from core.errors import BadRequest, Conflict, NotFound, TooManyRequests, Unauthorized
from core.settings import Settings
from core.stellar.wallet import decode_signature, verify_signature
from core.text.i18n import N_, _
from models import activity, wallet_requests
from models.claim import wallet_changes
from models.claim.capsules import READY, RELEASED_STATE, Capsule, WalletBinding, state
from models.claim.wallet_changes import TAKEN, short
from models.common import as_record
from models.contents import beneficiaries
from models.delivery import outbox
from models.proofs import challenge as challenge_proof

CHALLENGE_KEY = "claim:wallet:{}:{}"  # beneficiary id, wallet -> live challenges (core.challenges)
CHALLENGE_TTL = timedelta(minutes=5)
PROVE_FIRST = N_(
    "Prove your wallet first: POST /api/claim/{token}/wallet/challenge with your walletAddress, "
    "sign the message it returns with that wallet, and POST the signature to "
    "/api/claim/{token}/wallet/verify."
)


def _require_open(capsule: Capsule) -> None:
    """Proofs only once the heirs hold their links (ready or released): before that the owner
    decides the wallet, and the challenge would name the owner to whoever holds a locked link."""
    if state(capsule=capsule) not in (READY, RELEASED_STATE):
        raise Conflict(N_("Your capsule is not open yet; a wallet can be proven once it is."))


def _challenge_text(
    settings: Settings, *, capsule: Capsule, wallet_address: str, nonce: str, issued: datetime
) -> str:
    """The text an heir signs, built from the database's facts (the owner's name) and the nonce
    and time kept in Redis: rebuilt at verify, never stored (no owner's name kept in Redis)."""
    owner = capsule["owner_name"] or "the owner"
    return (
        f"{settings.service_name} asks you to prove this Stellar wallet:\n"
        f"{wallet_address}\n\n"
        f"to claim as beneficiary of {owner}'s plan.\n"
        "Signing proves you control this wallet. It does not authorize any payment or transaction.\n\n"
        f"Nonce: {nonce}\n"
        f"Issued At: {wire_time(issued)}\n"
        f"Expiration Time: {wire_time(issued + CHALLENGE_TTL)}"
    )


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


async def challenge(
    redis: Redis, settings: Settings, *, capsule: Capsule, wallet_address: str, client_ip: str, now: datetime
) -> str:
    """The text the heir signs with the wallet; single use, 5 minutes, several live at once.
    Redis keeps only `nonce issued-ms digest` per challenge: no name, no text (its snapshot on
    disk holds nothing personal)."""
    _require_open(capsule)
    retry = await ratelimit.hit(redis, f"claim-wallet:ip:{client_ip}", settings.rate_limit_challenge_per_ip)
    if retry:
        raise TooManyRequests(N_("Too many wallet challenges from this address; try again later"), retry)
    nonce = secrets.token_hex(32)
    issued = now.replace(microsecond=now.microsecond // 1000 * 1000)  # wire_time keeps milliseconds
    message = _challenge_text(
        settings, capsule=capsule, wallet_address=wallet_address, nonce=nonce, issued=issued
    )
    stamp = f"{nonce} {(issued - _EPOCH) // timedelta(milliseconds=1)} {_digest(message)}"
    key = CHALLENGE_KEY.format(capsule["beneficiary_id"], wallet_address)
    await challenges.store(redis, key, stamp, ttl_seconds=int(CHALLENGE_TTL.total_seconds()), now=now)
    return message


def _rebuilt(settings: Settings, *, capsule: Capsule, wallet_address: str, stamp: str) -> str | None:
    """The text a kept stamp stands for, rebuilt from the database's facts; None if it no longer
    matches the digest (the facts changed since) or the stamp is not one of ours."""
    try:
        nonce, millis, digest = stamp.split(" ")
        issued = _EPOCH + timedelta(milliseconds=int(millis))
    except ValueError:
        return None
    text = _challenge_text(
        settings, capsule=capsule, wallet_address=wallet_address, nonce=nonce, issued=issued
    )
    return text if hmac.compare_digest(_digest(text), digest) else None


async def _burn_signed(
    redis: Redis, settings: Settings, *, capsule: Capsule, wallet_address: str, signature: str, now: datetime
) -> None:
    """Find the live challenge this signature signs and burn it (401 otherwise)."""
    raw = decode_signature(signature)
    if raw is None:
        raise BadRequest(
            ["signature: Must be a 64-byte ed25519 signature, base64 (88 chars) or hex (128 chars)."],
            details={"signature": ["Not a valid signature encoding."]},
        )
    key = CHALLENGE_KEY.format(capsule["beneficiary_id"], wallet_address)
    expired = "No valid challenge for this wallet (expired or already used); request a new one"
    candidates = await challenges.live_at(redis, key, now)
    if not candidates:
        raise Unauthorized(expired)
    signed = None
    for stamp in candidates:
        text = _rebuilt(settings, capsule=capsule, wallet_address=wallet_address, stamp=stamp)
        if text is not None and verify_signature(wallet_address, text, raw):
            signed = stamp
            break
    if signed is None:
        raise Unauthorized(N_("The signature does not match a challenge for this wallet"))
    if not await challenges.consume_at(redis, key, signed):
        raise Unauthorized(expired)


async def verify(
    pool: Pool,
    redis: ArqRedis,
    settings: Settings,
    *,
    capsule: Capsule,
    wallet_address: str,
    signature: str,
    now: datetime,
) -> WalletBinding:
    """Bind the proven wallet to this beneficiary: the same wallet again is a no-op; a wallet
    bound to a sibling is 409. Another wallet already bound to them is 409 too, and the proof is
    kept as a request their guardians can approve (a lost wallet), committed before the 409."""
    _require_open(capsule)
    await _burn_signed(
        redis, settings, capsule=capsule, wallet_address=wallet_address, signature=signature, now=now
    )
    return await _bind(pool, redis, capsule=capsule, wallet_address=wallet_address, now=now)


async def challenge_transaction(
    redis: Redis, settings: Settings, *, capsule: Capsule, wallet_address: str, client_ip: str, now: datetime
) -> wallet_requests.Prepared:
    """The SEP-10-style challenge the heir's wallet signs to prove it (docs/pages.md), kept as a
    single-use signing request for this beneficiary; the same rules and limit as `challenge`."""
    _require_open(capsule)
    retry = await ratelimit.hit(redis, f"claim-wallet:ip:{client_ip}", settings.rate_limit_challenge_per_ip)
    if retry:
        raise TooManyRequests(N_("Too many wallet challenges from this address; try again later"), retry)
    return await challenge_proof.issue(
        redis,
        settings,
        purpose="heir.prove",
        subject_id=capsule["beneficiary_id"],
        signer=wallet_address,
        now=now,
    )


async def verify_transaction(
    pool: Pool,
    redis: ArqRedis,
    settings: Settings,
    *,
    capsule: Capsule,
    request: wallet_requests.WalletRequest,
    signed_xdr: str,
    now: datetime,
) -> WalletBinding:
    """`verify` for a signed challenge transaction instead of a message signature: the request
    used up, then the same binding rules (a sibling's wallet 409, another wallet of theirs kept
    for the guardians)."""
    _require_open(capsule)
    await challenge_proof.check(redis, settings, request=request, answer=signed_xdr)
    return await _bind(pool, redis, capsule=capsule, wallet_address=request["signer"], now=now)


async def _bind(
    pool: Pool, redis: ArqRedis, *, capsule: Capsule, wallet_address: str, now: datetime
) -> WalletBinding:
    async with transaction(pool) as cur:
        await cur.execute(
            "SELECT b.wallet_address, b.wallet_bound_via, b.wallet_bound_at, p.status, p.ready_at"
            " FROM beneficiaries b JOIN plans p ON p.user_id = b.user_id WHERE b.id = %s FOR UPDATE OF b",
            (capsule["beneficiary_id"],),
        )
        row = await cur.fetchone()
        if row is None:
            raise NotFound("Capsule")
        # Again under the row lock: the owner may have checked in since the token was looked up.
        _require_open(
            as_record(Capsule, row={**capsule, "plan_status": row["status"], "ready_at": row["ready_at"]})
        )
        bound = row["wallet_address"]
        if bound == wallet_address:
            return {
                "address": bound,
                "bound_via": row["wallet_bound_via"],
                "bound_at": row["wallet_bound_at"],
            }
        if bound is None:
            await _bind_proven(cur, capsule=capsule, wallet_address=wallet_address, now=now)
            return {"address": wallet_address, "bound_via": "proven", "bound_at": now}
        change = await wallet_changes.request(cur, capsule=capsule, wallet_address=wallet_address, now=now)
    await outbox.enqueue(redis, row_ids=change["outbox"])
    # In the reader's language where a page asks (the heir's page answers inside it).
    words = (
        _(
            "Another wallet ({wallet}) is already bound to you, as the plan's owner recorded it. Claim "
            "with that wallet. If you no longer hold it, this proof was kept: the plan's guardians have "
            "been asked to approve this wallet instead ({count} of them must)."
        )
        if row["wallet_bound_via"] == "owner"
        else _(
            "Another wallet ({wallet}) is already bound to you. Claim with that wallet. If you no longer "
            "hold it, this proof was kept: the plan's guardians have been asked to approve this wallet "
            "instead ({count} of them must)."
        )
    )
    raise Conflict(
        words.format(wallet=short(address=bound), count=change["threshold"]),
        details={
            "walletChange": {
                "status": "pending",
                "walletAddress": wallet_address,
                "approvals": 0,
                "threshold": change["threshold"],
            }
        },
    )


async def _bind_proven(cur: Cursor, *, capsule: Capsule, wallet_address: str, now: datetime) -> None:
    bound = await beneficiaries.bind_wallet(
        cur, beneficiary_id=capsule["beneficiary_id"], wallet_address=wallet_address, via="proven", now=now
    )
    if not bound:
        raise Conflict(TAKEN)
    await activity.record(
        cur,
        user_id=capsule["owner_id"],
        kind="beneficiary.wallet_proven",
        entity_id=capsule["beneficiary_id"],
        summary=N_("A beneficiary proved the wallet they will claim with"),
        metadata={"walletAddress": wallet_address},
    )
