"""The one Redis connection per process: arq's pool, also used for challenges and rate limits.

Jobs are serialized with msgpack, never pickle: pickle would let anyone able to write to
Redis run code inside the worker.
"""

from __future__ import annotations

import asyncio
from typing import Any

import msgpack
from arq.connections import ArqRedis, RedisSettings
from redis.asyncio import ConnectionPool
from redis.exceptions import RedisError

# Written by the worker's heartbeat cron, read by /api/health (the API never imports workers).
WORKER_HEARTBEAT_KEY = "worker:heartbeat"
WORKER_HEARTBEAT_TTL = 180


def serialize(obj: Any) -> bytes:
    packed: bytes = msgpack.packb(obj, datetime=True)
    return packed


def deserialize(data: bytes) -> Any:
    return msgpack.unpackb(data, timestamp=3)


def redis_settings(url: str) -> RedisSettings:
    return RedisSettings.from_dsn(url)


async def connect(url: str, queue_name: str, command_timeout: float = 2.0) -> ArqRedis:
    """The pool, every command and connect bounded by `command_timeout` (a stalled Redis must not hold
    a request longer than that: the caller answers 503). Retries the first connect briefly,
    as arq does, so a Redis that starts alongside the API is waited for."""
    for attempt in range(6):
        pool = ArqRedis(
            ConnectionPool.from_url(
                url, socket_timeout=command_timeout, socket_connect_timeout=command_timeout
            ),
            job_serializer=serialize,
            job_deserializer=deserialize,
            default_queue_name=queue_name,
        )
        try:
            await pool.ping()
            return pool
        except (RedisError, OSError):
            await pool.aclose()
            if attempt == 5:
                raise
            await asyncio.sleep(1)
    raise AssertionError("unreachable")
