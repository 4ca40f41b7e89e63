"""A real worker process SIGKILLed in the middle of a job, then a new one started: the job
completes and its effect is applied once. What was lost, in each case: nothing.

The worker is `python -m service.cli worker` (what `legacy-planning worker` runs) against the test
database, Redis index, queue and storage. It is caught mid-job by a stand-in that waits: the
email provider or the RPC node holds the request open, the test holds a row lock the job needs,
or the scrub reads at a crawl. After the kill, arq keeps the dead job's id marked in progress for
the longest job timeout + 10 s (workers/main.py) and refuses it meanwhile; every job family holds
its work under a lease instead (models/jobs/leases.py), so the second worker takes the work over
once the dead job's lease lapses, under a job id of its own, while that mark still stands. The
tests give the lease 2 s (JOB_LEASE_SECONDS, 30 in production) and check the mark still stands
when the work is done.

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
from core.settings import Settings
from models.chain import transactions
from testing.emailserver import CaptureServer
from testing.soroban_rpc import SorobanRpcEmulator
from tests.helpers import sign_in, until
from tests.lifecycle_helpers import SETTING_UP_NOTICES, activate_plan, report
from tests.plan_helpers import query
from tests.private_services import private_redis
from tests.soroban_helpers import contract_overrides
from tests.support.onchain import claim_row, kinds, state
from tests.support.processes import worker_env
from workers import context
from workers.main import FUNCTIONS, JOB_TIMEOUT_SECONDS, create_worker

# Under pytest-xdist these tests run one after another in one process: each spawns worker
# processes it waits on, and two at once on a loaded two-core machine outlast their deadlines.
pytestmark = pytest.mark.xdist_group("worker-kill")

ROOT = Path(__file__).resolve().parent.parent
IN_PROGRESS = "arq:in-progress:"
LEASE_MS = (JOB_TIMEOUT_SECONDS + 10) * 1000


Spawn = Callable[[dict[str, Any]], subprocess.Popen[bytes]]


@pytest.fixture
def keys(encryption_keys_entry: str) -> str:
    """The API's ring: the worker opens the names and addresses it sealed (models/sealed_text.py)."""
    return encryption_keys_entry


@pytest.fixture
def spawn_worker(settings: Settings, keys: str, tmp_path: Path) -> Any:
    started: list[subprocess.Popen[bytes]] = []

    def spawn(overrides: dict[str, Any], ring: str | None = None) -> subprocess.Popen[bytes]:
        import dataclasses

        env = worker_env(dataclasses.replace(settings, **overrides), ring or keys)
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
    """arq's in-progress marks a killed worker left: each no longer than arq's own lease, then
    gone (PEXPIRE stands for the minutes they would stand), so the dead job's id runs again."""
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
    + 10 s: that, not the job's own timeout, is how long a killed job's own id stays refused,
    which is why its work is taken over under another id once its lease lapses (below)."""
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
    query(
        settings, "DELETE FROM outbox WHERE kind = ANY(%s)", (["guardian_invitation", *SETTING_UP_NOTICES],)
    )
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


# A short lease and sweeps every second: what a production deployment does in
# JOB_LEASE_SECONDS (30), its lease sweep every third of it and its outbox sweep every
# min(LIFECYCLE_SCAN_SECONDS, that lease), in seconds.
SHORT_LEASE = {"job_lease_seconds": 2, "lifecycle_scan_seconds": 1}


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
    query(
        settings, "DELETE FROM outbox WHERE kind = ANY(%s)", (["guardian_invitation", *SETTING_UP_NOTICES],)
    )
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
    query(
        settings, "DELETE FROM outbox WHERE kind = ANY(%s)", (["guardian_invitation", *SETTING_UP_NOTICES],)
    )
    assert (await report(client, setup, setup.guardians[0])).status == 200
    spawn_worker({**held_provider.settings, "job_lease_seconds": 3, "lifecycle_scan_seconds": 1})
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
    worker takes the verification over once its lease lapses, while the dead job's id is still
    marked in progress, and the item becomes `available` once, with one more attempt counted.
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
        first = spawn_worker(SHORT_LEASE)
        waiting = await until(lambda: _waiting_backend(settings), "the worker blocked on the item row")
        kill(first)
        lock.rollback()  # the dead worker's UPDATE may now commit on its own (an attempt counted)
        await until(lambda: not _backend_alive(settings, waiting), "the dead worker's backend gone")
    finally:
        lock.close()
    (before,) = query(settings, "SELECT status, attempts FROM archive_items WHERE id = %s", (item_id,))
    assert before["status"] == "pending"
    spawn_worker(SHORT_LEASE)
    await until(lambda: _status(settings, item_id) == "available", "the item available")
    assert _in_progress(settings, f"verify_archive_item:{item_id}"), "taken over, not rerun by arq"
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
    getTransaction: the next worker takes the relay over once its lease lapses, asks the node
    again (it does not resend), confirms the row and binds the wallet once. Lost: nothing."""
    made = await claim_row(client, settings, clock, soroban_rpc, relay_ctx)
    soroban_rpc.timeout_seconds = 30
    soroban_rpc.fail_next("timeout", method="getTransaction")  # the first poll hangs
    tx_hash = made["row"]["hash"]
    overrides = {**contract_overrides(soroban_rpc), "soroban_rpc_timeout_seconds": 20, **SHORT_LEASE}
    assert await transactions.enqueue_relay(context.get(relay_ctx).redis, tx_hash=tx_hash)
    first = spawn_worker(overrides)
    await until(lambda: soroban_rpc.calls_to("getTransaction"), "the relay polling the node")
    kill(first)
    assert tx_hash in soroban_rpc.sent
    row = state(settings, made["row"]["id"])
    assert row["status"] == "pending" and row["accepted"]
    spawn_worker(overrides)
    await until(lambda: state(settings, made["row"]["id"])["status"] == "confirmed", "the row confirmed")
    assert _in_progress(settings, f"relay_transaction:{tx_hash}"), "taken over, not rerun by arq"
    assert len(soroban_rpc.calls_to("sendTransaction")) == 1  # asked the node, did not resend
    timeline = kinds(settings, made["owner"].user["id"])
    assert timeline.count("transaction.confirmed") == 1 and timeline.count("beneficiary.claimed") == 1
    bound = query(
        settings, "SELECT wallet_address FROM beneficiaries WHERE id = %s", (made["beneficiary"]["id"],)
    )
    assert bound[0]["wallet_address"] == made["wallet"].public_key


async def _enqueue(settings: Settings, function: str, *args: Any, job_id: str) -> None:
    """Queue one job as the API or a cron would (a cron's job runs on demand under its name)."""
    from core import queue
    from core import redis as core_redis

    redis = await core_redis.connect(settings.redis_url, settings.arq_queue_name)
    try:
        assert await queue.enqueue_once(redis, function, *args, job_id=job_id)
    finally:
        await redis.aclose()


async def _ask_for_a_scrub(settings: Settings, asked: list[float]) -> None:
    """Queue a scrub run under a new id, at most once a second (`asked`: when each was queued).
    The worker's own start-up run may hold the lease when one comes (that one is skipped) and
    end without a file it looked for too early, so a test waiting on a read asks again."""
    now = asyncio.get_running_loop().time()
    if not asked or now - asked[-1] > 1:
        asked.append(now)
        await _enqueue(settings, "cron:scrub_archive", job_id=f"cron:scrub_archive:now:{len(asked)}")


def _lease_holder(settings: Settings, name: str) -> str | None:
    rows = query(settings, "SELECT holder FROM job_leases WHERE name = %s", (name,))
    return str(rows[0]["holder"]) if rows else None


@pytest.mark.fault
async def test_worker_killed_mid_account_deletion(client, settings, spawn_worker):
    """Killed while its deletion job waited on the ledger row (the test holds the lock): the next
    worker takes the deletion over once its lease lapses, while the dead job's id is still marked
    in progress (the minute's sweep could not enqueue that id), and the account is gone, once."""
    owner = await sign_in(client)
    resp = await client.delete(
        "/api/users/me", json={"confirm": owner.keypair.public_key}, headers=owner.headers
    )
    assert resp.status == 202, await resp.text()
    (ledger,) = query(settings, "SELECT id::text AS id FROM account_deletions")
    lock = psycopg2.connect(settings.database_url)
    try:
        with lock.cursor() as cur:
            cur.execute("SELECT 1 FROM account_deletions WHERE id = %s FOR UPDATE", (ledger["id"],))
        first = spawn_worker(SHORT_LEASE)
        waiting = await until(lambda: _waiting_backend(settings), "the worker blocked on the ledger row")
        kill(first)
        lock.rollback()
        await until(lambda: not _backend_alive(settings, waiting), "the dead worker's backend gone")
    finally:
        lock.close()
    assert _lease_holder(settings, f"delete_account:{ledger['id']}") is not None  # the dead job's
    assert query(settings, "SELECT count(*)::int AS n FROM users WHERE id = %s", (owner.user["id"],)) == [
        {"n": 1}
    ]
    spawn_worker(SHORT_LEASE)
    await until(lambda: not query(settings, "SELECT 1 FROM account_deletions"), "the deletion finished")
    assert query(settings, "SELECT 1 FROM users WHERE id = %s", (owner.user["id"],)) == []
    assert _in_progress(settings, f"delete_account:{ledger['id']}"), "taken over, not rerun by arq"
    # No deletion lease is left behind; the new worker's own start-up runs (the scrub and the
    # resealing, each under a lease of its own) may still hold theirs on a loaded machine.
    assert query(settings, "SELECT name FROM job_leases WHERE name LIKE 'delete_account:%'") == []


@pytest.mark.fault
async def test_worker_killed_mid_scrub(make_client, settings, keys, spawn_worker):
    """Killed while its scrub run read a file at a crawl: the run's lease keeps every other run
    out (the next worker's run at start-up does nothing), then, once it lapses, the next worker
    takes the run over and the file's whole read is recorded, once."""
    client = await make_client(encryption_keys=KeyRing.parse(keys))
    owner = await sign_in(client)
    form = aiohttp.FormData()
    form.add_field("file", os.urandom(300_000), filename="f.bin", content_type="application/octet-stream")
    resp = await client.post("/api/archive", data=form, headers=owner.headers)
    assert resp.status == 202, await resp.text()
    item_id = (await resp.json())["id"]
    due = {**SHORT_LEASE, "archive_scrub_interval_seconds": 1}
    first = spawn_worker({**due, "archive_scrub_bytes_per_second": 10_000})  # a 30 s read
    await until(lambda: _status(settings, item_id) == "available", "the item available")
    # The worker's own start-up run may hold the lease when the first run asked for comes (that
    # one is skipped) and end without the file, if it looked before the file was available: ask
    # again, once a second, until a run holds the lease.
    asked: list[float] = []

    async def reading() -> str | None:
        holder = _lease_holder(settings, "cron:scrub_archive")
        if holder is None:
            await _ask_for_a_scrub(settings, asked)
        return holder

    await until(reading, "a scrub run reading")
    kill(first)
    dead = _lease_holder(settings, "cron:scrub_archive")
    assert dead is not None
    assert query(settings, "SELECT checked_at FROM archive_scrub WHERE checked_at IS NOT NULL") == []
    spawn_worker(due)
    await until(
        lambda: query(
            settings, "SELECT 1 FROM archive_scrub WHERE item_id = %s AND checked_at IS NOT NULL", (item_id,)
        ),
        "the file read whole",
    )
    (row,) = query(settings, "SELECT position, notified_at FROM archive_scrub WHERE item_id = %s", (item_id,))
    assert row == {"position": 0, "notified_at": None}
    assert _status(settings, item_id) == "available"  # whole: nothing damaged, no email
    assert _in_progress(settings, dead), "taken over, not rerun by arq"


@pytest.mark.fault
async def test_worker_killed_mid_resealing(make_client, settings, keys, spawn_worker):
    """Killed while re-sealing claim tokens under a new primary key, blocked on an heir's row (the
    test holds the lock): the next worker takes the run over once its lease lapses, and every
    token ends sealed under the new key, the same token as before."""
    from core.files.crypto import KeyRing as Ring

    rotated = f"{Ring.generate_entry('k2')},{keys}"
    client = await make_client(encryption_keys=KeyRing.parse(keys))
    owner = await sign_in(client)
    body = {"name": "Ada", "relationship": "daughter", "email": "ada@example.org", "allocationPercentage": 40}
    for _ in range(2):
        assert (await client.post("/api/beneficiaries", json=body, headers=owner.headers)).status == 201
    tokens = sorted(
        b["claimToken"] for b in await (await client.get("/api/beneficiaries", headers=owner.headers)).json()
    )
    assert _sealed_under(settings) == ["k1", "k1"]
    lock = psycopg2.connect(settings.database_url)
    try:
        with lock.cursor() as cur:
            cur.execute("SELECT 1 FROM beneficiaries FOR UPDATE")
        first = spawn_worker(SHORT_LEASE, ring=rotated)
        await _enqueue(settings, "cron:reseal_claim_tokens", job_id="cron:reseal_claim_tokens:now")
        await until(
            lambda: _lease_holder(settings, "cron:reseal_claim_tokens") and _waiting_backend(settings),
            "the re-sealing blocked on an heir's row",
        )
        waiting = [
            r["pid"]
            for r in query(settings, "SELECT pid FROM pg_stat_activity WHERE wait_event_type = 'Lock'")
        ]
        kill(first)
        lock.rollback()
        await until(
            lambda: not any(_backend_alive(settings, pid) for pid in waiting), "the dead backends gone"
        )
    finally:
        lock.close()
    spawn_worker(SHORT_LEASE, ring=rotated)
    await until(lambda: _sealed_under(settings) == ["k2", "k2"], "every token under the new key")
    assert _in_progress(settings, "cron:reseal_claim_tokens:now"), "taken over, not rerun by arq"
    after = await make_client(encryption_keys=KeyRing.parse(rotated))
    listed = await (await after.get("/api/beneficiaries", headers=owner.headers)).json()
    assert sorted(b["claimToken"] for b in listed) == tokens


def _sealed_under(settings: Settings) -> list[str]:
    rows = query(settings, "SELECT claim_token_sealed FROM beneficiaries ORDER BY id")
    return [str(r["claim_token_sealed"]).split(".", 1)[0] for r in rows]


@pytest.mark.fault
async def test_a_live_job_keeps_its_work_past_its_lease(make_client, settings, keys, spawn_worker):
    """A scrub run reading for several leases renews its lease as it goes, so the lease sweep
    (every run of it here) never hands its work to another job: one holder throughout, and no
    job enqueued under a takeover id."""
    client = await make_client(encryption_keys=KeyRing.parse(keys))
    owner = await sign_in(client)
    form = aiohttp.FormData()
    form.add_field("file", os.urandom(60_000), filename="f.bin", content_type="application/octet-stream")
    resp = await client.post("/api/archive", data=form, headers=owner.headers)
    assert resp.status == 202, await resp.text()
    item_id = (await resp.json())["id"]
    spawn_worker(
        {
            "job_lease_seconds": 1,
            "lifecycle_scan_seconds": 1,
            "archive_scrub_interval_seconds": 1,
            "archive_scrub_bytes_per_second": 15_000,  # a read of four leases
        }
    )
    # The worker's start-up run may hold the lease when the run asked for comes (which is then
    # skipped) and end without the file, having looked before it was available: ask again, once
    # a second, until the file is read. The run that read it is the last unbroken stretch of
    # one holder before the read was recorded.
    await until(lambda: _status(settings, item_id) == "available", "the item available")
    stretches: list[list[str]] = [[]]
    asked: list[float] = []

    async def read_whole() -> bool:
        if query(
            settings,
            "SELECT 1 FROM archive_scrub WHERE item_id = %s AND checked_at IS NOT NULL",
            (item_id,),
        ):
            return True
        holder = _lease_holder(settings, "cron:scrub_archive")
        if holder is not None:
            stretches[-1].append(holder)
        elif stretches[-1]:
            stretches.append([])
        if holder is None:
            await _ask_for_a_scrub(settings, asked)
        return False

    await until(read_whole, "the file read whole")
    reading = [stretch for stretch in stretches if stretch][-1]
    assert len(set(reading)) == 1, stretches  # one run held it from start to end
    conn = redis_sync.Redis.from_url(settings.redis_url)
    try:
        assert not list(conn.scan_iter("arq:*cron:scrub_archive:~*")), "nothing was taken over"
    finally:
        conn.close()
