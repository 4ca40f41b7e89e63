"""A corrected heir address: an accepted guardian proposes a new address for an heir whose link
bounced or whose address they know is wrong (the writer of `address_changes` and
`address_change_approvals`).

Before the release the owner is alive and decides: the proposal is emailed to them (with a
check-in link) and put on their timeline, and they edit the address themselves. After it, the
shape of a lost heir wallet (models.claim.wallet_changes): the plan's threshold of accepted
guardians agrees, then it waits PENDING_FOR, during which the old address, the other heirs and
every accepted guardian are told and any guardian can stop it; then the new address gets a
confirmation link (a budgeted email: a guardian typed it), and only once the heir confirms does
it become theirs and their claim link go there; a link that reaches nobody who can press it ends
the change (`end_unreached`) and the guardians may propose another. What a guardian reads of the
changes: models.plan.guardianships.open_addresses. Decisions: docs/lifecycle.md ("A corrected heir
address").
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import TypedDict

from arq.connections import ArqRedis

from core.db import Cursor, Pool, transaction, unless_duplicate
from core.errors import Conflict, NotFound
from core.files.crypto import KeyRing
from core.text.i18n import N_
from models import plans, sealed_text
from models.address_links import change_id_of, digest, stop_token
from models.claim.wallet_changes import PENDING_FOR
from models.common import parse_id
from models.contents import beneficiaries
from models.delivery import outbox
from models.delivery.announce import Email, Entry, announce
from models.delivery.budget import Budget
from models.delivery.outbox import UNDELIVERABLE
from models.plan.guardianships import address_suggestions, open_addresses
from models.plan.guardianships.membership import Membership, locked
from models.plan.guardianships.open_addresses import OPEN, UNREACHED
from models.plans import APPROVED, RELEASED, Plan

CONFIRMATION = "address_confirmation"


class Proposal(TypedDict):  # what the guardian's answer says of the change
    id: str
    status: str  # to_owner | pending | holding | confirming | applied | stopped | undeliverable
    approvals: int
    threshold: int
    hold_until: datetime | None


async def propose(
    pool: Pool,
    redis: ArqRedis,
    ring: KeyRing,
    *,
    user_id: str | None,
    raw_plan_id: str,
    raw_beneficiary_id: str,
    email: str,
    now: datetime,
    guardian_id: str | None = None,
) -> Proposal:
    """A guardian proposes `email` for an heir: to the owner before the release; after it, the
    guardians' threshold (the proposer agrees by proposing), then the hold."""
    change_id = str(uuid.uuid4())
    async with transaction(pool) as cur:
        plan, member = await locked(
            cur, ring, user_id=user_id, raw_plan_id=raw_plan_id, guardian_id=guardian_id
        )
        heir = await open_addresses.heir(cur, ring, plan=plan, raw_beneficiary_id=raw_beneficiary_id)
        if sealed_text.normalise(value=heir["email"] or "") == sealed_text.normalise(value=email):
            raise Conflict("This is already the address we have for this beneficiary.")
        released = plan["status"] == RELEASED or (plan["status"] == APPROVED and plan["ready_at"] is not None)
        await cur.execute(
            "SELECT 1 FROM address_changes WHERE beneficiary_id = %s AND status = ANY(%s) LIMIT 1",
            (heir["id"], list(OPEN)),
        )
        if released and await cur.fetchone() is not None:
            raise Conflict(
                "Another address for this beneficiary is already being decided: agree to it or stop it first."
            )
        sealed = sealed_text.sealed_values(
            ring, table="address_changes", row_id=change_id, values={"email": email}
        )
        await cur.execute(
            "INSERT INTO address_changes (id, plan_id, beneficiary_id, email_sealed, proposed_by, status,"
            " created_at)"
            " VALUES (%s, %s, %s, %s, %s, %s, %s)",
            (
                change_id,
                plan["id"],
                heir["id"],
                sealed["email_sealed"],
                member["guardian_id"],
                "pending" if released else "to_owner",
                now,
            ),
        )
        if not released:
            by, heir_id = member["guardian_id"], heir["id"]
            row_ids = await address_suggestions.to_owner(
                cur, ring, plan=plan, guardian_id=by, heir_id=heir_id, email=email, now=now
            )
            proposal: Proposal = {
                "id": change_id,
                "status": "to_owner",
                "approvals": 0,
                "threshold": 0,
                "hold_until": None,
            }
        else:
            proposal, row_ids = await _agree_in(
                cur, ring, plan=plan, member=member, change_id=change_id, now=now
            )
    await outbox.enqueue(redis, row_ids=row_ids)
    return proposal


async def agree(
    pool: Pool,
    redis: ArqRedis,
    ring: KeyRing,
    *,
    user_id: str | None,
    raw_plan_id: str,
    raw_change_id: str,
    now: datetime,
    guardian_id: str | None = None,
) -> Proposal:
    """Another guardian agrees to a proposed address (after the release only)."""
    change_id = parse_id(raw=raw_change_id, what="Address change")
    async with transaction(pool) as cur:
        plan, member = await locked(
            cur, ring, user_id=user_id, raw_plan_id=raw_plan_id, guardian_id=guardian_id
        )
        proposal, row_ids = await _agree_in(cur, ring, plan=plan, member=member, change_id=change_id, now=now)
    await outbox.enqueue(redis, row_ids=row_ids)
    return proposal


async def _agree_in(
    cur: Cursor, ring: KeyRing, *, plan: Plan, member: Membership, change_id: str, now: datetime
) -> tuple[Proposal, list[str]]:
    await cur.execute(
        "SELECT beneficiary_id::text AS beneficiary_id, status, hold_until FROM address_changes"
        " WHERE id = %s AND plan_id = %s FOR UPDATE",
        (change_id, plan["id"]),
    )
    change = await cur.fetchone()
    if change is None:
        raise NotFound("Address change")
    if change["status"] != "pending":
        raise Conflict(open_addresses.decided(status=change["status"]))
    if not await unless_duplicate(
        cur,
        "INSERT INTO address_change_approvals (change_id, guardian_id, created_at) VALUES (%s, %s, %s)",
        (change_id, member["guardian_id"], now),
    ):
        raise Conflict("You have already agreed to this address.")
    await cur.execute(
        "SELECT count(*)::int AS n FROM address_change_approvals WHERE change_id = %s", (change_id,)
    )
    approvals = (await cur.fetchone())["n"]
    threshold = await plans.threshold_now(cur, plan=plan)
    about = {"beneficiaryId": change["beneficiary_id"], "changeId": change_id}
    proposal: Proposal = {
        "id": change_id,
        "status": "pending",
        "approvals": approvals,
        "threshold": threshold,
        "hold_until": None,
    }
    first = approvals == 1
    entry = Entry(
        "beneficiary.address_change_proposed" if first else "beneficiary.address_change_agreed",
        N_("A guardian proposed a new email address for a beneficiary")
        if first
        else N_("A guardian agreed to a beneficiary's new email address"),
        {
            "actor": "guardian",
            "guardianId": member["guardian_id"],
            "approvals": approvals,
            "threshold": threshold,
        },
        entity_id=change["beneficiary_id"],
    )
    if approvals < threshold:
        row_ids = await announce(
            cur,
            plan_id=plan["id"],
            owner_id=plan["user_id"],
            now=now,
            guardians=Email("address_change_proposed", about, exclude=[member["guardian_id"]])
            if first
            else None,
            timeline=entry,
        )
        return proposal, row_ids
    hold_until, key_id = now + PENDING_FOR, ring.primary_id
    # The heir's own "Stop", emailed to their old address: only its digest is kept.
    stop_digest = digest(token=stop_token(ring, change_id=change_id, key_id=key_id))
    await cur.execute(
        "UPDATE address_changes SET status = 'holding', hold_until = %s, stop_digest = %s, stop_key_id = %s"
        " WHERE id = %s",
        (hold_until, stop_digest, key_id, change_id),
    )
    await announce(cur, plan_id=plan["id"], owner_id=plan["user_id"], now=now, timeline=entry)
    context = {**about, "holdUntil": hold_until.isoformat(), "stopKeyId": key_id}
    row_ids = await announce(
        cur,
        plan_id=plan["id"],
        owner_id=plan["user_id"],
        now=now,
        beneficiaries=Email("address_change_holding", context),
        guardians=Email("address_change_holding", context),
        timeline=Entry(
            "beneficiary.address_change_holding",
            N_(
                "Enough guardians agreed to a beneficiary's new email address: it waits 7 days, during which "
                "any guardian can stop it"
            ),
            {"actor": "guardian", "holdUntil": hold_until.isoformat()},
            entity_id=change["beneficiary_id"],
        ),
    )
    return {**proposal, "status": "holding", "hold_until": hold_until}, row_ids


async def stop(
    pool: Pool,
    redis: ArqRedis,
    ring: KeyRing,
    *,
    user_id: str | None,
    raw_plan_id: str,
    raw_change_id: str,
    now: datetime,
    guardian_id: str | None = None,
) -> Proposal:
    """Any accepted guardian stops a proposed address before it is confirmed; nothing changes,
    and the guardians are told who stopped it."""
    change_id = parse_id(raw=raw_change_id, what="Address change")
    async with transaction(pool) as cur:
        plan, member = await locked(
            cur, ring, user_id=user_id, raw_plan_id=raw_plan_id, guardian_id=guardian_id
        )
        await cur.execute(
            "UPDATE address_changes SET status = 'stopped', stopped_by = %s, decided_at = %s"
            " WHERE id = %s AND plan_id = %s AND status = ANY(%s)"
            " RETURNING beneficiary_id::text AS beneficiary_id",
            (member["guardian_id"], now, change_id, plan["id"], list(OPEN)),
        )
        row = await cur.fetchone()
        if row is None:
            await cur.execute(
                "SELECT status FROM address_changes WHERE id = %s AND plan_id = %s", (change_id, plan["id"])
            )
            found = await cur.fetchone()
            if found is None:
                raise NotFound("Address change")
            raise Conflict(open_addresses.decided(status=found["status"]))
        row_ids = await announce(
            cur,
            plan_id=plan["id"],
            owner_id=plan["user_id"],
            now=now,
            guardians=Email(
                "address_change_stopped",
                {"beneficiaryId": row["beneficiary_id"], "guardianId": member["guardian_id"]},
                exclude=[member["guardian_id"]],
            ),
            timeline=Entry(
                "beneficiary.address_change_stopped",
                N_("A guardian stopped a beneficiary's new email address; nothing changed"),
                {"actor": "guardian", "guardianId": member["guardian_id"]},
                entity_id=row["beneficiary_id"],
            ),
        )
    await outbox.enqueue(redis, row_ids=row_ids)
    return {"id": change_id, "status": "stopped", "approvals": 0, "threshold": 0, "hold_until": None}


async def heir_stopped_in(cur: Cursor, *, change_id: str, now: datetime) -> bool:
    """The heir concerned stopped it from their old address (models.plan.guardianships.heir_stops),
    until the new address confirms; False once decided."""
    await cur.execute(
        "UPDATE address_changes SET status = 'stopped', stopped_by_heir = true, decided_at = %s"
        " WHERE id = %s AND status = ANY(%s) RETURNING id",
        (now, change_id, list(OPEN)),
    )
    return await cur.fetchone() is not None


async def doubted_in(cur: Cursor, *, change_id: str, beneficiary_id: str, now: datetime) -> datetime | None:
    """Another heir says it looks wrong: the first time, while it holds, the hold is extended
    once by PENDING_FOR; returns the new end of the hold (None: already doubted, or decided)."""
    await cur.execute(
        "UPDATE address_changes SET doubted_at = %s, doubted_by = %s, hold_until = hold_until + %s"
        " WHERE id = %s AND status = 'holding' AND doubted_at IS NULL RETURNING hold_until",
        (now, beneficiary_id, PENDING_FOR, change_id),
    )
    row = await cur.fetchone()
    return None if row is None else row["hold_until"]


async def sweep(pool: Pool, redis: ArqRedis, ring: KeyRing, *, now: datetime, budget: Budget) -> int:
    """Changes whose hold has passed unstopped: the new address is sent its confirmation link
    (budgeted: a guardian typed it; refused there already, `end_unreached` ends it). Returns how many."""
    async with transaction(pool) as cur:
        await cur.execute(
            "UPDATE address_changes c SET status = 'confirming' FROM plans p WHERE p.id = c.plan_id"
            " AND c.status = 'holding' AND c.hold_until <= %s"
            " RETURNING c.id::text AS id, c.plan_id::text AS plan_id,"
            " c.beneficiary_id::text AS beneficiary_id,"
            " c.email_sealed, p.user_id::text AS owner_id",
            (now,),
        )
        row_ids, rows = [], await cur.fetchall()
        for row in rows:
            email = sealed_text.open_text(
                ring, table="address_changes", column="email", row_id=row["id"], sealed=row["email_sealed"]
            )
            bidx = sealed_text.blind_index(ring, table="beneficiaries", column="email", value=email or "")
            seal_id = str(uuid.uuid4())
            sealed = sealed_text.seal(ring, table="outbox", column="address", row_id=seal_id, text=email)
            row_id = await outbox.add(
                cur,
                kind=CONFIRMATION,
                plan_id=row["plan_id"],
                recipient_type="beneficiary",
                recipient_id=row["beneficiary_id"],
                now=now,
                context={"changeId": row["id"], "sealId": seal_id, "toSealed": sealed},
                budget=budget,
                to_bidx=bidx,
            )
            row_ids.append(row_id)
            await cur.execute("SELECT status FROM outbox WHERE id = %s", (row_id,))
            if (await cur.fetchone())["status"] == "skipped":  # refused there already: end_unreached
                continue
            await announce(
                cur,
                plan_id=row["plan_id"],
                owner_id=row["owner_id"],
                now=now,
                timeline=Entry(
                    "beneficiary.address_change_confirming",
                    N_("Nobody stopped a beneficiary's new email address: it was sent a link to confirm it"),
                    {"actor": "scheduler"},
                    entity_id=row["beneficiary_id"],
                ),
            )
    await outbox.enqueue(redis, row_ids=row_ids)
    return len(rows)


async def confirm(pool: Pool, redis: ArqRedis, ring: KeyRing, *, token: str, now: datetime) -> bool:
    """The heir confirms the new address: it becomes theirs (confirmed), and their claim link is
    sent there. False for every miss (unknown, stopped, used)."""
    change_id = change_id_of(ring, token=token)
    if change_id is None:
        return False
    async with transaction(pool) as cur:
        await cur.execute(
            "UPDATE address_changes c SET status = 'applied', decided_at = %s FROM plans p"
            " WHERE c.id = %s AND c.status = 'confirming' AND p.id = c.plan_id"
            " RETURNING c.plan_id::text AS plan_id, c.beneficiary_id::text AS beneficiary_id, c.email_sealed,"
            " p.user_id::text AS owner_id",
            (now, change_id),
        )
        row = await cur.fetchone()
        if row is None:
            return False
        email = sealed_text.open_text(
            ring, table="address_changes", column="email", row_id=change_id, sealed=row["email_sealed"]
        )
        await beneficiaries.set_confirmed_email(
            cur, ring, beneficiary_id=row["beneficiary_id"], email=email or "", now=now
        )
        row_ids = await announce(
            cur,
            plan_id=row["plan_id"],
            owner_id=row["owner_id"],
            now=now,
            beneficiaries=Email("claim_link", {"stage": "corrected"}, beneficiary_id=row["beneficiary_id"]),
            timeline=Entry(
                "beneficiary.address_corrected",
                N_("A beneficiary confirmed their new email address; their link was sent there"),
                {"actor": "beneficiary"},
                entity_id=row["beneficiary_id"],
            ),
        )
    await outbox.enqueue(redis, row_ids=row_ids)
    return True


async def end_unreached(pool: Pool, redis: ArqRedis, *, now: datetime) -> int:
    """Changes whose confirmation link reaches nobody who can press it (bounced or marked as spam,
    its reader said "I don't know this person", never sent) end rather than wait in `confirming`
    for ever: the timeline says so and every accepted guardian is emailed, in their page's words.
    Once each (the status moves once); never the address. Returns how many."""
    async with transaction(pool) as cur:
        await cur.execute(
            "UPDATE address_changes c SET status = %(to)s, decided_at = %(now)s FROM outbox o, plans p"
            " WHERE c.status = 'confirming' AND o.recipient_id = c.beneficiary_id AND o.kind = %(kind)s"
            " AND o.context->>'changeId' = c.id::text AND p.id = c.plan_id AND (o.delivery = ANY(%(why)s)"
            " OR o.status IN ('failed', 'skipped') OR EXISTS (SELECT 1 FROM email_suppressions s"
            "   WHERE s.user_id = p.user_id AND s.email_bidx = o.sent_to_bidx))"
            " RETURNING c.plan_id::text AS plan_id, c.beneficiary_id::text AS beneficiary_id,"
            " p.user_id::text AS owner_id, CASE WHEN o.delivery = ANY(%(why)s) THEN o.delivery"
            " WHEN o.status IN ('failed', 'skipped') THEN 'not_sent' ELSE 'refused' END AS outcome",
            {"to": UNREACHED, "now": now, "kind": CONFIRMATION, "why": list(UNDELIVERABLE)},
        )
        row_ids, rows = [], await cur.fetchall()
        for row in rows:
            row_ids += await announce(
                cur,
                plan_id=row["plan_id"],
                owner_id=row["owner_id"],
                now=now,
                guardians=Email("address_change_undeliverable", {"beneficiaryId": row["beneficiary_id"]}),
                timeline=Entry(
                    "beneficiary.address_change_undeliverable",
                    N_(
                        "A beneficiary's new email address could not be reached, so nothing changed: the "
                        "guardians were told and may propose another"
                    ),
                    {"actor": "scheduler", "outcome": row["outcome"]},
                    entity_id=row["beneficiary_id"],
                ),
            )
    await outbox.enqueue(redis, row_ids=row_ids)
    return len(rows)
