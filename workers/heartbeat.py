"""Worker liveness: a cron stamp that /api/health reports, so "pending" work is explainable."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

HEARTBEAT_KEY = "worker:heartbeat"
HEARTBEAT_TTL = 180


async def heartbeat(ctx: dict[str, Any]) -> None:
    await ctx["redis"].set(HEARTBEAT_KEY, datetime.now(UTC).isoformat(), ex=HEARTBEAT_TTL)
