"""/api/health: 200 when PostgreSQL and Redis both answer, 503 naming what failed."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

from aiohttp import web
from aiohttp_apigami import docs, response_schema
from marshmallow import fields

from api.common import json_response
from api.keys import context
from api.public import public
from api.schemas import BaseSchema, UtcDateTime
from core.db import fetch_one
from core.redis import WORKER_HEARTBEAT_KEY

routes = web.RouteTableDef()
CHECK_TIMEOUT = 2.0
HEALTH_PROBE_KEY = "health:probe"


class HealthSchema(BaseSchema):
    status = fields.String(required=True, metadata={"enum": ["ok", "degraded"]})
    service = fields.String(required=True)
    timestamp = UtcDateTime(required=True)
    checks = fields.Dict(
        keys=fields.String(),
        values=fields.String(),
        metadata={"example": {"database": "ok", "redis": "ok", "worker": "ok"}},
    )


async def _check(coro: object) -> str:
    try:
        await asyncio.wait_for(coro, CHECK_TIMEOUT)  # type: ignore[arg-type]
    except Exception:
        return "unavailable"
    return "ok"


async def _database_writable(request: web.Request) -> None:
    """A primary, not a read-only standby (which would answer SELECT 1 and refuse every write)."""
    ctx = context(request)
    row = await fetch_one(ctx.pool, "SELECT pg_is_in_recovery() AS standby")
    if row is None or row["standby"]:
        raise RuntimeError("database is read-only")


async def _redis_writable(request: web.Request) -> None:
    """A real write: a Redis that answers PING but refuses writes (read-only replica, MISCONF
    after a failed save, OOM) would fail every sign-in and enqueue."""
    ctx = context(request)
    await ctx.redis.set(HEALTH_PROBE_KEY, "1", ex=60)


async def _worker_alive(request: web.Request) -> bool:
    ctx = context(request)
    try:
        return bool(await asyncio.wait_for(ctx.redis.exists(WORKER_HEARTBEAT_KEY), CHECK_TIMEOUT))
    except Exception:
        return False


@routes.get("/api/health")
@public
@docs(
    tags=["health"],
    summary="Liveness of the API and its PostgreSQL and Redis",
    description="200 only when both accept writes: PostgreSQL is a primary, and Redis takes a SET "
    "(a Redis answering PING but refusing writes is `unavailable`). `worker` is informational.",
)
@response_schema(HealthSchema, 200)
@response_schema(HealthSchema, 503, description="A dependency did not answer")
async def health(request: web.Request) -> web.Response:
    ctx = context(request)
    database, redis = await asyncio.gather(
        _check(_database_writable(request)), _check(_redis_writable(request))
    )
    checks = {"database": database, "redis": redis}
    ok = all(v == "ok" for v in checks.values())
    # Informational: without a worker, uploads stay "pending"; the API itself is still healthy.
    checks["worker"] = "ok" if redis == "ok" and await _worker_alive(request) else "no recent heartbeat"
    body = HealthSchema().dump(
        {
            "status": "ok" if ok else "degraded",
            "service": ctx.settings.service_name,
            "timestamp": datetime.now(UTC),
            "checks": checks,
        }
    )
    return json_response(body, status=200 if ok else 503)
