"""Contract transactions: the rows behind submit and the relay's state changes (what a confirmed
one means for the plan: models.flows.effects).

A row is written only for an envelope `core.stellar.soroban_check.check_signed` accepted, with the hash
computed from it; it stays `pending` until the RPC node reports the transaction SUCCESS
(`confirmed`, and its effect applied in the same database transaction: an approval counted,
the plan released, a claim recorded) or FAILED / rejected / expired (`failed`, with the
reason and the contract's error code when there is one). Every state change is guarded
(`WHERE status = 'pending'`), so a relay that runs twice applies the effect once.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import TypedDict

from arq.connections import ArqRedis

from core.db import Cursor, Pool, autocommit, fetch_one, transaction
from core.errors import Conflict
from core.queue import after_commit
from core.stellar.soroban import CheckedTransaction, contract_error_message
from core.text.i18n import N_, _
from models import activity
from models.common import as_record

RELAY_JOB = "relay_transaction"
PUBLIC_COLUMNS = "id, hash, function, status, ledger, confirmed_at, contract_error_code, reason"
RELAY_COLUMNS = (
    f"{PUBLIC_COLUMNS}, user_id, plan_id, guardian_id, signer_user_id, beneficiary_id, signer,"
    " accepted, attempts, valid_until, xdr, created_at"
)
# Translators: what a transaction does, in "The {what} transaction was confirmed" and the like.
WHAT = {
    "approve_guardian": N_("guardian approval"),
    "finalize_release": N_("release"),
    "claim_assets": N_("claim"),
}


class Transaction(TypedDict):
    """What the status routes show: no envelope, no signature."""

    id: str
    hash: str
    function: str
    status: str
    ledger: int | None
    confirmed_at: datetime | None
    contract_error_code: int | None
    reason: str | None


class RelayRow(Transaction):
    user_id: str
    plan_id: str | None
    guardian_id: str | None
    signer_user_id: str | None
    beneficiary_id: str | None
    signer: str
    accepted: bool
    attempts: int
    valid_until: datetime
    xdr: str
    created_at: datetime  # when submit stored it: which verification round it was signed in


async def enqueue_relay(redis: ArqRedis, *, tx_hash: str) -> bool:
    """Enqueue the relay after COMMIT and from the sweep, for a row still pending
    (core.queue.after_commit). The row is named by its hash, unique per row and what the job
    takes, so a double enqueue runs once."""
    return await after_commit(redis, RELAY_JOB, tx_hash, row_id=tx_hash)


async def _timeline(
    cur: Cursor, row: RelayRow | Transaction, *, owner_id: str, verb: str, summary: activity.Summary
) -> None:
    await activity.record(
        cur,
        user_id=owner_id,
        kind=f"transaction.{verb}",
        entity_id=row["id"],
        summary=summary,
        metadata={"function": row["function"], "hash": row["hash"], "status": row["status"]},
    )


# The timeline entry of a new row of `t`, written in the row's own statement.
_SUBMITTED_ENTRY = activity.insert_sql(
    select="SELECT %(owner)s, 'transaction.submitted', 'transaction', t.id::text,"
    f" {activity.chosen_sql(owner='%(owner)s', summaries='%(summaries)s')},"
    " jsonb_build_object('function', t.function, 'hash', t.hash, 'status', t.status) FROM t"
)


async def insert(
    cur: Cursor,
    *,
    checked: CheckedTransaction,
    xdr: str,
    owner_id: str,
    plan_id: str,
    now: datetime,
    guardian_id: str | None = None,
    signer_user_id: str | None = None,
    beneficiary_id: str | None = None,
) -> tuple[Transaction, bool]:
    """Store a checked envelope as `pending` (True), or return the row of the same hash (False),
    on the caller's connection. The row and its timeline entry go in one statement (one round
    trip; in autocommit, its own transaction): submit is a measured hot path."""
    function = checked["function"]
    await cur.execute(
        "WITH t AS (INSERT INTO transactions (hash, function, user_id, plan_id, guardian_id,"
        " signer_user_id, beneficiary_id, signer, valid_until, xdr, created_at, updated_at)"
        " VALUES (%(hash)s, %(function)s, %(owner)s, %(plan)s, %(guardian)s, %(signer_user)s,"
        " %(beneficiary)s, %(signer)s, %(valid_until)s, %(xdr)s, %(now)s, %(now)s)"
        f" ON CONFLICT (hash) DO NOTHING RETURNING {PUBLIC_COLUMNS}),"
        f" a AS ({_SUBMITTED_ENTRY}) SELECT * FROM t",
        {
            "hash": checked["hash"],
            "function": function,
            "owner": owner_id,
            "plan": plan_id,
            "guardian": guardian_id,
            "signer_user": signer_user_id,
            "beneficiary": beneficiary_id,
            "signer": checked["source"],
            "valid_until": checked["valid_until"],
            "xdr": xdr,
            "now": now,
            "summaries": activity.every_language_json(
                summary=lambda: _(
                    "A signed {what} ({function}) was sent to the network; waiting for it to be confirmed"
                ).format(what=_(WHAT[function]), function=function),
                key=("transaction.submitted", function),
            ),
        },
    )
    row: Transaction | None = await cur.fetchone()
    if row is not None:
        return row, True
    await cur.execute(
        f"SELECT {PUBLIC_COLUMNS}, user_id, signer FROM transactions WHERE hash = %s", (checked["hash"],)
    )
    existing = await cur.fetchone()
    if existing is None or existing.pop("user_id") != owner_id or existing.pop("signer") != checked["source"]:
        raise Conflict("This transaction was already submitted for another plan")
    return existing, False


async def get(pool: Pool, *, tx_id: str, owner_id: str, signer: str) -> Transaction | None:
    """One transaction of this plan signed by this wallet (the guardian or beneficiary asking)."""
    row = await fetch_one(
        pool,
        f"SELECT {PUBLIC_COLUMNS} FROM transactions WHERE id = %s AND user_id = %s AND signer = %s",
        (tx_id, owner_id, signer),
    )
    return None if row is None else as_record(Transaction, row=row)


async def get_for_beneficiary(pool: Pool, *, tx_id: str, beneficiary_id: str) -> Transaction | None:
    row = await fetch_one(
        pool,
        f"SELECT {PUBLIC_COLUMNS} FROM transactions WHERE id = %s AND beneficiary_id = %s",
        (tx_id, beneficiary_id),
    )
    return None if row is None else as_record(Transaction, row=row)


# The relay (workers/soroban.py) -------------------------------------------------------------


async def start_attempt(pool: Pool, *, tx_hash: str, now: datetime) -> RelayRow | None:
    """The pending row for this hash with its attempt counted; None when it is no longer pending."""
    async with autocommit(pool) as cur:
        await cur.execute(
            "UPDATE transactions SET attempts = attempts + 1, updated_at = %s"
            f" WHERE hash = %s AND status = 'pending' RETURNING {RELAY_COLUMNS}",
            (now, tx_hash),
        )
        row = await cur.fetchone()
        return None if row is None else as_record(RelayRow, row=row)


async def mark_accepted(pool: Pool, *, row: RelayRow, now: datetime) -> None:
    async with transaction(pool) as cur:
        await cur.execute(
            "UPDATE transactions SET accepted = true, updated_at = %s"
            " WHERE id = %s AND status = 'pending' AND NOT accepted RETURNING id",
            (now, row["id"]),
        )
        if await cur.fetchone() is not None:
            await _timeline(
                cur,
                row,
                owner_id=row["user_id"],
                verb="accepted",
                summary=lambda: _("The network accepted the {what} transaction; waiting for a ledger").format(
                    what=_(WHAT[row["function"]])
                ),
            )


async def touch(pool: Pool, *, row: RelayRow, now: datetime) -> None:
    """Still waiting: the sweeper leaves a row alone while its relay keeps touching it."""
    async with autocommit(pool) as cur:
        await cur.execute(
            "UPDATE transactions SET updated_at = %s WHERE id = %s AND status = 'pending'", (now, row["id"])
        )


async def fail(
    pool: Pool, *, row: RelayRow, reason: str, now: datetime, contract_error_code: int | None = None
) -> bool:
    """pending → failed with the reason (and the contract's code); False if it was not pending."""
    if contract_error_code is not None:
        reason = f"{reason}: {contract_error_message(contract_error_code)}"
    async with transaction(pool) as cur:
        await cur.execute(
            "UPDATE transactions SET status = 'failed', reason = %s, contract_error_code = %s,"
            f" updated_at = %s WHERE id = %s AND status = 'pending' RETURNING {PUBLIC_COLUMNS}",
            (reason, contract_error_code, now, row["id"]),
        )
        failed: Transaction | None = await cur.fetchone()
        if failed is None:
            return False
        await _timeline(
            cur,
            failed,
            owner_id=row["user_id"],
            verb="failed",
            # The reason is the network's or the contract's, as they wrote it.
            summary=lambda: _("The {what} transaction failed: {reason}").format(
                what=_(WHAT[row["function"]]), reason=reason
            ),
        )
    return True


async def confirm_in(
    cur: Cursor, *, row: RelayRow, ledger: int, closed_at: datetime | None, now: datetime
) -> bool:
    """pending → confirmed with its timeline entry, on the caller's transaction (whose effect
    models.flows.effects.confirm applies on the same cursor); False if it was not pending."""
    await cur.execute(
        "UPDATE transactions SET status = 'confirmed', ledger = %s, confirmed_at = %s, reason = NULL,"
        f" updated_at = %s WHERE id = %s AND status = 'pending' RETURNING {PUBLIC_COLUMNS}",
        (ledger, closed_at or now, now, row["id"]),
    )
    confirmed: Transaction | None = await cur.fetchone()
    if confirmed is None:
        return False
    await _timeline(
        cur,
        confirmed,
        owner_id=row["user_id"],
        verb="confirmed",
        summary=lambda: _("The {what} transaction was confirmed on-chain in ledger {ledger}").format(
            what=_(WHAT[row["function"]]), ledger=ledger
        ),
    )
    return True


async def stale_pending(pool: Pool, *, older_than: timedelta, now: datetime, limit: int = 500) -> list[str]:
    """Hashes of pending rows nobody has touched for a while: their relay job was lost."""
    async with autocommit(pool) as cur:
        await cur.execute(
            "SELECT hash FROM transactions WHERE status = 'pending' AND updated_at < %s"
            " ORDER BY updated_at LIMIT %s",
            (now - older_than, limit),
        )
        return [r["hash"] for r in await cur.fetchall()]


async def latest_for_beneficiary(pool: Pool, *, beneficiary_id: str, function: str) -> Transaction | None:
    """This beneficiary's most recent call of `function`: what their page says about it
    (pending, confirmed or failed) when they come back."""
    row = await fetch_one(
        pool,
        f"SELECT {PUBLIC_COLUMNS} FROM transactions WHERE beneficiary_id = %s AND function = %s"
        " ORDER BY created_at DESC, id DESC LIMIT 1",
        (beneficiary_id, function),
    )
    return None if row is None else as_record(Transaction, row=row)
