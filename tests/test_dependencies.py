"""A failing dependency is a 503 with a clear body, never a 500 or a hang; health tells the truth.

Redis faults run against a Redis of the test's own (stopped, stalled, made read-only) so the
shared one is never disturbed.
"""

from __future__ import annotations

from contextlib import closing

import psycopg2
import pytest
from stellar_sdk import Keypair

from tests.helpers import assert_error, scratch_database, sign_in
from tests.private_services import private_redis

pytestmark = pytest.mark.fault

CHALLENGE = "/api/auth/wallet/challenge"


@pytest.fixture
def own_redis(tmp_path):
    with private_redis(tmp_path) as server:
        yield server


async def _challenge_status(client) -> tuple[int, dict]:
    resp = await client.post(CHALLENGE, json={"walletAddress": Keypair.random().public_key})
    return resp.status, await resp.json()


def _assert_redis_503(status: int, body: dict) -> None:
    assert status == 503
    assert_error(body, 503)
    assert "Redis" in body["message"]


async def test_redis_refusing_writes_is_503_and_health_proves_a_write(make_client, own_redis):
    client = await make_client(redis_url=own_redis.url, redis_timeout_seconds=1)
    assert (await client.get("/api/health")).status == 200
    # Writes refused (as on a replica, after a failed save, or out of memory) while PING still works.
    own_redis.client().config_set("min-replicas-to-write", 1)
    assert own_redis.client().ping()
    _assert_redis_503(*await _challenge_status(client))
    resp = await client.get("/api/health")
    assert resp.status == 503
    assert (await resp.json())["checks"]["redis"] == "unavailable"
    own_redis.client().config_set("min-replicas-to-write", 0)
    assert (await client.get("/api/health")).status == 200
    assert (await _challenge_status(client))[0] == 200


async def test_a_stalled_redis_is_a_503_within_the_timeout_not_a_hang(make_client, own_redis):
    client = await make_client(redis_url=own_redis.url, redis_timeout_seconds=1)
    assert (await _challenge_status(client))[0] == 200
    own_redis.client().execute_command("CLIENT", "PAUSE", 4000, "ALL")
    # Without a command timeout this request would wait out the pause and succeed.
    _assert_redis_503(*await _challenge_status(client))
    assert (await client.get("/api/health")).status == 503


async def test_redis_down_is_503_and_the_api_recovers_when_it_returns(make_client, own_redis):
    client = await make_client(redis_url=own_redis.url, redis_timeout_seconds=1)
    session = await sign_in(client)
    own_redis.stop()
    _assert_redis_503(*await _challenge_status(client))
    assert (await client.get("/api/health")).status == 503
    # Routes that do not need Redis keep working.
    assert (await client.get("/api/assets", headers=session.headers)).status == 200
    own_redis.start()
    assert (await _challenge_status(client))[0] == 200
    assert (await client.get("/api/health")).status == 200


async def test_database_outage_is_503_on_routes_not_500(make_client, service_urls, settings):
    with (
        scratch_database(service_urls[0], "lps_outage") as (name, url),
        closing(psycopg2.connect(service_urls[0])) as admin,
    ):
        from service.migrate import apply_migrations

        apply_migrations(url)
        admin.autocommit = True
        client = await make_client(database_url=url)
        session = await sign_in(client)
        assert (await client.get("/api/assets", headers=session.headers)).status == 200
        with admin.cursor() as cur:
            cur.execute(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS false')
            cur.execute(
                "SELECT pg_terminate_backend(pid, 5000) FROM pg_stat_activity WHERE datname = %s", (name,)
            )
        for method, path in (("GET", "/api/assets"), ("POST", "/api/assets")):
            resp = await client.request(
                method, path, headers=session.headers, json={"label": "x", "amount": "1"}
            )
            assert resp.status == 503, (path, await resp.text())
            body = await resp.json()
            assert_error(body, 503)
            assert "database" in body["message"]
        with admin.cursor() as cur:
            cur.execute(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS true')
        assert (await client.get("/api/assets", headers=session.headers)).status == 200
        await client.close()
