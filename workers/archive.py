"""Archive jobs: verify an upload the API sealed into storage, and the sweepers that keep it honest.

`verify_archive_item` is enqueued by the API after the item commits (job id
`verify_archive_item:<item>`, so a double enqueue runs once). From a worker host it checks that
the stored object is whole and opens under the recorded key (core.files.sealed_files.verify),
then flips the item `pending -> available` with one guarded UPDATE: a rerun changes nothing.
Why the API, not the worker, encrypts: docs/archive.md.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta
from typing import Any

from arq import Retry

from core.db import Pool
from core.files import sealed_files
from core.files.crypto import IntegrityError, UnknownKeyError
from core.files.storage import Storage, StorageError
from models.archive import items, sweeps
from workers import context

log = logging.getLogger(__name__)

MAX_ATTEMPTS = 8
RETRY_BASE_SECONDS = 10.0
RETRY_MAX_SECONDS = 600.0
# A pending item untouched this long has probably lost its job (enqueue lost, worker died).
STALE_PENDING_AFTER = timedelta(minutes=5)
# Objects without an item row are left alone this long, so an upload still being committed is
# never mistaken for litter.
ORPHAN_GRACE = timedelta(hours=1)
ORPHAN_BATCH = 500
# An unfinished write (temp file, S3 multipart upload) a crash left behind is removed once idle
# this long. Uploads stream in ~1 MiB writes and stall out after 30 s, so an hour is generous.
PARTIAL_UPLOAD_GRACE = timedelta(hours=1)


def retry_delay(attempt: int) -> float:
    """Exponential backoff: 10 s, 20 s, 40 s ... capped at 10 min (about 40 min over 8 tries)."""
    return float(min(RETRY_BASE_SECONDS * 2 ** (attempt - 1), RETRY_MAX_SECONDS))


def failure_reason(exc: BaseException, attempts: int) -> str:
    """What the owner reads in GET /api/archive: the kind of failure, never internals."""
    if isinstance(exc, sealed_files.VerificationFailed):
        return "The stored file did not pass its integrity check. Delete this item and upload the file again."
    if isinstance(exc, UnknownKeyError):
        what = "The file's encryption key was not available to the service"
    elif isinstance(exc, StorageError):
        what = "Object storage was unavailable"
    else:
        what = "The stored file could not be checked"
    return f"{what} ({attempts} attempts). Delete this item and upload the file again."


async def verify_archive_item(ctx: dict[str, Any], item_id: str) -> str:
    """Verify one pending item and make it available; retried with backoff, `failed` at the end."""
    app = context.get(ctx)
    pool = app.db
    storage = app.storage
    item = await items.claim_attempt(pool, item_id=item_id)
    if item is None:
        return "not pending"  # already available or failed, or deleted: nothing to do
    attempt = item["attempts"]
    extra = {"itemId": item_id, "attempt": attempt}
    if attempt > MAX_ATTEMPTS:  # arq gave up on a run that died, and the sweeper requeued it
        await items.mark_failed(pool, item_id=item_id, reason=failure_reason(RuntimeError(), attempt - 1))
        return "failed"
    try:
        if storage is None:
            raise StorageError("object storage is not configured (STORAGE_URL)")
        await sealed_files.verify(storage, app.key_ring, item)
    except Exception as exc:
        permanent = isinstance(exc, sealed_files.VerificationFailed)
        log.warning(
            "archive verification attempt failed", extra={**extra, "error": f"{type(exc).__name__}: {exc}"}
        )
        if permanent or attempt >= MAX_ATTEMPTS:
            await items.mark_failed(pool, item_id=item_id, reason=failure_reason(exc, attempt))
            log.error("archive item failed", extra=extra)
            return "failed"
        raise Retry(defer=retry_delay(attempt)) from exc
    if await items.mark_available(pool, item_id=item_id):
        log.info("archive item available", extra={**extra, "keyId": item["key_id"]})
        return "available"
    return "not pending"  # deleted or failed while we looked


async def sweep_archive(ctx: dict[str, Any]) -> dict[str, int]:
    """Every few minutes: requeue stuck pending items and retry object removals."""
    app = context.get(ctx)
    pool = app.db
    storage = app.storage
    requeued = 0
    for item_id in await sweeps.stale_pending(pool, older_than=STALE_PENDING_AFTER):
        if await items.enqueue_verify(app.redis, item_id=item_id):
            requeued += 1
    removed = 0
    if storage is not None:
        for key in await sweeps.pending_deletions(pool):
            if not await items.remove_object(pool, storage, key=key):
                break  # storage is down: the next sweep tries again
            removed += 1
    result = {"requeued": requeued, "objectsRemoved": removed}
    if any(result.values()):
        log.info("archive sweep", extra=result)
    return result


async def sweep_partial_uploads(ctx: dict[str, Any]) -> int:
    """Every 10 min: drop unfinished writes a crashed API left in storage (they have no key
    under archive/ yet, so the orphan sweeper never sees them)."""
    app = context.get(ctx)
    storage = app.storage
    if storage is None:
        return 0
    removed = await storage.sweep_partial(app.clock.now() - PARTIAL_UPLOAD_GRACE)
    if removed:
        log.info("partial uploads removed", extra={"removed": removed})
    return removed


async def sweep_archive_orphans(ctx: dict[str, Any]) -> int:
    """Hourly: delete objects under archive/ whose item row is gone (an upload whose commit
    failed and whose cleanup failed too, an account deletion). Lists the whole prefix, hence
    the slow cadence."""
    app = context.get(ctx)
    pool = app.db
    storage = app.storage
    if storage is None:
        return 0
    # The storage's own clock stamps `modified`, so the cutoff is the host's time, not the
    # service clock (which tests, and an operator, may run ahead).
    cutoff = datetime.now(UTC) - ORPHAN_GRACE
    removed = 0
    batch: dict[str, str] = {}
    async for key, modified in storage.list_keys(sealed_files.KEY_PREFIX):
        item_id = sealed_files.item_id_from_key(key)
        if item_id is None or modified > cutoff:
            continue  # not ours to judge, or too fresh to be sure
        batch[item_id] = key
        if len(batch) >= ORPHAN_BATCH:
            removed += await _remove_orphans(pool, storage, batch)
            batch = {}
    if batch:
        removed += await _remove_orphans(pool, storage, batch)
    if removed:
        log.info("archive orphans removed", extra={"objectsRemoved": removed})
    return removed


async def _remove_orphans(pool: Pool, storage: Storage, batch: dict[str, str]) -> int:
    known = await sweeps.known_ids(pool, item_ids=batch)
    removed = 0
    for item_id, key in batch.items():
        if item_id not in known and await items.remove_object(pool, storage, key=key):
            removed += 1
    return removed


async def rewrap_archive_keys(ctx: dict[str, Any]) -> int:
    """Re-wrap data keys still under an older ENCRYPTION_KEYS entry with the primary key.

    Only the 60-byte wrapped key changes; the stored objects are untouched (envelope
    encryption), so a rotation costs one UPDATE per file. Once this reports nothing left, the
    old key can leave the ring (docs/archive.md). An item whose key id is no longer in the
    ring is logged and skipped.
    """
    app = context.get(ctx)
    pool = app.db
    keys = app.key_ring
    rewrapped = 0
    after = "00000000-0000-0000-0000-000000000000"
    while batch := await sweeps.wrapped_under_other_keys(pool, key_id=keys.primary_id, after=after):
        for row in batch:
            after = row["id"]
            try:
                data_key = keys.unwrap_data_key(row["key_id"], row["wrapped_key"], row["id"])
            except IntegrityError as exc:
                log.error(
                    "archive data key cannot be unwrapped", extra={"itemId": row["id"], "error": str(exc)}
                )
                continue
            key_id, wrapped = keys.wrap_data_key(data_key, row["id"])
            if await items.rewrap(
                pool, item_id=row["id"], old_key_id=row["key_id"], key_id=key_id, wrapped_key=wrapped
            ):
                rewrapped += 1
    if rewrapped:
        log.info("archive data keys re-wrapped", extra={"count": rewrapped, "keyId": keys.primary_id})
    return rewrapped
