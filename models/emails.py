"""Rendering outbox rows into emails at send time, and recording how delivery ended.

Names are user input: every value is escaped in the HTML part. Claim links are built here,
at send time, from the sealed claim token (`$PUBLIC_APP_URL/claim/<token>`), so no token or
address is ever stored in the outbox. Texts are short and kind; they are read by people at a
hard moment.
"""

from __future__ import annotations

import html
from collections.abc import Callable
from datetime import datetime
from typing import Any, TypedDict

from core.crypto import KeyRing
from core.db import Pool, autocommit
from core.mailer import Email
from models.beneficiaries import open_claim_token


class Delivery(TypedDict):
    """A pending outbox row with what its template needs, read in one statement."""

    id: Any
    kind: str
    attempts: int
    context: dict[str, Any]
    recipient_type: str
    address: str | None
    recipient_name: str | None
    owner_name: str | None
    owner_wallet: str | None
    beneficiary_id: Any
    claim_token_sealed: str | None


async def load(pool: Pool, row_id: str) -> Delivery | None:
    """The row if it is still pending, with its recipient's address and names; None otherwise."""
    async with autocommit(pool) as cur:
        await cur.execute(
            "SELECT o.id, o.kind, o.attempts, o.context, o.recipient_type,"
            " COALESCE(g.email, b.email, ru.email) AS address, COALESCE(g.name, b.name, ru.name) AS "
            "recipient_name,"
            " u.name AS owner_name, u.wallet_address AS owner_wallet, b.id AS beneficiary_id, "
            "b.claim_token_sealed"
            " FROM outbox o LEFT JOIN plans p ON p.id = o.plan_id LEFT JOIN users u ON u.id = p.user_id"
            " LEFT JOIN guardians g ON o.recipient_type = 'guardian' AND g.id = o.recipient_id"
            " LEFT JOIN beneficiaries b ON o.recipient_type = 'beneficiary' AND b.id = o.recipient_id"
            " LEFT JOIN users ru ON o.recipient_type = 'owner' AND ru.id = o.recipient_id"
            " WHERE o.id = %s AND o.status = 'pending'",
            (row_id,),
        )
        row = await cur.fetchone()
    return None if row is None else Delivery(**row)  # type: ignore[typeddict-item]


async def finish(pool: Pool, row_id: str, *, status: str, reason: str, now: datetime) -> bool:
    """pending → sent | failed | skipped, once; False if another run already finished it."""
    async with autocommit(pool) as cur:
        await cur.execute(
            "UPDATE outbox SET status = %s, last_error = %s, finished_at = %s, attempts = attempts + 1"
            " WHERE id = %s AND status = 'pending'",
            (status, reason or None, now, row_id),
        )
        return bool(cur.rowcount)


async def retry_later(pool: Pool, row_id: str, *, reason: str, next_attempt_at: datetime) -> bool:
    async with autocommit(pool) as cur:
        await cur.execute(
            "UPDATE outbox SET attempts = attempts + 1, last_error = %s, next_attempt_at = %s"
            " WHERE id = %s AND status = 'pending'",
            (reason, next_attempt_at, row_id),
        )
        return bool(cur.rowcount)


def _when(value: Any) -> str:
    """A time as a person reads it, in UTC."""
    if not value:
        return "soon"
    moment = datetime.fromisoformat(str(value))
    return moment.strftime("%A %d %B %Y at %H:%M UTC")


Template = Callable[[Delivery, dict[str, str]], tuple[str, str]]


def _owner(d: Delivery) -> str:
    return d["owner_name"] or "the person who named you"


def _check_in_reminder(d: Delivery, links: dict[str, str]) -> tuple[str, str]:
    ctx = d["context"]
    return (
        "A gentle reminder to check in",
        f"Your plan asks you to check in by {_when(ctx.get('dueAt'))}. "
        'Signing in with your wallet, or pressing "I\'m here", is enough.',
    )


def _grace_started(d: Delivery, links: dict[str, str]) -> tuple[str, str]:
    ctx = d["context"]
    return (
        "We haven't heard from you",
        "Your check-in is overdue. If you do not check in by "
        f"{_when(ctx.get('verificationAt'))}, we will ask your guardians to confirm you are well. "
        "Signing in with your wallet is enough to stop this.",
    )


def _verification_started(d: Delivery, links: dict[str, str]) -> tuple[str, str]:
    why = (
        "One of your guardians told us you may have died or can no longer act."
        if d["context"].get("reason") == "guardian_report"
        else "We have not heard from you for longer than your plan allows."
    )
    return (
        "Your guardians have been asked to verify your plan",
        f"{why} Your guardians are now being asked to confirm. If you are well, please check in: "
        "it stops everything, and nothing will be released.",
    )


def _verification_requested(d: Delivery, links: dict[str, str]) -> tuple[str, str]:
    return (
        f"Your help is needed with {_owner(d)}'s plan",
        f"You are a guardian of {_owner(d)}'s legacy plan. We have reason to think they may have died or can "
        "no longer act. If you know this to be true, please sign in with your wallet and approve the "
        "release. "
        "If you are unsure, please do nothing for now: we release only when enough guardians agree.",
    )


def _false_alarm(d: Delivery, links: dict[str, str]) -> tuple[str, str]:
    return (
        "Good news: it was a false alarm",
        f"{_owner(d)} has checked in. Nothing will be released, and there is nothing more for you to do. "
        "Thank you for being there.",
    )


def _plan_approved(d: Delivery, links: dict[str, str]) -> tuple[str, str]:
    return (
        "Your plan will be released unless you check in",
        "Your guardians have approved the release of your plan. It will be released on "
        f"{_when(d['context'].get('releaseAt'))}. If you are well, check in now to stop it.",
    )


def _plan_approved_guardian(d: Delivery, links: dict[str, str]) -> tuple[str, str]:
    return (
        f"{_owner(d)}'s plan has been approved",
        f"Enough guardians have approved the release of {_owner(d)}'s plan. It will be released on "
        f"{_when(d['context'].get('releaseAt'))}, unless they check in before then.",
    )


def _plan_released_guardian(d: Delivery, links: dict[str, str]) -> tuple[str, str]:
    return (
        f"{_owner(d)}'s plan has been released",
        f"{_owner(d)}'s plan has been released to the people they chose. Thank you for your care.",
    )


def _claim_link(d: Delivery, links: dict[str, str]) -> tuple[str, str]:
    return (
        f"{_owner(d)} left something for you",
        f"We are sorry for your loss. {_owner(d)} asked us to pass something on to you when the time came. "
        f"You can open it here, whenever you are ready:\n\n{links['claim']}\n\n"
        "This link is yours alone; please do not share it.",
    )


TEMPLATES: dict[str, Template] = {
    "check_in_reminder": _check_in_reminder,
    "grace_started": _grace_started,
    "verification_started": _verification_started,
    "verification_requested": _verification_requested,
    "false_alarm": _false_alarm,
    "plan_approved": _plan_approved,
    "plan_approved_guardian": _plan_approved_guardian,
    "plan_released_guardian": _plan_released_guardian,
    "claim_link": _claim_link,
}


def _html(greeting: str, paragraphs: list[str], links: dict[str, str]) -> str:
    parts = [f"<p>{html.escape(greeting)}</p>"]
    for paragraph in paragraphs:
        escaped = html.escape(paragraph)
        for url in links.values():
            safe = html.escape(url)
            escaped = escaped.replace(safe, f'<a href="{safe}">{safe}</a>')
        parts.append(f"<p>{escaped}</p>")
    return "<!doctype html><html><body>" + "".join(parts) + "</body></html>"


def render(d: Delivery, *, ring: KeyRing, public_app_url: str) -> Email:
    links: dict[str, str] = {}
    if d["kind"] == "claim_link":
        token = open_claim_token(ring, d["claim_token_sealed"] or "", d["beneficiary_id"])
        links["claim"] = f"{public_app_url}/claim/{token}"
    subject, text = TEMPLATES[d["kind"]](d, links)
    greeting = f"Dear {d['recipient_name']}," if d["recipient_name"] else "Hello,"
    paragraphs = [p for p in text.split("\n\n") if p]
    signoff = "With care,\nThe legacy planning service"
    return Email(
        to=d["address"] or "",
        subject=subject,
        text=f"{greeting}\n\n{text}\n\n{signoff}\n",
        html=_html(greeting, [*paragraphs, signoff], links),
    )
