"""The email outbox, the one owner of its table: rows written in the transaction of the event
that causes them, and the worker's side of them (claimed, their results recorded; read with what
a template needs by models.delivery.deliveries). What the outbox says of emails already written
(notifications, bounced addresses, the claim-link history) is read in models.delivery.history.

A row holds references (kind, plan, recipient) and non-secret facts, never a rendered body, an
address or a claim token: those are read here and rendered at send time
(models.mail.emails). The delivery jobs are enqueued after COMMIT, one per batch of up to
BATCH rows, under the job id of the batch's first row (core.queue.after_commit), so a double
enqueue runs once; the sweep re-enqueues, in batches too, rows left behind by a crash or a
Redis outage, and retries whose backoff has elapsed.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from datetime import UTC, datetime, timedelta
from typing import Any, Literal, TypedDict

from arq.connections import ArqRedis
from psycopg2.extras import Json

from core import queue
from core.db import Cursor, Pool, autocommit, transaction
from core.files.crypto import KeyRing
from models import check_in_links
from models.common import as_record
from models.delivery import deliveries
from models.delivery.budget import BUDGETED, Budget, admit, prune, releasable, spend

DELIVER_JOB = "deliver_email"
RecipientType = Literal["owner", "guardian", "beneficiary"]
# Guardians hear of a plan's lifecycle only once they have accepted (the invitation: `add`).
_ACCEPTED = "g.accepted_at IS NOT NULL"
# Rows per delivery job. A worker has 32 requests at the provider at once (workers/context.py),
# each bounded at 20 s (core.mailer.TIMEOUT): one batch alone is two waves, within its 60 s job
# timeout. Against a bare client, batches of this size delivered well above batches of half of it.
BATCH = 64
# Kinds whose newer email to the same person makes an older one untrue (docs/lifecycle.md,
# "Superseded emails"): an older row is not sent, whichever job runs first (`claim`).
SUPERSEDED_BY_NEWER = ("guardian_invitation", "guardian_reconfirm")
SUPERSEDED = "superseded by a newer email of the same kind to the same person"


async def add(
    cur: Cursor,
    *,
    kind: str,
    plan_id: str | None,
    recipient_type: RecipientType,
    recipient_id: str,
    now: datetime,
    context: dict[str, Any] | None = None,
    budget: Budget | None = None,
    to_bidx: bytes | None = None,
) -> str:
    """One email; an owner's lifecycle email (check_in_links.KINDS) gets its one-time check-in link,
    one to an address the owner typed (BUDGETED) counts against the request's `budget` and may
    wait (models.delivery.budget), replacing one still waiting for that person. `to_bidx`: the
    blind index of an address the row names itself (`toSealed`), kept as `toBidx`, refused there."""
    if to_bidx is not None:
        context = {**(context or {}), "toBidx": to_bidx.hex()}
    admitted = await admit(
        cur, kind=kind, plan_id=plan_id, recipient_id=recipient_id, budget=budget, now=now, to_bidx=to_bidx
    )
    await cur.execute(
        "WITH replaced AS (UPDATE outbox SET status = 'skipped', last_error = 'replaced by a later email',"
        " finished_at = %(now)s WHERE %(budgeted)s AND kind = %(kind)s AND recipient_id = %(to)s"
        " AND status = 'deferred') INSERT INTO outbox (kind, plan_id, recipient_type, recipient_id, context,"
        " next_attempt_at, created_at, status, budget_at, client_digest, last_error, finished_at) VALUES"
        " (%(kind)s, %(plan)s, %(type)s, %(to)s, %(context)s, %(now)s, %(now)s, %(status)s, %(budget_at)s,"
        " %(client)s, %(reason)s, CASE WHEN %(status)s = 'skipped' THEN %(now)s::timestamptz END)"
        " RETURNING id::text AS id",
        {"now": now, "budgeted": kind in BUDGETED, "kind": kind, "to": recipient_id, "plan": plan_id}
        | {"type": recipient_type, "context": Json(context or {}), **admitted},
    )
    row_id: str = (await cur.fetchone())["id"]
    if admitted["budget_at"] is not None:
        await spend(cur, outbox_ids=[row_id])
    if recipient_type == "owner" and kind in check_in_links.KINDS and plan_id is not None:
        await check_in_links.issue(cur, outbox_id=row_id, plan_id=plan_id, now=now)
    return row_id


async def add_for_guardians(
    cur: Cursor,
    *,
    kind: str,
    plan_id: str,
    owner_id: str,
    now: datetime,
    context: dict[str, Any] | None = None,
    exclude: Iterable[Any] = (),
    not_approved_in: int | None = None,
) -> list[str]:
    """One row per accepted guardian of the owner (except `exclude`; with `not_approved_in`, only
    those with no standing approval in that verification round), in one statement."""
    waiting = (
        " AND NOT EXISTS (SELECT 1 FROM plan_approvals a WHERE a.plan_id = %s AND a.round = %s"
        " AND a.voided_at IS NULL AND a.wallet_address = g.wallet_address)"
        if not_approved_in is not None
        else ""
    )
    params: list[Any] = [kind, plan_id, Json(context or {}), now, now, owner_id, [str(e) for e in exclude]]
    if not_approved_in is not None:
        params += [plan_id, not_approved_in]
    await cur.execute(
        "INSERT INTO outbox (kind, plan_id, recipient_type, recipient_id, context, next_attempt_at, "
        "created_at)"
        " SELECT %s, %s, 'guardian', g.id, %s, %s, %s FROM guardians g"
        f" WHERE g.user_id = %s AND {_ACCEPTED} AND NOT (g.id = ANY(%s::uuid[])){waiting}"
        " RETURNING id::text AS id",
        params,
    )
    return [row["id"] for row in await cur.fetchall()]


async def add_for_beneficiaries(
    cur: Cursor,
    *,
    kind: str,
    plan_id: str,
    owner_id: str,
    now: datetime,
    context: dict[str, Any] | None = None,
) -> list[str]:
    await cur.execute(
        "INSERT INTO outbox (kind, plan_id, recipient_type, recipient_id, context, next_attempt_at,"
        " created_at)"
        " SELECT %s, %s, 'beneficiary', b.id, %s, %s, %s FROM beneficiaries b WHERE b.user_id = %s"
        " RETURNING id::text AS id",
        (kind, plan_id, Json(context or {}), now, now, owner_id),
    )
    return [row["id"] for row in await cur.fetchall()]


async def delete_for_owner(cur: Cursor, *, owner_id: str) -> None:
    """An account's own emails not tied to its plan (which cascade with it): its deletion's."""
    await cur.execute("DELETE FROM outbox WHERE recipient_type = 'owner' AND recipient_id = %s", (owner_id,))


# The owner's digest of changes to their plan and account (models.delivery.owner_notices): one row
# gathers every change within DIGEST_WINDOW of the first, and is sent when the window ends.
DIGEST = "account_changes"


async def add_to_digest(
    cur: Cursor, *, plan_id: str, owner_id: str, change: dict[str, Any], now: datetime, window: timedelta
) -> None:
    """Append `change` to the owner's digest still gathering (pending, not yet due), or start one
    due `window` from now, with its check-in link; the sweep sends it. Call under the owner's
    notice lock (models.delivery.owner_notices), so two changes cannot start two digests; one a
    job is sending is locked and no longer pending by then, so the change starts the next."""
    await cur.execute(
        "UPDATE outbox SET context = jsonb_set(context, '{changes}', (context->'changes') || %s::jsonb)"
        " WHERE kind = %s AND recipient_type = 'owner' AND recipient_id = %s AND status = 'pending'"
        " AND attempts = 0 AND next_attempt_at > %s RETURNING id",
        (Json([change]), DIGEST, owner_id, now),
    )
    if await cur.fetchone() is not None:
        return
    await cur.execute(
        "INSERT INTO outbox (kind, plan_id, recipient_type, recipient_id, context, next_attempt_at,"
        " created_at) VALUES (%s, %s, 'owner', %s, %s, %s, %s) RETURNING id::text AS id",
        (DIGEST, plan_id, owner_id, Json({"changes": [change]}), now + window, now),
    )
    await check_in_links.issue(cur, outbox_id=(await cur.fetchone())["id"], plan_id=plan_id, now=now)


async def release_deferred(pool: Pool, *, per_account: int, per_client: int, now: datetime) -> list[str]:
    """Deferred rows whose budgets have room go, counted from now (budget.releasable): their ids."""
    async with transaction(pool) as cur:
        row_ids = await releasable(cur, per_account=per_account, per_client=per_client, now=now)
        await cur.execute(
            "UPDATE outbox SET status = 'pending', budget_at = %s, next_attempt_at = %s"
            " WHERE id = ANY(%s::uuid[]) AND status = 'deferred'",
            (now, now, row_ids),
        )
        await spend(cur, outbox_ids=row_ids)
        await prune(cur, now=now)
    return row_ids


def batches(*, row_ids: list[str]) -> list[list[str]]:
    return [row_ids[i : i + BATCH] for i in range(0, len(row_ids), BATCH)]


async def enqueue(redis: ArqRedis, *, row_ids: Iterable[str]) -> None:
    """Enqueue first attempts after COMMIT, one job per batch of rows (core.queue.after_commit:
    a Redis failure leaves the rows to the sweep)."""
    for batch in batches(row_ids=list(row_ids)):
        await queue.after_commit(redis, DELIVER_JOB, batch, row_id=batch[0])


# Delivery: the worker's side of the rows (read with what a template needs by
# models.delivery.deliveries, claimed, recorded).


Status = Literal["sent", "failed", "skipped", "pending"]


class Result(TypedDict):
    """How one attempt ended: `pending` with `next_attempt_at` is a retry; the others are final."""

    id: str
    status: Status
    reason: str
    next_attempt_at: datetime | None
    provider_id: str | None  # a sent email's id at the provider (its delivery webhook names it)


class Batch:
    """Rows claimed by one delivery job (`claim`), held under its name until it records them.
    No connection is held in between: the job sends while the rows wait, claimed."""

    def __init__(
        self, rows: list[deliveries.Delivery], holder: str, now: datetime, superseded: list[Any] | None = None
    ) -> None:
        self.rows, self.holder, self.now = rows, holder, now
        self.superseded: list[Any] = superseded or []
        # Outbox ids of the guardians' alerts about claim links that could not be delivered,
        # written with the results: enqueue them once the batch has committed.
        self.alerts: list[str] = []

    async def renew(self, pool: Pool, *, until: datetime) -> None:
        """Extend the claim on the rows this batch still holds (a slow provider, a live job)."""
        async with autocommit(pool) as cur:
            await cur.execute(
                "UPDATE outbox SET claimed_until = %s WHERE id = ANY(%s::uuid[]) AND status = 'pending'"
                " AND claimed_by = %s",
                (until, [row["id"] for row in self.rows], self.holder),
            )

    async def record(
        self,
        pool: Pool,
        *,
        results: list[Result],
        also: Callable[[Cursor], Awaitable[None]] | None = None,
    ) -> int:
        """Every result in one statement and one short transaction; each row gets one more attempt
        and is released. Only rows still pending and still held by this batch count (a row whose
        claim lapsed and that another job recorded first is left as that job recorded it). A claim
        link that ended failed or skipped alerts the plan's guardians, in this transaction; `also`
        runs in it too (the worker remembers the links these emails first carried)."""
        if not results:
            return 0
        async with transaction(pool) as cur:
            if also is not None:
                await also(cur)
            values = ", ".join(["(%s::uuid, %s, %s, %s::timestamptz, %s)"] * len(results))
            params: list[Any] = []
            for r in results:
                params += [r["id"], r["status"], r["reason"] or None, r["next_attempt_at"], r["provider_id"]]
            await cur.execute(
                "UPDATE outbox o SET status = v.status, last_error = v.reason, attempts = o.attempts + 1,"
                " finished_at = CASE WHEN v.status = 'pending' THEN NULL ELSE %s::timestamptz END,"
                " next_attempt_at = COALESCE(v.next_at, o.next_attempt_at), provider_id = v.provider_id,"
                f" sent_to_bidx = CASE WHEN v.status = 'sent' THEN {deliveries.SENT_TO_BIDX} END,"
                " claimed_by = NULL, claimed_until = NULL"
                f" FROM (VALUES {values}) AS v(id, status, reason, next_at, provider_id)"
                " WHERE o.id = v.id AND o.status = 'pending' AND o.claimed_by = %s"
                " RETURNING o.id::text AS id, o.kind, o.status",
                [self.now, *params, self.holder],
            )
            recorded = await cur.fetchall()
            undelivered = [
                r["id"]
                for r in recorded
                if r["kind"] == "claim_link" and r["status"] in ("failed", "skipped")
            ]
            self.alerts = await _alert_guardians(cur, undelivered, self.now)
        return len(recorded)


async def _alert_guardians(cur: Cursor, row_ids: list[str], now: datetime) -> list[str]:
    """Every accepted guardian of the plan is emailed (`claim_link_undelivered`) when one of
    these claim-link rows ended failed or skipped: which heir (by name, at send time) and what
    they can do (docs/capsule.md "A link is never lost"). One who has not accepted is told
    nothing of the plan's contents (they may never accept), as for a bounce (`alert_undeliverable`)."""
    if not row_ids:
        return []
    await cur.execute(
        "INSERT INTO outbox (kind, plan_id, recipient_type, recipient_id, context, next_attempt_at,"
        " created_at)"
        " SELECT 'claim_link_undelivered', o.plan_id, 'guardian', g.id,"
        "   jsonb_build_object('beneficiaryId', o.recipient_id::text, 'outcome', o.status), %s, %s"
        " FROM outbox o JOIN plans p ON p.id = o.plan_id JOIN guardians g ON g.user_id = p.user_id"
        " WHERE o.id = ANY(%s::uuid[]) AND o.kind = 'claim_link' AND o.status IN ('failed', 'skipped')"
        f" AND {_ACCEPTED} RETURNING id::text AS id",
        (now, now, list(row_ids)),
    )
    return [row["id"] for row in await cur.fetchall()]


# What the provider's webhook says of a sent email (models/delivery/events.py). An outcome
# only moves forward: a late `delayed` after `delivered`, or `delivered` after a bounce, changes
# nothing, so replays and out-of-order events settle where the strongest one put them.
_RANK = {"delayed": 1, "delivered": 2, "bounced": 3, "complained": 3}
UNDELIVERABLE = ("bounced", "complained")
# Emails that ask a guardian to answer: their bounce is told to the owner (docs/capsule.md).
GUARDIAN_ASKS = ("guardian_invitation", "guardian_reconfirm")
# A person's address that keeps bouncing alerts the people who can help at most once a day.
ALERT_EVERY = timedelta(hours=24)


class Heard(TypedDict):
    """A sent email whose outcome a delivery event just moved."""

    id: str
    kind: str
    plan_id: str | None
    recipient_type: str
    recipient_id: str
    delivery: str


async def hear(cur: Cursor, *, provider_id: str, delivery: str, now: datetime) -> list[Heard] | None:
    """Record the provider's word on the email(s) it knows as `provider_id`; the rows whose outcome
    moved (empty when none did), or None when no email has that id."""
    await cur.execute(
        "SELECT id::text AS id, kind, plan_id::text AS plan_id, recipient_type, recipient_id::text"
        " AS recipient_id, delivery FROM outbox WHERE provider_id = %s ORDER BY id FOR UPDATE",
        (provider_id,),
    )
    rows = await cur.fetchall()
    if not rows:
        return None
    moved = [r for r in rows if _RANK[delivery] > _RANK.get(r["delivery"] or "", 0)]
    if moved:
        await cur.execute(
            "UPDATE outbox SET delivery = %s, delivery_at = %s WHERE id = ANY(%s::uuid[])",
            (delivery, now, [r["id"] for r in moved]),
        )
    return [as_record(Heard, row={**r, "delivery": delivery}) for r in moved]


async def alert_undeliverable(cur: Cursor, *, heard: list[Heard], now: datetime) -> list[str]:
    """Who must hear that an email bounced (or was marked as spam): for a claim link, every
    accepted guardian of the plan (`claim_link_undelivered`); for a guardian's invitation, the
    owner (`guardian_email_bounced`). Each row alerts once (its outcome moves once), one address
    at most once per ALERT_EVERY, and once per UTC day even when events race (the unique once_key
    sees an alert not yet committed; NOT EXISTS cannot). The owner's own bounces are read by
    readiness (`address_bounced`), not emailed to the address that bounced."""
    links = [h["id"] for h in heard if h["kind"] == "claim_link" and h["delivery"] in UNDELIVERABLE]
    asks = [h["id"] for h in heard if h["kind"] in GUARDIAN_ASKS and h["delivery"] in UNDELIVERABLE]
    alerts, day = [], now.astimezone(UTC).date().isoformat()
    if links:
        await cur.execute(
            "INSERT INTO outbox (kind, plan_id, recipient_type, recipient_id, context, next_attempt_at,"
            " created_at, once_key)"
            " SELECT 'claim_link_undelivered', o.plan_id, 'guardian', g.id,"
            "   jsonb_build_object('beneficiaryId', o.recipient_id::text, 'outcome', o.delivery),"
            " %(now)s, %(now)s, concat_ws(':', 'undelivered', g.id, o.recipient_id, %(day)s)"
            " FROM outbox o JOIN plans p ON p.id = o.plan_id JOIN guardians g ON g.user_id = p.user_id"
            f" WHERE o.id = ANY(%(ids)s::uuid[]) AND {_ACCEPTED} AND NOT EXISTS (SELECT 1 FROM outbox a"
            "   WHERE a.kind = 'claim_link_undelivered' AND a.plan_id = o.plan_id"
            "   AND a.context->>'beneficiaryId' = o.recipient_id::text"
            "   AND a.context->>'outcome' = ANY(%(why)s)"
            "   AND a.created_at > %(since)s)"
            " ON CONFLICT DO NOTHING RETURNING id::text AS id",
            {"now": now, "ids": links, "why": list(UNDELIVERABLE), "since": now - ALERT_EVERY, "day": day},
        )
        alerts += [row["id"] for row in await cur.fetchall()]
    if asks:
        await cur.execute(
            "INSERT INTO outbox (kind, plan_id, recipient_type, recipient_id, context, next_attempt_at,"
            " created_at, once_key)"
            " SELECT 'guardian_email_bounced', p.id, 'owner', p.user_id,"
            "   jsonb_build_object('guardianId', o.recipient_id::text, 'outcome', o.delivery),"
            " %(now)s, %(now)s, concat_ws(':', 'bounced', p.user_id, o.recipient_id, %(day)s)"
            " FROM outbox o JOIN plans p ON p.id = o.plan_id"
            " WHERE o.id = ANY(%(ids)s::uuid[]) AND NOT EXISTS (SELECT 1 FROM outbox a"
            "   WHERE a.kind = 'guardian_email_bounced' AND a.plan_id = o.plan_id"
            "   AND a.context->>'guardianId' = o.recipient_id::text AND a.created_at > %(since)s)"
            " ON CONFLICT DO NOTHING RETURNING id::text AS id",
            {"now": now, "ids": asks, "since": now - ALERT_EVERY, "day": day},
        )
        alerts += [row["id"] for row in await cur.fetchall()]
    return alerts


async def claim(
    pool: Pool, ring: KeyRing, *, row_ids: list[str], holder: str, now: datetime, lease: timedelta
) -> Batch:
    """Claim the rows among `row_ids` that are pending, due and not held by another job, for
    `holder` (the job's id) until `now + lease` (renewed while the job runs: `Batch.renew`), in one
    short transaction, with what their templates need. The job sends with no connection held and
    records the results with `Batch.record`.

    Exactly once: two jobs carrying the same row never both send it (the second waits for the
    first's claim, then finds the row held; a lock alone never makes a job skip a row, which then
    waited for the next sweep); a killed worker leaves its rows pending with no attempt
    counted: its rerun (the same id) claims them at once, any job once the lease has lapsed (the
    sweep enqueues one, `sweep.enqueue_due`), sent under the same Idempotency-Key. A first attempt is
    always due (the API's clock wrote its time, and may run ahead of this host's); a retry waits
    for the time this worker's side set from the backoff and Retry-After."""
    async with transaction(pool) as cur:
        superseded = await _skip_superseded(cur, row_ids=row_ids, holder=holder, now=now)
        await cur.execute(
            "UPDATE outbox o SET claimed_by = %(holder)s, claimed_until = %(until)s"
            " WHERE o.id IN (SELECT id FROM outbox WHERE id = ANY(%(ids)s::uuid[]) AND status = 'pending'"
            "   AND (attempts = 0 OR next_attempt_at <= %(now)s)"
            "   AND (claimed_by IS NULL OR claimed_until <= %(now)s OR claimed_by = %(holder)s)"
            "   ORDER BY id FOR UPDATE)"
            " RETURNING o.id::text AS id",
            {"holder": holder, "until": now + lease, "ids": list(row_ids), "now": now},
        )
        claimed = [row["id"] for row in await cur.fetchall()]
        if not claimed:
            return Batch([], holder, now, superseded)
        await cur.execute(deliveries.SELECT + " WHERE o.id = ANY(%s::uuid[]) ORDER BY o.id", (claimed,))
        rows = [deliveries.from_row(ring, row=row) for row in await cur.fetchall()]
    return Batch(rows, holder, now, superseded)


async def _skip_superseded(cur: Cursor, *, row_ids: list[str], holder: str, now: datetime) -> list[Any]:
    """Skip (SUPERSEDED) each row still free to claim that a later row of its kind to its recipient
    follows, sent or waiting: checked at claim, so the older is never the last delivered. Both rows
    are of the guardian's plan: the later is found through outbox_plan_idx, not a table scan."""
    await cur.execute(
        "UPDATE outbox o SET status = 'skipped', last_error = %(why)s, finished_at = %(now)s,"
        " claimed_by = NULL, claimed_until = NULL"
        " WHERE o.id = ANY(%(ids)s::uuid[]) AND o.status = 'pending' AND o.kind = ANY(%(kinds)s)"
        "   AND (o.claimed_by IS NULL OR o.claimed_until <= %(now)s OR o.claimed_by = %(holder)s)"
        "   AND EXISTS (SELECT 1 FROM outbox n WHERE n.plan_id = o.plan_id AND n.created_at > o.created_at"
        "   AND n.kind = o.kind AND n.recipient_id = o.recipient_id AND n.recipient_type = o.recipient_type)"
        " RETURNING o.id::text AS id, o.kind",
        {
            "why": SUPERSEDED,
            "now": now,
            "ids": list(row_ids),
            "kinds": list(SUPERSEDED_BY_NEWER),
            "holder": holder,
        },
    )
    return list(await cur.fetchall())
