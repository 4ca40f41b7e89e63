"""The relay: send a signed contract transaction to the RPC node and wait for its verdict.

`relay_transaction` is enqueued by the submit routes after the row commits (job id from the
hash). It is safe to run any number of times: the node is asked first whenever the row may
already have been sent, a resend of a known envelope is harmless (DUPLICATE), and the row's
guarded state changes apply a confirmation's effect once. Nothing is marked confirmed before
the node says SUCCESS; NOT_FOUND means "not yet" until the envelope's time bound has passed.
"""

from __future__ import annotations

import asyncio
import logging
from datetime import timedelta
from typing import Any

from arq import Retry

from core.stellar.soroban import RpcUnavailable, SorobanGateway, TransactionStatus
from models.chain import transactions
from models.chain.transactions import RelayRow
from models.delivery import outbox
from models.flows import effects
from workers import context

log = logging.getLogger(__name__)

# Enough runs to outlast a transaction's time bound (5 min) at the polling pace below; past
# them the sweeper re-drives the row.
MAX_TRIES = 200
# Polls inside one run right after sending (the first at once), then the job is deferred so it
# does not hold one of the worker's few job slots while a ledger closes (~5 s).
INLINE_POLLS = (0.0, 0.1, 0.25)
POLL_BASE_SECONDS = 0.5
POLL_MAX_SECONDS = 5.0
# TRY_AGAIN_LATER and an unreachable node back off further.
RETRY_BASE_SECONDS = 1.0
RETRY_MAX_SECONDS = 60.0
# After the time bound, allow for the ledger that may still close with it before saying "expired".
EXPIRY_GRACE = timedelta(seconds=30)
STALE_PENDING_AFTER = timedelta(minutes=2)


def retry_delay(job_try: int) -> float:
    return float(min(RETRY_BASE_SECONDS * 2 ** max(0, job_try - 1), RETRY_MAX_SECONDS))


def poll_delay(job_try: int) -> float:
    """Waiting for a ledger: 0.5 s, 1 s, 2 s, 4 s, then every 5 s."""
    return float(min(POLL_BASE_SECONDS * 2 ** max(0, job_try - 1), POLL_MAX_SECONDS))


def _rejected_reason(result_code: str | None) -> str:
    return f"The network rejected the transaction ({result_code or 'no result code'})"


async def relay_transaction(ctx: dict[str, Any], tx_hash: str) -> str:
    app = context.get(ctx)
    pool, clock, gateway = app.db, app.clock, app.soroban
    if gateway is None:  # rows exist only when a contract was configured: this worker is not
        log.error(
            "relay skipped: SERVICE_CONTRACT_ID is not configured on this worker", extra={"hash": tx_hash}
        )
        raise Retry(defer=RETRY_MAX_SECONDS)
    row = await transactions.start_attempt(pool, tx_hash=tx_hash, now=clock.now())
    if row is None:
        return "not pending"
    try:
        return await _relay(ctx, gateway, row)
    except RpcUnavailable as exc:
        # The row stays pending: the node is down, not the transaction refused.
        delay = retry_delay(ctx.get("job_try", 1))
        log.warning(
            "relay: RPC unavailable, retrying", extra={"hash": tx_hash, "error": exc.message, "in": delay}
        )
        await transactions.touch(pool, row=row, now=clock.now())
        raise Retry(defer=delay) from None


async def _relay(ctx: dict[str, Any], gateway: SorobanGateway, row: RelayRow) -> str:
    app = context.get(ctx)
    pool, clock = app.db, app.clock
    extra = {"hash": row["hash"], "function": row["function"], "attempt": row["attempts"]}
    asked = row["accepted"] or row["attempts"] > 1
    if asked:
        # It may be on the ledger already (a run died after sending): ask before sending again.
        found = await gateway.status(row["hash"])
        if found.status != "NOT_FOUND":
            return await _settle(ctx, row, found)
    if not row["accepted"]:
        if clock.now() > row["valid_until"]:
            await transactions.fail(
                pool, row=row, reason="Expired before the network accepted it", now=clock.now()
            )
            return "expired"
        sent = await gateway.send(row["xdr"])
        log.info("relay: sent", extra={**extra, "status": sent.status})
        if sent.status == "TRY_AGAIN_LATER":
            await transactions.touch(pool, row=row, now=clock.now())
            raise Retry(defer=retry_delay(ctx.get("job_try", 1)))
        if sent.status == "ERROR":
            # A resend of an envelope already on the ledger is refused (its sequence is used):
            # believe the ledger over the refusal.
            found = await gateway.status(row["hash"])
            if found.status != "NOT_FOUND":
                return await _settle(ctx, row, found)
            await transactions.fail(
                pool,
                row=row,
                reason=_rejected_reason(sent.result_code),
                contract_error_code=sent.contract_error_code,
                now=clock.now(),
            )
            return "rejected"
        await transactions.mark_accepted(pool, row=row, now=clock.now())
        asked = False
    for delay in INLINE_POLLS:
        if delay:
            await asyncio.sleep(delay)
        elif asked:
            continue  # just asked above
        found = await gateway.status(row["hash"])
        if found.status != "NOT_FOUND":
            return await _settle(ctx, row, found)
        if clock.now() > row["valid_until"] + EXPIRY_GRACE:
            await transactions.fail(
                pool,
                row=row,
                reason="Expired: the network did not include it before its time bound",
                now=clock.now(),
            )
            return "expired"
    await transactions.touch(pool, row=row, now=clock.now())
    raise Retry(defer=poll_delay(ctx.get("job_try", 1)))


async def _settle(ctx: dict[str, Any], row: RelayRow, found: TransactionStatus) -> str:
    app = context.get(ctx)
    pool, now = app.db, app.clock.now()
    if found.status == "SUCCESS":
        assert found.ledger is not None
        outbox_ids = await effects.confirm(
            pool, app.key_ring, row=row, ledger=found.ledger, closed_at=found.closed_at, now=now
        )
        if outbox_ids:
            await outbox.enqueue(app.redis, row_ids=outbox_ids)  # emails the effect wrote
        log.info("relay: confirmed", extra={"hash": row["hash"], "ledger": found.ledger})
        return "confirmed" if outbox_ids is not None else "not pending"
    await transactions.fail(
        pool,
        row=row,
        reason=f"Failed on-chain ({found.result_code or 'no result code'})",
        contract_error_code=found.contract_error_code,
        now=now,
    )
    log.info("relay: failed", extra={"hash": row["hash"], "code": found.contract_error_code})
    return "failed"


async def sweep_transactions(ctx: dict[str, Any]) -> int:
    """Re-drive pending rows whose relay was lost (enqueue failed, a worker died for good)."""
    app = context.get(ctx)
    if app.soroban is None:
        return 0
    pool = app.db
    requeued = 0
    stale = await transactions.stale_pending(pool, older_than=STALE_PENDING_AFTER, now=app.clock.now())
    for tx_hash in stale:
        if await transactions.enqueue_relay(app.redis, tx_hash=tx_hash):
            requeued += 1
    if requeued:
        log.info("transactions sweep", extra={"requeued": requeued})
    return requeued
