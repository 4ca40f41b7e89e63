"""Deleting an account: asked by the owner (`DELETE /api/users/me`), finished by the worker.

The request, in one transaction: refused (409) while a verification runs or once the plan is
approved, ready or released (the family's claim must not vanish mid-release); otherwise no
wallet signs in to the account any more and every session ends (models.account.users.retire),
an active plan goes back to Draft (nothing acts on it any more), each accepted guardian gets
one goodbye email, and a ledger row (`account_deletions`, the one owner of that table: ids and
times, no personal data) records what is left to do. The worker (workers/account.py) waits
until those emails are settled (sent, failed or skipped: they are rendered from the guardians'
rows, so the rows must outlive them), forgets the account's Redis keys, then in one
transaction queues every stored object for removal and deletes the account (every table
cascades from users) with its ledger row; the objects go after the commit, retried by the
archive sweeper until storage has removed them. A crash anywhere leaves either the ledger row
(the sweeper re-enqueues it) or object keys in archive_deletions. Decisions: docs/security.md,
"Deleting an account".
"""

from __future__ import annotations

from datetime import datetime
from typing import TypedDict

from arq.connections import ArqRedis
from redis.asyncio import Redis

from core import queue
from core.db import Pool, fetch_all, fetch_one, transaction
from core.errors import Conflict
from models import check_in_links, plans
from models.account import users
from models.archive import items
from models.common import as_record
from models.delivery import deliveries, history, outbox

DELETE_JOB = "delete_account"
GOODBYE_EMAIL = deliveries.GOODBYE
REFUSED = {
    plans.PENDING: "Your guardians are verifying your plan right now: check in first (it stops the "
    "verification), then delete your account.",
    plans.APPROVED: "Your plan has been approved for release: your heirs' claim must not vanish mid-release, "
    "so the account cannot be deleted now. Check in to cancel the release first.",
    plans.RELEASED: "Your plan has been released to your heirs; it is theirs now and the account cannot be "
    "deleted.",
}


class Deletion(TypedDict):
    """A ledger row: which account, since when, the goodbye emails it waits for."""

    id: str
    user_id: str
    requested_at: datetime
    emails: list[str]
    attempts: int


class Requested(TypedDict):
    deletion_id: str
    session_generation: int
    emails: list[str]


async def request(pool: Pool, *, user_id: str, confirm: str, now: datetime) -> Requested:
    """Start deleting the account (see the module's docstring); the caller enqueues the emails
    and the deletion job after the commit and ends this process's sessions at once."""
    async with transaction(pool) as cur:
        plan = await plans.get(cur, user_id=user_id, lock=True)
        if plan is not None and plan["status"] in REFUSED:
            raise Conflict(REFUSED[plan["status"]], extra={"planStatus": plan["status"]})
        generation = await users.retire(cur, user_id=user_id, confirm=confirm)
        emails: list[str] = []
        if plan is not None:
            if plan["status"] == plans.ACTIVE:
                await plans.transition(
                    cur,
                    plan_id=plan["id"],
                    from_statuses=(plans.ACTIVE,),
                    to_status=plans.DRAFT,
                    now=now,
                    actor="owner",
                    reason="account_deleted",
                )
            # The owner's check-in links end with the 202, like any check-in ends them.
            await check_in_links.end_all_in(cur, plan_id=plan["id"])
            emails = await outbox.add_for_guardians(
                cur, kind=GOODBYE_EMAIL, plan_id=plan["id"], owner_id=user_id, now=now
            )
        await cur.execute(
            "INSERT INTO account_deletions (user_id, requested_at, emails) VALUES (%s, %s, %s::uuid[])"
            " ON CONFLICT (user_id) DO UPDATE SET emails = account_deletions.emails || EXCLUDED.emails"
            " RETURNING id::text AS id",
            (user_id, now, emails),
        )
        deletion_id: str = (await cur.fetchone())["id"]
    return {"deletion_id": deletion_id, "session_generation": generation, "emails": emails}


async def start(
    pool: Pool, redis: ArqRedis, *, check: users.AccountCheck, user_id: str, confirm: str, now: datetime
) -> Requested:
    """`request`, then this process refuses the account's sessions at once (the others within
    ACCOUNT_CHECK_SECONDS, as after logout-all) and the goodbye emails and the deletion job are
    queued (core.queue.after_commit: a Redis failure leaves them to their sweepers)."""
    requested = await request(pool, user_id=user_id, confirm=confirm, now=now)
    check.remember(user_id=user_id, generation=requested["session_generation"], now=now.timestamp())
    await outbox.enqueue(redis, row_ids=requested["emails"])
    await queue.after_commit(redis, DELETE_JOB, requested["deletion_id"], row_id=requested["deletion_id"])
    return requested


async def get(pool: Pool, *, deletion_id: str) -> Deletion | None:
    row = await fetch_one(
        pool,
        "SELECT id::text AS id, user_id::text AS user_id, requested_at, emails::text[] AS emails, attempts"
        " FROM account_deletions WHERE id = %s",
        (deletion_id,),
    )
    return None if row is None else as_record(Deletion, row=row)


async def pending(pool: Pool, *, limit: int = 100) -> list[str]:
    """Ledger rows not finished (the sweeper re-enqueues them: a lost job, a crash)."""
    rows = await fetch_all(
        pool, "SELECT id::text AS id FROM account_deletions ORDER BY requested_at LIMIT %s", (limit,)
    )
    return [row["id"] for row in rows]


async def emails_unsettled(pool: Pool, *, deletion: Deletion) -> int:
    return await history.unsettled(pool, row_ids=deletion["emails"]) if deletion["emails"] else 0


async def redis_ids(pool: Pool, *, deletion: Deletion) -> list[str]:
    """Every id of the account that a Redis key may hold: the account, its plan, heirs and guardians."""
    rows = await fetch_all(
        pool,
        "SELECT %s::text AS id UNION ALL SELECT id::text FROM plans WHERE user_id = %s"
        " UNION ALL SELECT id::text FROM beneficiaries WHERE user_id = %s"
        " UNION ALL SELECT id::text FROM guardians WHERE user_id = %s",
        (deletion["user_id"],) * 4,
    )
    return [row["id"] for row in rows]


async def forget_in_redis(redis: Redis, *, ids: list[str]) -> int:
    """Delete every Redis key naming one of these ids (rate-limit windows, attestations, …);
    keys named by a wallet (sign-in challenges, their limits) expire within minutes on their own."""
    removed = 0
    for value in ids:
        async for key in redis.scan_iter(match=f"*{value}*", count=1000):
            removed += await redis.delete(key)
    return removed


async def finish(pool: Pool, *, deletion: Deletion) -> list[str]:
    """The last transaction: objects queued for removal, the account's rows and the ledger row
    gone. Returns the object keys to remove now."""
    async with transaction(pool) as cur:
        await cur.execute("SELECT id FROM account_deletions WHERE id = %s FOR UPDATE", (deletion["id"],))
        if await cur.fetchone() is None:
            return []  # another run finished it
        keys = await items.queue_account_removals(cur, user_id=deletion["user_id"])
        await outbox.delete_for_owner(cur, owner_id=deletion["user_id"])
        await users.delete(cur, user_id=deletion["user_id"])
        await cur.execute("DELETE FROM account_deletions WHERE id = %s", (deletion["id"],))
    return keys


async def count_attempt(pool: Pool, *, deletion_id: str) -> None:
    async with transaction(pool) as cur:
        await cur.execute(
            "UPDATE account_deletions SET attempts = attempts + 1 WHERE id = %s", (deletion_id,)
        )
