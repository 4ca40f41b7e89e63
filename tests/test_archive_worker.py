"""The encryption job and the sweepers, run by the real arq worker in burst mode.

Storage failures are real: a regular file sits where the `archive/` directory must go, so the
filesystem refuses the write until the test removes it.
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import pytest
from arq import cron

from api.keys import REDIS
from core.crypto import KeyRing
from models import archive
from tests.archive_helpers import Archive, harness, staging_rows
from tests.plan_helpers import query
from workers import archive as jobs

STORAGE_DOWN = "Object storage was unavailable"


@pytest.fixture(autouse=True)
def fast_retries(monkeypatch):
    monkeypatch.setattr(jobs, "RETRY_BASE_SECONDS", 0.05)


def break_storage(vault: Archive) -> Path:
    """Put a regular file where the archive directory belongs: every put now fails."""
    blocker = vault.object_path("x").parent.parent
    blocker.parent.mkdir(parents=True, exist_ok=True)
    blocker.write_bytes(b"in the way")
    return blocker


async def test_failed_attempt_is_retried_after_storage_recovers(vault: Archive):
    data = os.urandom(100_000)
    item = await vault.upload_ok(data)
    blocker = break_storage(vault)

    worker = await vault.work(cron_jobs=[], max_burst_jobs=1)
    assert worker.jobs_retried == 1
    row = vault.row(item["id"])
    assert row["status"] == "pending" and row["attempts"] == 1 and row["failure_reason"] is None
    assert (await vault.download(item["id"])).status == 409

    blocker.unlink()
    worker = await vault.work(cron_jobs=[])
    assert worker.jobs_complete == 1
    assert vault.row(item["id"])["attempts"] == 2
    assert await vault.download_bytes(item["id"]) == data


async def test_last_attempt_marks_failed_with_a_reason_and_keeps_staging(
    vault: Archive, settings, monkeypatch
):
    monkeypatch.setattr(jobs, "MAX_ATTEMPTS", 2)
    item = await vault.upload_ok(b"doomed")
    break_storage(vault)
    worker = await vault.work(cron_jobs=[])
    assert (worker.jobs_retried, worker.jobs_complete) == (1, 1)

    listed = await (await vault.client.get("/api/archive", headers=vault.session.headers)).json()
    assert listed[0]["status"] == "failed"
    assert listed[0]["failureReason"].startswith(f"{STORAGE_DOWN} (2 attempts)")
    assert "in the way" not in listed[0]["failureReason"]
    resp = await vault.download(item["id"])
    assert resp.status == 409
    body = await resp.json()
    assert body["itemStatus"] == "failed" and body["failureReason"] == listed[0]["failureReason"]
    assert len(staging_rows(settings, item["id"])) == 1


async def test_operator_requeue_of_a_failed_item_overrides_the_kept_job_result(
    vault: Archive, settings, monkeypatch
):
    """docs/archive.md: set a failed item back to pending; the sweeper queues it again even
    though arq still keeps the finished job's result under the same job id."""
    monkeypatch.setattr(jobs, "MAX_ATTEMPTS", 1)
    data = os.urandom(5000)
    item = await vault.upload_ok(data)
    blocker = break_storage(vault)
    await vault.work(cron_jobs=[])
    assert vault.row(item["id"])["status"] == "failed"
    redis = vault.client.app[REDIS]
    assert await redis.exists(f"arq:result:{archive.job_id(item['id'])}")

    blocker.unlink()
    query(
        settings,
        "UPDATE archive_items SET status = 'pending', failure_reason = NULL, attempts = 0,"
        " updated_at = now() - interval '1 hour' WHERE id = %s",
        (item["id"],),
    )
    await vault.work()  # the sweeper runs at start-up, then the job
    assert await vault.download_bytes(item["id"]) == data


async def test_sweeper_requeues_a_lost_enqueue(vault: Archive, settings):
    data = b"lost in transit"
    item = await vault.upload_ok(data)
    redis = vault.client.app[REDIS]
    job_id = archive.job_id(item["id"])
    assert await redis.delete(f"arq:job:{job_id}") == 1
    assert await redis.zrem(settings.arq_queue_name, job_id) == 1

    await vault.work()  # fresh pending items are left alone: their job may still be on its way
    assert vault.row(item["id"])["status"] == "pending"

    query(
        settings,
        "UPDATE archive_items SET updated_at = now() - interval '10 minutes' WHERE id = %s",
        (item["id"],),
    )
    await vault.work()
    assert vault.row(item["id"])["status"] == "available"
    assert await vault.download_bytes(item["id"]) == data


async def test_double_enqueue_runs_once_and_a_rerun_changes_nothing(vault: Archive):
    item = await vault.upload_ok(os.urandom(200_000))
    redis = vault.client.app[REDIS]
    assert await archive.enqueue_encrypt(redis, item["id"]) is False  # already queued
    worker = await vault.work(cron_jobs=[])
    assert worker.jobs_complete == 1

    before = vault.row(item["id"])
    path = vault.object_path(item["id"])
    blob, stat = path.read_bytes(), path.stat()
    assert await archive.enqueue_encrypt(redis, item["id"]) is True  # finished result cleared
    worker = await vault.work(cron_jobs=[])
    assert worker.jobs_complete == 1
    assert vault.row(item["id"]) == before
    assert path.read_bytes() == blob and path.stat().st_mtime_ns == stat.st_mtime_ns
    assert sorted(p.name for p in path.parent.iterdir()) == [item["id"]]


async def test_key_rotation_and_rewrap(make_client, run_worker, settings, file_backend):
    k1, k2 = KeyRing.generate_entry("k1"), KeyRing.generate_entry("k2")
    old_ring, new_ring, k2_only = KeyRing.parse(k1), KeyRing.parse(f"{k2},{k1}"), KeyRing.parse(k2)

    before = await harness(make_client, run_worker, settings, file_backend, encryption_keys=old_ring)
    old = await before.upload_ok(b"sealed under k1")
    await before.work(settings={"encryption_keys": old_ring})

    after = await harness(make_client, run_worker, settings, file_backend, encryption_keys=new_ring)
    after.session = before.session
    new = await after.upload_ok(b"sealed under k2")
    await after.work(settings={"encryption_keys": new_ring}, cron_jobs=[])

    assert (after.row(old["id"])["key_id"], after.row(new["id"])["key_id"]) == ("k1", "k2")
    assert await after.download_bytes(old["id"]) == b"sealed under k1"
    assert await after.download_bytes(new["id"]) == b"sealed under k2"
    # An API still on the old ring cannot open the new item: roll keys out before using them.
    assert (await before.download(new["id"])).status == 500

    blob = after.object_path(old["id"]).read_bytes()
    await after.work(
        settings={"encryption_keys": new_ring},
        cron_jobs=[cron(jobs.rewrap_archive_keys, run_at_startup=True)],
    )
    assert after.row(old["id"])["key_id"] == "k2"
    assert after.object_path(old["id"]).read_bytes() == blob  # only the wrapped key changed

    retired = await harness(make_client, run_worker, settings, file_backend, encryption_keys=k2_only)
    retired.session = before.session
    assert await retired.download_bytes(old["id"]) == b"sealed under k1"
    assert await retired.download_bytes(new["id"]) == b"sealed under k2"


async def test_orphan_sweeper_removes_objects_without_a_row(vault: Archive, settings, monkeypatch):
    monkeypatch.setattr(jobs, "ORPHAN_GRACE", jobs.ORPHAN_GRACE * 0)
    kept = await vault.upload_ok(b"kept")
    gone = await vault.upload_ok(b"row deleted behind the API's back")
    await vault.work()
    query(settings, "DELETE FROM archive_items WHERE id = %s", (gone["id"],))
    stranger = vault.object_path("x").parent.parent / "README"
    stranger.write_bytes(b"not made by the archive")

    await vault.work(cron_jobs=[cron(jobs.sweep_archive_orphans, run_at_startup=True)])
    assert vault.object_path(kept["id"]).exists()
    assert not vault.object_path(gone["id"]).exists()
    assert stranger.exists()


async def test_sweeper_discards_staging_of_aborted_uploads_after_the_grace_period(vault: Archive, settings):
    old, fresh = str(uuid.uuid4()), str(uuid.uuid4())
    for item_id, age in ((old, "2 hours"), (fresh, "1 minute")):
        query(
            settings,
            "INSERT INTO archive_staging (item_id, seq, data, created_at)"
            " VALUES (%s, 0, 'x', now() - %s::interval)",
            (item_id, age),
        )
    pending = await vault.upload_ok(b"in progress")
    redis = vault.client.app[REDIS]
    await redis.delete(f"arq:job:{archive.job_id(pending['id'])}")
    await redis.zrem(settings.arq_queue_name, archive.job_id(pending["id"]))
    query(
        settings,
        "UPDATE archive_staging SET created_at = now() - interval '2 hours' WHERE item_id = %s",
        (pending["id"],),
    )
    await vault.work(cron_jobs=[cron(jobs.sweep_archive, run_at_startup=True)])
    assert {r["item_id"] for r in staging_rows(settings)} == {fresh, pending["id"]}


async def test_storage_unset_in_the_worker_fails_honestly(vault: Archive, monkeypatch):
    monkeypatch.setattr(jobs, "MAX_ATTEMPTS", 1)
    item = await vault.upload_ok(b"nowhere to go")
    await vault.work(settings={"storage_url": ""}, cron_jobs=[])
    row = vault.row(item["id"])
    assert row["status"] == "failed" and row["failure_reason"].startswith(STORAGE_DOWN)
