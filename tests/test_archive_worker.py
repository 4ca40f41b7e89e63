"""The verify job and the sweepers, run by the real arq worker in burst mode.

Storage failures are real: the worker is pointed at an S3 endpoint where nothing listens, while
the API stored the object on the moto server; tampering edits the stored ciphertext on disk.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest
import pytest_asyncio
from arq import cron

from api.keys import REDIS
from core import queue
from core.files.crypto import KeyRing
from models.archive import items
from tests.archive_helpers import CT_SEGMENT, HEADER, Archive, harness
from tests.plan_helpers import query
from workers import archive as jobs
from workers import keys as key_jobs

STORAGE_DOWN = "Object storage was unavailable"
INTEGRITY = "The stored file did not pass its integrity check"
DOWN = {"s3_endpoint_url": "http://127.0.0.1:9"}  # nothing listens on the discard port


@pytest.fixture(autouse=True)
def fast_retries(monkeypatch):
    monkeypatch.setattr(jobs, "RETRY_BASE_SECONDS", 0.05)


@pytest_asyncio.fixture
async def s3_vault(make_client, run_worker, settings, s3_backend, monkeypatch) -> Archive:
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "1")  # fail fast when the endpoint is down
    return await harness(make_client, run_worker, settings, s3_backend)


@pytest.mark.fault
async def test_failed_attempt_is_retried_after_storage_recovers(s3_vault: Archive):
    data = os.urandom(100_000)
    item = await s3_vault.upload_ok(data)

    worker = await s3_vault.work(settings=DOWN, cron_jobs=[], max_burst_jobs=1)
    assert worker.jobs_retried == 1
    row = s3_vault.row(item["id"])
    assert row["status"] == "pending" and row["attempts"] == 1 and row["failure_reason"] is None
    assert (await s3_vault.download(item["id"])).status == 409

    worker = await s3_vault.work(cron_jobs=[])
    assert worker.jobs_complete == 1
    assert s3_vault.row(item["id"])["attempts"] == 2
    assert await s3_vault.download_bytes(item["id"]) == data


async def test_last_attempt_marks_failed_with_a_reason(s3_vault: Archive, settings, monkeypatch):
    monkeypatch.setattr(jobs, "MAX_ATTEMPTS", 2)
    item = await s3_vault.upload_ok(b"doomed")
    worker = await s3_vault.work(settings=DOWN, cron_jobs=[])
    assert (worker.jobs_retried, worker.jobs_complete) == (1, 1)

    listed = await (await s3_vault.client.get("/api/archive", headers=s3_vault.session.headers)).json()
    assert listed[0]["status"] == "failed"
    assert listed[0]["failureReason"].startswith(f"{STORAGE_DOWN} (2 attempts)")
    assert "127.0.0.1" not in listed[0]["failureReason"]
    resp = await s3_vault.download(item["id"])
    assert resp.status == 409
    body = await resp.json()
    assert body["itemStatus"] == "failed" and body["failureReason"] == listed[0]["failureReason"]


async def test_operator_requeue_of_a_failed_item_overrides_the_kept_job_result(
    s3_vault: Archive, settings, monkeypatch
):
    """docs/archive.md: set a failed item back to pending; the sweeper queues it again even
    though arq still keeps the finished job's result under the same job id."""
    monkeypatch.setattr(jobs, "MAX_ATTEMPTS", 1)
    data = os.urandom(5000)
    item = await s3_vault.upload_ok(data)
    await s3_vault.work(settings=DOWN, cron_jobs=[])
    assert s3_vault.row(item["id"])["status"] == "failed"
    redis = s3_vault.client.app[REDIS]
    assert await redis.exists(f"arq:result:{queue.job_id(items.VERIFY_JOB, item['id'])}")

    query(
        settings,
        "UPDATE archive_items SET status = 'pending', failure_reason = NULL, attempts = 0,"
        " updated_at = now() - interval '1 hour' WHERE id = %s",
        (item["id"],),
    )
    await s3_vault.work()  # the sweeper runs at start-up, then the job
    assert await s3_vault.download_bytes(item["id"]) == data


def _truncate_final_segment(path: Path) -> None:
    path.write_bytes(path.read_bytes()[:-1])


def _drop_final_segment(path: Path) -> None:  # cut on a segment boundary: the length gives it away
    blob = path.read_bytes()
    path.write_bytes(blob[: HEADER + CT_SEGMENT])


def _flip_in_final_segment(path: Path) -> None:
    blob = bytearray(path.read_bytes())
    blob[-5] ^= 0x01
    path.write_bytes(bytes(blob))


def _flip_in_header(path: Path) -> None:
    blob = bytearray(path.read_bytes())
    blob[3] ^= 0x80
    path.write_bytes(bytes(blob))


def _swap_with_another_items_object(path: Path) -> None:
    other = sorted(p for p in path.parent.iterdir() if p != path)[0]
    path.write_bytes(other.read_bytes())


@pytest.mark.parametrize(
    "tamper",
    [
        _truncate_final_segment,
        _drop_final_segment,
        _flip_in_final_segment,
        _flip_in_header,
        _swap_with_another_items_object,
        Path.unlink,
    ],
)
async def test_a_stored_object_that_does_not_verify_fails_at_once(
    vault: Archive, tamper: Callable[[Path], None]
):
    data = os.urandom(100_000)  # two segments
    item = await vault.upload_ok(data)
    await vault.upload_ok(data)  # the same plaintext under another item id and data key
    tamper(vault.object_path(item["id"]))

    worker = await vault.work(cron_jobs=[])
    assert worker.jobs_retried == 0
    row = vault.row(item["id"])
    assert row["status"] == "failed" and row["attempts"] == 1
    assert row["failure_reason"].startswith(INTEGRITY)
    assert (await vault.download(item["id"])).status == 409


@pytest.mark.fault
async def test_sweeper_requeues_a_lost_enqueue(vault: Archive, settings):
    data = b"lost in transit"
    item = await vault.upload_ok(data)
    redis = vault.client.app[REDIS]
    job_id = queue.job_id(items.VERIFY_JOB, item["id"])
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
    assert await items.enqueue_verify(redis, item_id=item["id"]) is False  # already queued
    worker = await vault.work(cron_jobs=[])
    assert worker.jobs_complete == 1

    before = vault.row(item["id"])
    path = vault.object_path(item["id"])
    blob, stat = path.read_bytes(), path.stat()
    assert await items.enqueue_verify(redis, item_id=item["id"]) is True  # finished result cleared
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
    # A worker that has not been given k2 yet retries rather than fail the item.
    lagging = await after.work(settings={"encryption_keys": old_ring}, cron_jobs=[], max_burst_jobs=1)
    assert lagging.jobs_retried == 1 and after.row(new["id"])["status"] == "pending"
    await after.work(settings={"encryption_keys": new_ring}, cron_jobs=[])

    assert (after.row(old["id"])["key_id"], after.row(new["id"])["key_id"]) == ("k1", "k2")
    assert await after.download_bytes(old["id"]) == b"sealed under k1"
    assert await after.download_bytes(new["id"]) == b"sealed under k2"
    # An API still on the old ring cannot open the new item: roll keys out before using them.
    assert (await before.download(new["id"])).status == 500

    blob = after.object_path(old["id"]).read_bytes()
    await after.work(
        settings={"encryption_keys": new_ring},
        # With the texts' re-seal: both must have run before k1 leaves the ring (docs/archive.md).
        cron_jobs=[
            cron(jobs.rewrap_archive_keys, run_at_startup=True),
            cron(key_jobs.reseal_private_texts, run_at_startup=True),
        ],
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


async def test_storage_unset_in_the_worker_fails_honestly(vault: Archive, monkeypatch):
    monkeypatch.setattr(jobs, "MAX_ATTEMPTS", 1)
    item = await vault.upload_ok(b"nowhere to go")
    await vault.work(settings={"storage_url": ""}, cron_jobs=[])
    row = vault.row(item["id"])
    assert row["status"] == "failed" and row["failure_reason"].startswith(STORAGE_DOWN)
