"""Rendering outbox rows into emails at send time, and recording how delivery ended.

Names are user input: every value is escaped in the HTML part. Claim links are built here,
at send time, from the sealed claim token (`$PUBLIC_APP_URL/claim/<token>`), so no token or
address is ever stored in the outbox. Texts are short and kind; they are read by people at a
hard moment.
"""

from __future__ import annotations

import html
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from datetime import datetime
from typing import Any, Literal, TypedDict

from core.db import Cursor, Pool, autocommit, transaction
from core.files.crypto import KeyRing
from core.mailer import Email
from models.contents.beneficiaries import open_claim_token


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


_SELECT = (
    "SELECT o.id::text AS id, o.kind, o.attempts, o.context, o.recipient_type,"
    " COALESCE(g.email, b.email, ru.email) AS address, COALESCE(g.name, b.name, ru.name) AS recipient_name,"
    " u.name AS owner_name, u.wallet_address AS owner_wallet, b.id AS beneficiary_id, b.claim_token_sealed"
    " FROM outbox o LEFT JOIN plans p ON p.id = o.plan_id LEFT JOIN users u ON u.id = p.user_id"
    " LEFT JOIN guardians g ON o.recipient_type = 'guardian' AND g.id = o.recipient_id"
    " LEFT JOIN beneficiaries b ON o.recipient_type = 'beneficiary' AND b.id = o.recipient_id"
    " LEFT JOIN users ru ON o.recipient_type = 'owner' AND ru.id = o.recipient_id"
)


async def load(pool: Pool, row_id: str) -> Delivery | None:
    """The row if it is still pending, with its recipient's address and names; None otherwise
    (read only: the benchmark renders the worker's very requests with it)."""
    async with autocommit(pool) as cur:
        await cur.execute(_SELECT + " WHERE o.id = %s AND o.status = 'pending'", (row_id,))
        row = await cur.fetchone()
    return None if row is None else Delivery(**row)  # type: ignore[typeddict-item]


class Result(TypedDict):
    """How one attempt ended: `pending` with `next_attempt_at` is a retry; the others are final."""

    id: str
    status: Literal["sent", "failed", "skipped", "pending"]
    reason: str
    next_attempt_at: datetime | None


class Batch:
    """Rows claimed by one delivery job, locked until it records their results."""

    def __init__(self, cur: Cursor, rows: list[Delivery], now: datetime) -> None:
        self.cur, self.rows, self.now = cur, rows, now

    async def record(self, results: list[Result]) -> int:
        """Every result in one statement; each row gets one more attempt. Rows count once."""
        if not results:
            return 0
        values = ", ".join(["(%s::uuid, %s, %s, %s::timestamptz)"] * len(results))
        params: list[Any] = []
        for r in results:
            params += [r["id"], r["status"], r["reason"] or None, r["next_attempt_at"]]
        await self.cur.execute(
            "UPDATE outbox o SET status = v.status, last_error = v.reason, attempts = o.attempts + 1,"
            " finished_at = CASE WHEN v.status = 'pending' THEN NULL ELSE %s::timestamptz END,"
            " next_attempt_at = COALESCE(v.next_at, o.next_attempt_at)"
            f" FROM (VALUES {values}) AS v(id, status, reason, next_at)"
            " WHERE o.id = v.id AND o.status = 'pending'",
            [self.now, *params],
        )
        return int(self.cur.rowcount)


@asynccontextmanager
async def claim(pool: Pool, row_ids: list[str], *, now: datetime) -> AsyncIterator[Batch]:
    """Lock the rows among `row_ids` that are pending, due and not held by another job, in one
    query (`FOR UPDATE SKIP LOCKED`), and keep them locked until the batch is recorded and
    committed. Two jobs holding the same row id never both send it; a worker killed mid-batch
    drops its connection, so PostgreSQL rolls back and releases the rows at once, still pending
    with no attempt counted, for the rerun of the job (or the sweep). A first attempt is always
    due (its time was written by the API's clock, which may run ahead of this host's); a retry
    waits for the time this worker's side set from the backoff and Retry-After."""
    async with transaction(pool) as cur:
        await cur.execute(
            _SELECT + " WHERE o.id = ANY(%s::uuid[]) AND o.status = 'pending'"
            " AND (o.attempts = 0 OR o.next_attempt_at <= %s)"
            " ORDER BY o.id FOR UPDATE OF o SKIP LOCKED",
            (list(row_ids), now),
        )
        rows = [Delivery(**row) for row in await cur.fetchall()]  # type: ignore[typeddict-item]
        yield Batch(cur, rows, now)


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
