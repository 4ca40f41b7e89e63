"""The Family Timeline: an append-only log of every owner mutation.

`record()` takes the cursor of the caller's transaction, so the entry commits or rolls back
with the change it describes. `metadata` carries names of changed fields, never their values
when they are private (message content, emails, tokens).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypedDict, cast

from psycopg2.extras import Json

from core.db import Cursor, Pool, autocommit
from core.files.crypto import KeyRing
from core.text import i18n
from core.text.i18n import N_, _
from models import sealed_text
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
    pool: Pool, ring: KeyRing, *, user_id: str, filters: ActivityFilter, page: PageRequest
) -> Page[ActivityEntry]:
    """A page of the timeline, each entry naming its guardian and heir (`name_entries`): the one
    function every reader of the timeline goes through (the JSON list, the owner's page)."""
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
        await name_entries(cur, ring, user_id=user_id, entries=cast("list[ActivityEntry]", result.items))
    return cast("Page[ActivityEntry]", result)


# The entries that name a guardian, an heir or both, by kind: the sentence written with their
# names (each a variant of the anonymous one its writer stores, chosen by the same metadata).
# An entry is named only when it carries the ids its sentence needs: the guardian's in
# `guardianId` (or its entity, for guardian.*), the heir's as its entity (beneficiary.*, capsule.*).
_NAMED: dict[str, Callable[[dict[str, Any]], str]] = {
    "guardian.reported": lambda m: N_("{guardian} reported that you may have died or cannot act"),
    "guardian.approved": lambda m: N_("{guardian} approved the release"),
    "guardian.objected": lambda m: (
        N_(
            "{guardian} says this verification is a mistake: they know you are alive or able to act; "
            "they took back their approval"
        )
        if m.get("approvalWithdrawn")
        else N_("{guardian} says this verification is a mistake: they know you are alive or able to act")
    ),
    "guardian.objection_withdrawn": lambda m: (
        N_("{guardian} withdrew their objection and approved the release")
        if m.get("approved")
        else N_("{guardian} withdrew their objection")
    ),
    "guardian.accepted": lambda m: N_("{guardian} accepted to guard your plan"),
    "guardian.declined": lambda m: N_("{guardian} declined to guard your plan"),
    "guardian.reconfirmed": lambda m: N_("{guardian} confirmed they can still act for your plan"),
    "guardian.unresponsive": lambda m: N_("{guardian} did not confirm they can still act"),
    "guardian.gender_chosen": lambda m: N_("{guardian} chose, on their page, how we refer to them"),
    "beneficiary.address_change_proposed": lambda m: N_("{guardian} proposed a new email address for {heir}"),
    "beneficiary.address_change_agreed": lambda m: N_("{guardian} agreed to {heir}'s new email address"),
    "beneficiary.address_change_stopped": lambda m: (
        N_("{heir} stopped the new email address proposed for them; nothing changed")
        if m.get("byHeir")
        else N_("{guardian} stopped {heir}'s new email address; nothing changed")
    ),
    "beneficiary.address_corrected": lambda m: N_(
        "{heir} confirmed their new email address; their link was sent there"
    ),
    "beneficiary.claimed": lambda m: N_("{heir} claimed their share on-chain"),
    "beneficiary.wallet_proven": lambda m: N_("{heir} proved the wallet they will claim with"),
    "beneficiary.wallet_change_requested": lambda m: N_(
        "{heir} proved a new wallet; the guardians were asked to approve it"
    ),
    "beneficiary.wallet_change_approved": lambda m: N_("{guardian} approved {heir}'s new wallet"),
    "beneficiary.wallet_replaced": lambda m: N_(
        "The guardians approved {heir}'s new wallet; it replaces the one bound before"
    ),
    "beneficiary.claim_link_resent": lambda m: N_(
        "{heir}'s claim link was emailed again, to their registered address"
    ),
    "beneficiary.email_confirmation_sent": lambda m: N_(
        "{heir} was asked to confirm that their email address reaches them"
    ),
    "beneficiary.email_confirmed": lambda m: N_("{heir} confirmed that their email address reaches them"),
    "beneficiary.gender_chosen": lambda m: N_("{heir} chose, on their page, how we refer to them"),
    "capsule.opened": lambda m: N_("{heir} opened their capsule"),
    "capsule.document_downloaded": lambda m: N_("{heir} downloaded a document from their capsule"),
    "capsule.exported": lambda m: N_("{heir} downloaded everything in their capsule"),
}
# What a person since removed is called: their name went with their row.
_FORMER = {"guardian": N_("a former guardian"), "heir": N_("a former heir")}


def _people_of(entry: ActivityEntry) -> dict[str, str] | None:
    """The ids an entry's named sentence needs ({"guardian": id, "heir": id}), None when it has
    no named sentence or lacks one of them (an entry written before it carried the id)."""
    sentence = _NAMED.get(entry["kind"])
    if sentence is None:
        return None
    written = sentence(entry["metadata"] or {})
    ids: dict[str, str] = {}
    if "{guardian}" in written:
        guardian = (entry["metadata"] or {}).get("guardianId")
        if guardian is None and entry["entity_type"] == "guardian":
            guardian = entry["entity_id"]
        if not _an_id(guardian):
            return None
        ids["guardian"] = str(guardian)
    if "{heir}" in written:
        if entry["entity_type"] not in ("beneficiary", "capsule") or not _an_id(entry["entity_id"]):
            return None
        ids["heir"] = str(entry["entity_id"])
    return ids


def _an_id(value: Any) -> bool:
    try:
        uuid.UUID(str(value))
    except ValueError:
        return False
    return value is not None


async def name_entries(cur: Cursor, ring: KeyRing, *, user_id: str, entries: list[ActivityEntry]) -> None:
    """Write, in place, each entry that has a named sentence with the names of its guardian and
    heir, in the owner's language; someone since removed is "a former guardian" / "a former heir".
    The names are opened from their sealed rows now, never kept in `activity` (which holds the
    anonymous sentence its writer stored). One query for every name of the page, one for the
    owner's language: bounded whatever the page's length."""
    wanted = [(entry, ids) for entry in entries if (ids := _people_of(entry)) is not None]
    if not wanted:
        return
    names = await _names(
        cur,
        ring,
        user_id=user_id,
        guardians={ids["guardian"] for _, ids in wanted if "guardian" in ids},
        heirs={ids["heir"] for _, ids in wanted if "heir" in ids},
    )
    async with speaking_to(cur, table="users", row_id=user_id):
        for entry, ids in wanted:
            entry["summary"] = _named(entry, ids=ids, names=names)


def _named(entry: ActivityEntry, *, ids: dict[str, str], names: dict[tuple[str, str], str]) -> str:
    """The entry's named sentence in the language spoken now."""
    sentence = _(_NAMED[entry["kind"]](entry["metadata"] or {}))
    values = {role: names.get((role, row_id)) or _(_FORMER[role]) for role, row_id in ids.items()}
    text = sentence.format(**values)
    first = next((role for role in ids if sentence.startswith("{" + role + "}")), None)
    if first is not None and (first, ids[first]) not in names:  # "A former guardian …"
        text = text[:1].upper() + text[1:]
    return text


async def _names(
    cur: Cursor, ring: KeyRing, *, user_id: str, guardians: set[str], heirs: set[str]
) -> dict[tuple[str, str], str]:
    """{(role, id): name} of the owner's guardians and heirs among these ids that still exist."""
    await cur.execute(
        "SELECT 'guardian' AS role, 'guardians' AS tbl, id::text AS id, name_sealed FROM guardians"
        " WHERE user_id = %s AND id = ANY(%s::uuid[])"
        " UNION ALL SELECT 'heir', 'beneficiaries', id::text, name_sealed FROM beneficiaries"
        " WHERE user_id = %s AND id = ANY(%s::uuid[])",
        (user_id, sorted(guardians), user_id, sorted(heirs)),
    )
    names = {}
    for row in await cur.fetchall():
        name = sealed_text.open_text(
            ring, table=row["tbl"], column="name", row_id=row["id"], sealed=row["name_sealed"]
        )
        if name:
            names[(row["role"], row["id"])] = name
    return names
