"""The Family Timeline: an append-only log of every owner mutation.

`record()` takes the cursor of the caller's transaction, so the entry commits or rolls back
with the change it describes. `metadata` carries names of changed fields, never their values
when they are private (message content, emails, tokens).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypedDict, cast

from psycopg2.extras import Json

from core.db import Cursor, Pool, autocommit
from core.text import i18n
from core.text.i18n import _
from models.common import as_records, speaking_to
from models.pagination import Page, PageRequest, fetch_page

# A summary as its writer gives it: a sentence marked where it is written (N_("...")), or a
# function writing it (with _() and its values) that `record` calls in the owner's language.
Summary = str | Callable[[], str]

_INSERT = "INSERT INTO activity (user_id, kind, entity_type, entity_id, summary, metadata)"

# A wallet sign-in to an account whose plan is in verification: not a veto, but someone
# holds the owner's key, and the plan's accepted guardians see when (models.plan.guardianships).
SIGNED_IN_DURING_VERIFICATION = "account.signed_in_during_verification"
# The latest such sign-in in the current verification round of the plan aliased `p`, as a scalar
# subquery (NULL: none). The entry carries its round, so an earlier round's sign-in never shows;
# it is read through the partial index activity_signed_in_during_verification_idx (0032).
KEY_USED_AT_SQL = (
    "(SELECT max(ka.created_at) FROM activity ka WHERE ka.user_id = p.user_id"
    f" AND ka.kind = '{SIGNED_IN_DURING_VERIFICATION}'"
    " AND ka.metadata->>'round' = p.verification_round::text)"
)


def insert_sql(*, select: str) -> str:
    """The INSERT of one entry per row of `select` (SQL yielding user_id, kind, entity_type,
    entity_id, summary, metadata), for a writer whose row and entry must go in one statement as
    CTEs (a measured hot path: models.chain.transactions.insert). `record()` otherwise."""
    return f"{_INSERT} {select}"


async def record(
    cur: Cursor,
    *,
    user_id: str,
    kind: str,
    entity_id: str | None,
    summary: Summary,
    metadata: dict[str, Any] | None = None,
) -> None:
    """Append one entry; `kind` is `<entity>.<verb>` and its prefix is stored as `entity_type`.
    The summary is written now in the owner's language, times in their zone (docs/translations.md,
    "The timeline"), whoever's request or job wrote the entry.

    Keyword-only because four of the arguments are ids and strings that a positional call
    could swap without a type error.
    """
    entity_type, dot, verb = kind.partition(".")
    if not (entity_type and dot and verb):
        raise ValueError(f"activity kind must be '<entity>.<verb>', got {kind!r}")
    if isinstance(summary, str):
        # A sentence with no time in it: written in every language and the owner's picked in this
        # one statement (no read of their language first: an answer's transaction stays as short).
        written = every_language_json(summary=summary)
        chosen = chosen_sql(owner="%s", summaries="%s")
        await cur.execute(
            f"{_INSERT} VALUES (%s, %s, %s, %s, {chosen}, %s)",
            (user_id, kind, entity_type, entity_id, written, user_id, written, Json(metadata or {})),
        )
        return
    await cur.execute(
        f"{_INSERT} VALUES (%s, %s, %s, %s, %s, %s)",
        (
            user_id,
            kind,
            entity_type,
            entity_id,
            await owner_words(cur, user_id=user_id, summary=summary),
            Json(metadata or {}),
        ),
    )


async def owner_words(cur: Cursor, *, user_id: str, summary: Summary) -> str:
    """A summary in the owner's language and zone."""
    async with speaking_to(cur, table="users", row_id=user_id):
        return summary() if callable(summary) else _(summary)


def in_every_language(*, summary: Summary) -> dict[str, str]:
    """A summary with no time in it, written in each supported language: for a writer whose entry
    goes in its row's own statement (`insert_sql`), which picks the owner's in SQL (`chosen_sql`)."""
    written = {}
    for language in i18n.supported():
        with i18n.speaking(language):
            written[language] = summary() if callable(summary) else _(summary)
    return written


def every_language_json(*, summary: Summary, key: Hashable | None = None) -> str:
    """`in_every_language` of a summary, as the JSON `chosen_sql` reads, written once per process:
    a sentence with no time in it reads the same every time (catalogs are compiled once, at start),
    and writing it in every language on each request is work a hot path need not repeat (it was
    a measurable share of a contract submit). A marked sentence is its own key; a function
    writing one needs `key`, naming everything the sentence depends on. The languages are in the
    key too: LANGUAGES is a setting, and a test may add a language."""
    if key is None:
        if callable(summary):
            raise TypeError("a summary written by a function needs a key naming what it depends on")
        key = summary
    once = (key, i18n.supported())
    written = _written_once.get(once)
    if written is None:
        written = _written_once[once] = json.dumps(in_every_language(summary=summary))
    return written


_written_once: dict[tuple[Hashable, tuple[str, ...]], str] = {}


def chosen_sql(*, owner: str, summaries: str) -> str:
    """SQL: of the summaries (a jsonb parameter by language, `in_every_language`) the one in the
    language of the owner `owner` (a parameter or column holding their id), else the English."""
    return (
        f"COALESCE({summaries}::jsonb ->> (SELECT locale FROM users WHERE id = {owner}),"
        f" {summaries}::jsonb ->> '{i18n.SOURCE}')"
    )


class ActivityEntry(TypedDict):
    """One timeline entry, as the owner reads it (GET /api/activity)."""

    id: str
    kind: str
    entity_type: str
    entity_id: str | None
    summary: str
    metadata: dict[str, Any]  # names of changed fields, ids; never private values
    created_at: datetime


@dataclass(frozen=True)
class ActivityFilter:
    entity_type: str | None = None
    kind: str | None = None
    since: datetime | None = None
    until: datetime | None = None


async def all_for_user(cur: Cursor, *, user_id: str) -> list[ActivityEntry]:
    """The user's whole timeline, oldest first, on the caller's cursor (the owner's export)."""
    await cur.execute(
        "SELECT id, kind, entity_type, entity_id, summary, metadata, created_at"
        " FROM activity WHERE user_id = %s ORDER BY created_at, id",
        (user_id,),
    )
    return as_records(ActivityEntry, rows=await cur.fetchall())


async def list_for_user(
    pool: Pool, *, user_id: str, filters: ActivityFilter, page: PageRequest
) -> Page[ActivityEntry]:
    sql = (
        "SELECT id, kind, entity_type, entity_id, summary, metadata, created_at"
        " FROM activity WHERE user_id = %s"
    )
    params: list[Any] = [user_id]
    if filters.entity_type:
        sql += " AND entity_type = %s"
        params.append(filters.entity_type)
    if filters.kind:
        sql += " AND kind = %s"
        params.append(filters.kind)
    if filters.since:
        sql += " AND created_at >= %s"
        params.append(filters.since)
    if filters.until:
        sql += " AND created_at < %s"
        params.append(filters.until)
    async with autocommit(pool) as cur:
        result = await fetch_page(cur, sql=sql, params=params, page=page)
    return cast("Page[ActivityEntry]", result)
