"""Worker liveness: a cron stamp that /api/health reports, so "pending" work is explainable."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from core.redis import WORKER_HEARTBEAT_KEY, WORKER_HEARTBEAT_TTL
from workers import context


async def heartbeat(ctx: dict[str, Any]) -> None:
    await context.get(ctx).redis.set(
        WORKER_HEARTBEAT_KEY, datetime.now(UTC).isoformat(), ex=WORKER_HEARTBEAT_TTL
    )
