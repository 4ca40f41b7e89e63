"""A claim link is never lost: the heir asks again by address, a guardian asks for them, and a
link that cannot be delivered alerts the guardians.

The claim-link email was the heir's only way in, and one that ended `failed` or `skipped` had
no second chance. Now:

- `POST /api/claim/resend {email}` (public) commits a request row whatever the address, and
  the worker (`process`) looks the address up: the response, the work on its path and the logs
  are the same whether or not it matched. A match with a plan that is `Released` or ready gets
  a new email with the same link, to the **registered** address only.
- A guardian asks from their guardianship view (`models.plan.guardianships.heirs.resend_link`).
- Each has its own limit: `PER_BENEFICIARY` resends per beneficiary per 24 h asked publicly,
  and as many asked by the guardians. Anyone who knows an heir's address can use up the public
  allowance; the guardians' stays whole, so a stranger using it up never cuts the heir off.
- A claim-link email that ends `failed` or `skipped` emails every accepted guardian (in the delivery
  job's transaction: models.delivery.outbox.Batch.record).

Decisions: docs/capsule.md "A link is never lost".
"""

from __future__ import annotations

import logging
import uuid
from datetime import datetime, timedelta
from typing import Any, TypedDict

from arq.connections import ArqRedis

from core import queue, ratelimit
from core.db import Cursor, Pool, autocommit, transaction
from core.errors import TooManyRequests
from core.files.crypto import KeyRing
from core.settings import Settings
from core.text.i18n import N_
from models import sealed_text
from models.common import lock_owner
from models.contents import beneficiaries
from models.delivery import history
from models.delivery.announce import Email, Entry, announce
from models.plans import APPROVED, RELEASED

log = logging.getLogger(__name__)

RESEND_JOB = "resend_claim_link"
PER_BENEFICIARY = 3
PER_BENEFICIARY_WINDOW = timedelta(hours=24)
IP_WINDOW_SECONDS = 3600
# A request row older than this has probably lost its job (enqueue failed, worker died).
STALE_AFTER = timedelta(seconds=30)
ACCEPTED = N_(
    "If this address belongs to someone named in a plan that has been released to them, a new "
    "link is on its way to it. Check your inbox (and spam folder) in a few minutes."
)


class LinkDelivery(TypedDict):
    """What a guardian sees of one heir's link: never the address or the token."""

    beneficiary_id: str
    name: str
    # none | pending | sent | failed | skipped (the latest claim-link email), or bounced: sent, but
    # the provider's latest word on the heir's current address is a bounce (or a spam complaint)
    status: str
    at: datetime | None  # when it ended, or when it was queued while pending


# Released, or ready to finalise (contract mode): the heirs are meant to hold their links.
_OPEN_PLAN = f"(p.status = '{RELEASED}' OR (p.status = '{APPROVED}' AND p.ready_at IS NOT NULL))"


async def request(
    pool: Pool,
    redis: ArqRedis,
    ring: KeyRing,
    settings: Settings,
    *,
    email: str,
    client_ip: str,
    now: datetime,
) -> None:
    """Commit the request and queue its lookup; the same work whatever the address."""
    retry = await ratelimit.hit(
        redis, f"claim-resend:ip:{client_ip}", settings.rate_limit_claim_resend_per_ip, IP_WINDOW_SECONDS
    )
    if retry:
        raise TooManyRequests("Too many link requests from this address; try again later.", retry)
    row_id = str(uuid.uuid4())
    sealed = sealed_text.seal(ring, table="claim_link_requests", column="email", row_id=row_id, text=email)
    async with transaction(pool) as cur:
        await cur.execute(
            "INSERT INTO claim_link_requests (id, email_sealed, created_at) VALUES (%s, %s, %s)",
            (row_id, sealed, now),
        )
    await queue.after_commit(redis, RESEND_JOB, row_id, row_id=row_id)


async def process(pool: Pool, ring: KeyRing, *, request_id: str, now: datetime) -> list[str]:
    """Look the address up and email each match its link again (within the limit); the row is
    deleted in the same transaction, so nothing remembers whether it matched. Returns outbox
    ids to enqueue after COMMIT."""
    row_ids: list[str] = []
    async with transaction(pool) as cur:
        await cur.execute(
            "SELECT id, email_sealed FROM claim_link_requests WHERE id = %s FOR UPDATE SKIP LOCKED",
            (request_id,),
        )
        row = await cur.fetchone()
        if row is None:
            return []  # done already, or another worker holds it
        email = sealed_text.open_text(
            ring,
            table="claim_link_requests",
            column="email",
            row_id=row["id"],
            sealed=row["email_sealed"],
            legacy=None,
        )
        for beneficiary_id in await beneficiaries.find_by_email(cur, ring, email=email or ""):
            sent, _retry = await send_again(cur, beneficiary_id=beneficiary_id, now=now, by="beneficiary")
            row_ids += sent
        await cur.execute("DELETE FROM claim_link_requests WHERE id = %s", (request_id,))
    return row_ids


async def send_again(
    cur: Cursor, *, beneficiary_id: str, now: datetime, by: str, guardian_id: str | None = None
) -> tuple[list[str], int]:
    """A new claim-link email to the beneficiary's registered address, if their plan is open
    (released or ready) and they have had fewer than PER_BENEFICIARY resends in 24 h asked the
    same way (`by`: the public route and the guardians each have their own allowance). Returns
    (outbox ids, 0), or ([], seconds until the next one is allowed) past the limit, or ([], 0)
    when their plan is not open. Serialised per beneficiary, so racing requests count once each."""
    await lock_owner(cur, scope="claim-link-resend", user_id=beneficiary_id)
    await cur.execute(
        f"SELECT b.user_id, p.id AS plan_id FROM beneficiaries b JOIN plans p ON p.user_id = b.user_id"
        f" WHERE b.id = %s AND {_OPEN_PLAN}",
        (beneficiary_id,),
    )
    found = await cur.fetchone()
    if found is None:
        return [], 0
    recent = await history.recent_resends(
        cur, beneficiary_id=beneficiary_id, since=now - PER_BENEFICIARY_WINDOW, by=by
    )
    if len(recent) >= PER_BENEFICIARY:
        wait = recent[len(recent) - PER_BENEFICIARY] + PER_BENEFICIARY_WINDOW - now
        return [], max(1, int(wait.total_seconds()) + 1)
    metadata: dict[str, Any] = {"by": by}
    if guardian_id is not None:
        metadata["guardianId"] = guardian_id
    row_ids = await announce(
        cur,
        plan_id=found["plan_id"],
        owner_id=found["user_id"],
        now=now,
        beneficiaries=Email("claim_link", {"stage": "resend", "by": by}, beneficiary_id=beneficiary_id),
        timeline=Entry(
            "beneficiary.claim_link_resent",
            N_("A beneficiary's claim link was emailed again, to their registered address"),
            metadata,
            entity_id=beneficiary_id,
        ),
    )
    return row_ids, 0


async def deliveries(cur: Cursor, ring: KeyRing, *, plan_ids: list[str]) -> dict[str, list[LinkDelivery]]:
    """For each open plan among `plan_ids`, its beneficiaries (in the order the owner added them)
    with the latest claim-link email's status; names only."""
    if not plan_ids:
        return {}
    await cur.execute(
        "SELECT p.id::text AS plan_id, b.id::text AS beneficiary_id,"
        f" {sealed_text.select_list(table='beneficiaries', alias='b', columns=('name',))},"
        f" {history.address_bounced(recipient_type='beneficiary', alias='b')} AS bounced"
        " FROM plans p JOIN beneficiaries b ON b.user_id = p.user_id"
        f" WHERE p.id = ANY(%s::uuid[]) AND {_OPEN_PLAN} ORDER BY b.created_at, b.id",
        (plan_ids,),
    )
    rows = [
        sealed_text.open_row(ring, table="beneficiaries", row=row, id_key="beneficiary_id")
        for row in await cur.fetchall()
    ]
    latest = await history.latest_claim_links(cur, beneficiary_ids=[row["beneficiary_id"] for row in rows])
    result: dict[str, list[LinkDelivery]] = {}
    for row in rows:
        status, at = latest.get(row["beneficiary_id"], ("none", None))
        status = "bounced" if status == "sent" and row["bounced"] else status
        result.setdefault(row["plan_id"], []).append(
            {"beneficiary_id": row["beneficiary_id"], "name": row["name"], "status": status, "at": at}
        )
    return result


async def stale_requests(pool: Pool, *, now: datetime, limit: int = 1000) -> list[str]:
    """Requests left behind (their job was lost); rows a job holds right now are skipped."""
    async with autocommit(pool) as cur:
        await cur.execute(
            "SELECT id::text AS id FROM claim_link_requests WHERE created_at <= %s"
            " ORDER BY created_at LIMIT %s FOR UPDATE SKIP LOCKED",
            (now - STALE_AFTER, limit),
        )
        return [row["id"] for row in await cur.fetchall()]


async def requeue(redis: ArqRedis, *, request_ids: list[str]) -> int:
    queued = 0
    for request_id in request_ids:
        queued += await queue.after_commit(redis, RESEND_JOB, request_id, row_id=request_id)
    return queued
