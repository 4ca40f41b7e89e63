"""PostgreSQL access: one aiopg pool per process, the one transaction helper and autocommit.

Rows come back as plain dicts (DictCursor) so models can shape records without positional
indexing. Writes that must commit together (a change and its activity entry, which the model
records with the same cursor) go through `transaction()`; `autocommit()` runs each statement
on its own, for reads and for single-statement writes that need no BEGIN/COMMIT round trips.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any, TypedDict

import aiopg
import psycopg2.errors
import psycopg2.extensions

from core.errors import Unauthorized

Cursor = aiopg.Cursor
Pool = aiopg.Pool


class DictCursor(psycopg2.extensions.cursor):
    """Rows as plain dicts, built in C: RealDictRow is an OrderedDict filled column by column in Python."""

    def _names(self) -> list[str]:
        return [column[0] for column in self.description]

    def fetchone(self) -> dict[str, Any] | None:
        row = super().fetchone()
        return None if row is None else dict(zip(self._names(), row, strict=True))

    def fetchmany(self, size: int | None = None) -> list[dict[str, Any]]:
        rows = super().fetchmany(size) if size is not None else super().fetchmany()
        names = self._names() if rows else []
        return [dict(zip(names, row, strict=True)) for row in rows]

    def fetchall(self) -> list[dict[str, Any]]:
        rows = super().fetchall()
        names = self._names() if rows else []
        return [dict(zip(names, row, strict=True)) for row in rows]


async def create_pool(dsn: str, maxsize: int = 20, wait_seconds: float = 30) -> Pool:
    """Create the process-wide pool; `wait_seconds` (DB_TIMEOUT_SECONDS) bounds how long a query may
    wait for a free connection, and a statement for its answer.

    `enable_uuid=False` leaves psycopg2's UUID caster unregistered, so a `uuid` column reads as
    its canonical text: ids are `str` at every boundary (records, job arguments, wire) and
    never need a `str()` or a `::text` to be compared with an id from a request.
    """
    return await aiopg.create_pool(
        dsn, minsize=1, maxsize=maxsize, timeout=wait_seconds, cursor_factory=DictCursor, enable_uuid=False
    )


def _unlink(cur: Cursor) -> None:
    """Break aiopg's Cursor <-> Transaction reference cycle once the cursor is done.

    Left alone, each cursor (and the psycopg2 cursor with its last query text, parameters
    included) waits for the cyclic GC: every request leaves garbage only a collection frees,
    which costs CPU on every route (docs/conventions.md, "Library internals", has the measured
    gain). aiopg has no public way to drop the link, so its private `Cursor._transaction` is
    touched here and nowhere else; tests/test_library_seams.py fails if aiopg renames it.
    """
    cur._transaction = None  # type: ignore[assignment]


def _account_gone(exc: psycopg2.errors.ForeignKeyViolation) -> Unauthorized | None:
    """A write that names a user id nobody has: the session outlived its account (401, not 500)."""
    constraint = exc.diag.constraint_name or ""
    if constraint.endswith("_user_id_fkey"):
        return Unauthorized("This account no longer exists", headers={"WWW-Authenticate": "Bearer"})
    return None


@asynccontextmanager
async def _connection(pool: Pool) -> AsyncIterator[aiopg.Connection]:
    """`pool.acquire()`, surviving a connection the server killed while it sat in the pool.

    aiopg asserts that the connection it hands out is open; one killed a moment earlier (a
    PostgreSQL restart, pg_terminate_backend) trips that assertion and is dropped from the pool.
    Asking again gets a live one; if the server is really gone, that is an OperationalError,
    which the API answers with a 503.

    A connection killed while in use comes back closed, and aiopg's `release` then wakes no
    caller waiting for a connection (it does only for a live one): with the pool full, they
    would all sleep until the pool timeout. `_wake_a_waiter` wakes one, which opens a
    replacement.

    No connection free within the pool timeout (every one busy, the server too slow to hand
    one back), or a statement unanswered within it (aiopg then closes its connection), is the
    database not answering: an OperationalError, which the API answers with a 503 and
    Retry-After, not a 500 for an `asyncio.TimeoutError`.
    """
    for attempt in range(3):
        try:
            conn = await pool.acquire()
        except TimeoutError:
            raise psycopg2.OperationalError(
                f"no database connection free within {pool.timeout:g} s (pool of {pool.maxsize})"
            ) from None
        except AssertionError:
            if attempt == 2:
                raise psycopg2.InterfaceError("the pool kept handing out closed connections") from None
            continue
        try:
            yield conn
        except TimeoutError:
            if not conn.closed:
                raise  # not aiopg's statement timeout: someone else's, left as it is
            raise psycopg2.OperationalError(f"no answer from the database in {pool.timeout:g} s") from None
        finally:
            await pool.release(conn)
            if conn.closed:
                await _wake_a_waiter(pool)
        return


async def _wake_a_waiter(pool: Pool) -> None:
    """What aiopg's `release` does for a live connection, done for a closed one: notify one
    caller waiting in `acquire`. aiopg has no public way, so its private `Pool._wakeup` is
    called here and nowhere else; tests/test_library_seams.py fails if aiopg renames it, and
    docs/conventions.md ("Library internals") lists it."""
    await pool._wakeup()


ISOLATION_LEVELS = (None, "READ COMMITTED", "REPEATABLE READ", "SERIALIZABLE")


@asynccontextmanager
async def transaction(pool: Pool, *, isolation: str | None = None) -> AsyncIterator[Cursor]:
    """BEGIN … COMMIT on one connection; any exception rolls back everything done inside.

    `isolation` ("REPEATABLE READ", "SERIALIZABLE") for a caller whose reads must all see one
    snapshot (the owner's export); the server's default, READ COMMITTED, otherwise.

    A connection the server closed while it sat idle in the pool (a restart, a killed backend)
    fails at BEGIN, before anything of the caller's was sent, so another is taken (up to the
    pool's size) rather than answering 503 for each dead connection in turn.
    """
    if isolation not in ISOLATION_LEVELS:
        raise ValueError(f"isolation must be one of {ISOLATION_LEVELS}, got {isolation!r}")
    begin = f"BEGIN ISOLATION LEVEL {isolation}" if isolation else "BEGIN"
    spares = pool.maxsize or 1
    for attempt in range(spares + 1):
        async with _connection(pool) as conn, conn.cursor() as cur:
            try:
                try:
                    await cur.execute(begin)
                except (psycopg2.OperationalError, psycopg2.InterfaceError):
                    if conn.closed and attempt < spares:
                        continue  # dead before use: nothing sent, nothing to undo
                    raise
                try:
                    yield cur
                except BaseException as exc:
                    await cur.execute("ROLLBACK")
                    if isinstance(exc, psycopg2.errors.ForeignKeyViolation) and (gone := _account_gone(exc)):
                        raise gone from None
                    raise
                await cur.execute("COMMIT")
                return
            finally:
                _unlink(cur)


@asynccontextmanager
async def autocommit(pool: Pool) -> AsyncIterator[Cursor]:
    """A cursor in autocommit mode: each statement commits on its own, no BEGIN/COMMIT round trips.

    For reads, and for a single UPDATE/DELETE that needs no companion write (no activity entry).
    """
    async with _connection(pool) as conn, conn.cursor() as cur:
        try:
            yield cur
        except psycopg2.errors.ForeignKeyViolation as exc:
            if gone := _account_gone(exc):
                raise gone from None
            raise
        finally:
            _unlink(cur)


async def unless_duplicate(cur: Cursor, sql: str, params: Any) -> bool:
    """Run one write inside the caller's transaction; False when it breaks a unique index (that
    write undone, the transaction goes on): the caller says what the duplicate means."""
    await cur.execute("SAVEPOINT unless_duplicate")
    try:
        await cur.execute(sql, params)
    except psycopg2.errors.UniqueViolation:
        await cur.execute("ROLLBACK TO SAVEPOINT unless_duplicate")
        return False
    await cur.execute("RELEASE SAVEPOINT unless_duplicate")
    return True


class Budget(TypedDict):
    """This process's share of the server's connections, as measured at its start."""

    pool: int  # this process's most connections (its pool's size)
    max_connections: int
    reserved: int  # superuser_reserved_connections: never ours
    in_use: int  # client connections open on the server, this process's first one included
    crossed: bool


async def log_budget(pool: Pool, *, process: str) -> Budget | None:
    """Log this process's pool size against the server's `max_connections` and the connections
    already in use; warn when the pool could not open in full (in use + pool > max - reserved).
    The rule and when to put PgBouncer in front: docs/operations.md. Never stops a start: a
    server that will not say is one info line."""
    log = logging.getLogger("core.db")
    try:
        row = await fetch_one(
            pool,
            "SELECT current_setting('max_connections')::int AS max_connections,"
            " current_setting('superuser_reserved_connections')::int AS reserved,"
            " (SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend')::int AS in_use",
        )
    except psycopg2.Error as exc:
        log.info("database connection budget unknown", extra={"role": process, "error": repr(exc)})
        return None
    assert row is not None
    size = pool.maxsize or 0
    # Our first connection is already counted in `in_use`; the rest of the pool may still open.
    crossed = row["in_use"] - 1 + size > row["max_connections"] - row["reserved"]
    budget = Budget(
        pool=size,
        max_connections=row["max_connections"],
        reserved=row["reserved"],
        in_use=row["in_use"],
        crossed=crossed,
    )
    extra = {"role": process, **budget}
    if crossed:
        log.warning(
            "database connection budget crossed: this pool may not open in full; see docs/operations.md",
            extra=extra,
        )
    else:
        log.info("database connection budget", extra=extra)
    return budget


async def fetch_one(pool: Pool, sql: str, params: Any = None) -> dict[str, Any] | None:
    async with autocommit(pool) as cur:
        await cur.execute(sql, params)
        row: dict[str, Any] | None = await cur.fetchone()
        return row


async def fetch_all(pool: Pool, sql: str, params: Any = None) -> list[dict[str, Any]]:
    async with autocommit(pool) as cur:
        await cur.execute(sql, params)
        rows: list[dict[str, Any]] = await cur.fetchall()
        return rows
