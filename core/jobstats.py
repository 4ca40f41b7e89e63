"""Job runs, failures and durations, counted in Redis by the workers and read by the API.

Workers are separate processes (several, restarted at will), so their counters cannot live in
process memory for `/api/metrics` to read. Each finished run adds to one small hash per job
name: runs, failures, the duration sum and a histogram bucket. Writing costs one pipelined
round trip per job run; reading is one HGETALL per job name at scrape time.
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

from redis.asyncio import Redis

log = logging.getLogger(__name__)

NAMES_KEY = "metrics:jobs"
KEY = "metrics:job:{}"
# Seconds. Verification takes milliseconds, sweeps seconds, a large rewrap minutes.
BUCKETS = (0.01, 0.05, 0.1, 0.5, 1.0, 5.0, 30.0, 120.0, 600.0)


async def record(redis: Redis, name: str, *, seconds: float, ok: bool) -> None:
    bucket = next((str(b) for b in BUCKETS if seconds <= b), "+Inf")
    async with redis.pipeline(transaction=False) as pipe:
        pipe.sadd(NAMES_KEY, name)
        pipe.hincrby(KEY.format(name), "runs", 1)
        if not ok:
            pipe.hincrby(KEY.format(name), "failures", 1)
        pipe.hincrbyfloat(KEY.format(name), "sum", seconds)
        pipe.hincrby(KEY.format(name), f"le:{bucket}", 1)
        await pipe.execute()


async def read(redis: Redis) -> dict[str, dict[str, float]]:
    """job name -> {runs, failures, sum, le:<bucket>: count (not cumulative)}."""
    names = sorted(n.decode() if isinstance(n, bytes) else n for n in await redis.smembers(NAMES_KEY))  # type: ignore[misc]
    result: dict[str, dict[str, float]] = {}
    for name in names:
        raw = await redis.hgetall(KEY.format(name))  # type: ignore[misc]
        result[name] = {(k.decode() if isinstance(k, bytes) else k): float(v) for k, v in raw.items()}
    return result


COUNTS_KEY = "metrics:counts:{}"


async def add_counts(redis: Redis, name: str, **counts: int) -> None:
    """Add to a job family's own counters (e.g. the scrub's bytes read and failures found)."""
    async with redis.pipeline(transaction=False) as pipe:
        for field, n in counts.items():
            pipe.hincrby(COUNTS_KEY.format(name), field, n)
        await pipe.execute()


async def read_counts(redis: Redis, name: str) -> dict[str, float]:
    raw = await redis.hgetall(COUNTS_KEY.format(name))  # type: ignore[misc]
    return {(k.decode() if isinstance(k, bytes) else k): float(v) for k, v in raw.items()}


def instrument(name: str, coroutine: Callable[..., Awaitable[Any]]) -> Any:
    """Wrap a job so each run is counted (under `name`); counting never fails the job."""

    @functools.wraps(coroutine)
    async def run(ctx: dict[str, Any], *args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        ok = False
        try:
            result = await coroutine(ctx, *args, **kwargs)
            ok = True
            return result
        finally:
            try:
                await record(ctx["redis"], name, seconds=time.perf_counter() - started, ok=ok)
            except Exception as exc:  # Redis down: the job's own outcome matters more
                log.warning("could not record job metrics", extra={"job": name, "error": repr(exc)})

    return run
