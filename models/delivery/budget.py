"""Nobody's mail relay: emails to addresses an owner typed have a daily budget.

Anyone can open an account with a fresh key, name anyone as a guardian or an heir and make the
service email them under its own sender; the email carries the owner's name, which the owner
chose. So the emails caused by typing someone's address (BUDGETED) count, per account (its plan)
and per client address across accounts, over a rolling 24 h read from the outbox itself. Past
either budget the action still succeeds and its email waits as `deferred`; the outbox sweep
lets deferred rows go, oldest first, as the window frees (`releasable`). Lifecycle emails and
emails to the owner's own address never count and never wait: a stolen owner key must not be
able to spend the budget and then act unheard. Decisions: docs/security.md, "Nobody's mail relay".

Writes only the per-client ledger (`email_budget_spend`, which outlives a deleted account):
models.delivery.outbox writes the rows with the status decided here, releases the rows chosen
here, and records here the ones that start to count.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Literal, TypedDict

from core.db import Cursor
from core.files.crypto import KeyRing

# Kinds an owner causes by typing another person's address. A new such kind is one line here
# (its callers pass the request's Budget to outbox.add, which refuses the kind without one).
BUDGETED = frozenset({"guardian_invitation", "email_confirmation", "early_heir_link", "address_confirmation"})
WINDOW = timedelta(hours=24)
PURPOSE = "client-address"
# Deferred rows one sweep looks at, oldest first.
SWEEP_LIMIT = 500


@dataclass(frozen=True)
class Budget:
    """Who is causing the emails of one request, and how many a day they may cause."""

    per_account: int
    per_client: int
    client: bytes | None  # client_digest of the request's address


def client_digest(ring: KeyRing, *, ip: str) -> bytes:
    """The client address as the outbox keeps it: an HMAC under a key-ring subkey (the address
    itself is never stored), of the /64 for IPv6 (one host holds a whole /64)."""
    try:
        address = ipaddress.ip_address(ip)
    except ValueError:
        network = ip
    else:
        network = (
            str(ipaddress.ip_network(f"{address}/64", strict=False)) if address.version == 6 else str(address)
        )
    return hmac.new(ring.subkey(ring.primary_id, PURPOSE), network.encode(), hashlib.sha256).digest()[:16]


class Admission(TypedDict):
    status: Literal["pending", "deferred", "skipped"]
    budget_at: datetime | None  # when it started to count (None: it does not count, or waits)
    client: bytes | None  # client_digest
    reason: str | None  # why it is skipped at once


UNCOUNTED: Admission = {"status": "pending", "budget_at": None, "client": None, "reason": None}
REFUSED = "the person at this address said they do not know this account's owner"


def suppressed(*, owner: str, bidx: str) -> str:
    """SQL: true when the address whose blind index is `bidx` told the account `owner` (both SQL
    expressions) "I don't know this person" (models.delivery.suppressions)."""
    return f"EXISTS (SELECT 1 FROM email_suppressions s WHERE s.user_id = {owner} AND s.email_bidx = {bidx})"


def answered(*, guardian: str, heir: str, row: str | None = None) -> str:
    """SQL: the person (the aliases of their `guardians` and `beneficiaries` rows, LEFT JOINed)
    has accepted or confirmed their address. Such a person is part of the plan: a suppression
    never stops their emails, and an old email's stop link no longer acts (an Unsubscribe that
    silently dropped an heir would lose them their claim link). With `row` (the outbox row's
    alias): a row sent to an address of its own (`to_bidx`: a corrected heir address) is
    answered only once that address is the heir's and confirmed; the heir having confirmed
    their old one says nothing of who reads the new one."""
    person = f"({guardian}.accepted_at IS NOT NULL OR {heir}.email_confirmed_at IS NOT NULL)"
    if row is None:
        return person
    own = own_address_bidx(row=row)
    return (
        f"(CASE WHEN {own} IS NULL THEN {person} ELSE"
        f" COALESCE({heir}.email_bidx = {own} AND {heir}.email_confirmed_at IS NOT NULL, false) END)"
    )


def own_address_bidx(*, row: str) -> str:
    """SQL: the blind index of the address an outbox row names itself (`toBidx` in its context,
    hex: a corrected heir address's confirmation), NULL for a row sent to its person's address."""
    return f"decode({row}.context->>'toBidx', 'hex')"


def recipient_bidx(*, row: str, guardian: str, heir: str) -> str:
    """SQL: the blind index a row's suppression is read against: the address it names itself,
    else its person's current one."""
    return f"COALESCE({own_address_bidx(row=row)}, {guardian}.email_bidx, {heir}.email_bidx)"


# A row being written was refused by its recipient (%(to)s: its id; %(plan)s: its plan), at the
# address they have now, unless they have answered since; or, for a row sent to an address of its
# own (%(bidx)s: a corrected heir address), at that address.
_OWNER_OF_PLAN = "(SELECT user_id FROM plans WHERE id = %(plan)s)"
_REFUSED_AT = "SELECT " + suppressed(owner=_OWNER_OF_PLAN, bidx="%(bidx)s") + " AS refused"
_REFUSED = (
    "SELECT "
    + suppressed(owner=_OWNER_OF_PLAN, bidx="COALESCE(g.email_bidx, b.email_bidx)")
    + f" AND NOT {answered(guardian='g', heir='b')} AS refused"
    " FROM (SELECT 1) one LEFT JOIN guardians g ON g.id = %(to)s LEFT JOIN beneficiaries b ON b.id = %(to)s"
)


async def _lock(cur: Cursor, key: str, *, wait: bool) -> bool:
    """A transaction-scoped lock on one budget, so two requests cannot both take its last email."""
    call = "pg_advisory_xact_lock" if wait else "pg_try_advisory_xact_lock"
    await cur.execute(f"SELECT {call}(hashtextextended(%s, 0)) AS locked", ("email-budget:" + key,))
    row = await cur.fetchone()
    return row["locked"] is not False


# A client's spend is read from its ledger, which outlives a deleted account (its outbox rows go
# with the plan; their spend stays, outbox_id NULL): create, invite, delete, repeat gains nothing.
# An account's own spend is its plan's rows: a new account is a new budget anyway.
_SPENT_BY_PLAN = (
    "SELECT count(*)::int AS n FROM outbox WHERE plan_id = %s AND budget_at > %s AND status <> 'skipped'"
)
_SPENT_BY_CLIENT = (
    "SELECT count(*)::int AS n FROM email_budget_spend s LEFT JOIN outbox o ON o.id = s.outbox_id"
    " WHERE s.client_digest = %s AND s.at > %s AND (o.id IS NULL OR o.status <> 'skipped')"
)


async def _spent(cur: Cursor, *, plan_id: str | None, client: bytes | None, now: datetime) -> int:
    sql, value = (_SPENT_BY_PLAN, plan_id) if client is None else (_SPENT_BY_CLIENT, client)
    await cur.execute(sql, (value, now - WINDOW))
    return int((await cur.fetchone())["n"])


async def spend(cur: Cursor, *, outbox_ids: list[str]) -> None:
    """Record in the client's ledger the rows that started to count (in their transaction)."""
    await cur.execute(
        "INSERT INTO email_budget_spend (client_digest, outbox_id, at) SELECT client_digest, id, budget_at"
        " FROM outbox WHERE id = ANY(%s::uuid[]) AND budget_at IS NOT NULL AND client_digest IS NOT NULL",
        (outbox_ids,),
    )


async def prune(cur: Cursor, *, now: datetime) -> None:
    """Forget spend older than the window (the outbox sweep's)."""
    await cur.execute("DELETE FROM email_budget_spend WHERE at <= %s", (now - WINDOW,))


async def admit(
    cur: Cursor,
    *,
    kind: str,
    plan_id: str | None,
    recipient_id: str,
    budget: Budget | None,
    now: datetime,
    to_bidx: bytes | None = None,
) -> Admission:
    """How an email written now starts: any kind but BUDGETED goes at once, uncounted; a
    budgeted one goes at once (counted from now) unless its account's or its client address's
    last WINDOW is full, or the plan has rows waiting already (they go first): then it waits,
    `deferred`. A waiting row for the same person and kind is about to be replaced, not waited
    behind. One to an address that said "I don't know this person" to this account is skipped:
    the person's, or `to_bidx`'s when the row names an address of its own."""
    if kind not in BUDGETED:
        return UNCOUNTED
    if budget is None or plan_id is None:
        raise ValueError(f"a {kind} email needs its plan and the request's budget")
    if to_bidx is not None:
        await cur.execute(_REFUSED_AT, {"plan": plan_id, "bidx": to_bidx})
    else:
        await cur.execute(_REFUSED, {"plan": plan_id, "to": recipient_id})
    if (await cur.fetchone())["refused"]:
        return {**UNCOUNTED, "status": "skipped", "reason": REFUSED}
    await _lock(cur, f"plan:{plan_id}", wait=True)
    if budget.client is not None:
        await _lock(cur, "client:" + budget.client.hex(), wait=True)
    await cur.execute(
        "SELECT 1 FROM outbox WHERE plan_id = %s AND status = 'deferred'"
        " AND NOT (kind = %s AND recipient_id = %s) LIMIT 1",
        (plan_id, kind, recipient_id),
    )
    full = await cur.fetchone() is not None
    full = full or await _spent(cur, plan_id=plan_id, client=None, now=now) >= budget.per_account
    if not full and budget.client is not None:
        full = await _spent(cur, plan_id=None, client=budget.client, now=now) >= budget.per_client
    if full:
        return {"status": "deferred", "budget_at": None, "client": budget.client, "reason": None}
    return {"status": "pending", "budget_at": now, "client": budget.client, "reason": None}


async def releasable(cur: Cursor, *, per_account: int, per_client: int, now: datetime) -> list[str]:
    """Deferred rows that may go now, oldest first, while their plan's and client address's
    last WINDOW has room (locked for the caller, which releases them in this transaction). A
    budget another transaction holds is left to the next sweep: never waited for, as the sweep
    takes many budgets' locks and a request two."""
    await cur.execute(
        "SELECT id::text AS id, plan_id::text AS plan_id, client_digest FROM outbox"
        " WHERE status = 'deferred' ORDER BY created_at, id LIMIT %s FOR UPDATE SKIP LOCKED",
        (SWEEP_LIMIT,),
    )
    chosen: list[str] = []
    spent: dict[str, int] = {}
    for row in await cur.fetchall():
        client = None if row["client_digest"] is None else bytes(row["client_digest"])
        budgets: list[tuple[str, int, str | None, bytes | None]] = [
            (f"plan:{row['plan_id']}", per_account, row["plan_id"], None)
        ]
        if client is not None:
            budgets.append(("client:" + client.hex(), per_client, None, client))
        if not all([await _lock(cur, key, wait=False) for key, *_ in budgets]):
            continue
        for key, _, plan_id, digest in budgets:
            if key not in spent:
                spent[key] = await _spent(cur, plan_id=plan_id, client=digest, now=now)
        if all(spent[key] < limit for key, limit, *_ in budgets):
            chosen.append(row["id"])
            for key, *_ in budgets:
                spent[key] += 1
    return chosen


def waiting(*, owner: str) -> str:
    """SQL: how many emails of the account `owner` (an SQL expression) wait for the budget, as
    `deferred` rows (readiness says so in words: models.plan.plan_settings)."""
    return (
        "(SELECT count(*) FROM outbox o JOIN plans p ON p.id = o.plan_id"
        f" WHERE p.user_id = {owner} AND o.status = 'deferred')"
    )
