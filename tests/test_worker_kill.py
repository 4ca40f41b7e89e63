"""A real worker process SIGKILLed in the middle of a job, then a new one started: the job
completes and its effect is applied once. What was lost, in each case: nothing.

The worker is `python -m service.cli worker` (what `legacy-planning worker` runs) against the test
database, Redis index, queue and storage. It is caught mid-job by a stand-in that waits: the
email provider holds the request open, or the test holds the archive item's row lock. After the
kill, arq's in-progress mark keeps the job from running again for its lease (the longest job
timeout + 10 s, see workers/main.py); the test checks the lease is that short and then lets it
lapse with PEXPIRE instead of waiting it out, as other tests advance the clock.

The lifecycle scan is a cron, not a job per row: a run killed mid-scan leaves each plan either
moved (its own committed, guarded transition) or untouched, and the next run (a new job id,
every LIFECYCLE_SCAN_SECONDS) takes the rest; that a rerun moves nothing twice is tested in
tests/test_lifecycle_scheduler.py.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import aiohttp
import psycopg2
import pytest
import pytest_asyncio
import redis as redis_sync

from core.files.crypto import KeyRing
from core.settings import FIELDS, Settings
from models.chain import transactions
from testing.emailserver import CaptureServer
from testing.soroban_rpc import SorobanRpcEmulator
from tests.helpers import sign_in, until
from tests.lifecycle_helpers import activate_plan, report
from tests.plan_helpers import query
from tests.private_services import private_redis
from tests.soroban_helpers import contract_overrides
from tests.test_soroban_relay import claim_row, kinds, relay_ctx, state
from workers import context
from workers.main import FUNCTIONS, JOB_TIMEOUT_SECONDS, create_worker

__all__ = ["relay_ctx"]  # a fixture, used by name
ROOT = Path(__file__).resolve().parent.parent
IN_PROGRESS = "arq:in-progress:"
LEASE_MS = (JOB_TIMEOUT_SECONDS + 10) * 1000


def worker_env(settings: Settings, keys: str) -> dict[str, str]:
    """The environment that makes a worker process use exactly these settings."""
    env = dict(os.environ)
    for attr, _kind, var in FIELDS:
        env.pop(var.name, None)
        value = getattr(settings, attr)
        if isinstance(value, KeyRing):
            env[var.name] = keys
        elif value is not None and value != "":
            env[var.name] = str(value)
    return env


Spawn = Callable[[dict[str, Any]], subprocess.Popen[bytes]]


@pytest.fixture
def keys(encryption_keys_entry: str) -> str:
    """The API's ring: the worker opens the names and addresses it sealed (models/sealed_text.py)."""
    return encryption_keys_entry


@pytest.fixture
def spawn_worker(settings: Settings, keys: str, tmp_path: Path) -> Any:
    started: list[subprocess.Popen[bytes]] = []

    def spawn(overrides: dict[str, Any]) -> subprocess.Popen[bytes]:
        import dataclasses

        env = worker_env(dataclasses.replace(settings, **overrides), keys)
        log = (tmp_path / f"worker-{len(started)}.log").open("wb")
        process = subprocess.Popen(
            [sys.executable, "-m", "service.cli", "worker"], cwd=ROOT, env=env, stdout=log, stderr=log
        )
        started.append(process)
        return process

    yield spawn
    for process in started:  # what the test left running has nothing to finish gracefully
        if process.poll() is None:
            process.kill()
            process.wait()


def kill(process: subprocess.Popen[bytes]) -> None:
    process.send_signal(signal.SIGKILL)
    assert process.wait(timeout=10) == -signal.SIGKILL


def lapse_leases(settings: Settings, pattern: str) -> int:
    """arq's in-progress marks a killed worker left: each no longer than the lease, then gone
    (PEXPIRE stands for the minutes a real restart would wait)."""
    conn = redis_sync.Redis.from_url(settings.redis_url)
    try:
        keys = list(conn.scan_iter(IN_PROGRESS + pattern))
        for key in keys:
            ttl = conn.pttl(key)
            assert 0 < ttl <= LEASE_MS, (key, ttl)
            conn.pexpire(key, 1)
        return len(keys)
    finally:
        conn.close()


async def test_one_lease_for_every_job_is_the_longest_timeout(settings):
    """arq 0.26 keeps a started job's in-progress mark for the longest timeout of any job or cron
    + 10 s: that, not the job's own timeout, is how long a killed job waits to run again."""
    worker = create_worker(settings, burst=True, handle_signals=False)
    try:
        assert worker.in_progress_timeout_s == JOB_TIMEOUT_SECONDS + 10
        assert all(f.timeout_s is not None and f.timeout_s <= JOB_TIMEOUT_SECONDS for f in FUNCTIONS)
    finally:
        await worker.close()


@pytest_asyncio.fixture
async def held_provider() -> AsyncIterator[CaptureServer]:
    from testing.emailserver import start_capture_server

    server, runner = await start_capture_server()
    server.hold = asyncio.Event()
    yield server
    server.hold.set()
    await runner.cleanup()


@pytest.mark.fault
async def test_worker_killed_while_the_provider_holds_the_email(
    client, settings, spawn_worker, held_provider
):
    """Killed after the provider received the emails but before its answer came back: the next
    worker sends them again under the same Idempotency-Key, so the provider (which deduplicates
    by that key) delivers each once and the rows end `sent`. Lost: nothing."""
    owner = await sign_in(client)
    setup = await activate_plan(client, owner, guardians=1)
    # Only the report's two emails: the guardian's invitation job (queued) will find no row.
    query(settings, "DELETE FROM outbox WHERE kind = 'guardian_invitation'")
    assert (await report(client, setup, setup.guardians[0])).status == 200
    first = spawn_worker(held_provider.settings)
    await until(lambda: len(held_provider.requests) >= 2, "both emails at the provider")
    kill(first)
    assert [r["status"] for r in _outbox(settings)] == ["pending", "pending"]
    assert lapse_leases(settings, "deliver_email:*") == 1  # one job for both rows (a batch)
    held_provider.hold.set()  # the answers to the dead worker go nowhere
    spawn_worker(held_provider.settings)
    await until(lambda: [r["status"] for r in _outbox(settings)] == ["sent", "sent"], "both rows sent")
    rows = _outbox(settings)
    by_key: dict[str, int] = {}
    for request in held_provider.requests:
        key = request.headers["Idempotency-Key"]
        by_key[key] = by_key.get(key, 0) + 1
    assert by_key == {r["id"]: 2 for r in rows}  # sent twice, one email each after dedup
    assert [r["attempts"] for r in rows] == [1, 1]  # the killed run never recorded an attempt


# A short delivery lease and a sweep every second: what a production deployment does in
# EMAIL_DELIVERY_LEASE_SECONDS (30) and min(LIFECYCLE_SCAN_SECONDS, that lease), in seconds.
SHORT_LEASE = {"email_delivery_lease_seconds": 2, "lifecycle_scan_seconds": 1}


@pytest.mark.fault
async def test_a_killed_delivery_is_taken_over_once_its_lease_lapses(
    client, settings, spawn_worker, held_provider
):
    """Killed while the provider holds the emails: the next worker's outbox sweep finds the rows
    whose delivery lease lapsed and sends them in a job of its own, under the same keys, while
    the dead job is still marked in progress by arq (for the longest job timeout + 10 s, minutes
    in production: the rows used to wait that long)."""
    owner = await sign_in(client)
    setup = await activate_plan(client, owner, guardians=1)
    query(settings, "DELETE FROM outbox WHERE kind = 'guardian_invitation'")
    assert (await report(client, setup, setup.guardians[0])).status == 200
    first = spawn_worker({**held_provider.settings, **SHORT_LEASE})
    await until(lambda: len(held_provider.requests) >= 2, "both emails at the provider")
    kill(first)
    held_provider.hold.set()  # the answers to the dead worker go nowhere
    spawn_worker({**held_provider.settings, **SHORT_LEASE})
    await until(lambda: [r["status"] for r in _outbox(settings)] == ["sent", "sent"], "both rows sent")
    assert _in_progress(settings, "deliver_email:*"), "the dead job's mark still stands"
    by_key: dict[str, int] = {}
    for request in held_provider.requests:
        by_key[request.headers["Idempotency-Key"]] = by_key.get(request.headers["Idempotency-Key"], 0) + 1
    rows = _outbox(settings)
    assert by_key == {r["id"]: 2 for r in rows}  # once to the dead worker, once again: one email each
    assert [r["attempts"] for r in rows] == [1, 1]


@pytest.mark.fault
async def test_a_live_delivery_keeps_its_rows_past_its_lease(client, settings, spawn_worker, held_provider):
    """A provider slower than the lease: the job renews its claim while it waits, so the sweep
    (every second here) never hands its rows to a second job; each email is posted once."""
    owner = await sign_in(client)
    setup = await activate_plan(client, owner, guardians=1)
    query(settings, "DELETE FROM outbox WHERE kind = 'guardian_invitation'")
    assert (await report(client, setup, setup.guardians[0])).status == 200
    spawn_worker({**held_provider.settings, "email_delivery_lease_seconds": 3, "lifecycle_scan_seconds": 1})
    await until(lambda: len(held_provider.requests) >= 2, "both emails at the provider")
    # Hold them three leases long (the sweep runs meanwhile), then answer.
    for _ in range(3):
        await asyncio.sleep(3)
        claimed = query(settings, "SELECT count(*)::int AS n FROM outbox WHERE claimed_until > now()")
        assert claimed == [{"n": 2}], "the claim was renewed"
    held_provider.hold.set()
    await until(lambda: [r["status"] for r in _outbox(settings)] == ["sent", "sent"], "both rows sent")
    keys = [r.headers["Idempotency-Key"] for r in held_provider.requests]
    assert sorted(keys) == sorted(r["id"] for r in _outbox(settings))  # each posted once


@pytest.mark.fault
async def test_the_worker_outlives_a_redis_restart(
    make_client, settings, spawn_worker, email_provider, tmp_path
):
    """Redis restarted empty under a running worker: the worker waits for it (arq alone ended the
    process at its first failed poll), then runs the jobs queued after the restart."""
    (tmp_path / "redis").mkdir()
    with private_redis(tmp_path / "redis") as redis_server:
        client = await make_client(redis_url=redis_server.url, redis_timeout_seconds=1)
        worker = spawn_worker({**email_provider.settings, "redis_url": redis_server.url})
        owner = await sign_in(client)
        setup = await activate_plan(client, owner, guardians=1)
        await until(lambda: email_provider.requests, "the worker sending the invitation")
        redis_server.stop()
        log = tmp_path / "worker-0.log"
        await until(
            lambda: worker.poll() is not None or "Redis unreachable" in log.read_text(),
            "the worker noticing Redis gone",
        )
        assert worker.poll() is None, log.read_text()[-2000:]
        redis_server.start()
        sent = len(email_provider.requests)
        assert (await report(client, setup, setup.guardians[0])).status == 200  # queued in the new Redis
        await until(lambda: len(email_provider.requests) >= sent + 2, "the report's emails sent")
        assert worker.poll() is None


def _in_progress(settings: Settings, pattern: str) -> list[bytes]:
    conn = redis_sync.Redis.from_url(settings.redis_url)
    try:
        return list(conn.scan_iter(IN_PROGRESS + pattern))
    finally:
        conn.close()


def _outbox(settings: Settings) -> list[dict[str, Any]]:
    return query(settings, "SELECT id::text AS id, status, attempts FROM outbox ORDER BY kind")


@pytest.mark.fault
async def test_worker_killed_mid_archive_verification(make_client, settings, keys, spawn_worker):
    """Killed while its verify job waited on the item's row (the test holds the lock): the next
    worker verifies the item, which becomes `available` once, with one more attempt counted.
    Lost: nothing (the object and its key are untouched, the download is the upload)."""
    client = await make_client(encryption_keys=KeyRing.parse(keys))
    owner = await sign_in(client)
    data = os.urandom(200_000)
    form = aiohttp.FormData()
    form.add_field("file", data, filename="f.bin", content_type="application/octet-stream")
    resp = await client.post("/api/archive", data=form, headers=owner.headers)
    assert resp.status == 202, await resp.text()
    item_id = (await resp.json())["id"]

    lock = psycopg2.connect(settings.database_url)
    try:
        with lock.cursor() as cur:
            cur.execute("SELECT 1 FROM archive_items WHERE id = %s FOR UPDATE", (item_id,))
        first = spawn_worker({})
        waiting = await until(lambda: _waiting_backend(settings), "the worker blocked on the item row")
        kill(first)
        lock.rollback()  # the dead worker's UPDATE may now commit on its own (an attempt counted)
        await until(lambda: not _backend_alive(settings, waiting), "the dead worker's backend gone")
    finally:
        lock.close()
    (before,) = query(settings, "SELECT status, attempts FROM archive_items WHERE id = %s", (item_id,))
    assert before["status"] == "pending"
    assert lapse_leases(settings, f"verify_archive_item:{item_id}") == 1
    spawn_worker({})
    await until(lambda: _status(settings, item_id) == "available", "the item available")
    (after,) = query(settings, "SELECT status, attempts FROM archive_items WHERE id = %s", (item_id,))
    assert after == {"status": "available", "attempts": before["attempts"] + 1}
    download = await client.get(f"/api/archive/{item_id}/download", headers=owner.headers)
    assert download.status == 200
    assert await download.read() == data


def _status(settings: Settings, item_id: str) -> str:
    (row,) = query(settings, "SELECT status FROM archive_items WHERE id = %s", (item_id,))
    return str(row["status"])


def _waiting_backend(settings: Settings) -> int | None:
    rows = query(
        settings,
        "SELECT pid FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database()",
    )
    return int(rows[0]["pid"]) if rows else None


def _backend_alive(settings: Settings, pid: int) -> bool:
    return bool(query(settings, "SELECT 1 FROM pg_stat_activity WHERE pid = %s", (pid,)))


@pytest.mark.fault
async def test_worker_killed_between_send_and_confirm(
    client, settings, clock, soroban_rpc: SorobanRpcEmulator, relay_ctx, spawn_worker
):
    """Killed after the node accepted the claim transaction, while the relay waited on its first
    getTransaction: the next worker asks the node again (it does not resend), confirms the row
    and binds the wallet once. Lost: nothing."""
    made = await claim_row(client, settings, clock, soroban_rpc, relay_ctx)
    soroban_rpc.timeout_seconds = 30
    soroban_rpc.fail_next("timeout", method="getTransaction")  # the first poll hangs
    tx_hash = made["row"]["hash"]
    overrides = {**contract_overrides(soroban_rpc), "soroban_rpc_timeout_seconds": 20}
    assert await transactions.enqueue_relay(context.get(relay_ctx).redis, tx_hash=tx_hash)
    first = spawn_worker(overrides)
    await until(lambda: soroban_rpc.calls_to("getTransaction"), "the relay polling the node")
    kill(first)
    assert tx_hash in soroban_rpc.sent
    row = state(settings, made["row"]["id"])
    assert row["status"] == "pending" and row["accepted"]
    assert lapse_leases(settings, f"relay_transaction:{tx_hash}") == 1
    spawn_worker(overrides)
    await until(lambda: state(settings, made["row"]["id"])["status"] == "confirmed", "the row confirmed")
    assert len(soroban_rpc.calls_to("sendTransaction")) == 1  # asked the node, did not resend
    timeline = kinds(settings, made["owner"].user["id"])
    assert timeline.count("transaction.confirmed") == 1 and timeline.count("beneficiary.claimed") == 1
    bound = query(
        settings, "SELECT wallet_address FROM beneficiaries WHERE id = %s", (made["beneficiary"]["id"],)
    )
    assert bound[0]["wallet_address"] == made["wallet"].public_key
