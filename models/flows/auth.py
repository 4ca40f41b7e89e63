"""Wallet sign-in: challenge, proof of possession, session token.

Kept here rather than in the handlers so the same proof is reused by sign-in and by
linking a second wallet, and so every rule (rate limits, single use) lives in one place.
"""

from __future__ import annotations

from datetime import datetime

from arq.connections import ArqRedis
from redis.asyncio import Redis

from core import challenges, ratelimit, tokens
from core.db import Pool
from core.errors import BadRequest, TooManyRequests, Unauthorized
from core.files.crypto import KeyRing
from core.settings import Settings
from core.stellar.wallet import decode_signature, verify_signature
from models.account import users
from models.flows import lifecycle


async def request_challenge(
    redis: Redis, settings: Settings, *, wallet_address: str, client_ip: str, now: datetime
) -> str:
    """Issue a challenge within the per-address budget and the per-(address, wallet) budget.

    Nothing is counted per wallet alone: that budget could be spent by anyone, locking the
    owner out of sign-in.
    """
    retry = await ratelimit.hit(redis, f"challenge:ip:{client_ip}", settings.rate_limit_challenge_per_ip)
    if retry:
        raise TooManyRequests("Too many sign-in challenges from this address; try again later", retry)
    retry = await ratelimit.hit(
        redis, f"challenge:ip-wallet:{client_ip}:{wallet_address}", settings.rate_limit_challenge_per_wallet
    )
    if retry:
        raise TooManyRequests("Too many sign-in challenges for this wallet; try again later", retry)
    return await challenges.issue(
        redis,
        service=settings.service_name,
        wallet_address=wallet_address,
        client=client_ip,
        ttl_seconds=settings.challenge_ttl_seconds,
        now=now,
    )


async def prove_wallet(
    redis: Redis, *, wallet_address: str, signature: str, client_ip: str, now: datetime
) -> None:
    """Find the live challenge this signature signs (from this client) and burn it."""
    raw_signature = decode_signature(signature)
    if raw_signature is None:
        raise BadRequest(
            ["signature: Must be a 64-byte ed25519 signature, base64 (88 chars) or hex (128 chars)."],
            details={"signature": ["Not a valid signature encoding."]},
        )
    candidates = await challenges.live(redis, wallet_address=wallet_address, client=client_ip, now=now)
    if not candidates:
        raise Unauthorized("No valid challenge for this wallet (expired or already used); request a new one")
    signed = next((m for m in candidates if verify_signature(wallet_address, m, raw_signature)), None)
    if signed is None:
        raise Unauthorized("Signature does not match a challenge for this wallet")
    if not await challenges.consume(redis, wallet_address=wallet_address, client=client_ip, message=signed):
        raise Unauthorized("No valid challenge for this wallet (expired or already used); request a new one")


async def sign_in(
    pool: Pool,
    redis: ArqRedis,
    settings: Settings,
    *,
    wallet_address: str,
    signature: str,
    client_ip: str,
    now: datetime,
) -> tuple[str, users.SigningIn]:
    """Prove the wallet, find or create the account; the owner's sign-in counts as a check-in.
    The token carries the account's current session generation (read with the account)."""
    await prove_wallet(
        redis, wallet_address=wallet_address, signature=signature, client_ip=client_ip, now=now
    )
    user = await users.sign_in(pool, settings.key_ring, wallet_address=wallet_address)
    await lifecycle.check_in_on_sign_in(pool, redis, user_id=user["id"], now=now)
    token = tokens.issue(
        settings.jwt_secret,
        user["id"],
        settings.jwt_issuer,
        settings.jwt_audience,
        settings.jwt_ttl_seconds,
        generation=user["session_generation"],
    )
    return token, user


async def link_wallet(
    pool: Pool,
    redis: Redis,
    ring: KeyRing,
    *,
    user_id: str,
    wallet_address: str,
    signature: str,
    client_ip: str,
    now: datetime,
) -> users.UserWithWallets:
    await prove_wallet(
        redis, wallet_address=wallet_address, signature=signature, client_ip=client_ip, now=now
    )
    return await users.link_wallet(pool, ring, user_id=user_id, wallet_address=wallet_address, now=now)
