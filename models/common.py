"""Small rules every model shares."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Callable, Collection, Iterable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any, Generic, TypedDict, TypeVar, cast

from core.db import Cursor, Pool, autocommit
from core.errors import NotFound, validation_error
from core.files.crypto import KeyRing
from core.text import i18n
from models.pagination import Page, PageRequest, fetch_page

R = TypeVar("R")


def as_record(kind: type[R], *, row: Mapping[str, Any]) -> R:
    """A row (a dict from the DictCursor) as the record its SQL was written to return.

    A cast, not a check, and it costs nothing per row: mypy trusts `kind` from here on, and
    tests/test_records.py checks real rows against every declaration so the trust is earned.
    """
    return cast(R, row)


def as_records(kind: type[R], *, rows: Iterable[Mapping[str, Any]]) -> list[R]:
    """`as_record` for a list of rows (the list itself when it is one: no copy)."""
    return cast(list[R], rows if isinstance(rows, list) else list(rows))


class Recorded(TypedDict):
    """A person's language and zone as recorded (None: never set): what their page is written in
    unless they choose another on it (api/html.py negotiate)."""

    locale: str | None
    time_zone: str | None


class Audience(TypedDict):
    """Who may see a message or archive item: everyone, or the listed beneficiaries."""

    all: bool
    beneficiary_ids: list[str]


def parse_id(*, raw: str, what: str) -> str:
    """A malformed id names nothing that exists: 404, like a missing or foreign one (never a 500)."""
    try:
        return str(uuid.UUID(raw))
    except (ValueError, AttributeError, TypeError):
        raise NotFound(what) from None


@dataclass(frozen=True)
class OwnedRows(Generic[R]):
    """An owner's rows of one table, as records: the reads (and the delete) that every resource
    the owner lists, opens and removes shares (assets, guardians, beneficiaries, messages,
    archive items).

    The owner filter lives here so no caller can forget it; another owner's row is NotFound,
    exactly like a missing one.
    """

    table: str
    columns: str  # the select list of a record's row (qualified by `alias` when it has one)
    what: str  # the resource's name in a 404
    record: Callable[[KeyRing, dict[str, Any]], R]  # a row as the owner sees it (texts opened)
    alias: str = ""  # for a select list whose subqueries join other tables
    # Tables the record's select list reads beside its own (" LEFT JOIN … ON …", needs `alias`):
    # one row joined per page, where a subquery in the select list would run per row.
    joins: str = ""

    @property
    def _table(self) -> str:
        return f"{self.table} {self.alias}" if self.alias else self.table

    @property
    def _source(self) -> str:
        return f"{self._table}{self.joins}"

    @property
    def _prefix(self) -> str:
        return f"{self.alias}." if self.alias else ""

    async def row(
        self, cur: Cursor, *, user_id: str, row_id: str, lock: bool = False, columns: str | None = None
    ) -> dict[str, Any]:
        """One of the owner's rows, as selected (`columns`: another select list, of this table's
        own columns, read without the joins); `lock` adds FOR UPDATE (of this table's row only)."""
        source = self._source if columns is None else self._table
        sql = f"SELECT {columns or self.columns} FROM {source} WHERE {self._prefix}id = %s"
        sql += f" AND {self._prefix}user_id = %s"
        if lock:
            sql += f" FOR UPDATE OF {self.alias}" if self.alias else " FOR UPDATE"
        await cur.execute(sql, (row_id, user_id))
        row: dict[str, Any] | None = await cur.fetchone()
        if row is None:
            raise NotFound(self.what)
        return row

    async def one(self, cur: Cursor, ring: KeyRing, *, user_id: str, row_id: str, lock: bool = False) -> R:
        """One of the owner's rows as its record, on the caller's cursor."""
        return self.record(ring, await self.row(cur, user_id=user_id, row_id=row_id, lock=lock))

    async def get(self, pool: Pool, ring: KeyRing, *, user_id: str, raw_id: str) -> R:
        """GET /…/:id: a malformed id is a 404 like a missing one."""
        row_id = parse_id(raw=raw_id, what=self.what)
        async with autocommit(pool) as cur:
            return await self.one(cur, ring, user_id=user_id, row_id=row_id)

    async def list_page(self, pool: Pool, ring: KeyRing, *, user_id: str, page: PageRequest) -> Page[R]:
        """The owner's rows, newest first, one page at a time (models.pagination)."""
        sql = f"SELECT {self.columns} FROM {self._source} WHERE {self._prefix}user_id = %s"
        async with autocommit(pool) as cur:
            result = await fetch_page(cur, sql=sql, params=[user_id], page=page, prefix=self._prefix)
        return Page([self.record(ring, row) for row in result.items], result.next_cursor)

    async def list_all(self, cur: Cursor, ring: KeyRing, *, user_id: str) -> list[R]:
        """Every row of the owner, oldest first (the order the paged list walks back to), on the
        caller's cursor: the owner's export reads each list once, in its one snapshot."""
        await cur.execute(
            f"SELECT {self.columns} FROM {self._source} WHERE {self._prefix}user_id = %s"
            f" ORDER BY {self._prefix}created_at, {self._prefix}id",
            (user_id,),
        )
        return [self.record(ring, row) for row in await cur.fetchall()]

    async def delete(self, cur: Cursor, *, user_id: str, row_id: str) -> None:
        """DELETE one of the owner's rows; NotFound if it is missing or someone else's."""
        await cur.execute(
            f"DELETE FROM {self.table} WHERE id = %s AND user_id = %s RETURNING id", (row_id, user_id)
        )
        if await cur.fetchone() is None:
            raise NotFound(self.what)


async def check_audience(cur: Cursor, *, user_id: str, audience: Mapping[str, Any]) -> None:
    """400 unless every listed id is one of the owner's beneficiaries; locks them until COMMIT.

    FOR KEY SHARE keeps a concurrent delete of a listed beneficiary waiting, so audience rows
    inserted next always reference a live beneficiary. Shared by messages and archive items.
    """
    ids = audience["beneficiary_ids"]
    if audience["all"] or not ids:
        return
    await cur.execute(
        "SELECT id::text AS id FROM beneficiaries WHERE user_id = %s AND id = ANY(%s::uuid[]) FOR KEY SHARE",
        (user_id, list(ids)),
    )
    found = {row["id"] for row in await cur.fetchall()}
    missing = [i for i in ids if i not in found]
    if missing:
        raise validation_error(
            {"audience": {"beneficiaryIds": [f"Not one of your beneficiaries: {', '.join(missing)}."]}}
        )


async def lock_owner(cur: Cursor, *, scope: str, user_id: str) -> None:
    """Serialise one owner's transactions that check a total across rows (e.g. allocations <= 100).

    A row-level check cannot see a concurrent insert, so two transactions could each pass it;
    this transaction-scoped advisory lock makes them take turns, and is released at COMMIT or
    ROLLBACK. Other owners, and other scopes of the same owner, never wait on it.
    """
    await cur.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", (f"{scope}:{user_id}",))


def changed_values(*, current: Mapping[str, Any], changes: Mapping[str, Any]) -> dict[str, Any]:
    """The subset of `changes` that differs from the stored row, so a no-op PATCH writes nothing."""
    return {column: value for column, value in changes.items() if current.get(column) != value}


async def update_row(
    cur: Cursor,
    *,
    table: str,
    row_id: str,
    values: Mapping[str, Any],
    allowed: Collection[str],
    returning: str = "id",
) -> dict[str, Any]:
    """UPDATE the given columns and bump updated_at; column names must be in `allowed`.

    The whitelist keeps identifiers out of reach of request data even if a schema changes.
    """
    unknown = set(values) - set(allowed)
    if unknown or not values:
        raise ValueError(f"cannot update columns {sorted(unknown) or '(none)'} of {table}")
    assignments = ", ".join(f"{column} = %s" for column in values)
    await cur.execute(
        f"UPDATE {table} SET {assignments}, updated_at = clock_timestamp()"
        f" WHERE id = %s RETURNING {returning}",
        [*values.values(), row_id],
    )
    row: dict[str, Any] = await cur.fetchone()
    return row


# A new beneficiary's or guardian's language (docs/translations.md): the one the owner sent for
# them (null included), else the owner's own, as their family likely reads it. The zone is never
# copied: families live in different countries. Parameters: `owners_locale_unless_sent`.
OWNERS_LOCALE_UNLESS_SENT = "CASE WHEN %s THEN %s ELSE (SELECT locale FROM users WHERE id = %s) END"


def owners_locale_unless_sent(*, data: Mapping[str, Any], user_id: str) -> tuple[bool, str | None, str]:
    return "locale" in data, data.get("locale"), user_id


def wire_names(*, columns: Iterable[str]) -> list[str]:
    """camelCase field names as the client knows them, for activity metadata ("fields")."""
    names = []
    for column in columns:
        head, *rest = column.split("_")
        names.append(head + "".join(part.capitalize() for part in rest))
    return names


# An account whose deletion was asked for: models.account.users.retire turns its wallet into
# this tombstone in the request's transaction. From that commit on, nothing reached through a
# link of the account's plan opens (claim, guardian, check-in and confirmation links, and the
# signing requests behind them), though the rows stay until the guardians' goodbye emails are
# out (models/flows/deletion.py).
TOMBSTONE = "deleted:"


def live_account(*, alias: str) -> str:
    """SQL: the `users` row `alias` is not being deleted (join it with AND)."""
    return f"left({alias}.wallet_address, {len(TOMBSTONE)}) <> '{TOMBSTONE}'"


# The people who read what the service writes, each with their recorded language and zone.
_READERS = frozenset({"users", "beneficiaries", "guardians"})


async def reader_of(cur: Cursor, *, table: str, row_id: str) -> tuple[str | None, str | None]:
    """The language and time zone recorded for a person (`users`: an owner, `beneficiaries`,
    `guardians`; migration 0043), (None, None) when unset or the person is gone: English, UTC."""
    if table not in _READERS:
        raise ValueError(f"not a table of people: {table!r}")
    await cur.execute(f"SELECT locale, time_zone FROM {table} WHERE id = %s", (row_id,))
    row = await cur.fetchone()
    return (row["locale"], row["time_zone"]) if row else (None, None)


@asynccontextmanager
async def speaking_to(cur: Cursor, *, table: str, row_id: str) -> AsyncIterator[None]:
    """Write for this person until the block ends (core.text.i18n.speaking with their language
    and zone): the owner's plan sentences, a guardian's or an heir's answers."""
    locale, zone = await reader_of(cur, table=table, row_id=row_id)
    with i18n.speaking(locale, zone):
        yield
