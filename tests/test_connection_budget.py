"""The connection budget (#28): each process logs its pool against the server's
max_connections and warns when crossed; the worker's pool is sized to its jobs; a delivery job
holds no connection, and no row lock, while the provider answers."""

from __future__ import annotations

import asyncio
import logging

import psycopg2
import pytest

from tests.helpers import sign_in, until
from tests.lifecycle_helpers import SETTING_UP_NOTICES, activate_plan, report
from workers.main import MAX_JOBS, POOL_SPARE


def budgets(caplog, process: str) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name == "core.db" and getattr(r, "role", None) == process]


async def test_the_api_logs_its_pool_against_max_connections(make_client, settings, caplog):
    with caplog.at_level(logging.INFO, logger="core.db"):
        await make_client()
    [line] = budgets(caplog, "api")
    assert line.levelno == logging.INFO and line.getMessage() == "database connection budget"
    assert line.pool == settings.db_pool_max and line.max_connections >= 1 and line.in_use >= 1
    assert line.crossed is False
    caplog.clear()
    # A pool larger than the server can ever give is a warning, and the process still starts.
    with caplog.at_level(logging.INFO, logger="core.db"):
        client = await make_client(db_pool_max=100_000)
        assert (await client.get("/api/health")).status in (200, 503)
    [line] = budgets(caplog, "api")
    assert line.levelno == logging.WARNING and line.crossed is True and line.pool == 100_000
    assert "docs/operations.md" in line.getMessage()


async def test_the_worker_pool_is_sized_to_its_jobs(run_worker, settings, caplog):
    with caplog.at_level(logging.INFO, logger="core.db"):
        await run_worker(settings={"db_pool_max": 50})
    [line] = budgets(caplog, "worker")
    assert line.pool == MAX_JOBS + POOL_SPARE  # not the API's DB_POOL_MAX
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="core.db"):
        await run_worker(settings={"db_pool_max": 4})  # an operator's lower cap holds
    [line] = budgets(caplog, "worker")
    assert line.pool == 4


@pytest.mark.fault
async def test_a_delivery_job_holds_no_row_lock_while_the_provider_answers(
    client, run_worker, email_provider, settings
):
    owner = await sign_in(client)
    setup = await activate_plan(client, owner, guardians=1)
    await run_worker(settings=email_provider.settings)  # the invitation and notices, out of the way
    assert (await report(client, setup, setup.guardians[0])).status == 200
    email_provider.hold = asyncio.Event()
    before = len(email_provider.requests)
    worker = asyncio.create_task(run_worker(settings=email_provider.settings))
    try:
        await until(lambda: len(email_provider.requests) >= before + 2, "both emails at the provider")
        with psycopg2.connect(settings.database_url) as conn, conn.cursor() as cur:
            cur.execute("SET lock_timeout = '1s'")
            # The rows are claimed (committed, visible) but not locked: NOWAIT takes them at once.
            cur.execute(
                "SELECT claimed_by FROM outbox WHERE status = 'pending' AND kind <> ALL(%s)"
                " FOR UPDATE NOWAIT",
                (SET_ASIDE,),
            )
            claims = [row[0] for row in cur.fetchall()]
            assert len(claims) == 2 and all(claims)
            conn.rollback()
        conn.close()
        # No transaction left open across the send: one open now (another job between two
        # statements while this test held the event loop) must have ended a moment later, while
        # the provider still holds both emails.
        first = await asyncio.to_thread(_open_transactions, settings)
        await asyncio.sleep(0.5)
        assert first & await asyncio.to_thread(_open_transactions, settings) == set()
    finally:
        email_provider.hold.set()
        await worker
    rows = await asyncio.to_thread(_statuses, settings)
    assert rows == [("sent", 1, None)] * 2  # recorded and released


SET_ASIDE = ["guardian_invitation", *SETTING_UP_NOTICES]


def _open_transactions(settings) -> set[tuple[int, object]]:
    """Every other connection idle inside a transaction, by pid and the transaction's start."""
    with psycopg2.connect(settings.database_url) as conn, conn.cursor() as cur:
        cur.execute(
            "SELECT pid, xact_start FROM pg_stat_activity WHERE datname = current_database()"
            " AND state = 'idle in transaction' AND pid <> pg_backend_pid()"
        )
        rows = set(cur.fetchall())
    conn.close()
    return rows


def _statuses(settings):
    with psycopg2.connect(settings.database_url) as conn, conn.cursor() as cur:
        cur.execute(
            "SELECT status, attempts, claimed_by FROM outbox WHERE kind <> ALL(%s) ORDER BY kind",
            (SET_ASIDE,),
        )
        rows = cur.fetchall()
    conn.close()
    return rows
