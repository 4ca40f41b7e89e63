"""Email delivery through the outbox to a local stand-in provider: sent once at the provider
(Idempotency-Key), retried on 429/5xx honouring Retry-After, failed on other 4xx, skipped
without a key, recovered after a lost job; nothing private in logs."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from datetime import timedelta

import psycopg2
import pytest
import redis as redis_sync

from core import queue
from core.redis import connect
from models.delivery import outbox
from testing.emailserver import API_KEY
from tests.helpers import sign_in, until
from tests.lifecycle_helpers import activate_plan, report
from tests.plan_helpers import blocked_by, query

OWNER = "owner@example.org"
GUARDIAN = "guardian0@example.org"
# The emails `_activate` sends, and sets aside, before a test begins.
SETTING_UP = ("guardian_invitation", "guardian_accepted", "plan_activated")


async def _activate(client, run_worker, owner, guardians):
    """An Active plan whose setting-up emails are out of the way (the guardians' invitations, the
    owner's notices of each acceptance and of the activation): their jobs ran with no provider
    configured (rows `skipped`), and `rows` leaves them out."""
    setup = await activate_plan(client, owner, guardians=guardians)
    await run_worker()
    return setup


async def _two_emails(client, run_worker):
    """A plan with one guardian, reported: one email to the owner, one to the guardian."""
    owner = await sign_in(client)
    setup = await _activate(client, run_worker, owner, guardians=1)
    assert (await report(client, setup, setup.guardians[0])).status == 200
    return owner, setup


def rows(settings):
    return query(
        settings,
        "SELECT id::text AS id, kind, status, attempts, last_error FROM outbox"
        " WHERE kind <> ALL(%s) ORDER BY kind",
        (list(SETTING_UP),),
    )


async def test_sent_with_the_providers_json_shape_and_idempotency_key(
    client, run_worker, email_provider, settings
):
    await _two_emails(client, run_worker)
    await run_worker(settings=email_provider.settings)
    outbox = rows(settings)
    assert [r["status"] for r in outbox] == ["sent", "sent"]
    assert {r.headers["Idempotency-Key"] for r in email_provider.requests} == {r["id"] for r in outbox}
    for captured in email_provider.requests:
        assert captured.headers["Authorization"] == f"Bearer {API_KEY}"
        assert captured.headers["Content-Type"] == "application/json"
        assert set(captured.body) == {"from", "to", "subject", "text", "html", "headers"}
        assert captured.body["headers"]["Content-Language"] == "en"  # the language it is written in
        assert captured.body["from"] == "Legacy <no-reply@example.test>"
    assert {r.to for r in email_provider.requests} == {OWNER, GUARDIAN}


async def test_retried_on_503_after_retry_after_with_the_same_key(
    client, clock, run_worker, email_provider, settings
):
    await _two_emails(client, run_worker)
    email_provider.script = [(503, {"Retry-After": "120"})] * 2
    await run_worker(settings=email_provider.settings)
    assert [(r["status"], r["attempts"]) for r in rows(settings)] == [("pending", 1)] * 2
    assert all("503" in r["last_error"] for r in rows(settings))
    clock.advance(seconds=100)  # past the 30 s backoff, not past Retry-After (120 s); margin for real time
    await run_worker(settings=email_provider.settings)
    assert len(email_provider.requests) == 2
    clock.advance(seconds=21)
    await run_worker(settings=email_provider.settings)
    assert [r["status"] for r in rows(settings)] == ["sent", "sent"]
    keys = [r.headers["Idempotency-Key"] for r in email_provider.requests]
    assert len(keys) == 4 and all(keys.count(k) == 2 for k in keys)  # each email, same key twice
    await run_worker(settings=email_provider.settings)
    assert len(email_provider.requests) == 4  # sent rows are never sent again


async def test_failed_on_400_without_retry(client, clock, run_worker, email_provider, settings):
    owner, _ = await _two_emails(client, run_worker)
    email_provider.script = [(400, {})] * 2
    await run_worker(settings=email_provider.settings)
    clock.advance(hours=2)
    await run_worker(settings=email_provider.settings)
    assert len(email_provider.requests) == 2
    assert [(r["status"], r["last_error"]) for r in rows(settings)] == [
        ("failed", "provider refused the email (HTTP 400)")
    ] * 2
    body = await (await client.get("/api/legacy", headers=owner.headers)).json()
    assert {n["status"] for n in body["notifications"] if n["kind"] not in SETTING_UP} == {"failed"}


async def test_gives_up_after_the_last_attempt(client, clock, run_worker, email_provider, settings):
    await _two_emails(client, run_worker)
    email_provider.script = [(500, {})] * 100
    for _ in range(8):
        await run_worker(settings=email_provider.settings)
        clock.advance(hours=1, seconds=1)
    assert [(r["status"], r["attempts"]) for r in rows(settings)] == [("failed", 8)] * 2
    assert len(email_provider.requests) == 16


async def test_skipped_without_a_provider_key_and_logged_without_private_data(
    client, run_worker, settings, caplog
):
    await _two_emails(client, run_worker)
    with caplog.at_level(logging.INFO):
        await run_worker()
    assert [r["status"] for r in rows(settings)] == ["skipped", "skipped"]
    skipped = [r for r in caplog.records if r.getMessage().startswith("email skipped")]
    assert len(skipped) == 2 and {r.kind for r in skipped} == {
        "verification_started",
        "verification_requested",
    }
    assert OWNER not in caplog.text and GUARDIAN not in caplog.text


@pytest.mark.fault
async def test_a_lost_job_is_sent_by_the_sweep(client, clock, run_worker, email_provider, settings):
    await _two_emails(client, run_worker)
    conn = redis_sync.Redis.from_url(settings.redis_url)
    # The enqueued jobs are lost (the enqueue failed after COMMIT, or Redis lost its data).
    conn.delete(settings.arq_queue_name, *conn.scan_iter("arq:job:deliver_email:*"))
    conn.close()
    await run_worker(settings=email_provider.settings)
    assert email_provider.requests == []  # too fresh to be called lost
    clock.advance(seconds=31)
    await run_worker(settings=email_provider.settings)
    assert [r["status"] for r in rows(settings)] == ["sent", "sent"]


async def test_names_are_escaped_and_logs_carry_no_bodies(
    client, run_worker, email_provider, settings, caplog
):
    owner = await sign_in(client)
    setup = await _activate(client, run_worker, owner, guardians=1)
    resp = await client.patch("/api/users/me", json={"name": "<b>Olive</b> & co"}, headers=owner.headers)
    assert resp.status == 200
    assert (await report(client, setup, setup.guardians[0])).status == 200
    with caplog.at_level(logging.DEBUG):
        await run_worker(settings=email_provider.settings)
    [guardian_mail] = email_provider.to(GUARDIAN)
    assert "&lt;b&gt;Olive&lt;/b&gt; &amp; co" in guardian_mail.body["html"]
    assert "<b>Olive</b>" not in guardian_mail.body["html"]
    assert "<b>Olive</b> & co" in guardian_mail.body["text"]
    assert guardian_mail.body["subject"] not in caplog.text and GUARDIAN not in caplog.text


async def test_a_batch_with_mixed_outcomes_records_each_row(
    client, clock, run_worker, email_provider, settings
):
    """One job carries the event's three rows: 503 → retried at Retry-After, 400 → failed,
    2xx → sent, each recorded on its own row; every key reaches the provider once per attempt."""
    owner = await sign_in(client)
    setup = await _activate(client, run_worker, owner, guardians=2)
    assert (await report(client, setup, setup.guardians[0])).status == 200
    outbox = rows(settings)
    assert len(outbox) == 3
    conn = redis_sync.Redis.from_url(settings.redis_url)
    assert len(list(conn.scan_iter("arq:job:deliver_email:*"))) == 1  # one job for the event's rows
    conn.close()
    addresses = sorted([OWNER, GUARDIAN, "guardian1@example.org"])
    retried, refused, sent = addresses
    email_provider.script_to = {retried: [(503, {"Retry-After": "300"})], refused: [(400, {})]}
    await run_worker(settings=email_provider.settings)
    by_to = {r.to: r.headers["Idempotency-Key"] for r in email_provider.requests}
    assert sorted(by_to) == addresses and len(email_provider.requests) == 3
    state = {
        r["id"]: r
        for r in query(
            settings,
            "SELECT id::text AS id, status, attempts, last_error, finished_at,"
            " extract(epoch FROM next_attempt_at - created_at) AS wait FROM outbox",
        )
    }
    assert state[by_to[retried]]["status"] == "pending" and state[by_to[retried]]["attempts"] == 1
    assert "503" in state[by_to[retried]]["last_error"] and state[by_to[retried]]["wait"] >= 300
    assert state[by_to[refused]]["status"] == "failed" and "400" in state[by_to[refused]]["last_error"]
    assert state[by_to[sent]]["status"] == "sent" and state[by_to[sent]]["last_error"] is None
    assert all(r["finished_at"] is not None for k, r in state.items() if k != by_to[retried])

    clock.advance(seconds=240)  # the sweep runs: nothing is due before Retry-After
    await run_worker(settings=email_provider.settings)
    assert len(email_provider.requests) == 3
    clock.advance(seconds=70)
    await run_worker(settings=email_provider.settings)
    keys = [r.headers["Idempotency-Key"] for r in email_provider.requests]
    assert sorted(keys) == sorted([by_to[retried], *by_to.values()])  # only the retried row again
    final = {r["id"]: (r["status"], r["attempts"]) for r in rows(settings)}
    assert final == {by_to[retried]: ("sent", 2), by_to[refused]: ("failed", 1), by_to[sent]: ("sent", 1)}


async def test_the_first_retry_waits_the_configured_base_then_doubles(
    client, clock, run_worker, email_provider, settings
):
    """EMAIL_RETRY_BASE_SECONDS sets the first wait after a refusal with no Retry-After, and each
    attempt doubles it (the chaos bench runs the provider's refusals at a few seconds)."""
    await _two_emails(client, run_worker)
    email_provider.script = [(500, {}), (500, {}), (500, {}), (500, {})]
    configured = {**email_provider.settings, "email_retry_base_seconds": 7}
    next_at = "SELECT next_attempt_at FROM outbox WHERE kind <> ALL(%s)"

    async def attempt() -> list[tuple[timedelta, timedelta]]:
        """Each row's next attempt, as its distance from the clock just before and just after the
        worker's run: the worker's `now` lies between the two, however slowly it ran (a loaded
        machine once put 15 s where the wait was 14 when measured from the start alone)."""
        start = clock.now()
        await run_worker(settings=configured)
        end = clock.now()
        return [
            (r["next_attempt_at"] - start, r["next_attempt_at"] - end)
            for r in query(settings, next_at, (list(SETTING_UP),))
        ]

    for wait in (7, 14):
        for from_start, from_end in await attempt():
            assert from_end <= timedelta(seconds=wait) <= from_start, (wait, from_start, from_end)
        clock.advance(seconds=wait)
    assert [r["attempts"] for r in rows(settings)] == [2, 2]


@pytest.mark.fault
async def test_two_jobs_holding_the_same_rows_send_each_once(
    client, run_worker, email_provider, settings, caplog
):
    """Jobs are at least once and the sweep may queue rows another job is sending: the rows are
    claimed (locked) by one job until it records them, so a second job carrying the same rows
    while the first waits on the provider sends nothing."""
    await _two_emails(client, run_worker)
    ids = [r["id"] for r in rows(settings)]
    conn = redis_sync.Redis.from_url(settings.redis_url)
    queued = {k.decode().removeprefix("arq:job:") for k in conn.scan_iter("arq:job:deliver_email:*")}
    assert len(queued) == 1
    (first,) = queued
    second = queue.job_id(outbox.DELIVER_JOB, next(i for i in ids if not first.endswith(f":{i}")))
    arq = await connect(settings.redis_url, settings.arq_queue_name)
    try:
        # The second job carries both rows: the other one first, then the first job's row.
        mine = [i for i in ids if first.endswith(f":{i}")]
        batch = [next(i for i in ids if i not in mine), *mine]
        assert len(batch) == 2
        assert await queue.enqueue(arq, outbox.DELIVER_JOB, batch, job_id=second)
    finally:
        await arq.aclose()
    email_provider.hold = asyncio.Event()
    worker = asyncio.create_task(run_worker(settings=email_provider.settings))
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 30
    while len(email_provider.requests) < 2:  # one job holds both rows at the provider
        assert loop.time() < deadline and not worker.done(), "the rows never reached the provider"
        await asyncio.sleep(0.02)
    while not any(conn.exists(queue.result_key(j)) for j in (first, second)):  # the other returned
        assert loop.time() < deadline and not worker.done(), "no job finished while the other was held"
        await asyncio.sleep(0.02)
    assert len(email_provider.requests) == 2  # it sent nothing: the rows were claimed
    email_provider.hold.set()
    await worker
    conn.close()
    assert "deserializing" not in caplog.text and "failed" not in caplog.text  # both jobs ran
    assert sorted(r.headers["Idempotency-Key"] for r in email_provider.requests) == sorted(ids)
    assert [(r["status"], r["attempts"]) for r in rows(settings)] == [("sent", 1)] * 2


async def test_senders_keep_at_most_their_number_of_requests_open_and_drop_cancelled_emails(
    email_provider, settings
):
    """core.mailer.Senders: a fixed set of senders shared by a worker's jobs. With the provider
    holding every request, exactly `concurrency` are in flight; an email whose job was
    cancelled before a sender took it is never posted; every other one gets its own outcome."""
    from core import mailer

    email_provider.hold = asyncio.Event()
    senders = mailer.Senders(dataclasses.replace(settings, **email_provider.settings), 3)
    try:

        def message(n: int) -> mailer.Email:
            return mailer.Email(to=f"r{n}@example.org", subject="s", text="t", html="<p>t</p>")

        futures = [senders.submit(f"key-{n}", message(n)) for n in range(6)]
        futures[4].cancel()  # its job went away while it queued
        await until(lambda: len(email_provider.requests) == 3, "three requests at the provider")
        # Every sender is held at the provider and the other three emails are still queued, so
        # no fourth request can start: a state, not a pause, says the rest wait.
        assert senders.queue.qsize() == 3
        assert len(email_provider.requests) == 3  # the other three wait for a free sender
        email_provider.hold.set()
        outcomes = await asyncio.gather(*(f for n, f in enumerate(futures) if n != 4))
        assert [o.result for o in outcomes] == ["sent"] * 5
        keys = sorted(r.headers["Idempotency-Key"] for r in email_provider.requests)
        assert keys == ["key-0", "key-1", "key-2", "key-3", "key-5"]
    finally:
        await senders.close()
    assert all(task.done() for task in senders.tasks)


async def test_a_row_locked_for_a_moment_when_its_job_claims_it_is_still_sent_by_that_job(
    client, run_worker, email_provider, settings
):
    # Anything may hold a pending row for a moment (the sweep used to lock every due row while it
    # read them). A delivery job that skipped such a row left it to the next sweep, up to a sweep
    # period later; a burst worker (a test's) stopped with it pending, and the next run sent it.
    await _two_emails(client, run_worker)
    [first, _] = rows(settings)
    holder = psycopg2.connect(settings.database_url)
    try:
        with holder.cursor() as cur:
            cur.execute("SELECT id FROM outbox WHERE id = %s FOR UPDATE", (first["id"],))
            cur.execute("SELECT pg_backend_pid()")
            pid = cur.fetchone()[0]
        worker = asyncio.create_task(run_worker(settings=email_provider.settings))
        await until(lambda: blocked_by(settings, pid) or worker.done(), "the job's claim to reach the row")
    finally:
        holder.rollback()
        holder.close()
    await worker
    assert [r["status"] for r in rows(settings)] == ["sent", "sent"]
    assert len(email_provider.requests) == 2
