"""Which guardian row of a plan answers, and the gates every guardian action passes: 404 for a
plan it does not guard, 403 before it accepted, 409 for a Draft.

Who answers is either a signed-in account (the JSON routes: the row one of its wallets is) or
the guardian row a page resolved from its link and proved (`guardian_id`): the page passes the
row it found, so nothing is derived again from the account's wallets."""

from __future__ import annotations

from datetime import datetime
from typing import TypedDict

from core.db import Cursor, Pool, fetch_one
from core.errors import Conflict, Forbidden, NotFound
from core.files.crypto import KeyRing
from models import sealed_text
from models.common import as_record, live_account, parse_id
from models.plans import DRAFT, Plan, get_by_id


class Membership(TypedDict):
    """The guardian row (of the plan's owner) that one of the caller's wallets is."""

    guardian_id: str
    guardian_name: str
    wallet_address: str | None  # None: a guardian who answers with a passkey
    owner_wallet: str
    accepted_at: datetime | None


class Answerer(TypedDict):
    """A guardian as their page resolved them from its link, in one read: the row, its owner
    and the owner's plan. Passed on as it is to whatever the answer runs."""

    guardian_id: str
    wallet_address: str | None
    accepted_at: datetime | None
    owner_id: str
    owner_wallet: str
    plan_id: str | None
    status: str | None
    verification_round: int
    locale: str | None  # the guardian's language and zone as recorded: their page's refusals
    time_zone: str | None


# The plans the account (first parameter) guards; join more conditions with AND.
GUARDIAN_OF = (
    "FROM plans p JOIN guardians g ON g.user_id = p.user_id"
    " JOIN user_wallets w ON w.wallet_address = g.wallet_address AND w.user_id = %s"
    " JOIN users o ON o.id = p.user_id"
    # Never the owner's own account, even through a guardian wallet it linked later.
    " WHERE w.user_id <> p.user_id"
    # An owner whose account is being deleted guards nothing any more: the plan leaves the
    # guardian's list and every action on it is 404 from the moment the deletion is answered
    # (the guardian's goodbye email says why), never an owner shown as `deleted:<id>`.
    f" AND {live_account(alias='o')}"
)
# Of an account's guardian rows on one plan (two linked wallets), the accepted one acts first.
FIRST_ROW = "(g.accepted_at IS NULL), g.created_at"


async def plan_status(pool: Pool, *, user_id: str, raw_plan_id: str) -> str:
    """The status of a plan the caller guards, in one row ("unknown" if they guard none): what a
    guardian's report or approval answers with."""
    row = await fetch_one(
        pool,
        f"SELECT p.status {GUARDIAN_OF} AND p.id = %s LIMIT 1",
        (user_id, parse_id(raw=raw_plan_id, what="Plan")),
    )
    return "unknown" if row is None else str(row["status"])


_MEMBER_COLUMNS = (
    "SELECT g.id AS guardian_id,"
    f" {sealed_text.select_list(table='guardians', alias='g', columns=('name',), prefix='guardian_')},"
    " g.wallet_address, o.wallet_address AS owner_wallet, g.accepted_at "
)
# One guardian row of a plan by its id (what a guardian's page resolved from its link).
_ROW_OF = (
    "FROM plans p JOIN guardians g ON g.user_id = p.user_id JOIN users o ON o.id = p.user_id"
    f" WHERE g.id = %s AND p.id = %s AND {live_account(alias='o')}"
)


async def membership(
    cur: Cursor, ring: KeyRing, *, user_id: str | None, plan_id: str, guardian_id: str | None = None
) -> Membership:
    """The caller's guardian row of this plan (the accepted one first), or the row `guardian_id`
    when a page resolved it; 404 if it guards none."""
    if guardian_id is not None:
        await cur.execute(_MEMBER_COLUMNS + _ROW_OF, (guardian_id, plan_id))
    else:
        await cur.execute(
            f"{_MEMBER_COLUMNS}{GUARDIAN_OF} AND p.id = %s ORDER BY {FIRST_ROW} LIMIT 1", (user_id, plan_id)
        )
    row = await cur.fetchone()
    if row is None:
        raise NotFound("Plan")
    return as_record(
        Membership,
        row=sealed_text.open_row(ring, table="guardians", row=row, id_key="guardian_id", prefix="guardian_"),
    )


def require_accepted(*, accepted_at: datetime | None) -> None:
    """403 for a guardian who has not accepted (or has declined): they do not count yet."""
    if accepted_at is None:
        raise Forbidden(
            "You have not accepted to guard this plan: accept the invitation first "
            "(POST /api/legacy/guardianships/{planId}/accept); only accepted guardians report or approve."
        )


async def locked(
    cur: Cursor, ring: KeyRing, *, user_id: str | None, raw_plan_id: str, guardian_id: str | None = None
) -> tuple[Plan, Membership]:
    """The plan (locked: call it in a transaction, which holds the lock) and the caller's
    accepted guardian row; 404, 403 or 409 (a draft)."""
    return await guarded(
        cur, ring, user_id=user_id, raw_plan_id=raw_plan_id, guardian_id=guardian_id, lock=True
    )


async def guarded(
    cur: Cursor,
    ring: KeyRing,
    *,
    user_id: str | None,
    raw_plan_id: str,
    guardian_id: str | None = None,
    lock: bool = False,
) -> tuple[Plan, Membership]:
    """`locked` without the lock, for a read that decides nothing by itself."""
    plan_id = parse_id(raw=raw_plan_id, what="Plan")
    member = await membership(cur, ring, user_id=user_id, plan_id=plan_id, guardian_id=guardian_id)
    require_accepted(accepted_at=member["accepted_at"])
    plan = await get_by_id(cur, plan_id=plan_id, lock=lock)
    if plan is None:
        raise NotFound("Plan")
    if plan["status"] == DRAFT:
        raise Conflict("This plan is not active yet: there is nothing to report or approve.")
    return plan, member
