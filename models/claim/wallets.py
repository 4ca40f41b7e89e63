"""The heir's wallet: proven through their claim token before it may build or submit a claim.

Without a proof, anything signed by a wallet W was accepted through any sibling's token, and
the first confirmed claim bound W to whichever beneficiary submitted it (issue #16): the
signed envelope is public once it reaches the network, so a sibling could take another heir's
claim. Now a wallet is bound to one beneficiary before it is used, by the owner (recorded in
the plan) or by the heir signing a challenge through their token (`challenge`, `verify`), and
the on-chain routes take only the bound wallet (models.onchain). Decisions: docs/soroban.md
"Beneficiary wallets".
"""

from __future__ import annotations

import secrets
from datetime import datetime, timedelta
from typing import cast

import psycopg2.errors
from redis.asyncio import Redis

from core import challenges, ratelimit
from core.db import Pool, transaction
from core.errors import BadRequest, Conflict, NotFound, TooManyRequests, Unauthorized
from core.settings import Settings
from core.stellar.wallet import decode_signature, verify_signature
from models import activity
from models.claim.capsule import READY, RELEASED_STATE, Capsule, WalletBinding, state

CHALLENGE_KEY = "claim:wallet:{}:{}"  # beneficiary id, wallet -> live challenges (core.challenges)
CHALLENGE_TTL = timedelta(minutes=5)
PROVE_FIRST = (
    "Prove your wallet first: POST /api/claim/{token}/wallet/challenge with your walletAddress, "
    "sign the message it returns with that wallet, and POST the signature to "
    "/api/claim/{token}/wallet/verify."
)
TAKEN = "This wallet is already bound to another beneficiary of this plan"


def _iso(moment: datetime) -> str:
    return moment.isoformat(timespec="seconds").replace("+00:00", "Z")


def _require_open(capsule: Capsule) -> None:
    """Proofs only once the heirs hold their links (ready or released): before that the owner
    decides the wallet, and the challenge would name the owner to whoever holds a locked link."""
    if state(capsule) not in (READY, RELEASED_STATE):
        raise Conflict("Your capsule is not open yet; a wallet can be proven once it is.")


def short(address: str) -> str:
    """A wallet as people compare it: its last six characters."""
    return f"ending in {address[-6:]}"


async def challenge(
    redis: Redis, settings: Settings, *, capsule: Capsule, wallet_address: str, client_ip: str, now: datetime
) -> str:
    """The text the heir signs with the wallet; single use, 5 minutes, several live at once."""
    _require_open(capsule)
    retry = await ratelimit.hit(redis, f"claim-wallet:ip:{client_ip}", settings.rate_limit_challenge_per_ip)
    if retry:
        raise TooManyRequests("Too many wallet challenges from this address; try again later", retry)
    owner = capsule["owner_name"] or "the owner"
    message = (
        f"{settings.service_name} asks you to prove this Stellar wallet:\n"
        f"{wallet_address}\n\n"
        f"to claim as beneficiary of {owner}'s plan.\n"
        "Signing proves you control this wallet. It does not authorize any payment or transaction.\n\n"
        f"Nonce: {secrets.token_hex(32)}\n"
        f"Issued At: {_iso(now)}\n"
        f"Expiration Time: {_iso(now + CHALLENGE_TTL)}"
    )
    key = CHALLENGE_KEY.format(capsule["beneficiary_id"], wallet_address)
    await challenges.store(redis, key, message, ttl_seconds=int(CHALLENGE_TTL.total_seconds()), now=now)
    return message


async def _burn_signed(
    redis: Redis, *, capsule: Capsule, wallet_address: str, signature: str, now: datetime
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
    signed = next((m for m in candidates if verify_signature(wallet_address, m, raw)), None)
    if signed is None:
        raise Unauthorized("The signature does not match a challenge for this wallet")
    if not await challenges.consume_at(redis, key, signed):
        raise Unauthorized(expired)


async def verify(
    pool: Pool, redis: Redis, *, capsule: Capsule, wallet_address: str, signature: str, now: datetime
) -> WalletBinding:
    """Bind the proven wallet to this beneficiary: the same wallet again is a no-op; another
    wallet already bound to them, or this one bound to a sibling, is 409 saying so."""
    _require_open(capsule)
    await _burn_signed(redis, capsule=capsule, wallet_address=wallet_address, signature=signature, now=now)
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
        _require_open(cast(Capsule, {**capsule, "plan_status": row["status"], "ready_at": row["ready_at"]}))
        bound = row["wallet_address"]
        if bound == wallet_address:
            return {
                "address": bound,
                "bound_via": row["wallet_bound_via"],
                "bound_at": row["wallet_bound_at"],
            }
        if bound is not None:
            raise Conflict(
                f"Another wallet ({short(bound)}) is already bound to you"
                + (", as the plan's owner recorded it." if row["wallet_bound_via"] == "owner" else ".")
                + " Claim with that wallet; if it is lost, the plan's guardians can approve this one "
                '(docs/soroban.md, "A lost wallet").'
            )
        try:
            await cur.execute("SAVEPOINT bind")
            await cur.execute(
                "UPDATE beneficiaries SET wallet_address = %s, wallet_bound_via = 'proven',"
                " wallet_bound_at = %s, updated_at = clock_timestamp() WHERE id = %s",
                (wallet_address, now, capsule["beneficiary_id"]),
            )
            await cur.execute("RELEASE SAVEPOINT bind")
        except psycopg2.errors.UniqueViolation:
            await cur.execute("ROLLBACK TO SAVEPOINT bind")
            raise Conflict(TAKEN) from None
        await activity.record(
            cur,
            user_id=capsule["owner_id"],
            kind="beneficiary.wallet_proven",
            entity_id=capsule["beneficiary_id"],
            summary="A beneficiary proved the wallet they will claim with",
            metadata={"walletAddress": wallet_address},
        )
    return {"address": wallet_address, "bound_via": "proven", "bound_at": now}
