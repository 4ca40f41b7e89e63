"""Fault suite (`-m fault`): dependencies fail while traffic flows; every test states what was lost.

Redis and PostgreSQL faults hit servers of the test's own (a private redis-server, a scratch
database), never the ones other tests share. Storage outages, a lost enqueue (the API gone
between COMMIT and enqueue) and a worker dying mid-job are covered next to their features and
carry this marker too: tests/test_archive.py, test_archive_worker.py, test_email_outbox.py,
test_dependencies.py.
"""

from __future__ import annotations

import asyncio
from contextlib import closing

import psycopg2
import pytest
from stellar_sdk import Keypair

from api.keys import DB
from core import db
from service.migrate import apply_migrations
from tests.helpers import scratch_database, sign_in, until
from tests.private_services import private_redis

pytestmark = pytest.mark.fault

CHALLENGE = "/api/auth/wallet/challenge"


async def test_redis_restarted_under_traffic(make_client, tmp_path):
    """Lost: challenges issued before the restart (this Redis keeps nothing on disk); a client
    asks again. Never a 500 or a hang; sign-in works again as soon as Redis is back."""
    with private_redis(tmp_path) as redis_server:
        client = await make_client(
            redis_url=redis_server.url, redis_timeout_seconds=1, rate_limit_challenge_per_ip=10_000
        )
        statuses: list[int] = []
        stop = asyncio.Event()

        async def traffic() -> None:
            while not stop.is_set():
                resp = await client.post(CHALLENGE, json={"walletAddress": Keypair.random().public_key})
                statuses.append(resp.status)

        workers = [asyncio.create_task(traffic()) for _ in range(4)]
        # Each step waits on what the clients saw, not on a window of time.
        await until(lambda: statuses.count(200) > 10, "traffic flowing before the restart")
        redis_server.stop()
        await until(lambda: 503 in statuses, "a 503 while Redis is down")
        redis_server.start()
        restarted = len(statuses)
        await until(lambda: 200 in statuses[restarted:], "a 200 after the restart")
        stop.set()
        await asyncio.gather(*workers)
        assert set(statuses) <= {200, 503}, sorted(set(statuses))
        assert 503 in statuses and statuses.count(200) > 10
        session = await sign_in(client)  # recovered: a whole sign-in goes through
        assert (await client.get("/api/auth/me", headers=session.headers)).status == 200


async def test_no_free_database_connection_is_a_503_not_a_500(make_client):
    """Lost: nothing. Every connection busy past DB_TIMEOUT_SECONDS is the database not
    answering (aiopg raises asyncio.TimeoutError): 503 with Retry-After, nothing written; the
    same request succeeds once a connection is free."""
    client = await make_client(db_pool_max=1, db_timeout_seconds=1)
    session = await sign_in(client)
    pool = client.app[DB]
    body = {"label": "held", "amount": "1"}
    async with db.autocommit(pool):  # the pool's one connection, held past the timeout
        resp = await client.post("/api/assets", headers=session.headers, json=body)
        assert resp.status == 503, await resp.text()
        assert resp.headers["Retry-After"]
        assert "database did not answer" in (await resp.json())["message"]
    assert await db.fetch_one(
        pool, "SELECT count(*) AS n FROM assets WHERE user_id = %s", (session.user["id"],)
    ) == {"n": 0}
    resp = await client.post("/api/assets", headers=session.headers, json=body)
    assert resp.status == 201, await resp.text()


async def test_a_statement_past_the_timeout_is_the_database_not_answering(settings):
    """aiopg closes a connection whose statement outran the pool timeout and raises
    asyncio.TimeoutError; core.db says OperationalError (the API's 503), and the pool goes on."""
    pool = await db.create_pool(settings.database_url, 1, wait_seconds=1)
    try:
        with pytest.raises(psycopg2.OperationalError, match="no answer from the database in 1 s"):
            await db.fetch_one(pool, "SELECT pg_sleep(5)")
        assert await db.fetch_one(pool, "SELECT 1 AS one") == {"one": 1}
    finally:
        pool.close()
        await pool.wait_closed()


async def test_a_write_after_the_idle_connections_were_killed_is_not_a_503(make_client, service_urls):
    """Lost: nothing, and no 503. The pool's idle connections killed at once (a PostgreSQL
    restart, pg_terminate_backend) are found dead at BEGIN, before anything is sent: the write
    takes a live connection. Before core.db retried at BEGIN, each dead one the pool had not yet
    noticed cost a 503 (this failed 1 run in 3 without the retry)."""
    with (
        scratch_database(service_urls[0], "lps_fault") as (name, url),
        closing(psycopg2.connect(service_urls[0])) as admin,
    ):
        apply_migrations(url)
        admin.autocommit = True
        client = await make_client(database_url=url)
        session = await sign_in(client)
        body = {"label": "asset", "amount": "1"}
        created = await asyncio.gather(
            *(client.post("/api/assets", headers=session.headers, json=body) for _ in range(6))
        )
        assert [r.status for r in created] == [201] * 6  # the pool now holds idle connections

        def backends() -> int:
            with admin.cursor() as cur:
                cur.execute(
                    "SELECT count(*) FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid()",
                    (name,),
                )
                return int(cur.fetchone()[0])

        killed = backends()
        assert killed >= 1
        with admin.cursor() as cur:
            cur.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                " WHERE datname = %s AND pid <> pg_backend_pid()",
                (name,),
            )
        await until(lambda: backends() == 0, "the killed backends to exit")
        resp = await client.post("/api/assets", headers=session.headers, json=body)
        assert resp.status == 201, await resp.text()
        with closing(psycopg2.connect(url)) as conn, conn.cursor() as cur:
            cur.execute("SELECT count(*) FROM assets")
            assert cur.fetchone()[0] == 7
        await client.close()


async def test_postgresql_connections_killed_under_traffic(make_client, service_urls):
    """Lost: nothing. Every 201 is a stored row; a request cut with its connection is a 503
    (at most it committed just before the cut, so rows >= 201s, never fewer)."""
    with (
        scratch_database(service_urls[0], "lps_fault") as (name, url),
        closing(psycopg2.connect(service_urls[0])) as admin,
    ):
        apply_migrations(url)
        admin.autocommit = True
        client = await make_client(database_url=url)
        session = await sign_in(client)
        statuses: list[int] = []

        async def create(i: int) -> None:
            resp = await client.post(
                "/api/assets", headers=session.headers, json={"label": f"asset {i}", "amount": "1"}
            )
            statuses.append(resp.status)

        async def killer() -> None:
            for _ in range(5):
                await asyncio.sleep(0.05)
                with admin.cursor() as cur:
                    cur.execute(
                        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                        " WHERE datname = %s AND pid <> pg_backend_pid()",
                        (name,),
                    )

        await asyncio.gather(killer(), *(create(i) for i in range(60)))
        assert set(statuses) <= {201, 503}, sorted(set(statuses))
        with closing(psycopg2.connect(url)) as conn, conn.cursor() as cur:
            cur.execute("SELECT count(*) FROM assets")
            stored = cur.fetchone()[0]
        assert statuses.count(201) <= stored <= len(statuses)
        # Recovered: the pool replaces dead connections on its own.
        resp = await client.post(
            "/api/assets", headers=session.headers, json={"label": "after", "amount": "1"}
        )
        assert resp.status == 201
        await client.close()
