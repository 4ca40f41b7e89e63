"""The one Redis connection per process: arq's pool, also used for challenges and rate limits.

Jobs are serialized with msgpack, never pickle: pickle would let anyone able to write to
Redis run code inside the worker.
"""

from __future__ import annotations

from typing import Any

import msgpack
from arq import create_pool
from arq.connections import ArqRedis, RedisSettings

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


async def connect(url: str, queue_name: str) -> ArqRedis:
    return await create_pool(
        redis_settings(url),
        job_serializer=serialize,
        job_deserializer=deserialize,
        default_queue_name=queue_name,
    )
