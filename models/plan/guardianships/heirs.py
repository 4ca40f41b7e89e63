"""What a guardian does for the heirs once the plan is released (or ready to finalise on-chain):
have an heir's link emailed again, and approve the wallet an heir proved in place of a lost one
(docs/soroban.md, docs/capsule.md)."""

from __future__ import annotations

from datetime import datetime

from arq.connections import ArqRedis

from core.db import Pool, transaction
from core.errors import Conflict, NotFound, TooManyRequests
from core.files.crypto import KeyRing
from models.claim import claim_links, wallet_changes
from models.common import parse_id
from models.delivery import outbox
from models.plan.guardianships.membership import locked
from models.plans import APPROVED, RELEASED


async def resend_link(
    pool: Pool,
    redis: ArqRedis,
    ring: KeyRing,
    *,
    user_id: str | None,
    raw_plan_id: str,
    raw_beneficiary_id: str,
    now: datetime,
    guardian_id: str | None = None,
) -> claim_links.LinkDelivery:
    """A guardian asks for an heir's link to be emailed again, to the heir's registered address
    only: once the plan is released or ready (409 before); the guardians' own allowance applies
    (429), apart from the heir's public one."""
    beneficiary_id = parse_id(raw=raw_beneficiary_id, what="Beneficiary")
    async with transaction(pool) as cur:
        plan, member = await locked(
            cur, ring, user_id=user_id, raw_plan_id=raw_plan_id, guardian_id=guardian_id
        )
        if not (plan["status"] == RELEASED or (plan["status"] == APPROVED and plan["ready_at"] is not None)):
            raise Conflict(
                "Links are sent once the plan is released (or ready to finalise on-chain); it is not yet."
            )
        await cur.execute(
            "SELECT 1 FROM beneficiaries WHERE id = %s AND user_id = %s", (beneficiary_id, plan["user_id"])
        )
        if await cur.fetchone() is None:
            raise NotFound("Beneficiary")
        row_ids, retry = await claim_links.send_again(
            cur, beneficiary_id=beneficiary_id, now=now, by="guardian", guardian_id=member["guardian_id"]
        )
        if retry:
            raise TooManyRequests(
                f"The guardians already had this link sent again {claim_links.PER_BENEFICIARY} times in the "
                "last 24 hours.",
                retry,
            )
        delivery = (await claim_links.deliveries(cur, ring, plan_ids=[plan["id"]]))[str(plan["id"])]
    await outbox.enqueue(redis, row_ids=row_ids)
    return next(d for d in delivery if d["beneficiary_id"] == beneficiary_id)


async def approve_wallet_change(
    pool: Pool, ring: KeyRing, *, user_id: str, raw_plan_id: str, raw_change_id: str, now: datetime
) -> wallet_changes.ChangeStatus:
    """A guardian approves the wallet an heir proved in place of a lost one; at the plan's
    threshold it is bound to the heir. Only while the plan is released or ready (409 before)."""
    change_id = parse_id(raw=raw_change_id, what="Wallet change")
    async with transaction(pool) as cur:
        plan, member = await locked(cur, ring, user_id=user_id, raw_plan_id=raw_plan_id)
        if not (plan["status"] == RELEASED or (plan["status"] == APPROVED and plan["ready_at"] is not None)):
            raise Conflict(
                "Wallets are approved once the plan is released (or ready to finalise); it is not yet."
            )
        return await wallet_changes.approve_change(
            cur,
            plan_id=plan["id"],
            owner_id=plan["user_id"],
            change_id=change_id,
            guardian_id=member["guardian_id"],
            approver_user_id=user_id,
            now=now,
        )
