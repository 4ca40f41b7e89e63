"""What arrives by email, as a test reads it from the capture server, and what the provider says
back: the owner's check-in links and the first reminder's, an heir's confirmation link, the
"I don't know this person" link, the emails to one address by subject; the settings of
development with no provider (every email kept in the dev mailbox); and the provider's signed
delivery webhook (`post` an `event`, the `provider_id` of a sent row to name in it).

The check-in, address, objection, page and language suites each follow these links; one reader
of each keeps them following the link a person would.
"""

from __future__ import annotations

import base64
import re
import secrets
import uuid
from datetime import UTC, datetime
from typing import Any

import orjson
from standardwebhooks.webhooks import Webhook

from tests.helpers import sign_in
from tests.lifecycle_helpers import activate_plan
from tests.plan_helpers import query

CHECK_IN_LINK = re.compile(r"https://legacy\.example\.test/check-in/([0-9a-f]{64})")


def links_in(mail) -> list[str]:
    """The check-in tokens of one captured email, checked to be the same in text and HTML."""
    text = CHECK_IN_LINK.findall(mail.body["text"])
    html = CHECK_IN_LINK.findall(mail.body["html"])
    assert text == html[: len(text)] and all(
        f'href="https://legacy.example.test/check-in/{t}"' in mail.body["html"] for t in text
    )
    return text


async def owner_links(email_provider, address="owner@example.org") -> list[str]:
    tokens = []
    for mail in email_provider.to(address):
        tokens += links_in(mail)
    return tokens


DAY = 86400


async def reminder_link(client: Any, clock: Any, run_worker: Any, email_provider: Any) -> tuple[Any, str]:
    """An active plan's owner and the check-in link of their first reminder email."""
    owner = await sign_in(client)
    await activate_plan(
        client, owner, settings={"checkInIntervalSeconds": 2 * DAY, "gracePeriodSeconds": DAY}
    )
    clock.advance(days=1, seconds=1)
    await run_worker(settings=email_provider.settings)
    [token] = await owner_links(email_provider)
    return owner, token


CONFIRM_EMAIL_LINK = re.compile(r"https://[^/\s]+/confirm-email/([0-9a-f]{64})")


def link_in(email_provider, address: str) -> str:
    texts = [r.body["text"] for r in email_provider.to(address) if "confirm" in r.body["subject"].lower()]
    assert texts, f"no confirmation email to {address}"
    match = CONFIRM_EMAIL_LINK.search(texts[-1])
    assert match is not None
    return match.group(1)


async def named_owner(client: Any, email: str = "owner@example.org") -> Any:
    owner = await sign_in(client)
    resp = await client.patch(
        "/api/users/me", json={"name": "Olive Owner", "email": email}, headers=owner.headers
    )
    assert resp.status == 200
    return owner


def stop_link(mail: Any) -> str:
    """The path of an email's "I don't know this person" link, from its RFC 8058 header."""
    header = mail.body["headers"]["List-Unsubscribe"]
    assert header.startswith("<http") and header.endswith(">")
    url = header[1:-1]
    assert url in mail.body["text"] and f'href="{url}"' in mail.body["html"]  # the same link in the body
    return "/stop-emails/" + url.rsplit("/stop-emails/", 1)[1]


def mails(email_provider: Any, address: str, subject: str) -> list[dict[str, Any]]:
    return [m.body for m in email_provider.to(address) if m.body["subject"].startswith(subject)]


# Development with no email provider: every email is kept in the dev mailbox.
DEV = {
    "environment": "development",
    "email_provider_url": "",
    "email_provider_api_key": "",
    "public_app_url": "",
}


# The provider's signed delivery webhook (Standard Webhooks, as Resend signs it).
HOOK = "/api/webhooks/email"
SECRET = "whsec_" + base64.b64encode(secrets.token_bytes(32)).decode()


def signed(
    event: dict[str, Any] | bytes,
    *,
    msg_id: str | None = None,
    at: datetime | None = None,
    secret: str = SECRET,
    prefix: str = "svix",
) -> tuple[bytes, dict[str, str]]:
    body = event if isinstance(event, bytes) else orjson.dumps(event)
    msg_id = msg_id or f"msg_{uuid.uuid4().hex}"
    at = at or datetime.now(UTC)
    signature = Webhook(secret).sign(msg_id, at, body.decode())
    return body, {
        f"{prefix}-id": msg_id,
        f"{prefix}-timestamp": str(int(at.timestamp())),
        f"{prefix}-signature": signature,
        "Content-Type": "application/json",
    }


def event(kind: str, email_id: str) -> dict[str, Any]:
    return {
        "type": kind,
        "created_at": "2026-11-26T12:00:00.000Z",
        "data": {"email_id": email_id, "to": ["someone@example.org"], "subject": "..."},
    }


async def post(client, event_or_body: dict[str, Any] | bytes, **options: Any):
    body, headers = signed(event_or_body, **options)
    return await client.post(HOOK, data=body, headers=headers)


def provider_id(settings, kind: str, recipient_type: str, **where: str) -> str:
    sql = "SELECT provider_id FROM outbox WHERE kind = %s AND recipient_type = %s AND provider_id IS NOT NULL"
    params: list[Any] = [kind, recipient_type]
    if "recipient_id" in where:
        sql += " AND recipient_id = %s"
        params.append(where["recipient_id"])
    rows = query(settings, sql + " ORDER BY created_at DESC", params)
    assert rows, f"no sent {kind} email to a {recipient_type}"
    return str(rows[0]["provider_id"])
