"""Email delivery: one job per batch of outbox rows, and the sweep that re-enqueues what is due.

Why batches (docs/lifecycle.md): one job per row paid arq's Redis commands and two SQL
statements per email, and delivered a small fraction of what a bare client posts; a batch pays
them once per up to BATCH rows and posts its rows concurrently.

At least once at the job level, exactly once at the provider: every request carries
`Idempotency-Key: <row id>`. Retries (429, 5xx, network) are not arq retries but new
attempts scheduled on the row (`next_attempt_at`, backoff honouring Retry-After) and picked
up by the sweep, so the schedule follows the service clock and survives a worker restart.
Logs name the kind and the row id, never an address or a body. In development with no provider
configured, the rendered email is kept in the dev mailbox (models/delivery/mailbox.py,
`/dev/mail`) and the row counts as sent, so every link it carries works as a delivered one does.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from datetime import datetime, timedelta
from typing import Any

from core import mailer
from core.db import Cursor
from models import check_in_links
from models.claim import claim_links
from models.contents import guardians
from models.delivery import budget, deliveries, events, mailbox, outbox, sweep
from models.jobs import leases
from models.mail import emails
from workers import context

log = logging.getLogger(__name__)

MAX_ATTEMPTS = 8
RETRY_MAX_SECONDS = 3600.0


def retry_delay(attempt: int, retry_after: float | None, base: float) -> float:
    """`base` (EMAIL_RETRY_BASE_SECONDS, 30 s), then doubled per attempt, capped at 1 h (about 2 h
    over 8 tries at 30 s); never before Retry-After."""
    backoff = min(base * 2 ** (attempt - 1), RETRY_MAX_SECONDS)
    return max(backoff, min(retry_after or 0.0, 6 * RETRY_MAX_SECONDS))


def _say_superseded(batch: outbox.Batch) -> None:
    """One line per row `claim` skipped: a newer email of its kind went, or goes, to the same person."""
    for skipped in batch.superseded:
        log.info(
            "email skipped: a newer one replaces it",
            extra={"outboxId": skipped["id"], "kind": skipped["kind"]},
        )


async def deliver_email(ctx: dict[str, Any], row_ids: list[str]) -> dict[str, int]:
    """Send a batch of outbox rows: claim the pending ones in one short transaction (claimed
    under this job's id until recorded, so no other job sends them meanwhile; no connection held
    while the provider answers), hand them to the worker's senders, which POST them concurrently,
    each under its own Idempotency-Key, and record every result in one statement.

    Rows another job holds, already finished, or not yet due are left out: rerunning a job
    (at least once) sends nothing twice that was recorded. Returns counts by result."""
    app = context.get(ctx)
    settings, pool, now = app.settings, app.db, app.clock.now()
    configured, keeping = settings.email_configured, settings.dev_mailbox
    ring, base_url, app_url = app.key_ring, settings.public_base_url, settings.public_app_url
    senders = app.senders  # the worker's, shared by its delivery jobs (workers/context.py)

    # Claimed under this job's id: its own rerun (after a kill or a timeout) takes them back at once.
    holder = str(ctx.get("job_id") or uuid.uuid4())
    lease = timedelta(seconds=settings.job_lease_seconds)
    retry_base = float(settings.email_retry_base_seconds)
    batch = await outbox.claim(pool, ring, row_ids=row_ids, holder=holder, now=now, lease=lease)
    _say_superseded(batch)
    # No connection is held from here until `record`: the provider may take its time.
    results: list[outbox.Result] = []
    sending: list[tuple[deliveries.Delivery, asyncio.Future[mailer.Outcome]]] = []
    new_links: list[str] = []  # check-in links rendered for the first time: store their digests
    new_pages: list[tuple[str, int]] = []  # guardian page links likewise (guardian, version)
    for row in batch.rows:
        unsent = _unsent(row, configured=configured, keeping=keeping)
        if unsent is not None:
            results.append(unsent)
            continue
        try:
            message = emails.render(
                d=row,
                ring=ring,
                base_url=base_url,
                app_url=app_url,
                operator_name=settings.operator_name,
                operator_contact=settings.operator_contact,
            )
        except Exception as exc:  # a key missing from the ring: retry, a fixed ring sends it
            reason = f"could not render the email ({type(exc).__name__})"
            results.append(_settle(row, mailer.Outcome("retry", reason), now, retry_base))
            continue
        if keeping:  # development: the dev mailbox (/dev/mail) is the provider
            mailbox.keep(
                data_dir=settings.data_dir, outbox_id=row["id"], kind=row["kind"], email=message, now=now
            )
            results.append(_settle(row, mailer.Outcome("sent"), now, retry_base))
        else:
            sending.append((row, senders.submit(row["id"], message)))
        _first_rendered(row, new_links, new_pages)

    async def renew() -> None:  # while the emails are out (models.jobs.leases.holding)
        await batch.renew(pool, until=app.clock.now() + lease)

    async with leases.holding(renew=renew, lease=lease):
        try:
            outcomes = await asyncio.gather(*(future for _, future in sending))
        except BaseException:
            for _, future in sending:  # not yet taken by a sender: never sent
                future.cancel()
            raise
    results += [
        _settle(row, outcome, now, retry_base) for (row, _), outcome in zip(sending, outcomes, strict=True)
    ]

    async def remember(cur: Cursor) -> None:  # the links these emails carried, with their results
        await check_in_links.remember(cur, ring, outbox_ids=new_links)
        await guardians.remember_pages(cur, ring, rendered=new_pages)

    await batch.record(pool, results=results, also=remember)
    await outbox.enqueue(app.redis, row_ids=batch.alerts)  # guardians told of an undelivered link
    counts: dict[str, int] = {}
    for r in results:
        key = "retry" if r["status"] == "pending" else r["status"]
        counts[key] = counts.get(key, 0) + 1
    return counts


def _unsent(row: deliveries.Delivery, *, configured: bool, keeping: bool) -> outbox.Result | None:
    """The row's final result when it is not to be sent at all, logged with its kind and id only;
    None when it is to be rendered and sent."""
    extra = {"outboxId": row["id"], "kind": row["kind"]}
    if row["suppressed"]:  # "I don't know this person", since the row was written
        log.info("email skipped: the recipient asked for no more email from this account", extra=extra)
        return _result(row, "skipped", budget.REFUSED)
    if row["account_gone"]:  # written before the account's deletion was asked
        log.info("email skipped: the account is being deleted", extra=extra)
        return _result(row, "skipped", "the account was deleted")
    if not configured and not keeping:
        log.info("email skipped: EMAIL_PROVIDER_API_KEY or EMAIL_PROVIDER_URL is unset", extra=extra)
        return _result(row, "skipped", "email provider not configured")
    if not row["address"]:
        log.warning("email failed: no address for the recipient", extra=extra)
        return _result(row, "failed", "the recipient has no email address")
    return None


def _first_rendered(row: deliveries.Delivery, new_links: list[str], new_pages: list[tuple[str, int]]) -> None:
    """Note the links this email carries for the first time (a check-in link, a guardian's page),
    whose digests are stored with the results."""
    if row["check_in_link"] and row["check_in_key_id"] is None:
        new_links.append(row["id"])
    if row["guardian_id"] and row["guardian_page_version"] and row["guardian_page_key_id"] is None:
        new_pages.append((row["guardian_id"], row["guardian_page_version"]))


def _settle(row: deliveries.Delivery, outcome: mailer.Outcome, now: datetime, base: float) -> outbox.Result:
    """What one provider answer (or a failure to render) makes of the row."""
    extra = {"outboxId": row["id"], "kind": row["kind"]}
    tries = row["attempts"] + 1
    if outcome.result == "retry" and tries < MAX_ATTEMPTS:
        log.warning(
            "email attempt failed; will retry", extra={**extra, "attempt": tries, "reason": outcome.reason}
        )
        delay = timedelta(seconds=retry_delay(tries, outcome.retry_after, base))
        return _result(row, "pending", outcome.reason, next_attempt_at=now + delay)
    if outcome.result == "sent":
        return _result(row, "sent", "", provider_id=outcome.provider_id)
    log.warning("email failed", extra={**extra, "attempt": tries, "reason": outcome.reason})
    return _result(row, "failed", outcome.reason)


def _result(
    row: deliveries.Delivery,
    status: outbox.Status,
    reason: str,
    next_attempt_at: datetime | None = None,
    provider_id: str | None = None,
) -> outbox.Result:
    return outbox.Result(
        id=row["id"], status=status, reason=reason, next_attempt_at=next_attempt_at, provider_id=provider_id
    )


async def sweep_outbox(ctx: dict[str, Any]) -> int:
    """Enqueue rows whose next attempt is due, in batches: retries, and first attempts a crash
    left behind; let deferred emails go as their day's budget frees (models.delivery.budget);
    forget webhook message ids past their day."""
    app = context.get(ctx)
    released = await outbox.release_deferred(
        app.db,
        per_account=app.settings.email_to_named_people_per_day,
        per_client=app.settings.email_to_named_people_per_client_per_day,
        now=app.clock.now(),
    )
    await outbox.enqueue(app.redis, row_ids=released)
    due = await sweep.due_for_enqueue(app.db, now=app.clock.now())
    await sweep.enqueue_due(app.redis, due=due)
    await events.prune(app.db, now=app.clock.now())  # the webhook's replay guard keeps a day of ids
    return len(due)


async def resend_claim_link(ctx: dict[str, Any], request_id: str) -> int:
    """An heir's `POST /api/claim/resend`: look the address up, email each match its link again
    (models.claim.claim_links.process). Logs name the request id only: never the address, nor
    whether it matched."""
    app = context.get(ctx)
    row_ids = await claim_links.process(app.db, app.key_ring, request_id=request_id, now=app.clock.now())
    await outbox.enqueue(app.redis, row_ids=row_ids)
    return 0  # the same result whatever happened: arq keeps it in Redis


async def sweep_claim_link_requests(ctx: dict[str, Any]) -> int:
    """Queue link requests whose job was lost (enqueue failed after COMMIT, Redis lost it)."""
    app = context.get(ctx)
    stale = await claim_links.stale_requests(app.db, now=app.clock.now())
    return await claim_links.requeue(app.redis, request_ids=stale)
