"""Who may sign which contract call, and with which arguments: the targets of build and submit.

A target names the plan's owner wallet (the contract's `owner` argument: the wallet the
owner's account was created with), the signer's wallet (second argument and source account)
and the rows a submitted transaction belongs to. Each function checks the plan state the call
needs and answers 409 saying what is missing and when it will not be, so a wallet is never
asked to sign a call that cannot succeed.
"""

from __future__ import annotations

from datetime import datetime

from arq.connections import ArqRedis

from core.clock import spelled
from core.db import Cursor, Pool, autocommit
from core.errors import BadRequest, Conflict, NotFound
from core.stellar.soroban import CheckedTransaction
from core.stellar.soroban_check import Envelope
from models.chain import transactions
from models.chain.transactions import Transaction
from models.claim import heir_wallets, wallet_changes
from models.claim.capsules import Capsule
from models.common import parse_id
from models.plan import approvals
from models.plan.guardianships.membership import Answerer, require_accepted
from models.plans import APPROVED, RELEASED
from models.proofs.contract_call import Target, check

BENEFICIARY_FUNCTIONS = ("finalize_release", "claim_assets")


async def guardian_target(
    pool: Pool, *, user_id: str, raw_plan_id: str, accepted_only: bool = False
) -> Target:
    """The caller's guardian wallet on this plan; 404 unless one of their wallets guards it,
    403 with `accepted_only` unless they have accepted to guard it."""
    return (await _guardian_of(pool, user_id=user_id, raw_plan_id=raw_plan_id, accepted_only=accepted_only))[
        0
    ]


async def _guardian_of(
    pool: Pool, *, user_id: str, raw_plan_id: str, accepted_only: bool
) -> tuple[Target, str]:
    """The target and the plan's status, in one read."""
    plan_id = parse_id(raw=raw_plan_id, what="Plan")
    async with autocommit(pool) as cur:
        await cur.execute(
            "SELECT g.id AS guardian_id, g.wallet_address, g.accepted_at, p.user_id, p.status,"
            " o.wallet_address AS owner_wallet"
            " FROM plans p JOIN guardians g ON g.user_id = p.user_id JOIN users o ON o.id = p.user_id"
            " JOIN user_wallets w ON w.wallet_address = g.wallet_address AND w.user_id = %s"
            " WHERE p.id = %s AND p.status <> 'Draft' AND w.user_id <> p.user_id"
            " ORDER BY (g.accepted_at IS NULL), g.created_at LIMIT 1",
            (user_id, plan_id),
        )
        member = await cur.fetchone()
    if member is None:
        raise NotFound("Plan")
    if accepted_only:
        require_accepted(accepted_at=member["accepted_at"])
    target: Target = {
        "function": "approve_guardian",
        "owner_id": member["user_id"],
        "owner_wallet": member["owner_wallet"],
        "plan_id": plan_id,
        "signer": member["wallet_address"],
        "guardian_id": member["guardian_id"],
        "beneficiary_id": None,
    }
    return target, member["status"]


def guardian_approval_of(*, guardian: Answerer) -> Target:
    """The approve_guardian call of the guardian a page resolved and proved: 403 before they
    accepted, 409 unless the plan is waiting for approvals, 404 without a plan or a wallet."""
    if guardian["plan_id"] is None or guardian["status"] is None or guardian["wallet_address"] is None:
        raise NotFound("Plan")
    require_accepted(accepted_at=guardian["accepted_at"])
    approvals.require_verifying(status=guardian["status"])
    return {
        "function": "approve_guardian",
        "owner_id": guardian["owner_id"],
        "owner_wallet": guardian["owner_wallet"],
        "plan_id": guardian["plan_id"],
        "signer": guardian["wallet_address"],
        "guardian_id": guardian["guardian_id"],
        "beneficiary_id": None,
    }


async def guardian_approval_target(pool: Pool, *, user_id: str, raw_plan_id: str) -> Target:
    """guardian_target, refused (409) unless the plan is waiting for approvals."""
    target, status = await _guardian_of(pool, user_id=user_id, raw_plan_id=raw_plan_id, accepted_only=True)
    approvals.require_verifying(status=status)
    return target


async def guardian_submit(
    pool: Pool, *, user_id: str, raw_plan_id: str, xdr: str, contract_id: str, passphrase: str, now: datetime
) -> tuple[Transaction, bool]:
    """Check a guardian's signed approve_guardian against the plan and store it `pending`."""
    target = await guardian_approval_target(pool, user_id=user_id, raw_plan_id=raw_plan_id)
    checked = check(envelope=xdr, target=target, contract_id=contract_id, passphrase=passphrase, now=now)
    async with autocommit(pool) as cur:
        return await store(cur, target=target, checked=checked, xdr=xdr, now=now, signer_user_id=user_id)


async def beneficiary_submit(
    pool: Pool,
    *,
    capsule: Capsule,
    envelope: Envelope,
    xdr: str,
    contract_id: str,
    passphrase: str,
    now: datetime,
) -> tuple[Transaction, bool]:
    """Check a beneficiary's signed call against their rules and store it `pending` (a measured
    hot path: the gate's query and the insert are its only round trips)."""
    # The source must be the wallet bound to this beneficiary, or nothing is stored or sent:
    # otherwise another heir's signed envelope (public once on the network) could claim
    # through this token (docs/soroban.md "Beneficiary wallets").
    target = beneficiary_target(
        capsule=capsule,
        function=envelope.function,
        wallet_address=envelope.source or "",
        now=now,
        refuse=BadRequest,
    )
    checked = check(envelope=envelope, target=target, contract_id=contract_id, passphrase=passphrase, now=now)
    async with autocommit(pool) as cur:
        return await store(cur, target=target, checked=checked, xdr=xdr, now=now)


def beneficiary_target(
    *,
    capsule: Capsule,
    function: str,
    wallet_address: str | None,
    now: datetime,
    refuse: type[BadRequest] | type[Conflict] = Conflict,
) -> Target:
    """The call this beneficiary (whose claim token the gate resolved to `capsule`) may make
    now with their bound wallet (`wallet_address`, when given, must be it); 409 saying why not
    otherwise. The gate's one query read all it checks (submit is a measured hot path).

    A wallet is unique within a plan's beneficiaries (index), so the bound wallet alone
    decides. `refuse` is the error for a wallet that is not the bound one: 409 at build (the
    heir has a step to take), 400 at submit (the envelope itself is wrong)."""
    plan_id = capsule["plan_id"]
    if plan_id is None:
        raise Conflict("The plan has not been set up yet")
    # The plan's state first: a wallet can be proven only once the capsule is ready or released.
    if function == "finalize_release":
        _check_release(capsule["plan_status"], capsule["release_at"], now)
    else:
        _check_claim(capsule["plan_status"])
        if capsule["claimed"]:
            raise Conflict("You have already claimed your share; the claim is confirmed on-chain")
    bound = capsule["wallet_address"]
    if bound is None:
        raise refuse(heir_wallets.PROVE_FIRST)
    if wallet_address is not None and bound != wallet_address:
        raise refuse(
            f"This is not the wallet bound to you: use the wallet {wallet_changes.short(address=bound)}. "
            "If you no longer hold it, prove the new one (POST /api/claim/{token}/wallet/challenge "
            "and /wallet/verify) and the plan's guardians can approve it."
        )
    return {
        "function": function,
        "owner_id": capsule["owner_id"],
        "owner_wallet": capsule["owner_wallet"],
        "plan_id": plan_id,
        "signer": bound,
        "guardian_id": None,
        "beneficiary_id": capsule["beneficiary_id"],
    }


def _check_release(status: str | None, release_at: datetime | None, now: datetime) -> None:
    if status == RELEASED:
        raise Conflict("The plan is already released; claim your share instead")
    if status != APPROVED:
        raise Conflict(f"The plan can be released only once its guardians have approved; it is {status}")
    if release_at is not None and release_at > now:
        raise Conflict(
            "The owner's cancel window is still open; the release can be finalised from "
            + spelled(release_at)
        )


def _check_claim(status: str | None) -> None:
    if status != RELEASED:
        raise Conflict(f"Shares can be claimed once the plan is released; it is {status}")


async def store(
    cur: Cursor,
    *,
    target: Target,
    checked: CheckedTransaction,
    xdr: str,
    now: datetime,
    signer_user_id: str | None = None,
) -> tuple[Transaction, bool]:
    """A checked call's row and timeline entry stored, or the row of the same hash returned."""
    return await transactions.insert(
        cur,
        checked=checked,
        xdr=xdr,
        owner_id=target["owner_id"],
        plan_id=target["plan_id"],
        guardian_id=target["guardian_id"],
        signer_user_id=signer_user_id,
        beneficiary_id=target["beneficiary_id"],
        now=now,
    )


async def submit(
    pool: Pool,
    redis: ArqRedis,
    *,
    target: Target,
    checked: CheckedTransaction,
    xdr: str,
    now: datetime,
    signer_user_id: str | None = None,
) -> Transaction:
    """A call checked and taken through models.proofs.contract_call, stored `pending` (or the
    row of the same hash), then relayed: the last steps of every contract call from a page."""
    async with autocommit(pool) as cur:
        row, _created = await store(
            cur, target=target, checked=checked, xdr=xdr, now=now, signer_user_id=signer_user_id
        )
    if row["status"] == "pending":
        await transactions.enqueue_relay(redis, tx_hash=row["hash"])
    return row
