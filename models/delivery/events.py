"""What the email provider tells us happened to each email: its signed delivery webhook.

`POST /api/webhooks/email` hands the raw body and headers here. The signature is checked first
(core.mailer.verify_webhook, Standard Webhooks / Svix, against EMAIL_WEBHOOK_SECRET: 401 when it fails),
then the event, in Resend's shape: `{"type": "email.delivered" | "email.bounced" |
"email.complained" | "email.delivery_delayed", "data": {"email_id": …}}`. One transaction records
the message id (a replay finds it and changes nothing), moves the outcome of the outbox row the
provider knows by that email id (models.delivery.outbox.hear) and writes the alerts a bounce
calls for (outbox.alert_undeliverable). Other event types (sent, opened, clicked…) are accepted
and ignored, so a provider subscribed to more than we read does not retry them for days.

Logged: the message id, the event type, the email id and what came of it; never an address,
the body or the signature. Decisions: docs/capsule.md "What happened to an email".
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Literal

import orjson
from arq.connections import ArqRedis

from core import mailer
from core.db import Pool, autocommit, transaction
from core.errors import BadRequest, ServiceUnavailable
from core.settings import Settings
from models.delivery import outbox

log = logging.getLogger(__name__)

DELIVERY = {
    "email.delivered": "delivered",
    "email.bounced": "bounced",
    "email.complained": "complained",
    "email.delivery_delayed": "delayed",
}
# Message ids are kept this long; a replay older than 5 minutes fails its timestamp anyway.
KEEP_IDS = timedelta(days=1)
MAX_EMAIL_ID = 200  # the provider's ids are UUIDs; this leaves room for any other shape
Received = Literal["applied", "replayed", "unknown", "ignored"]


def _event(body: bytes) -> tuple[str, str | None]:
    """The event type and the provider's email id; 400 for a body that is not such an event."""
    try:
        event = orjson.loads(body)
    except orjson.JSONDecodeError:
        raise BadRequest("The webhook body is not JSON") from None
    kind = event.get("type") if isinstance(event, dict) else None
    if not isinstance(kind, str) or not kind:
        raise BadRequest(
            "type: Missing the event type.", details={"type": ["Missing data for required field."]}
        )
    data = event.get("data")
    email_id = data.get("email_id") if isinstance(data, dict) else None
    if kind not in DELIVERY:
        return kind, None
    if not isinstance(email_id, str) or not email_id:
        raise BadRequest(
            "data.email_id: Missing the provider's email id.",
            details={"data": {"email_id": ["Missing data for required field."]}},
        )
    # Never one the provider returned at send (printable, short): a NUL or a control character
    # would reach PostgreSQL (a 500, then retries for ever) or the logs.
    if len(email_id) > MAX_EMAIL_ID or not email_id.isprintable():
        raise BadRequest(
            "data.email_id: Not an email id the provider could have returned.",
            details={"data": {"email_id": ["Not a valid email id."]}},
        )
    return kind, email_id


def _digest(message_id: str) -> bytes:
    """The replay key: SHA-256 of the whole message id, however long (never a prefix of it)."""
    return hashlib.sha256(message_id.encode("utf-8", "surrogatepass")).digest()


async def receive(
    pool: Pool, redis: ArqRedis, settings: Settings, *, body: bytes, headers: Mapping[str, str], now: datetime
) -> Received:
    """Verify, then apply one delivery event exactly once; returns what came of it."""
    if not settings.email_webhook_secret:
        raise ServiceUnavailable("The email webhook is not configured (EMAIL_WEBHOOK_SECRET).")
    message_id = mailer.verify_webhook(settings.email_webhook_secret, body, headers)
    kind, email_id = _event(body)
    extra = {"webhookId": message_id, "event": kind, "emailId": email_id}
    alerts: list[str] = []
    async with transaction(pool) as cur:
        await cur.execute(
            "INSERT INTO email_events (digest, received_at) VALUES (%s, %s) ON CONFLICT (digest) DO NOTHING"
            " RETURNING digest",
            (_digest(message_id), now),
        )
        if await cur.fetchone() is None:
            log.info("email event replayed; already applied", extra=extra)
            return "replayed"
        delivery = DELIVERY.get(kind)
        if delivery is None or email_id is None:
            log.info("email event ignored (a type we do not read)", extra=extra)
            return "ignored"
        heard = await outbox.hear(cur, provider_id=email_id, delivery=delivery, now=now)
        if heard is None:
            log.warning("email event for an email id we never sent; ignored", extra=extra)
            return "unknown"
        alerts = await outbox.alert_undeliverable(cur, heard=heard, now=now)
    log.info("email event applied", extra={**extra, "moved": len(heard), "alerts": len(alerts)})
    await outbox.enqueue(redis, row_ids=alerts)
    return "applied"


async def prune(pool: Pool, *, now: datetime) -> int:
    """Forget message ids older than KEEP_IDS (the sweep's, once per scan)."""
    async with autocommit(pool) as cur:
        await cur.execute("DELETE FROM email_events WHERE received_at < %s", (now - KEEP_IDS,))
        return int(cur.rowcount)
