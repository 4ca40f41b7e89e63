"""Fixed-window rate limits counted in Redis, so they hold across API instances."""

from __future__ import annotations

from redis.asyncio import Redis


async def hit(redis: Redis, key: str, limit: int, window_seconds: int = 60) -> int:
    """Count one request; return 0 if allowed, else seconds until the window resets."""
    full_key = f"ratelimit:{key}"
    async with redis.pipeline(transaction=True) as pipe:
        # SET NX EX then INCR (not EXPIRE NX, which needs Redis 7) starts the window once.
        pipe.set(full_key, 0, ex=window_seconds, nx=True)
        pipe.incr(full_key)
        pipe.ttl(full_key)
        _, count, ttl = await pipe.execute()
    if count <= limit:
        return 0
    return ttl if ttl > 0 else window_seconds
