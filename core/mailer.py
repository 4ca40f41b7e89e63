"""The email provider client: a JSON HTTP API in the style most providers share.

`POST $EMAIL_PROVIDER_URL` with `Authorization: Bearer $EMAIL_PROVIDER_API_KEY`,
`Idempotency-Key: <outbox row id>` and `{"from", "to": [address], "subject", "text", "html"}`,
plus `"headers"` when an email has extra ones (its Content-Language; RFC 8058 one-click unsubscribe).
2xx is sent, and its JSON body's `id` (Resend's shape) is the provider's id for the email, kept
on the outbox row so the provider's delivery webhook can find it (models/delivery/events.py);
429, 5xx and network errors are worth retrying (honouring `Retry-After`); any other 4xx is
final. Nothing here logs an address or a body.

The provider's other half, its delivery webhook, is signed the Svix way (Resend): `svix-id`,
`svix-timestamp`, `svix-signature` (HMAC-SHA256 over `id.timestamp.body` under the `whsec_…`
secret); the Standard Webhooks spec names the same headers `webhook-*`. `verify_webhook` lets the
`standardwebhooks` package check it (constant-time compare, 5 minutes' tolerance either way on
the timestamp) and only maps the header names and turns every way a forged or malformed message
fails into one 401.
"""

from __future__ import annotations

import asyncio
import binascii
import email.utils
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Literal

import aiohttp
import orjson
from standardwebhooks.webhooks import Webhook, WebhookVerificationError

from core.errors import Unauthorized
from core.settings import Settings

TIMEOUT = aiohttp.ClientTimeout(total=20, connect=5)


@dataclass(frozen=True)
class Outcome:
    result: Literal["sent", "retry", "failed"]
    reason: str = ""  # for the outbox row: status code or error class, never a body or address
    retry_after: float | None = None
    provider_id: str | None = None  # the provider's id for a sent email (its webhook names it)


@dataclass(frozen=True)
class Email:
    to: str
    subject: str
    text: str
    html: str
    # Extra headers the provider puts on the email (Resend's `headers`): Content-Language on every
    # email (the language it is written in), and RFC 8058's List-Unsubscribe and
    # List-Unsubscribe-Post on an invitation or confirmation request.
    headers: Mapping[str, str] = field(default_factory=dict)


def open_session(connections: int = 32) -> aiohttp.ClientSession:
    """One pooled session per worker process: delivery rate is mostly connection reuse."""
    return aiohttp.ClientSession(timeout=TIMEOUT, connector=aiohttp.TCPConnector(limit=connections))


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


def provider_id(answer: bytes) -> str | None:
    """`{"id": "..."}` from a 2xx answer; None when the provider said nothing usable (the email
    was still sent: only its later delivery events cannot be matched)."""
    try:
        value = orjson.loads(answer).get("id") if answer else None
    except (orjson.JSONDecodeError, AttributeError):
        return None
    return value if isinstance(value, str) and 0 < len(value) <= 200 else None


def body(settings: Settings, message: Email) -> bytes:
    fields = {
        "from": settings.email_from,
        "to": [message.to],
        "subject": message.subject,
        "text": message.text,
        "html": message.html,
    }
    return orjson.dumps({**fields, "headers": dict(message.headers)} if message.headers else fields)


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
            answer = await resp.read()
            status = resp.status
            retry_after = parse_retry_after(resp.headers.get("Retry-After"))
    except (TimeoutError, aiohttp.ClientError) as exc:
        return Outcome("retry", f"provider unreachable ({type(exc).__name__})")
    if 200 <= status < 300:
        return Outcome("sent", f"HTTP {status}", provider_id=provider_id(answer))
    if status == 429 or status >= 500:
        return Outcome("retry", f"provider answered HTTP {status}", retry_after)
    return Outcome("failed", f"provider refused the email (HTTP {status})")


class Senders:
    """A fixed set of sender coroutines posting queued emails over one pooled session.

    Shared by every delivery job of a worker process, so the provider sees at most
    `concurrency` requests from it at once, and a request's 20 s timeout starts when a sender
    takes it, never while it waits its turn. A task and a semaphore wait per email cost the
    worker a measurable part of its delivery rate; senders pulling from one
    queue is how a bare client posts.
    """

    def __init__(self, settings: Settings, concurrency: int) -> None:
        self.settings = settings
        self.session = open_session(concurrency)
        self.queue: asyncio.Queue[tuple[str, Email, asyncio.Future[Outcome]]] = asyncio.Queue()
        self.tasks = [asyncio.create_task(self._run()) for _ in range(concurrency)]

    def submit(self, idempotency_key: str, message: Email) -> asyncio.Future[Outcome]:
        """The outcome of sending `message`, once a sender has; cancel it to drop the email
        if no sender has taken it yet."""
        future: asyncio.Future[Outcome] = asyncio.get_running_loop().create_future()
        self.queue.put_nowait((idempotency_key, message, future))
        return future

    async def _run(self) -> None:
        while True:
            key, message, future = await self.queue.get()
            if future.done():  # the job that wanted it was cancelled
                continue
            try:
                outcome = await send(self.session, self.settings, idempotency_key=key, message=message)
            except asyncio.CancelledError:
                future.cancel()
                raise
            except Exception as exc:  # a bug, not a provider answer: the job fails and reruns
                if not future.done():
                    future.set_exception(exc)
            else:
                if not future.done():
                    future.set_result(outcome)

    async def close(self) -> None:
        for task in self.tasks:
            task.cancel()
        await asyncio.gather(*self.tasks, return_exceptions=True)
        while not self.queue.empty():
            self.queue.get_nowait()[2].cancel()
        await self.session.close()


_NAMES = ("id", "timestamp", "signature")


def _webhook_headers(headers: Mapping[str, str]) -> dict[str, str]:
    """The three signature headers under their Standard Webhooks names (`webhook-*` wins over
    `svix-*` when both are sent)."""
    found: dict[str, str] = {}
    for name in _NAMES:
        value = headers.get(f"webhook-{name}") or headers.get(f"svix-{name}")
        if value:
            found[f"webhook-{name}"] = value
    return found


def verify_webhook(secret: str, body: bytes, headers: Mapping[str, str]) -> str:
    """The message id of a correctly signed, fresh message; 401 otherwise (the reason in the
    message, never the signature)."""
    signed = _webhook_headers(headers)
    if len(signed) < len(_NAMES):
        raise Unauthorized("Missing webhook signature headers (svix-id, svix-timestamp, svix-signature)")
    try:
        Webhook(secret).verify(body, signed, json_parse=False)
    except WebhookVerificationError as exc:
        raise Unauthorized(f"Webhook signature refused: {exc}") from None
    except (ValueError, binascii.Error, UnicodeDecodeError):
        # A signature list the library cannot split, bad base64, a body that is not UTF-8.
        raise Unauthorized("Webhook signature refused: malformed signature or body") from None
    return signed["webhook-id"]
