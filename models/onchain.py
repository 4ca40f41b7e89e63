"""Who may sign which contract call, and with which arguments: the targets of build and submit.

A target names the plan's owner wallet (the contract's `owner` argument: the wallet the
owner's account was created with), the signer's wallet (second argument and source account)
and the rows a submitted transaction belongs to. Each function checks the plan state the call
needs and answers 409 saying what is missing and when it will not be, so a wallet is never
asked to sign a call that cannot succeed.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, TypedDict

from core.db import Cursor, Pool, autocommit
from core.errors import Conflict, NotFound
from models.common import parse_id
from models.plans import APPROVED, RELEASED
from models.plans import PENDING as PENDING_VERIFICATION

BENEFICIARY_FUNCTIONS = ("finalize_release", "claim_assets")


class Target(TypedDict):
    function: str
    owner_id: Any
    owner_wallet: str
    plan_id: Any
    signer: str
    guardian_id: Any
    beneficiary_id: Any


def _iso(moment: datetime) -> str:
    return moment.isoformat().replace("+00:00", "Z")


async def _plan(cur: Cursor, owner_id: Any) -> dict[str, Any]:
    await cur.execute(
        "SELECT p.id, p.status, p.release_at, u.wallet_address AS owner_wallet"
        " FROM plans p JOIN users u ON u.id = p.user_id WHERE p.user_id = %s",
        (owner_id,),
    )
    plan = await cur.fetchone()
    if plan is None:
        raise NotFound("Plan")
    return plan


async def guardian_target(pool: Pool, *, user_id: Any, raw_plan_id: str) -> Target:
    """The caller's guardian wallet on this plan; 404 unless one of their wallets guards it."""
    plan_id = parse_id(raw_plan_id, "Plan")
    async with autocommit(pool) as cur:
        await cur.execute(
            "SELECT g.id AS guardian_id, g.wallet_address, p.user_id, p.status"
            " FROM plans p JOIN guardians g ON g.user_id = p.user_id"
            " JOIN user_wallets w ON w.wallet_address = g.wallet_address AND w.user_id = %s"
            " WHERE p.id = %s AND p.status <> 'Draft' ORDER BY g.created_at LIMIT 1",
            (user_id, plan_id),
        )
        member = await cur.fetchone()
        if member is None:
            raise NotFound("Plan")
        plan = await _plan(cur, member["user_id"])
    return {
        "function": "approve_guardian",
        "owner_id": member["user_id"],
        "owner_wallet": plan["owner_wallet"],
        "plan_id": plan["id"],
        "signer": member["wallet_address"],
        "guardian_id": member["guardian_id"],
        "beneficiary_id": None,
    }


def require_verification(status: str) -> None:
    if status != PENDING_VERIFICATION:
        raise Conflict(f"Approvals are accepted only while the plan is being verified; it is {status}.")


async def guardian_approval_target(pool: Pool, *, user_id: Any, raw_plan_id: str) -> Target:
    """guardian_target, refused (409) unless the plan is waiting for approvals."""
    target = await guardian_target(pool, user_id=user_id, raw_plan_id=raw_plan_id)
    async with autocommit(pool) as cur:
        plan = await _plan(cur, target["owner_id"])
    require_verification(plan["status"])
    return target


async def beneficiary_target(
    pool: Pool, *, beneficiary_id: str, function: str, wallet_address: str, now: datetime
) -> Target:
    """The call this beneficiary (found by their claim token) may make now with this wallet;
    409 saying why not otherwise."""
    async with autocommit(pool) as cur:
        await cur.execute(
            "SELECT id, user_id, wallet_address FROM beneficiaries WHERE id = %s", (beneficiary_id,)
        )
        person = await cur.fetchone()
        if person is None:
            raise NotFound("Capsule")
        plan = await _plan(cur, person["user_id"])
        bound = person["wallet_address"]
        if bound is not None and bound != wallet_address:
            raise Conflict(
                "This is not the wallet recorded for you: use the wallet ending in "
                f"{bound[-6:]}, or ask the plan's owner to change it"
            )
        await cur.execute(
            "SELECT 1 FROM beneficiaries WHERE user_id = %s AND wallet_address = %s AND id <> %s",
            (person["user_id"], wallet_address, person["id"]),
        )
        if await cur.fetchone() is not None:
            raise Conflict("This wallet belongs to another beneficiary of the plan")
        if function == "finalize_release":
            _check_release(plan, now)
        else:
            _check_claim(plan)
            await cur.execute(
                "SELECT 1 FROM transactions WHERE beneficiary_id = %s AND function = 'claim_assets'"
                " AND status = 'confirmed'",
                (person["id"],),
            )
            if await cur.fetchone() is not None:
                raise Conflict("You have already claimed your share; the claim is confirmed on-chain")
    return {
        "function": function,
        "owner_id": person["user_id"],
        "owner_wallet": plan["owner_wallet"],
        "plan_id": plan["id"],
        "signer": wallet_address,
        "guardian_id": None,
        "beneficiary_id": person["id"],
    }


def _check_release(plan: dict[str, Any], now: datetime) -> None:
    status = plan["status"]
    if status == RELEASED:
        raise Conflict("The plan is already released; claim your share instead")
    if status != APPROVED:
        raise Conflict(f"The plan can be released only once its guardians have approved; it is {status}")
    if plan["release_at"] is not None and plan["release_at"] > now:
        raise Conflict(
            "The owner's cancel window is still open; the release can be finalised from "
            + _iso(plan["release_at"])
        )


def _check_claim(plan: dict[str, Any]) -> None:
    if plan["status"] != RELEASED:
        raise Conflict(f"Shares can be claimed once the plan is released; it is {plan['status']}")
