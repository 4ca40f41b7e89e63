"""Guardians: people who confirm, independently of the owner, that a release is warranted,
with the Stellar wallet the owner recorded (listed once per owner, never the owner's own) or,
without one, the passkey they register on their page (models.contents.guardian_passkeys).
Name, email and relationship are sealed at rest (models/sealed_text.py); the wallet is public.
An invitation is emailed; they count once they accept. A new wallet clears their answer and
their passkeys. Decisions: docs/lifecycle.md ("Guardians say yes"), docs/security.md."""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta
from typing import Any, TypedDict

import psycopg2.errors
from arq.connections import ArqRedis

from core.db import Cursor, Pool, transaction
from core.errors import Conflict, validation_error
from core.files.crypto import KeyRing
from core.text.i18n import N_
from models import activity, common, guardian_links, plans, sealed_text
from models.common import OwnedRows, as_record, changed_values, parse_id, update_row, wire_names
from models.contents import guardian_passkeys
from models.delivery import outbox, owner_notices
from models.delivery.budget import Budget

COLUMNS = (
    f"id, user_id, {sealed_text.select_list(table='guardians', alias='guardians')}, wallet_address, locale,"
    " time_zone, grammatical_gender,"
    " created_at, updated_at, invited_at, accepted_at, declined_at, reconfirmed_at, unresponsive_since,"
    # How they answer: a wallet the owner recorded, else the passkey they registered, else not yet.
    " CASE WHEN wallet_address IS NOT NULL THEN 'wallet' WHEN EXISTS (SELECT 1 FROM guardian_passkeys k"
    " WHERE k.guardian_id = guardians.id) THEN 'passkey' END AS proof"
)
EDITABLE = ("name", "email", "wallet_address", "relationship", "locale", "time_zone", "grammatical_gender")
WRITABLE_COLUMNS = sealed_text.writable(table="guardians", columns=EDITABLE)
DUPLICATE = "This wallet is already one of your guardians"
REINVITE_REFUSED = (
    "A guardian cannot be invited again during a verification: the other guardians and the deadline "
    "carry this round. Once it ends, invite them again."
)


class Guardian(TypedDict):
    """A row of `guardians`, as the owner sees it."""

    id: str
    user_id: str
    name: str
    email: str
    wallet_address: str | None  # None: they answer with a passkey from their page
    relationship: str | None
    locale: str | None  # their language (one of LANGUAGES when set); None: emails in English
    time_zone: str | None  # an IANA name; None: UTC
    # How to refer to them where a language marks it (core.text.gender.GENDERS); None: not said.
    grammatical_gender: str | None
    created_at: datetime
    updated_at: datetime
    invited_at: datetime | None
    accepted_at: datetime | None  # None until they accept; a new wallet address clears it
    declined_at: datetime | None
    reconfirmed_at: datetime | None  # when they last confirmed they can still act
    unresponsive_since: datetime | None  # asked to confirm, no answer within the grace
    proof: str | None  # "wallet", "passkey", or None: no wallet and no passkey yet


async def record_answer(
    cur: Cursor, *, guardian_id: str, accept: bool, now: datetime, reconfirm_after: timedelta
) -> None:
    """The guardian's answer to the invitation: accepting clears a decline and the reverse. An
    acceptance is asked to be confirmed `reconfirm_after` later (GUARDIAN_RECONFIRM_INTERVAL_SECONDS)."""
    await cur.execute(
        "UPDATE guardians SET accepted_at = %s, declined_at = %s, reconfirm_asked_at = NULL,"
        " unresponsive_since = NULL, reconfirm_due_at = %s WHERE id = %s",
        (
            now if accept else None,
            None if accept else now,
            now + reconfirm_after if accept else None,
            guardian_id,
        ),
    )


async def record_reconfirmed(
    cur: Cursor, *, guardian_ids: list[str], now: datetime, next_ask: datetime
) -> None:
    """The guardian confirmed they can still act: not unresponsive any more, asked again at `next_ask`."""
    await cur.execute(
        "UPDATE guardians SET reconfirmed_at = %s, reconfirm_asked_at = NULL, unresponsive_since = NULL,"
        " reconfirm_due_at = %s WHERE id = ANY(%s::uuid[])",
        (now, next_ask, guardian_ids),
    )


class ReconfirmDue(TypedDict):
    """A guardian the reconfirmation sweep has something to do for (locked for the caller)."""

    id: str
    user_id: str
    plan_id: str
    plan_status: str
    wallet_address: str
    reconfirm_asked_at: datetime | None
    unresponsive_since: datetime | None


# The sweep's query (now, limit): tests/test_guardian_reconfirm.py checks its plan uses the index.
DUE_FOR_RECONFIRM = (
    "SELECT g.id::text AS id, g.user_id::text AS user_id, p.id::text AS plan_id, p.status AS plan_status,"
    " g.wallet_address, g.reconfirm_asked_at, g.unresponsive_since"
    " FROM guardians g JOIN plans p ON p.user_id = g.user_id"
    " WHERE g.reconfirm_due_at <= %s ORDER BY g.reconfirm_due_at LIMIT %s FOR UPDATE OF g SKIP LOCKED"
)


async def due_for_reconfirm(cur: Cursor, *, now: datetime, limit: int) -> list[ReconfirmDue]:
    """Accepted guardians whose reconfirmation step is due, oldest first, locked `SKIP LOCKED`
    (another worker's are left to it). Walks the partial index on `reconfirm_due_at`."""
    await cur.execute(DUE_FOR_RECONFIRM, (now, limit))
    return [as_record(ReconfirmDue, row=row) for row in await cur.fetchall()]


async def set_reconfirm_step(
    cur: Cursor,
    *,
    guardian_id: str,
    asked_at: datetime | None,
    unresponsive_since: datetime | None,
    due: datetime | None,
) -> None:
    """Where a guardian's reconfirmation stands: asked (and when), unresponsive (since when), next due."""
    await cur.execute(
        "UPDATE guardians SET reconfirm_asked_at = %s, unresponsive_since = %s, reconfirm_due_at = %s"
        " WHERE id = %s",
        (asked_at, unresponsive_since, due, guardian_id),
    )


async def _invite(
    cur: Cursor,
    ring: KeyRing,
    *,
    user_id: str,
    guardian_id: str,
    now: datetime,
    budget: Budget,
    plan_defaults: plans.NewPlan | None = None,
) -> tuple[Guardian, str | None]:
    """Ask (again) from now: any earlier answer is cleared. Returns the row and the outbox id;
    None while the owner has no name: the invitation would not say whose plan it is, and
    reads like phishing. It goes when the owner adds one (`invite_waiting`); until then
    `invited_at` is null."""
    await cur.execute("SELECT name_sealed IS NOT NULL AS named FROM users WHERE id = %s", (user_id,))
    named = bool((await cur.fetchone())["named"])
    await cur.execute(
        "UPDATE guardians SET invited_at = %s, accepted_at = NULL, declined_at = NULL, reconfirmed_at = NULL,"
        " reconfirm_asked_at = NULL, unresponsive_since = NULL, reconfirm_due_at = NULL WHERE id = %s"
        f" RETURNING {COLUMNS}",
        (now if named else None, guardian_id),
    )
    row = _record(ring, await cur.fetchone())
    if not named:
        return row, None
    plan = await plans.get_or_create(cur, user_id=user_id, defaults=plan_defaults)
    row_id = await outbox.add(
        cur,
        kind="guardian_invitation",
        plan_id=plan["id"],
        recipient_type="guardian",
        recipient_id=row["id"],
        now=now,
        budget=budget,
        # When guardians would be asked (in days) and what the deadline does then, as the plan stands.
        context={
            "walletAddress": row["wallet_address"],
            "silenceDays": (plan["check_in_interval_seconds"] + plan["grace_period_seconds"]) // 86400,
            "onTimeout": plan["on_verification_timeout"],
            "deadlineDays": (plan["verification_timeout_seconds"] or 0) // 86400 or None,
        },
    )
    return row, row_id


async def invite_waiting(
    cur: Cursor, ring: KeyRing, *, user_id: str, now: datetime, budget: Budget
) -> list[str]:
    """The owner now has a name: every guardian whose invitation waited for it is invited.
    Returns the outbox row ids to enqueue after COMMIT."""
    await cur.execute(
        "SELECT id FROM guardians WHERE user_id = %s AND invited_at IS NULL AND accepted_at IS NULL"
        " AND declined_at IS NULL ORDER BY created_at, id FOR UPDATE",
        (user_id,),
    )
    row_ids = []
    for waiting in await cur.fetchall():
        _, row_id = await _invite(
            cur, ring, user_id=user_id, guardian_id=waiting["id"], now=now, budget=budget
        )
        if row_id is not None:
            row_ids.append(row_id)
            await activity.record(
                cur,
                user_id=user_id,
                kind="guardian.invited",
                entity_id=waiting["id"],
                summary=N_("Guardian invited, now that your profile says whose plan it is"),
            )
    return row_ids


async def _check_not_owner(cur: Cursor, user_id: str, wallet_address: str | None) -> None:
    if wallet_address is None:
        return
    await cur.execute(
        "SELECT 1 FROM user_wallets WHERE user_id = %s AND wallet_address = %s", (user_id, wallet_address)
    )
    if await cur.fetchone() is not None:
        raise validation_error(
            {"walletAddress": ["This is one of your own wallets; a guardian must be someone else."]}
        )


def _record(ring: KeyRing, row: dict[str, Any]) -> Guardian:
    return as_record(Guardian, row=sealed_text.open_row(ring, table="guardians", row=row))


ROWS = OwnedRows(table="guardians", columns=COLUMNS, what="Guardian", record=_record)
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
    plan_defaults: plans.NewPlan | None = None,
) -> Guardian:
    """Add a guardian and invite them; the owner's plan is created (with `plan_defaults`) if it
    does not exist yet: the invitation belongs to it. An Active plan it leaves short of accepted
    guardians is told to the owner (owner_notices.guardians_short)."""
    guardian_id = str(uuid.uuid4())
    texts = sealed_text.sealed_values(
        ring,
        table="guardians",
        row_id=guardian_id,
        values={c: data.get(c) for c in ("name", "email", "relationship")},
    )
    async with transaction(pool) as cur:
        await plans.guard_contents(cur, user_id=user_id)
        await _check_not_owner(cur, user_id, data.get("wallet_address"))
        short = await owner_notices.short_now(cur, user_id=user_id)
        try:
            await cur.execute(
                "INSERT INTO guardians (id, user_id, name_sealed, email_sealed, email_bidx, wallet_address,"
                " relationship_sealed, time_zone, grammatical_gender, locale) VALUES (%s, %s, %s, %s, %s, %s,"
                f" %s, %s, %s, {common.OWNERS_LOCALE_UNLESS_SENT}) RETURNING {COLUMNS}",
                (
                    guardian_id,
                    user_id,
                    texts["name_sealed"],
                    texts["email_sealed"],
                    texts["email_bidx"],
                    data.get("wallet_address"),
                    texts["relationship_sealed"],
                    data.get("time_zone"),
                    data.get("grammatical_gender"),
                    *common.owners_locale_unless_sent(data=data, user_id=user_id),
                ),
            )
        except psycopg2.errors.UniqueViolation:
            raise Conflict(DUPLICATE) from None
        row, invitation = await _invite(
            cur,
            ring,
            user_id=user_id,
            guardian_id=guardian_id,
            now=now,
            budget=budget,
            plan_defaults=plan_defaults,
        )
        await activity.record(
            cur,
            user_id=user_id,
            kind="guardian.created",
            entity_id=row["id"],
            summary=N_("Guardian added and invited")
            if invitation
            else N_("Guardian added; the invitation goes once your profile has your name"),
            metadata={"fields": wire_names(columns=(c for c in EDITABLE if c in data))},
        )
        await owner_notices.tell_owner(
            cur, ring, user_id=user_id, change="guardian_added", name=row["name"], now=now
        )
        told = await owner_notices.guardians_short(
            cur, user_id=user_id, now=now, cause="added", short_before=short
        )
    await outbox.enqueue(redis, row_ids=([invitation] if invitation else []) + told)
    return row


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
) -> Guardian:
    """Apply the fields given; an unchanged value writes nothing and records nothing. A new
    wallet address asks the guardian again (their answer was for the old one); a new email
    address of a guardian who has not answered sends the invitation there."""
    row_id = parse_id(raw=raw_id, what="Guardian")
    invitations: list[str] = []
    async with transaction(pool) as cur:
        await plans.guard_contents(cur, user_id=user_id)
        row = await ROWS.one(cur, ring, user_id=user_id, row_id=row_id, lock=True)
        diff = changed_values(current=row, changes={c: changes[c] for c in EDITABLE if c in changes})
        if "wallet_address" in diff:
            await _check_not_owner(cur, user_id, diff["wallet_address"])
        if diff:
            row = await _write(cur, ring, row_id=row_id, diff=diff)
            row, invitation = await _after_change(
                cur, ring, user_id=user_id, row_id=row_id, row=row, diff=diff, now=now, budget=budget
            )
            invitations += [invitation] if invitation else []
    await outbox.enqueue(redis, row_ids=invitations)
    return row


async def _write(cur: Cursor, ring: KeyRing, *, row_id: str, diff: dict[str, Any]) -> Guardian:
    try:
        values = sealed_text.sealed_values(ring, table="guardians", row_id=row_id, values=diff)
        return _record(
            ring,
            await update_row(
                cur,
                table="guardians",
                row_id=row_id,
                values=values,
                allowed=WRITABLE_COLUMNS,
                returning=COLUMNS,
            ),
        )
    except psycopg2.errors.UniqueViolation:
        raise Conflict(DUPLICATE) from None


# The owner is told of a change to each of these (columns, what changed).
_TOLD: tuple[tuple[str, owner_notices.Change], ...] = (
    ("email", "guardian_email"),
    ("wallet_address", "guardian_wallet"),
)


async def _after_change(
    cur: Cursor,
    ring: KeyRing,
    *,
    user_id: str,
    row_id: str,
    row: Guardian,
    diff: dict[str, Any],
    now: datetime,
    budget: Budget,
) -> tuple[Guardian, str | None]:
    """What a written change sets off: a new page link, passkeys revoked, the invitation sent
    again, the timeline and the owner's notices. Returns the row and the invitation to enqueue."""
    invitation = None
    if "wallet_address" in diff or "email" in diff:
        await _new_page_link(cur, guardian_id=row_id)
    if "wallet_address" in diff:  # their passkeys answered for the old way of proving
        await guardian_passkeys.revoke_all(cur, guardian_id=row_id)
    unanswered = row["accepted_at"] is None and row["declined_at"] is None
    if "wallet_address" in diff or ("email" in diff and unanswered):
        row, invitation = await _invite(
            cur, ring, user_id=user_id, guardian_id=row_id, now=now, budget=budget
        )
    await activity.record(
        cur,
        user_id=user_id,
        kind="guardian.updated",
        entity_id=row_id,
        summary=N_("Guardian details updated and invited again")
        if invitation
        else N_("Guardian details updated"),
        metadata={"fields": wire_names(columns=diff)},
    )
    for column, change in _TOLD:
        if column in diff:
            await owner_notices.tell_owner(
                cur, ring, user_id=user_id, change=change, name=row["name"], now=now
            )
    return row, invitation


async def delete(
    pool: Pool, ring: KeyRing, redis: ArqRedis, *, user_id: str, raw_id: str, now: datetime
) -> None:
    """Remove a guardian; if that leaves an Active plan fewer accepted guardians than the
    approvals it needs, the owner is emailed (owner_notices.guardians_short)."""
    row_id = parse_id(raw=raw_id, what="Guardian")
    row_ids: list[str] = []
    async with transaction(pool) as cur:
        await plans.guard_contents(cur, user_id=user_id)
        removed = await ROWS.one(cur, ring, user_id=user_id, row_id=row_id, lock=True)
        await ROWS.delete(cur, user_id=user_id, row_id=row_id)
        await plans.guard_removal(cur, user_id=user_id, table="guardians")
        await activity.record(
            cur, user_id=user_id, kind="guardian.deleted", entity_id=row_id, summary=N_("Guardian removed")
        )
        row_ids += await owner_notices.guardians_short(cur, user_id=user_id, now=now, cause="removed")
        await owner_notices.tell_owner(
            cur, ring, user_id=user_id, change="guardian_removed", name=removed["name"], now=now
        )
    await outbox.enqueue(redis, row_ids=row_ids)


async def remember_pages(cur: Cursor, ring: KeyRing, *, rendered: list[tuple[str, int]]) -> None:
    """Store the digest of each guardian page link (guardian id, page version) rendered for the
    first time, under the ring's primary key; a version replaced meanwhile stays replaced."""
    key_id = ring.primary_id
    for guardian_id, version in dict.fromkeys(rendered):
        token = guardian_links.token_for(ring, key_id=key_id, guardian_id=guardian_id, version=version)
        await cur.execute(
            "UPDATE guardians SET page_key_id = %s, page_token_digest = %s"
            " WHERE id = %s AND page_version = %s AND page_token_digest IS NULL",
            (key_id, guardian_links.digest(token=token), guardian_id, version),
        )


async def _new_page_link(cur: Cursor, *, guardian_id: str) -> None:
    """The page link was for the old address, wallet or passkeys: it opens nothing from now on."""
    await cur.execute(
        "UPDATE guardians SET page_version = page_version + 1, page_key_id = NULL, page_token_digest = NULL"
        " WHERE id = %s",
        (guardian_id,),
    )


async def reinvite(
    pool: Pool, ring: KeyRing, redis: ArqRedis, *, user_id: str, raw_id: str, now: datetime, budget: Budget
) -> Guardian:
    """A guardian who lost their passkey (or their link) is invited again, while the plan is a
    draft or active: their passkeys are deleted, their old link opens nothing, a new one is
    emailed and they answer again. The owner is told. 409 during a verification: the other
    guardians and the deadline carry the round."""
    row_id = parse_id(raw=raw_id, what="Guardian")
    async with transaction(pool) as cur:
        plan = await plans.get(cur, user_id=user_id, lock=True)
        if plan is not None and plan["status"] == plans.RELEASED:
            raise Conflict("The plan has been released: there is nothing left for a guardian to answer.")
        if plan is not None and plan["status"] not in (plans.DRAFT, plans.ACTIVE):
            raise Conflict(REINVITE_REFUSED)
        await ROWS.one(cur, ring, user_id=user_id, row_id=row_id, lock=True)
        await guardian_passkeys.revoke_all(cur, guardian_id=row_id)
        await _new_page_link(cur, guardian_id=row_id)
        row, invitation = await _invite(
            cur, ring, user_id=user_id, guardian_id=row_id, now=now, budget=budget
        )
        await activity.record(
            cur,
            user_id=user_id,
            kind="guardian.reinvited",
            entity_id=row_id,
            summary=N_("Guardian invited again"),
        )
        await owner_notices.tell_owner(
            cur, ring, user_id=user_id, change="guardian_reinvited", name=row["name"], now=now
        )
    await outbox.enqueue(redis, row_ids=[invitation] if invitation else [])
    return row


async def choose_own_gender(pool: Pool, *, guardian_id: str, gender: str | None) -> None:
    """The guardian's own choice, from their page, of how we refer to them
    (core.text.gender.GENDERS; None: not said). On the owner's timeline as the field, never its
    value; the same choice again writes nothing."""
    async with transaction(pool) as cur:
        await cur.execute(
            "UPDATE guardians SET grammatical_gender = %s, updated_at = clock_timestamp()"
            " WHERE id = %s AND grammatical_gender IS DISTINCT FROM %s RETURNING user_id::text AS user_id",
            (gender, guardian_id, gender),
        )
        row = await cur.fetchone()
        if row is not None:
            await activity.record(
                cur,
                user_id=row["user_id"],
                kind="guardian.gender_chosen",
                entity_id=guardian_id,
                summary=N_("A guardian chose, on their page, how we refer to them"),
                metadata={"fields": ["grammaticalGender"]},
            )
