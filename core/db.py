"""PostgreSQL access: one aiopg pool per process and the one transaction helper.

Rows come back as dicts (RealDictCursor) so models can shape records without positional
indexing. Every write goes through `transaction()`, which is also where activity entries are
appended, so a change and its timeline entry commit or roll back together.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import aiopg
import psycopg2.extras

Cursor = aiopg.Cursor
Pool = aiopg.Pool


async def create_pool(dsn: str, maxsize: int = 20) -> Pool:
    """Create the process-wide pool; `timeout` bounds how long a query may wait for a connection."""
    return await aiopg.create_pool(
        dsn, minsize=1, maxsize=maxsize, timeout=30, cursor_factory=psycopg2.extras.RealDictCursor
    )


@asynccontextmanager
async def transaction(pool: Pool) -> AsyncIterator[Cursor]:
    """BEGIN … COMMIT on one connection; any exception rolls back everything done inside."""
    async with pool.acquire() as conn, conn.cursor() as cur:
        await cur.execute("BEGIN")
        try:
            yield cur
        except BaseException:
            await cur.execute("ROLLBACK")
            raise
        await cur.execute("COMMIT")


@asynccontextmanager
async def reading(pool: Pool) -> AsyncIterator[Cursor]:
    """A cursor in autocommit mode for read-only paths: no BEGIN/COMMIT round trips."""
    async with pool.acquire() as conn, conn.cursor() as cur:
        yield cur


async def fetch_one(pool: Pool, sql: str, params: Any = None) -> dict[str, Any] | None:
    async with reading(pool) as cur:
        await cur.execute(sql, params)
        row: dict[str, Any] | None = await cur.fetchone()
        return row


async def fetch_all(pool: Pool, sql: str, params: Any = None) -> list[dict[str, Any]]:
    async with reading(pool) as cur:
        await cur.execute(sql, params)
        rows: list[dict[str, Any]] = await cur.fetchall()
        return rows
