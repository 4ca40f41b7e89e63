"""Wallet challenges in Redis: several live per slot, each single use and short-lived.

Sign-in keeps them per (wallet, client address); an heir proving a wallet through their claim
token keeps them per (beneficiary, wallet) (models/claim wallets). Both use `store`, `live_at`
and `consume_at` on their own key.

Challenges are kept per (wallet, client address), at most `CAP` live in each: a stranger who
asks for challenges for someone else's wallet fills only their own slot and can never
replace or exhaust the owner's. Verify tries the live challenges of the caller's slot (the
signature says which one was signed: they differ by nonce) and burns the one that matches
with ZREM, so two verifies racing with the same signature cannot both succeed.
"""

from __future__ import annotations

import secrets
from datetime import datetime, timedelta

from redis.asyncio import Redis

from core.clock import wire_time

KEY = "auth:challenges:{}:{}"  # wallet, client address -> zset(message, expiry epoch)
CAP = 5
_CONSUME = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
"""


def build_message(service: str, wallet_address: str, nonce: str, issued: datetime, expires: datetime) -> str:
    return (
        f"{service} wants you to sign in with your Stellar account:\n"
        f"{wallet_address}\n\n"
        "Signing proves you control this wallet. It does not authorize any payment or transaction.\n\n"
        f"Nonce: {nonce}\n"
        f"Issued At: {wire_time(issued)}\n"
        f"Expiration Time: {wire_time(expires)}"
    )


async def issue(
    redis: Redis, *, service: str, wallet_address: str, client: str, ttl_seconds: int, now: datetime
) -> str:
    """Store and return a fresh challenge; the oldest of this client's live ones goes past CAP."""
    nonce = secrets.token_hex(32)  # 256 bits
    expires = now + timedelta(seconds=ttl_seconds)
    message = build_message(service, wallet_address, nonce, now, expires)
    await store(redis, KEY.format(wallet_address, client), message, ttl_seconds=ttl_seconds, now=now)
    return message


async def store(redis: Redis, key: str, message: str, *, ttl_seconds: int, now: datetime) -> None:
    """Keep `message` live under `key` for `ttl_seconds`; the oldest live one goes past CAP."""
    expires = now + timedelta(seconds=ttl_seconds)
    async with redis.pipeline(transaction=True) as pipe:
        pipe.zremrangebyscore(key, "-inf", now.timestamp())
        pipe.zadd(key, {message: expires.timestamp()})
        pipe.zremrangebyrank(key, 0, -(CAP + 1))
        pipe.expire(key, ttl_seconds)
        await pipe.execute()


async def live_at(redis: Redis, key: str, now: datetime) -> list[str]:
    """The unexpired challenges under `key`, newest first (at most CAP)."""
    raw = await redis.zrevrangebyscore(key, "+inf", f"({now.timestamp()}")
    return [m.decode() if isinstance(m, bytes) else m for m in raw]


async def consume_at(redis: Redis, key: str, message: str) -> bool:
    """True for exactly one caller holding this challenge; False if already used or evicted."""
    return bool(await redis.zrem(key, message))


async def live(redis: Redis, *, wallet_address: str, client: str, now: datetime) -> list[str]:
    """This client's unexpired sign-in challenges for the wallet, newest first (at most CAP)."""
    return await live_at(redis, KEY.format(wallet_address, client), now)


async def consume(redis: Redis, *, wallet_address: str, client: str, message: str) -> bool:
    return await consume_at(redis, KEY.format(wallet_address, client), message)


async def consume_key(redis: Redis, key: str, message: str) -> bool:
    """`consume` for any single-use text kept under `key` (e.g. a guardian attestation)."""
    deleted = await redis.eval(_CONSUME, 1, key, message)  # type: ignore[misc]
    return bool(deleted)
