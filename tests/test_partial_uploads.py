"""Unfinished writes a crashed API left in storage are removed within the hour, on both backends."""

from __future__ import annotations

import dataclasses

from arq import cron

from core.files.storage import open_configured_storage
from tests.archive_helpers import Archive, harness
from workers import archive as jobs


def sweep() -> list:
    """A fresh cron job per run (arq remembers the next run on the object)."""
    return [cron(jobs.sweep_partial_uploads, run_at_startup=True, unique=False)]


async def test_a_temp_file_left_by_a_crash_is_swept_once_idle_past_the_grace(vault: Archive, clock):
    kept = await vault.upload_ok(b"a finished upload")
    crashed = vault.storage_root / ".tmp" / "put-crashed.part"
    crashed.parent.mkdir(parents=True, exist_ok=True)
    crashed.write_bytes(b"half a ciphertext")

    await vault.work(cron_jobs=sweep())
    assert crashed.exists()  # it could still be a write in progress

    clock.advance(jobs.PARTIAL_UPLOAD_GRACE * 2)
    await vault.work(cron_jobs=sweep())
    assert not crashed.exists()
    assert vault.object_path(kept["id"]).exists()
    assert await vault.download_bytes(kept["id"]) == b"a finished upload"


async def test_an_abandoned_s3_multipart_upload_is_aborted(
    make_client, run_worker, settings, s3_backend, clock
):
    vault = await harness(make_client, run_worker, settings, s3_backend)
    storage = await open_configured_storage(dataclasses.replace(settings, **s3_backend))
    assert storage is not None
    client, bucket = storage._client, storage.bucket  # type: ignore[attr-defined]
    try:
        await client.create_multipart_upload(Bucket=bucket, Key="archive/crashed/upload")
        assert len((await client.list_multipart_uploads(Bucket=bucket)).get("Uploads", [])) == 1
        # (moto reports every upload as begun in 2010, so "still fresh" is tested on files only.)
        clock.advance(jobs.PARTIAL_UPLOAD_GRACE * 2)
        await vault.work(cron_jobs=sweep())
        assert (await client.list_multipart_uploads(Bucket=bucket)).get("Uploads", []) == []
    finally:
        await storage.close()
