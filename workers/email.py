"""Email delivery: one job per outbox row attempt, and the sweep that re-enqueues what is due.

At least once at the job level, exactly once at the provider: every request carries
`Idempotency-Key: <row id>`. Retries (429, 5xx, network) are not arq retries but new
attempts scheduled on the row (`next_attempt_at`, backoff honouring Retry-After) and picked
up by the sweep, so the schedule follows the service clock and survives a worker restart.
Logs name the kind and the row id, never an address or a body.
"""

from __future__ import annotations

import logging
from datetime import timedelta
from typing import Any

import aiohttp

from core import mailer
from core.queue import enqueue_once
from models import emails, outbox
from workers import context

log = logging.getLogger(__name__)

MAX_ATTEMPTS = 8
RETRY_BASE_SECONDS = 30.0
RETRY_MAX_SECONDS = 3600.0
SESSION = "email_session"


def retry_delay(attempt: int, retry_after: float | None) -> float:
    """30 s, 60 s, 120 s … capped at 1 h (about 2 h over 8 tries); never before Retry-After."""
    backoff = min(RETRY_BASE_SECONDS * 2 ** (attempt - 1), RETRY_MAX_SECONDS)
    return max(backoff, min(retry_after or 0.0, 6 * RETRY_MAX_SECONDS))


def session(ctx: dict[str, Any]) -> aiohttp.ClientSession:
    value: aiohttp.ClientSession = ctx[SESSION]
    return value


async def open_session(ctx: dict[str, Any]) -> None:
    """At worker start-up: arq hands each job a copy of ctx, so shared objects go in first."""
    ctx[SESSION] = mailer.open_session()


async def close(ctx: dict[str, Any]) -> None:
    value = ctx.pop(SESSION, None)
    if value is not None:
        await value.close()


async def deliver_email(ctx: dict[str, Any], row_id: str) -> str:
    settings, pool, now = context.settings(ctx), context.db(ctx), context.clock(ctx).now()
    row = await emails.load(pool, row_id)
    extra = {"outboxId": row_id}
    if row is None:
        return "not pending"
    extra["kind"] = row["kind"]
    if not settings.email_provider_api_key or not settings.email_provider_url:
        await emails.finish(pool, row_id, status="skipped", reason="email provider not configured", now=now)
        log.info("email skipped: EMAIL_PROVIDER_API_KEY or EMAIL_PROVIDER_URL is unset", extra=extra)
        return "skipped"
    if not row["address"]:
        await emails.finish(
            pool, row_id, status="failed", reason="the recipient has no email address", now=now
        )
        log.warning("email failed: no address for the recipient", extra=extra)
        return "failed"
    message = emails.render(row, ring=context.key_ring(ctx), public_app_url=settings.public_app_url)
    result = await mailer.send(session(ctx), settings, idempotency_key=row_id, message=message)
    attempt = row["attempts"] + 1
    if result.result == "retry" and attempt < MAX_ATTEMPTS:
        delay = retry_delay(attempt, result.retry_after)
        await emails.retry_later(
            pool, row_id, reason=result.reason, next_attempt_at=now + timedelta(seconds=delay)
        )
        log.warning(
            "email attempt failed; will retry", extra={**extra, "attempt": attempt, "reason": result.reason}
        )
        return "retry"
    status = "sent" if result.result == "sent" else "failed"
    await emails.finish(
        pool, row_id, status=status, reason="" if status == "sent" else result.reason, now=now
    )
    if status == "failed":
        log.warning("email failed", extra={**extra, "attempt": attempt, "reason": result.reason})
    return status


async def sweep_outbox(ctx: dict[str, Any]) -> int:
    """Enqueue rows whose next attempt is due: retries, and first attempts a crash left behind."""
    due = await outbox.due_for_enqueue(context.db(ctx), context.clock(ctx).now())
    redis = context.redis(ctx)
    for row_id, attempts in due:
        await enqueue_once(redis, outbox.DELIVER_JOB, row_id, job_id=outbox.job_id(row_id, attempts))
    return len(due)
