"""GET /api/health: ok when PostgreSQL and Redis answer, 503 naming what failed."""

from __future__ import annotations

from contextlib import closing

import psycopg2
import psycopg2.extensions

from core.redis import WORKER_HEARTBEAT_KEY
from tests.helpers import scratch_database


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
    with (
        scratch_database(service_urls[0], "lps_outage") as (name, url),
        closing(psycopg2.connect(service_urls[0])) as admin,
    ):
        admin.autocommit = True
        client = await make_client(database_url=url)
        assert (await client.get("/api/health")).status == 200
        with admin.cursor() as cur:  # the database goes away: no new connections, existing ones cut
            cur.execute(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS false')
            cur.execute(  # the timeout makes it wait until each backend has really exited
                "SELECT pg_terminate_backend(pid, 5000) FROM pg_stat_activity WHERE datname = %s", (name,)
            )
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


async def test_health_reports_worker_heartbeat(client, run_worker, settings):
    body = await (await client.get("/api/health")).json()
    assert body["checks"]["worker"] == "no recent heartbeat"
    await run_worker()
    body = await (await client.get("/api/health")).json()
    assert body["checks"]["worker"] == "ok"
    assert body["status"] == "ok"
    import redis as redis_sync

    assert redis_sync.Redis.from_url(settings.redis_url).exists(WORKER_HEARTBEAT_KEY)
