"""Sign-in challenges: one outstanding per wallet in Redis, single use, short-lived.

Consumption is compare-and-delete in one Lua call, so two verifies racing with the same
signature cannot both succeed, and a captured signature is worthless once used.
"""

from __future__ import annotations

import secrets
from datetime import UTC, datetime, timedelta

from redis.asyncio import Redis

KEY = "auth:challenge:{}"
_CONSUME = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
"""


def _iso(moment: datetime) -> str:
    return moment.isoformat(timespec="seconds").replace("+00:00", "Z")


def build_message(service: str, wallet_address: str, nonce: str, issued: datetime, expires: datetime) -> str:
    return (
        f"{service} wants you to sign in with your Stellar account:\n"
        f"{wallet_address}\n\n"
        "Signing proves you control this wallet. It does not authorize any payment or transaction.\n\n"
        f"Nonce: {nonce}\n"
        f"Issued At: {_iso(issued)}\n"
        f"Expiration Time: {_iso(expires)}"
    )


async def issue(redis: Redis, service: str, wallet_address: str, ttl_seconds: int) -> str:
    """Store and return a fresh challenge; it replaces any earlier one for the wallet."""
    issued = datetime.now(UTC)
    nonce = secrets.token_hex(32)  # 256 bits
    message = build_message(service, wallet_address, nonce, issued, issued + timedelta(seconds=ttl_seconds))
    await redis.set(KEY.format(wallet_address), message, ex=ttl_seconds)
    return message


async def current(redis: Redis, wallet_address: str) -> str | None:
    raw = await redis.get(KEY.format(wallet_address))
    return raw.decode() if isinstance(raw, bytes) else raw


async def consume(redis: Redis, wallet_address: str, message: str) -> bool:
    """True for exactly one caller holding this challenge; False if used, replaced or expired."""
    deleted = await redis.eval(_CONSUME, 1, KEY.format(wallet_address), message)  # type: ignore[misc]
    return bool(deleted)


async def consume_key(redis: Redis, key: str, message: str) -> bool:
    """`consume` for any single-use text kept under `key` (e.g. a guardian attestation)."""
    deleted = await redis.eval(_CONSUME, 1, key, message)  # type: ignore[misc]
    return bool(deleted)
