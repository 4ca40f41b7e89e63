"""GET /api/health: ok when PostgreSQL and Redis answer, 503 naming what failed."""

from __future__ import annotations

import uuid

import psycopg2
import psycopg2.extensions

from core.redis import WORKER_HEARTBEAT_KEY


async def test_health_ok(client, settings):
    resp = await client.get("/api/health")
    assert resp.status == 200
    body = await resp.json()
    assert body["status"] == "ok"
    assert body["service"] == settings.service_name
    assert body["timestamp"].endswith("Z")
    assert body["checks"]["database"] == "ok" and body["checks"]["redis"] == "ok"


async def test_health_reports_database_outage(make_client, service_urls):
    # A database of its own, whose connections we then cut, like a restart of PostgreSQL would.
    name = f"lps_outage_{uuid.uuid4().hex[:10]}"
    admin = psycopg2.connect(service_urls[0])
    admin.autocommit = True
    with admin.cursor() as cur:
        cur.execute(f'CREATE DATABASE "{name}"')
    url = psycopg2.extensions.make_dsn(service_urls[0], dbname=name)
    client = await make_client(database_url=url)
    assert (await client.get("/api/health")).status == 200
    with admin.cursor() as cur:  # the database goes away: no new connections, existing ones cut
        cur.execute(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS false')
        cur.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s", (name,))
    resp = await client.get("/api/health")
    assert resp.status == 503
    body = await resp.json()
    assert body["status"] == "degraded"
    assert body["checks"]["database"] == "unavailable"
    assert body["checks"]["redis"] == "ok"
    with admin.cursor() as cur:  # and comes back: health recovers without a restart
        cur.execute(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS true')
    assert (await client.get("/api/health")).status == 200
    await client.close()
    with admin.cursor() as cur:
        cur.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    admin.close()


async def test_health_reports_worker_heartbeat(client, run_worker, settings):
    body = await (await client.get("/api/health")).json()
    assert body["checks"]["worker"] == "no recent heartbeat"
    await run_worker()
    body = await (await client.get("/api/health")).json()
    assert body["checks"]["worker"] == "ok"
    assert body["status"] == "ok"
    import redis as redis_sync

    assert redis_sync.Redis.from_url(settings.redis_url).exists(WORKER_HEARTBEAT_KEY)
