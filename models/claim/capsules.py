"""The beneficiary's capsule: what a claim token opens, and when each part of it opens.

`open_by_token` is the one lookup behind every `/api/claim/:token/...` route (the capsule, its
downloads, and the on-chain claim routes built on top): the token's digest, the beneficiary,
the owner and the plan state, in one query. Whatever the token looks like, it is hashed and
looked up, so a malformed token and an unknown one take the same path.

Release rules (docs/capsule.md), with `released_at` the plan's release instant:
`on_release` opens at `released_at`; `on_date` at 00:00 UTC of its date, never before
`released_at`; `after_release` N * 24 h after `released_at`. A message is shown when its
audience includes the beneficiary (`all`, which covers beneficiaries added later, or an
explicit list) and it has opened; addressed but not yet opened, only its id, title and opening
time are read. Documents are the `available` archive items addressed to the beneficiary,
except messages' media, which come with their message.

The owner's rehearsal (`preview`) runs the same queries with `released_at` = now, so it is
the payload the beneficiary would get if the plan were released at this moment.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from datetime import UTC, date, datetime
from decimal import Decimal
from typing import Any, TypedDict

from core.db import Cursor, Pool, autocommit, fetch_one, transaction
from core.errors import NotFound
from core.files.crypto import KeyRing
from core.text.i18n import N_
from models import activity, sealed_text
from models.claim import shares
from models.claim.shares import Share
from models.common import as_record, live_account, parse_id
from models.plans import APPROVED, RELEASED


class Capsule(TypedDict):
    """What a claim token opens: the beneficiary, the owner and the plan's state."""

    beneficiary_id: str
    owner_id: str
    name: str
    relationship: str
    allocation_percentage: Decimal
    owner_name: str | None
    plan_status: str | None  # None: the owner has no plan yet
    released_at: datetime | None
    ready_at: datetime | None  # contract mode: the cancel window ended, finalize_release awaited
    wallet_address: str | None
    wallet_bound_via: str | None  # owner | proven | guardians | claim
    wallet_bound_at: datetime | None
    # What an on-chain call through this token is checked against (models.flows.onchain), read
    # in the gate's one query so a build or submit needs no second lookup.
    plan_id: str | None
    release_at: datetime | None  # the end of the owner's cancel window
    owner_wallet: str
    claimed: bool  # this beneficiary's claim_assets is confirmed on-chain
    # Why a guardian reported, if one said (plans.REPORT_REASONS): the page's words follow it.
    report_reason: str | None
    requests_allowed: bool  # the owner lets heirs ask the guardians to check (plan setting)
    locale: str | None  # the heir's language and zone as recorded (None: not set): their page's
    time_zone: str | None
    # How to refer to the heir and to the owner (core.text.gender.GENDERS; None: not said): the
    # page's sentences that agree with one of them.
    grammatical_gender: str | None
    owner_gender: str | None


class WalletBinding(TypedDict):
    """The wallet this beneficiary claims with, and how it came to be theirs."""

    address: str
    bound_via: str
    bound_at: datetime


class Media(TypedDict):
    type: str
    content_type: str
    size: int
    status: str  # available | damaged (found damaged in storage: shown in words, not served)


class OpenedMessage(TypedDict):
    id: str
    title: str | None
    content: str
    created_at: datetime
    media: Media | None


class SealedMessage(TypedDict):
    id: str
    title: str | None
    opens_at: datetime


class Document(TypedDict):
    id: str
    title: str
    type: str
    category: str
    file_name: str
    content_type: str
    size: int
    sha256: str
    status: str  # available | damaged (found damaged in storage: shown in words, not served)


class CapsuleAsset(TypedDict):
    """An asset addressed to this beneficiary, as the owner described it."""

    id: str
    label: str
    amount: Decimal | None  # as the owner wrote it ("12.50" keeps its scale); None: a thing
    asset_code: str | None
    description: str | None
    share: Share | None  # this heir's part, among the heirs it is for (models.claim.shares); None: a thing
    # A thing goes whole to its audience: the names of the others it goes to with this heir, in
    # the owner's order ([]: theirs alone); None for an asset with an amount (its share says it).
    shared_with: list[str] | None


class Contents(TypedDict):
    released_at: datetime
    owner_name: str | None
    name: str
    relationship: str
    allocation_percentage: Decimal
    grammatical_gender: str | None  # the heir's, as in Capsule
    owner_gender: str | None
    wallet: WalletBinding | None
    messages: list[OpenedMessage]
    sealed_messages: list[SealedMessage]
    documents: list[Document]
    assets: list[CapsuleAsset]


class Ready(TypedDict):
    """Contract mode, cancel window over: who and whose, and the wallet; nothing of the contents."""

    ready_since: datetime
    owner_name: str | None
    name: str
    wallet: WalletBinding | None


LOCKED, READY, RELEASED_STATE = "locked", "ready", "released"


# The three queries of a capsule GET (the benchmarks' ceiling runs the same ones, imported from here).
# Names and the relationship are sealed at rest (models/sealed_text.py): `_capsule` opens them.
CAPSULE_SQL = (
    "SELECT b.id::text AS beneficiary_id, b.user_id::text AS owner_id,"
    f" {sealed_text.select_list(table='beneficiaries', alias='b', columns=('name', 'relationship'))},"
    " b.allocation_percentage,"
    f" {sealed_text.select_list(table='users', alias='u', columns=('name',), prefix='owner_')},"
    " p.status AS plan_status, p.released_at,"
    " p.ready_at, b.wallet_address, b.wallet_bound_via, b.wallet_bound_at,"
    " p.id AS plan_id, p.release_at, u.wallet_address AS owner_wallet, p.report_reason,"
    " COALESCE(p.allow_beneficiary_requests, false) AS requests_allowed, b.locale, b.time_zone,"
    " b.grammatical_gender, u.grammatical_gender AS owner_gender,"
    " EXISTS (SELECT 1 FROM transactions t WHERE t.beneficiary_id = b.id"
    "   AND t.function = 'claim_assets' AND t.status = 'confirmed') AS claimed"
    " FROM beneficiaries b JOIN users u ON u.id = b.user_id LEFT JOIN plans p ON p.user_id = b.user_id"
)

# Files the capsule shows: those that open, and those the scrub found damaged (listed in words,
# never served: models.claim.downloads answers 409 in words).
SHOWN = "('available', 'damaged')"
# A message addressed to the beneficiary: to everyone, or to an explicit list that names them.
ADDRESSED = (
    "(m.audience_all OR EXISTS (SELECT 1 FROM message_audience a"
    " WHERE a.message_id = m.id AND a.beneficiary_id = %(beneficiary)s))"
)
# When a message opens, from its release rule and the release instant (timestamptz + hours is
# exact, unlike + days, which follows the session time zone across DST changes).
OPENS_AT = (
    "CASE m.release_rule_kind"
    " WHEN 'on_release' THEN %(released)s::timestamptz"
    " WHEN 'on_date'"
    " THEN GREATEST(m.release_on_date::timestamp AT TIME ZONE 'UTC', %(released)s::timestamptz)"
    " ELSE %(released)s::timestamptz + m.release_after_days * interval '24 hours' END"
)
# Content is read only for messages that have opened: a sealed one's never leaves the database
# (not even sealed). Texts are sealed at rest (models/sealed_text.py): `_read_contents` opens them.
MESSAGES_SQL = (
    "SELECT m.id::text AS id, m.title_sealed, m.created_at, o.opens_at,"
    " CASE WHEN o.opens_at <= %(now)s THEN m.content_sealed END AS content_sealed,"
    " CASE WHEN o.opens_at <= %(now)s THEN i.type END AS media_type,"
    " CASE WHEN o.opens_at <= %(now)s THEN i.content_type END AS media_content_type,"
    " CASE WHEN o.opens_at <= %(now)s THEN i.size_bytes END AS media_size,"
    " CASE WHEN o.opens_at <= %(now)s THEN i.status END AS media_status"
    f" FROM messages m CROSS JOIN LATERAL (SELECT {OPENS_AT} AS opens_at) o"
    f" LEFT JOIN archive_items i ON i.id = m.media_id AND i.status IN {SHOWN}"
    f" WHERE m.user_id = %(owner)s AND {ADDRESSED} ORDER BY m.created_at, m.id"
)
# A message's media is delivered with its message (its audience, its release rule), never as a
# document: a sealed birthday video must not turn up in the document list before its day.
DOCUMENT_FILTER = (
    f"i.user_id = %(owner)s AND i.status IN {SHOWN} AND (i.audience_all OR EXISTS"
    " (SELECT 1 FROM archive_item_audience a WHERE a.item_id = i.id AND a.beneficiary_id = %(beneficiary)s))"
    " AND NOT EXISTS (SELECT 1 FROM messages m WHERE m.media_id = i.id)"
)
DOCUMENTS_SQL = (
    "SELECT i.id::text AS id, i.title_sealed, i.type, i.category, i.file_name_sealed, i.content_type,"
    " i.size_bytes AS size, encode(i.sha256, 'hex') AS sha256, i.status"
    f" FROM archive_items i WHERE {DOCUMENT_FILTER} ORDER BY i.created_at, i.id"
)
# The assets addressed to the beneficiary (to everyone, or a list naming them), oldest first;
# label, description and amount are sealed at rest (`_read_contents` opens them). What the
# shares are split by comes without a per-asset aggregate: an asset for a list carries the list's
# ids (NULL for everyone), and the owner's heirs (ids and allocations, in the owner's order) ride
# once, on the first row (NULL on the others), in the same statement. They are scalar subqueries
# inside CASE, which PostgreSQL evaluates for that row alone; as a CTE joined to every asset the
# planner ran the aggregate once per asset (EXPLAIN ANALYZE: once per asset row).
_HEIRS = (
    "(SELECT array_agg(b.{column} ORDER BY b.created_at, b.id)"
    " FROM beneficiaries b WHERE b.user_id = %(owner)s)"
)
ASSETS_SQL = (
    "SELECT a.id::text AS id,"
    f" {sealed_text.select_list(table='assets', alias='a')},"
    " a.asset_code, CASE WHEN NOT a.audience_all THEN ARRAY(SELECT y.beneficiary_id::text"
    " FROM asset_audience y WHERE y.asset_id = a.id) END AS audience_ids,"
    f" CASE WHEN row_number() OVER w = 1 THEN {_HEIRS.format(column='id::text')} END AS heir_ids,"
    f" CASE WHEN row_number() OVER w = 1 THEN {_HEIRS.format(column='allocation_percentage')} END"
    " AS heir_allocations,"
    f" CASE WHEN row_number() OVER w = 1 THEN {_HEIRS.format(column='name_sealed')} END AS heir_names"
    " FROM assets a"
    " WHERE a.user_id = %(owner)s AND (a.audience_all OR EXISTS (SELECT 1 FROM asset_audience x"
    " WHERE x.asset_id = a.id AND x.beneficiary_id = %(beneficiary)s))"
    " WINDOW w AS (ORDER BY a.created_at, a.id) ORDER BY a.created_at, a.id"
)


def token_digest(*, token: str) -> bytes:
    """SHA-256 of whatever came in the path, so every value takes the same lookup.

    A stored digest is always that of a 64-hex token, so nothing else can match.
    """
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).digest()


def _capsule(ring: KeyRing, row: dict[str, Any]) -> Capsule:
    record = sealed_text.open_row(ring, table="beneficiaries", row=row, id_key="beneficiary_id")
    record = sealed_text.open_row(ring, table="users", row=record, id_key="owner_id", prefix="owner_")
    return as_record(Capsule, row=record)


async def open_by_token(pool: Pool, ring: KeyRing, *, token: str) -> Capsule | None:
    """The capsule a claim token opens, in any plan state; None for an unknown token, and for
    every token of an account whose deletion was asked for (from that moment, not when its rows go)."""
    row = await fetch_one(
        pool,
        f"{CAPSULE_SQL} WHERE b.claim_token_hash = %s AND {live_account(alias='u')}",
        (token_digest(token=token),),
    )
    return None if row is None else _capsule(ring, row)


def is_released(*, capsule: Capsule) -> bool:
    return capsule["plan_status"] == RELEASED and capsule["released_at"] is not None


def is_ready(*, capsule: Capsule) -> bool:
    """Contract mode, the cancel window over: the heirs hold their links, nothing is open yet."""
    return capsule["plan_status"] == APPROVED and capsule["ready_at"] is not None


def state(*, capsule: Capsule) -> str:
    """`locked`, `ready` or `released`: the one rule for what a claim token shows."""
    if is_released(capsule=capsule):
        return RELEASED_STATE
    return READY if is_ready(capsule=capsule) else LOCKED


def wallet(*, capsule: Capsule) -> WalletBinding | None:
    address, via, at = capsule["wallet_address"], capsule["wallet_bound_via"], capsule["wallet_bound_at"]
    if address is None or via is None or at is None:
        return None
    return {"address": address, "bound_via": via, "bound_at": at}


def ready(*, capsule: Capsule) -> Ready:
    ready_at = capsule["ready_at"]
    if not is_ready(capsule=capsule) or ready_at is None:
        raise ValueError("the capsule is not ready")
    return {
        "ready_since": ready_at,
        "owner_name": capsule["owner_name"],
        "name": capsule["name"],
        "wallet": wallet(capsule=capsule),
    }


async def _read_contents(
    cur: Cursor, ring: KeyRing, *, capsule: Capsule, released_at: datetime, now: datetime
) -> Contents:
    params = {
        "owner": capsule["owner_id"],
        "beneficiary": capsule["beneficiary_id"],
        "released": released_at,
        "now": now,
    }
    await cur.execute(MESSAGES_SQL, params)
    opened: list[OpenedMessage] = []
    sealed: list[SealedMessage] = []
    for sealed_row in await cur.fetchall():
        row = sealed_text.open_row(ring, table="messages", row=sealed_row)
        message_id = row["id"]
        if row["opens_at"] > now:
            sealed.append({"id": message_id, "title": row["title"], "opens_at": row["opens_at"]})
            continue
        media: Media | None = None
        if row["media_type"] is not None:
            media = {
                "type": row["media_type"],
                "content_type": row["media_content_type"],
                "size": row["media_size"],
                "status": row["media_status"],
            }
        opened.append(
            {
                "id": message_id,
                "title": row["title"],
                "content": row["content"],
                "created_at": row["created_at"],
                "media": media,
            }
        )
    sealed.sort(key=lambda m: (m["opens_at"], m["id"]))
    await cur.execute(DOCUMENTS_SQL, params)
    documents = [
        as_record(Document, row=sealed_text.open_row(ring, table="archive_items", row=row))
        for row in await cur.fetchall()
    ]
    await cur.execute(ASSETS_SQL, params)
    rows = await cur.fetchall()
    assets: list[CapsuleAsset] = []
    heirs = zip(rows[0]["heir_ids"], rows[0]["heir_allocations"], strict=True) if rows else ()
    heir = shares.HeirShares(beneficiary_id=capsule["beneficiary_id"], heirs=heirs)
    first = rows[0] if rows else None
    together = shares.Together(ring, beneficiary_id=capsule["beneficiary_id"], first=first)
    for sealed_row in rows:
        del sealed_row["heir_ids"], sealed_row["heir_allocations"], sealed_row["heir_names"]
        row = sealed_text.open_row(ring, table="assets", row=sealed_row)
        audience = row.pop("audience_ids")
        if row["amount"] is None:  # a thing: whole, to everyone it is for
            row["share"], row["shared_with"] = None, together.others(audience=audience)
        else:
            row["amount"] = Decimal(str(row["amount"]))
            row["share"] = heir.share_among(amount=row["amount"], audience=audience)
            row["shared_with"] = None
        assets.append(as_record(CapsuleAsset, row=row))
    return {
        "released_at": released_at,
        "owner_name": capsule["owner_name"],
        "name": capsule["name"],
        "relationship": capsule["relationship"],
        "allocation_percentage": capsule["allocation_percentage"],
        "grammatical_gender": capsule["grammatical_gender"],
        "owner_gender": capsule["owner_gender"],
        "wallet": wallet(capsule=capsule),
        "messages": opened,
        "sealed_messages": sealed,
        "documents": documents,
        "assets": assets,
    }


# (beneficiary id, UTC day) pairs this process has already put on the timeline: after the
# first open of the day a capsule GET writes nothing. The table is the rule across processes.
_OPENED_TODAY: OrderedDict[tuple[str, date], None] = OrderedDict()
_OPENED_TODAY_MAX = 65536


async def _record_open(pool: Pool, *, capsule: Capsule, day: date) -> None:
    """`capsule.opened` on the owner's timeline, at most once per beneficiary per UTC day."""
    key = (capsule["beneficiary_id"], day)
    if key in _OPENED_TODAY:
        return
    async with transaction(pool) as cur:
        await cur.execute(
            "INSERT INTO capsule_opens (beneficiary_id, day) VALUES (%s, %s)"
            " ON CONFLICT DO NOTHING RETURNING beneficiary_id",
            key,
        )
        if await cur.fetchone() is not None:
            await activity.record(
                cur,
                user_id=capsule["owner_id"],
                kind="capsule.opened",
                entity_id=capsule["beneficiary_id"],
                summary=N_("A beneficiary opened their capsule"),
            )
    _OPENED_TODAY[key] = None
    if len(_OPENED_TODAY) > _OPENED_TODAY_MAX:
        _OPENED_TODAY.popitem(last=False)


async def contents(
    pool: Pool, ring: KeyRing, *, capsule: Capsule, now: datetime, opened: bool = True
) -> Contents:
    """A released capsule's contents as of `now`; `opened` puts the open on the owner's
    timeline (not for a HEAD, which receives nothing)."""
    released_at = capsule["released_at"]
    if not is_released(capsule=capsule) or released_at is None:
        raise ValueError("the capsule is locked")
    async with autocommit(pool) as cur:
        result = await _read_contents(cur, ring, capsule=capsule, released_at=released_at, now=now)
    if opened:
        await _record_open(pool, capsule=capsule, day=now.astimezone(UTC).date())
    return result


class View(TypedDict):
    """What a claim token shows, by state: `ready` or `contents` is set for those states only."""

    status: str  # locked | ready | released
    ready: Ready | None
    contents: Contents | None


async def view(pool: Pool, ring: KeyRing, *, capsule: Capsule, now: datetime, opened: bool = True) -> View:
    """The one answer to "what does this link show now", for the JSON capsule and any page
    rendered from it: locked (nothing), ready (no contents), or released (the contents)."""
    status = state(capsule=capsule)
    if status == READY:
        return {"status": status, "ready": ready(capsule=capsule), "contents": None}
    if status == RELEASED_STATE:
        found = await contents(pool, ring, capsule=capsule, now=now, opened=opened)
        return {"status": status, "ready": None, "contents": found}
    return {"status": LOCKED, "ready": None, "contents": None}


async def preview(
    pool: Pool, ring: KeyRing, *, owner_id: str, raw_beneficiary_id: str, now: datetime
) -> Contents:
    """The owner's rehearsal: this beneficiary's capsule as if the plan were released at `now`."""
    beneficiary_id = parse_id(raw=raw_beneficiary_id, what="Beneficiary")
    async with autocommit(pool) as cur:
        await cur.execute(f"{CAPSULE_SQL} WHERE b.id = %s AND b.user_id = %s", (beneficiary_id, owner_id))
        row = await cur.fetchone()
        if row is None:
            raise NotFound("Beneficiary")
        capsule = _capsule(ring, row)
        return await _read_contents(cur, ring, capsule=capsule, released_at=now, now=now)
