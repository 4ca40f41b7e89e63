"""The email provider client: a JSON HTTP API in the style most providers share.

`POST $EMAIL_PROVIDER_URL` with `Authorization: Bearer $EMAIL_PROVIDER_API_KEY`,
`Idempotency-Key: <outbox row id>` and `{"from", "to": [address], "subject", "text", "html"}`.
2xx is sent; 429, 5xx and network errors are worth retrying (honouring `Retry-After`);
any other 4xx is final. Nothing here logs an address or a body.
"""

from __future__ import annotations

import email.utils
import json
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Literal

import aiohttp

from core.settings import Settings

TIMEOUT = aiohttp.ClientTimeout(total=20, connect=5)


@dataclass(frozen=True)
class Outcome:
    result: Literal["sent", "retry", "failed"]
    reason: str = ""  # for the outbox row: status code or error class, never a body or address
    retry_after: float | None = None


@dataclass(frozen=True)
class Email:
    to: str
    subject: str
    text: str
    html: str


def open_session() -> aiohttp.ClientSession:
    """One pooled session per worker process: delivery rate is mostly connection reuse."""
    return aiohttp.ClientSession(timeout=TIMEOUT, connector=aiohttp.TCPConnector(limit=32))


def parse_retry_after(value: str | None, now: datetime | None = None) -> float | None:
    """Seconds from a Retry-After header (delta-seconds or an HTTP date); None if absent or unreadable."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - (now or datetime.now(UTC))).total_seconds())


def body(settings: Settings, message: Email) -> bytes:
    return json.dumps(
        {
            "from": settings.email_from,
            "to": [message.to],
            "subject": message.subject,
            "text": message.text,
            "html": message.html,
        }
    ).encode()


async def send(
    session: aiohttp.ClientSession, settings: Settings, *, idempotency_key: str, message: Email
) -> Outcome:
    headers = {
        "Authorization": f"Bearer {settings.email_provider_api_key}",
        "Content-Type": "application/json",
        "Idempotency-Key": idempotency_key,
    }
    try:
        async with session.post(
            settings.email_provider_url, data=body(settings, message), headers=headers
        ) as resp:
            await resp.read()
            status = resp.status
            retry_after = parse_retry_after(resp.headers.get("Retry-After"))
    except (TimeoutError, aiohttp.ClientError) as exc:
        return Outcome("retry", f"provider unreachable ({type(exc).__name__})")
    if 200 <= status < 300:
        return Outcome("sent", f"HTTP {status}")
    if status == 429 or status >= 500:
        return Outcome("retry", f"provider answered HTTP {status}", retry_after)
    return Outcome("failed", f"provider refused the email (HTTP {status})")
