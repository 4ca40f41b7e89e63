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
from core.settings import Settings
from core.wallet import decode_signature, verify_signature
from models import lifecycle, users


async def request_challenge(redis: Redis, settings: Settings, *, wallet_address: str, client_ip: str) -> str:
    """Issue a challenge, within 10/min per wallet and a configurable per-IP budget."""
    retry = await ratelimit.hit(redis, f"challenge:ip:{client_ip}", settings.rate_limit_challenge_per_ip)
    if retry:
        raise TooManyRequests("Too many sign-in challenges from this address; try again later", retry)
    retry = await ratelimit.hit(
        redis, f"challenge:wallet:{wallet_address}", settings.rate_limit_challenge_per_wallet
    )
    if retry:
        raise TooManyRequests("Too many sign-in challenges for this wallet; try again later", retry)
    return await challenges.issue(
        redis, settings.service_name, wallet_address, settings.challenge_ttl_seconds
    )


async def prove_wallet(redis: Redis, *, wallet_address: str, signature: str) -> None:
    """Check the signature over the wallet's outstanding challenge and burn the challenge."""
    raw_signature = decode_signature(signature)
    if raw_signature is None:
        raise BadRequest(
            ["signature: Must be a 64-byte ed25519 signature, base64 (88 chars) or hex (128 chars)."],
            details={"signature": ["Not a valid signature encoding."]},
        )
    message = await challenges.current(redis, wallet_address)
    if message is None:
        raise Unauthorized("No valid challenge for this wallet (expired or already used); request a new one")
    if not verify_signature(wallet_address, message, raw_signature):
        raise Unauthorized("Signature does not match the challenge for this wallet")
    if not await challenges.consume(redis, wallet_address, message):
        raise Unauthorized("No valid challenge for this wallet (expired or already used); request a new one")


async def sign_in(
    pool: Pool,
    redis: ArqRedis,
    settings: Settings,
    *,
    wallet_address: str,
    signature: str,
    now: datetime,
) -> tuple[str, users.User]:
    """Prove the wallet, find or create the account; the owner's sign-in counts as a check-in."""
    await prove_wallet(redis, wallet_address=wallet_address, signature=signature)
    user = await users.sign_in(pool, wallet_address)
    await lifecycle.check_in_on_sign_in(pool, redis, user_id=user["id"], now=now)
    token = tokens.issue(
        settings.jwt_secret,
        str(user["id"]),
        settings.jwt_issuer,
        settings.jwt_audience,
        settings.jwt_ttl_seconds,
    )
    return token, user


async def link_wallet(
    pool: Pool, redis: Redis, *, user_id: str, wallet_address: str, signature: str
) -> users.UserWithWallets:
    await prove_wallet(redis, wallet_address=wallet_address, signature=signature)
    return await users.link_wallet(pool, user_id=user_id, wallet_address=wallet_address)
