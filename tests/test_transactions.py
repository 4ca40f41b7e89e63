"""core.db.transaction's isolation option: REPEATABLE READ reads one snapshot (the owner's
export reads the plan and every list in one), the default sees each commit as it lands, and a
level PostgreSQL does not know is refused before anything is sent."""

from __future__ import annotations

import uuid

import pytest

from core import db


async def _count(cur: db.Cursor, marker: str) -> int:
    await cur.execute("SELECT count(*) AS n FROM users WHERE wallet_address = %s", (marker,))
    row = await cur.fetchone()
    return int(row["n"])


async def _commit_one(pool: db.Pool, marker: str) -> None:
    async with db.transaction(pool) as cur:
        await cur.execute("INSERT INTO users (wallet_address) VALUES (%s)", (marker,))


@pytest.mark.parametrize(("isolation", "seen"), [("REPEATABLE READ", 0), (None, 1)])
async def test_repeatable_read_keeps_one_snapshot(settings, isolation, seen):
    pool = await db.create_pool(settings.database_url, 2, wait_seconds=5)
    marker = f"snapshot-{uuid.uuid4().hex}"
    try:
        async with db.transaction(pool, isolation=isolation) as cur:
            assert await _count(cur, marker) == 0  # the snapshot is taken here
            await _commit_one(pool, marker)  # another connection commits meanwhile
            assert await _count(cur, marker) == seen
        async with db.autocommit(pool) as cur:
            assert await _count(cur, marker) == 1
    finally:
        pool.close()
        await pool.wait_closed()


async def test_an_unknown_isolation_level_is_refused(settings):
    pool = await db.create_pool(settings.database_url, 1, wait_seconds=5)
    try:
        with pytest.raises(ValueError, match="isolation must be one of"):
            async with db.transaction(pool, isolation="READ UNCOMMITTED; DROP TABLE users"):
                pass
    finally:
        pool.close()
        await pool.wait_closed()
