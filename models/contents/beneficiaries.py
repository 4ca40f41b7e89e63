"""Beneficiaries: who receives a share of the plan, and the claim token that opens their capsule.

The claim token is the capsule's only credential. Its row is written here (digest and sealed
value: models.claim_tokens, how it is minted, digested and sealed), so the owner can be shown it
again while a database dump alone opens nothing. It never enters activity metadata or errors.

Name, relationship and email are sealed at rest (models/sealed_text.py); the email also has a
keyed blind index (`email_bidx`) to find a beneficiary by address (`sealed_text.blind_index_candidates`).
Allocation percentages stay NUMERIC: the 100% rule sums them in SQL (docs/sealed-text.md).

Allocations of one owner may total at most 100%; every write that can raise the total takes
the owner's advisory lock first, so concurrent creates cannot both pass the check.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Iterator
from datetime import datetime
from decimal import Decimal
from typing import Any, TypedDict

import psycopg2.errors
from arq.connections import ArqRedis

from core.db import Cursor, Pool, autocommit, transaction, unless_duplicate
from core.errors import Conflict, NotFound, validation_error
from core.files.crypto import IntegrityError, KeyRing
from core.text.i18n import N_
from models import activity, common, plans, sealed_text
from models.claim_tokens import (
    claim_token_digest,
    new_claim_token,
    open_claim_token,
    reseal_claim_token,
    seal_claim_token,
)
from models.common import OwnedRows, as_record, changed_values, lock_owner, parse_id, update_row, wire_names
from models.contents import early_links, messages
from models.delivery import outbox, owner_notices
from models.delivery.budget import Budget

ALLOCATION_LOCK = "allocations"
MAX_TOTAL = Decimal(100)
PLAIN = (
    "allocation_percentage",
    "wallet_address",
    "email_confirmed_at",
    "locale",
    "time_zone",
    "grammatical_gender",
)


def _select(alias: str) -> str:
    """A beneficiary's public columns, qualified by `alias` (the table's name, or the owner's
    reads' alias, which join the plan)."""
    plain = ", ".join(f"{alias}.{column}" for column in (*PLAIN, "created_at", "updated_at"))
    texts = sealed_text.select_list(table="beneficiaries", alias=alias)
    return f"{alias}.id, {alias}.user_id, {texts}, {plain}"


PUBLIC_COLUMNS = _select("beneficiaries")
COLUMNS = f"{PUBLIC_COLUMNS}, beneficiaries.claim_token_sealed"
EDITABLE = (
    "name",
    "relationship",
    "email",
    "allocation_percentage",
    "wallet_address",
    "locale",
    "time_zone",
    "grammatical_gender",
)
WRITABLE_COLUMNS = (*sealed_text.writable(table="beneficiaries", columns=EDITABLE), "email_confirmed_at")
WALLET_TAKEN = "This wallet is already recorded for another of your beneficiaries"


class BeneficiaryPublic(TypedDict):
    """A beneficiary without its claim token (what a capsule link finds)."""

    id: str
    user_id: str
    name: str
    relationship: str
    email: str
    allocation_percentage: Decimal
    # The wallet that claims on-chain: set by the owner, or bound by the first confirmed claim.
    wallet_address: str | None
    # When the heir confirmed their current address by its link; None after a change.
    email_confirmed_at: datetime | None
    locale: str | None  # their language (one of LANGUAGES when set); None: emails in English
    time_zone: str | None  # an IANA name; None: UTC
    # How to refer to them where a language marks it (core.text.gender.GENDERS); None: not said.
    grammatical_gender: str | None
    created_at: datetime
    updated_at: datetime


class Beneficiary(BeneficiaryPublic):
    """The owner's view: with the claim token, opened from its sealed column; None once the plan
    is released (the heirs hold their own links; the owner's key opens none of them)."""

    claim_token: str | None


@contextlib.contextmanager
def _wallet_unique() -> Iterator[None]:
    """One wallet per beneficiary within a plan (the unique index decides, race-free): 409."""
    try:
        yield
    except psycopg2.errors.UniqueViolation as exc:
        if exc.diag.constraint_name == "beneficiaries_wallet_idx":
            raise Conflict(WALLET_TAKEN) from None
        raise


# How a wallet the owner records is bound (docs/soroban.md "Beneficiary wallets"): by the
# owner, from now; none when the owner clears it. Two parameters: the wallet, twice.
_OWNER_BINDING = (
    "CASE WHEN %s::text IS NULL THEN NULL ELSE 'owner' END,"
    " CASE WHEN %s::text IS NULL THEN NULL ELSE clock_timestamp() END"
)


async def _bind_by_owner(cur: Cursor, row_id: str, wallet_address: str | None) -> None:
    """The wallet and how it is bound change in one statement (a CHECK keeps them together)."""
    await cur.execute(
        "UPDATE beneficiaries SET (wallet_address, wallet_bound_via, wallet_bound_at)"
        f" = (%s, {_OWNER_BINDING}) WHERE id = %s",
        (wallet_address, wallet_address, wallet_address, row_id),
    )


async def bind_wallet(
    cur: Cursor, *, beneficiary_id: str, wallet_address: str, via: str, now: datetime
) -> bool:
    """Bind the wallet this beneficiary claims with (`via`: proven, guardians); False when
    another beneficiary of the same owner holds it already (unique per owner), nothing changed."""
    return await unless_duplicate(
        cur,
        "UPDATE beneficiaries SET wallet_address = %s, wallet_bound_via = %s,"
        " wallet_bound_at = %s, updated_at = clock_timestamp() WHERE id = %s",
        (wallet_address, via, now, beneficiary_id),
    )


async def set_confirmed_email(
    cur: Cursor, ring: KeyRing, *, beneficiary_id: str, email: str, now: datetime
) -> None:
    """A corrected address the heir confirmed themselves (models.plan.guardianships.address_changes)."""
    values = sealed_text.sealed_values(
        ring, table="beneficiaries", row_id=beneficiary_id, values={"email": email}
    )
    await cur.execute(
        "UPDATE beneficiaries SET email_sealed = %s, email_bidx = %s, email_confirmed_at = %s,"
        " updated_at = clock_timestamp() WHERE id = %s",
        (values["email_sealed"], values["email_bidx"], now, beneficiary_id),
    )


def _with_token(ring: KeyRing, row: dict[str, Any]) -> Beneficiary:
    """The record the owner sees: sealed texts and the sealed token opened."""
    record = sealed_text.open_row(ring, table="beneficiaries", row=row)
    sealed = record.pop("claim_token_sealed")
    released = record.pop("plan_released", False)
    record["claim_token"] = (
        None if released else open_claim_token(ring, sealed=sealed, beneficiary_id=record["id"])
    )
    return as_record(Beneficiary, row=record)


def _percent(value: Decimal) -> str:
    return format(value.normalize(), "f")


async def _check_allocation(cur: Cursor, user_id: str, new: Decimal, row_id: str | None = None) -> None:
    """400 if this value would push the owner's total past 100%. Call under ALLOCATION_LOCK."""
    await cur.execute(
        "SELECT COALESCE(sum(allocation_percentage), 0) AS total,"
        " COALESCE(sum(allocation_percentage) FILTER (WHERE id = %s), 0) AS own"
        " FROM beneficiaries WHERE user_id = %s",
        (row_id, user_id),
    )
    sums = await cur.fetchone()
    proposed = sums["total"] - sums["own"] + new
    if proposed > MAX_TOTAL:
        raise validation_error(
            {
                "allocationPercentage": [
                    f"Allocations may total at most 100%: the current total is {_percent(sums['total'])}%, "
                    f"and this would make it {_percent(proposed)}%."
                ]
            }
        )


# The owner's reads also say whether the plan is released: then no claim token is opened
# (docs/security.md, "A released account holds no keys to the heirs"). A join, found by the
# plans' user_id index once per page: as an EXISTS in the select list, PostgreSQL hashed every
# released plan of the service for each list.
ROWS = OwnedRows(
    table="beneficiaries",
    alias="b",
    joins=" LEFT JOIN plans released ON released.user_id = b.user_id AND released.status = 'Released'",
    columns=f"{_select('b')}, b.claim_token_sealed, released.id IS NOT NULL AS plan_released",
    what="Beneficiary",
    record=_with_token,
)
# The owner's list and one row by id (GET routes), as models.common.OwnedRows reads them.
list_page = ROWS.list_page
get = ROWS.get


async def create(
    pool: Pool,
    ring: KeyRing,
    redis: ArqRedis,
    *,
    user_id: str,
    data: dict[str, Any],
    now: datetime,
    budget: Budget,
) -> Beneficiary:
    """A new heir; on an Active plan whose owner chose so, they are emailed their link now."""
    beneficiary_id = str(uuid.uuid4())
    token = new_claim_token()
    texts = sealed_text.sealed_values(
        ring,
        table="beneficiaries",
        row_id=beneficiary_id,
        values={c: data[c] for c in ("name", "relationship", "email")},
    )
    async with transaction(pool) as cur:
        await lock_owner(cur, scope=ALLOCATION_LOCK, user_id=user_id)
        await plans.guard_contents(cur, user_id=user_id)
        await _check_allocation(cur, user_id, data["allocation_percentage"])
        with _wallet_unique():
            await cur.execute(
                "INSERT INTO beneficiaries (id, user_id, name_sealed, relationship_sealed, email_sealed,"
                " email_bidx, allocation_percentage, wallet_address, claim_token_hash, claim_token_sealed,"
                " wallet_bound_via, wallet_bound_at, time_zone, grammatical_gender, locale)"
                " VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s,"
                f" {_OWNER_BINDING}, %s, %s, {common.OWNERS_LOCALE_UNLESS_SENT}) RETURNING {COLUMNS}",
                (
                    beneficiary_id,
                    user_id,
                    texts["name_sealed"],
                    texts["relationship_sealed"],
                    texts["email_sealed"],
                    texts["email_bidx"],
                    data["allocation_percentage"],
                    data.get("wallet_address"),
                    claim_token_digest(token=token),
                    seal_claim_token(ring, beneficiary_id=beneficiary_id, token=token),
                    data.get("wallet_address"),
                    data.get("wallet_address"),
                    data.get("time_zone"),
                    data.get("grammatical_gender"),
                    *common.owners_locale_unless_sent(data=data, user_id=user_id),
                ),
            )
        row = await cur.fetchone()
        await activity.record(
            cur,
            user_id=user_id,
            kind="beneficiary.created",
            entity_id=beneficiary_id,
            summary=N_("Beneficiary added"),
            metadata={"fields": wire_names(columns=(c for c in EDITABLE if c in data))},
        )
        await owner_notices.tell_owner(
            cur, ring, user_id=user_id, change="beneficiary_added", name=data["name"], now=now
        )
        plan = await plans.get(cur, user_id=user_id)
        told = (
            []
            if plan is None
            else await early_links.send_in(
                cur, plan=plan, now=now, budget=budget, beneficiary_id=beneficiary_id
            )
        )
    await outbox.enqueue(redis, row_ids=told)
    return _with_token(ring, row)


async def update(
    pool: Pool,
    ring: KeyRing,
    redis: ArqRedis,
    *,
    user_id: str,
    raw_id: str,
    changes: dict[str, Any],
    now: datetime,
    budget: Budget,
) -> Beneficiary:
    """Apply the fields given; unchanged writes nothing. A new address or wallet is told to the owner
    (models.delivery.owner_notices); an heir told early gets their link again at a new address."""
    row_id = parse_id(raw=raw_id, what="Beneficiary")
    told_again: list[str] = []
    async with transaction(pool) as cur:
        if "allocation_percentage" in changes:
            await lock_owner(cur, scope=ALLOCATION_LOCK, user_id=user_id)
        await plans.guard_contents(cur, user_id=user_id)
        row = await ROWS.row(cur, user_id=user_id, row_id=row_id, lock=True)
        current = sealed_text.open_row(ring, table="beneficiaries", row=row)
        diff = changed_values(current=current, changes={c: changes[c] for c in EDITABLE if c in changes})
        if "allocation_percentage" in diff:
            await _check_allocation(cur, user_id, diff["allocation_percentage"], row_id)
        if diff:
            values = sealed_text.sealed_values(ring, table="beneficiaries", row_id=row_id, values=diff)
            if "email" in diff:
                values["email_confirmed_at"] = None  # a new address is not confirmed
            with _wallet_unique():
                if "wallet_address" in values:
                    await _bind_by_owner(cur, row_id, values["wallet_address"])
                row = await update_row(
                    cur,
                    table="beneficiaries",
                    row_id=row_id,
                    values=values,
                    allowed=WRITABLE_COLUMNS,
                    returning=COLUMNS,
                )
            await activity.record(
                cur,
                user_id=user_id,
                kind="beneficiary.updated",
                entity_id=row_id,
                summary=N_("Beneficiary details updated"),
                metadata={"fields": wire_names(columns=diff)},
            )
            name = sealed_text.open_row(ring, table="beneficiaries", row=row)["name"]
            told: tuple[tuple[str, owner_notices.Change], ...] = (
                ("email", "beneficiary_email"),
                ("wallet_address", "beneficiary_wallet"),
            )
            for column, change in told:
                if column in diff:
                    await owner_notices.tell_owner(
                        cur, ring, user_id=user_id, change=change, name=name, now=now
                    )
            if "email" in diff and (plan := await plans.get(cur, user_id=user_id)) is not None:
                told_again = await early_links.send_in(
                    cur, plan=plan, now=now, budget=budget, beneficiary_id=row_id, readdressed=True
                )
    await outbox.enqueue(redis, row_ids=told_again)
    return _with_token(ring, row)


async def rotate_claim_token(pool: Pool, ring: KeyRing, *, user_id: str, raw_id: str) -> Beneficiary:
    """Replace the token; the old digest is gone once this commits, so the old link stops working."""
    row_id = parse_id(raw=raw_id, what="Beneficiary")
    token = new_claim_token()
    async with transaction(pool) as cur:
        await plans.guard_contents(cur, user_id=user_id)
        await cur.execute(
            "UPDATE beneficiaries SET claim_token_hash = %s, claim_token_sealed = %s,"
            f" updated_at = clock_timestamp() WHERE id = %s AND user_id = %s RETURNING {COLUMNS}",
            (
                claim_token_digest(token=token),
                seal_claim_token(ring, beneficiary_id=row_id, token=token),
                row_id,
                user_id,
            ),
        )
        row = await cur.fetchone()
        if row is None:
            raise NotFound("Beneficiary")
        await activity.record(
            cur,
            user_id=user_id,
            kind="beneficiary.claim_token_rotated",
            entity_id=row_id,
            summary=N_("Beneficiary's claim link renewed; the previous link no longer works"),
            metadata={"fields": ["claimToken"]},
        )
    return _with_token(ring, row)


async def delete(pool: Pool, ring: KeyRing, *, user_id: str, raw_id: str, now: datetime) -> None:
    """Delete the beneficiary and take it out of every message audience (see docs/plan-contents.md)."""
    row_id = parse_id(raw=raw_id, what="Beneficiary")
    async with transaction(pool) as cur:
        await lock_owner(cur, scope=ALLOCATION_LOCK, user_id=user_id)
        await plans.guard_contents(cur, user_id=user_id)
        removed = sealed_text.open_row(
            ring, table="beneficiaries", row=await ROWS.row(cur, user_id=user_id, row_id=row_id, lock=True)
        )
        affected, emptied = await messages.remove_from_audiences(cur, beneficiary_id=row_id)
        await cur.execute("DELETE FROM beneficiaries WHERE id = %s AND user_id = %s", (row_id, user_id))
        await plans.guard_removal(cur, user_id=user_id, table="beneficiaries")
        await activity.record(
            cur,
            user_id=user_id,
            kind="beneficiary.deleted",
            entity_id=row_id,
            summary=messages.removed_heir_summary(emptied=len(emptied)),
            metadata={"messageIds": affected, "messagesWithoutAudience": emptied},
        )
        await owner_notices.tell_owner(
            cur, ring, user_id=user_id, change="beneficiary_removed", name=removed["name"], now=now
        )


async def reseal_claim_tokens(pool: Pool, ring: KeyRing, *, batch: int = 500) -> tuple[int, int]:
    """Re-seal tokens still sealed under an older ENCRYPTION_KEYS entry with the primary key.

    Returns (resealed, unopenable). Once both are 0 no claim token needs the old key, which can
    then leave the ring. The token itself does not change: links already shared keep working.
    The guarded UPDATE skips a row whose token was rotated meanwhile.
    """
    prefix = f"{ring.primary_id}."
    resealed = unopenable = 0
    after = "00000000-0000-0000-0000-000000000000"
    while True:
        async with autocommit(pool) as cur:
            await cur.execute(
                "SELECT id, claim_token_sealed FROM beneficiaries"
                " WHERE NOT starts_with(claim_token_sealed, %s) AND id > %s ORDER BY id LIMIT %s",
                (prefix, after, batch),
            )
            rows = await cur.fetchall()
        if not rows:
            return resealed, unopenable
        for row in rows:
            after = row["id"]
            try:
                sealed = reseal_claim_token(ring, sealed=row["claim_token_sealed"], beneficiary_id=row["id"])
            except IntegrityError:
                unopenable += 1
                continue
            async with transaction(pool) as cur:
                await cur.execute(
                    "UPDATE beneficiaries SET claim_token_sealed = %s"
                    " WHERE id = %s AND claim_token_sealed = %s",
                    (sealed, row["id"], row["claim_token_sealed"]),
                )
                resealed += cur.rowcount


async def confirm_email(
    cur: Cursor, *, beneficiary_id: str, email_bidx: bytes | None, now: datetime
) -> str | None:
    """Mark the heir's address confirmed, if it is still the one the link went to (same blind
    index); the owner's id, or None when the address changed since."""
    await cur.execute(
        "UPDATE beneficiaries SET email_confirmed_at = %s WHERE id = %s AND email_bidx = %s"
        " RETURNING user_id::text AS user_id",
        (now, beneficiary_id, email_bidx),
    )
    row = await cur.fetchone()
    return None if row is None else str(row["user_id"])


async def find_by_email(cur: Cursor, ring: KeyRing, *, email: str) -> list[str]:
    """Ids of the beneficiaries registered with this address (any owner), compared trimmed and
    case-insensitive. The one lookup by address (POST /api/claim/resend): through the keyed
    blind index of the sealed address (one candidate per key of the ring, so a row indexed
    before a key rotation is found too)."""
    candidates = sealed_text.blind_index_candidates(ring, table="beneficiaries", column="email", value=email)
    await cur.execute(
        "SELECT id::text AS id FROM beneficiaries WHERE email_bidx = ANY(%s) ORDER BY id", (candidates,)
    )
    return [row["id"] for row in await cur.fetchall()]


async def choose_own_gender(pool: Pool, *, beneficiary_id: str, gender: str | None) -> None:
    """The heir's own choice, from their page, of how we refer to them (core.text.gender.GENDERS;
    None: not said). On the owner's timeline as the field, never its value; the same choice again
    writes nothing."""
    async with transaction(pool) as cur:
        await cur.execute(
            "UPDATE beneficiaries SET grammatical_gender = %s, updated_at = clock_timestamp()"
            " WHERE id = %s AND grammatical_gender IS DISTINCT FROM %s RETURNING user_id::text AS user_id",
            (gender, beneficiary_id, gender),
        )
        row = await cur.fetchone()
        if row is not None:
            await activity.record(
                cur,
                user_id=row["user_id"],
                kind="beneficiary.gender_chosen",
                entity_id=beneficiary_id,
                summary=N_("A beneficiary chose, on their page, how we refer to them"),
                metadata={"fields": ["grammaticalGender"]},
            )
