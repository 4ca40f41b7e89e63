"""Guardians reconfirm: ten years after they agreed, nobody knows whether a
guardian is alive, reachable, or still holds the key the owner recorded. A year
(GUARDIAN_RECONFIRM_INTERVAL_SECONDS) after accepting or last confirming, while the plan is
Active or in verification, a guardian is emailed and asked to confirm from a session of the
recorded wallet (a sign-in proved the key). No answer within GUARDIAN_RECONFIRM_GRACE_SECONDS:
unresponsive, and the owner is told once, by name. Casa's periodic key health check, for people.

The sweep walks the partial index on `guardians.reconfirm_due_at` (models.contents.guardians)
and locks what it takes `SKIP LOCKED`; each step moves the due time with its outbox row, so at
most one request per guardian per interval goes out, whatever the workers and scans.
Decisions: docs/lifecycle.md ("Guardians reconfirm").
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import TypedDict

from core.db import Pool, transaction
from core.errors import Conflict, NotFound
from core.files.crypto import KeyRing
from core.text.i18n import N_
from models.common import parse_id
from models.contents import guardians
from models.delivery import outbox
from models.delivery.announce import Email, Entry, announce
from models.plan.guardianships.membership import membership, require_accepted
from models.plans import ACTIVE, APPROVED, DRAFT, PENDING, RELEASED, get_by_id

BATCH = 500
LIVE = (ACTIVE, PENDING, APPROVED)


class Reconfirmed(TypedDict):
    reconfirmed_at: datetime
    next_ask_at: datetime


async def reconfirm(
    pool: Pool,
    ring: KeyRing,
    *,
    user_id: str | None,
    raw_plan_id: str,
    now: datetime,
    interval: timedelta,
    guardian_id: str | None = None,
) -> Reconfirmed:
    """The guardian confirms they can still act (every accepted row of the plan whose wallet is
    the caller's): no longer unresponsive, asked again `interval` from now. 404 for a plan the
    caller does not guard, 403 before accepting, 409 once released. With `guardian_id` (a
    guardian's page), that one row confirms."""
    plan_id = parse_id(raw=raw_plan_id, what="Plan")
    async with transaction(pool) as cur:
        member = await membership(cur, ring, user_id=user_id, plan_id=plan_id, guardian_id=guardian_id)
        require_accepted(accepted_at=member["accepted_at"])
        plan = await get_by_id(cur, plan_id=plan_id)
        if plan is None:
            raise NotFound("Plan")
        if plan["status"] == RELEASED:
            raise Conflict("This plan has already been released: there is nothing more to confirm.")
        if guardian_id is not None:
            ids = [member["guardian_id"]]
        else:
            await cur.execute(
                "SELECT g.id::text AS id FROM guardians g"
                " JOIN user_wallets w ON w.wallet_address = g.wallet_address AND w.user_id = %s"
                " WHERE g.user_id = %s AND g.accepted_at IS NOT NULL",
                (user_id, plan["user_id"]),
            )
            ids = [row["id"] for row in await cur.fetchall()]
        await guardians.record_reconfirmed(cur, guardian_ids=ids, now=now, next_ask=now + interval)
        await announce(
            cur,
            plan_id=plan["id"],
            owner_id=plan["user_id"],
            now=now,
            timeline=Entry(
                "guardian.reconfirmed",
                N_("A guardian confirmed they can still act for your plan"),
                {"actor": "guardian", "guardianId": member["guardian_id"]},
                entity_id=member["guardian_id"],
            ),
        )
    return Reconfirmed(reconfirmed_at=now, next_ask_at=now + interval)


async def sweep(
    pool: Pool, *, now: datetime, interval: timedelta, grace: timedelta
) -> tuple[dict[str, int], list[str]]:
    """Every due reconfirmation step: ask (the guardian's email), or the grace is over
    (unresponsive; the owner's email the first time). Returns counts and outbox ids to enqueue."""
    counts: dict[str, int] = {}
    row_ids: list[str] = []
    while True:
        async with transaction(pool) as cur:
            due = await guardians.due_for_reconfirm(cur, now=now, limit=BATCH)
            for row in due:
                if row["plan_status"] not in LIVE:
                    # Released: never asked again. Draft: asked an interval after it is active again.
                    later = None if row["plan_status"] == RELEASED else now + interval
                    assert row["plan_status"] in (RELEASED, DRAFT)
                    await guardians.set_reconfirm_step(
                        cur,
                        guardian_id=row["id"],
                        asked_at=None,
                        unresponsive_since=row["unresponsive_since"],
                        due=later,
                    )
                    outcome = "postponed"
                elif row["reconfirm_asked_at"] is None:
                    row_ids.append(
                        await outbox.add(
                            cur,
                            kind="guardian_reconfirm",
                            plan_id=row["plan_id"],
                            recipient_type="guardian",
                            recipient_id=row["id"],
                            now=now,
                            context={"graceDays": max(1, grace.days), "walletAddress": row["wallet_address"]},
                        )
                    )
                    await guardians.set_reconfirm_step(
                        cur,
                        guardian_id=row["id"],
                        asked_at=now,
                        unresponsive_since=row["unresponsive_since"],
                        due=now + grace,
                    )
                    outcome = "asked"
                else:
                    first = row["unresponsive_since"] is None
                    if first:
                        row_ids += await announce(
                            cur,
                            plan_id=row["plan_id"],
                            owner_id=row["user_id"],
                            now=now,
                            owner=Email(
                                "guardian_unresponsive",
                                {"guardianId": row["id"], "askedAt": row["reconfirm_asked_at"].isoformat()},
                            ),
                            timeline=Entry(
                                "guardian.unresponsive",
                                N_("A guardian did not confirm they can still act"),
                                {"actor": "scheduler", "guardianId": row["id"]},
                                entity_id=row["id"],
                            ),
                        )
                    await guardians.set_reconfirm_step(
                        cur,
                        guardian_id=row["id"],
                        asked_at=None,
                        unresponsive_since=row["unresponsive_since"] or now,
                        due=row["reconfirm_asked_at"] + interval,  # one request per interval
                    )
                    outcome = "unresponsive" if first else "still_unresponsive"
                counts[outcome] = counts.get(outcome, 0) + 1
        if len(due) < BATCH:
            return counts, row_ids
