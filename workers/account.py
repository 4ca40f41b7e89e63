"""Account deletion, the worker's part (the request and the ledger: models/flows/deletion.py).

`delete_account` (job id `delete_account:<ledger id>`) finishes a deletion once the guardians'
goodbye emails are settled: the account's Redis keys, then one transaction that queues every
stored object for removal and deletes the account's rows with its ledger row, then the objects
(what storage refuses now, the archive sweeper retries). Idempotent: a rerun finds no ledger row
and does nothing. `sweep_account_deletions` re-enqueues every unfinished ledger row, so a lost
job, a worker killed mid-way or emails still waiting never leave an account half-deleted.
"""

from __future__ import annotations

import logging
from typing import Any

from core import queue
from models.account import sessions
from models.archive import items
from models.flows import deletion
from workers import context

log = logging.getLogger(__name__)


async def delete_account(ctx: dict[str, Any], deletion_id: str) -> str:
    app = context.get(ctx)
    pool = app.db
    found = await deletion.get(pool, deletion_id=deletion_id)
    if found is None:
        return "done"
    await deletion.count_attempt(pool, deletion_id=deletion_id)
    waiting = await deletion.emails_unsettled(pool, deletion=found)
    if waiting:
        return f"waiting for {waiting} goodbye emails"  # the sweeper comes back within a minute
    await deletion.forget_in_redis(app.redis, ids=await deletion.redis_ids(pool, deletion=found))
    keys = await deletion.finish(pool, deletion=found)
    removed = 0
    if app.storage is not None:
        for key in keys:
            if not await items.remove_object(pool, app.storage, key=key):
                break  # storage is down: sweep_archive retries every archive_deletions row
            removed += 1
    log.info(
        "account deleted",
        # The opaque account id, so an operator restoring an older backup can delete it again
        # (docs/operations.md); no name, address or wallet.
        extra={
            "deletionId": deletion_id,
            "accountId": found["user_id"],
            "objects": len(keys),
            "objectsRemoved": removed,
        },
    )
    return "deleted"


async def sweep_account_deletions(ctx: dict[str, Any]) -> int:
    """Every minute: re-enqueue unfinished deletions (waiting emails, a lost job, a crash)."""
    app = context.get(ctx)
    queued = 0
    for deletion_id in await deletion.pending(app.db):
        if await queue.after_commit(app.redis, deletion.DELETE_JOB, deletion_id, row_id=deletion_id):
            queued += 1
    return queued


async def purge_owner_sessions(ctx: dict[str, Any]) -> int:
    """Every hour: the owner's page sessions that can no longer open anything (past their
    lifetime or idle limit, or ended by sign-out everywhere) are deleted."""
    app = context.get(ctx)
    return await sessions.purge(app.db, idle_seconds=app.settings.session_idle_seconds, now=app.clock.now())
