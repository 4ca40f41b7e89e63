"""The heir finishes from their own page (contract mode): prove a wallet, then sign
`finalize_release` (ready) or `claim_assets` (released, share unclaimed) as a SEP-7 signing
request, and the signed envelope taken back through the same checks and relay as
`POST /api/claim/:token/submit`. docs/pages.md "The heir finishes from the page".
"""

from __future__ import annotations

import math
from datetime import datetime
from typing import TypedDict

from arq.connections import ArqRedis

from core import ratelimit
from core.db import Pool
from core.errors import AppError, BadRequest, TooManyRequests
from core.files.crypto import KeyRing
from core.settings import Settings
from core.stellar import soroban
from core.stellar.soroban import SorobanGateway
from core.text.i18n import N_, _
from models import wallet_requests
from models.chain import transactions
from models.chain.transactions import Transaction
from models.claim import heir_wallets
from models.claim.capsules import READY, RELEASED_STATE, Capsule, View, WalletBinding, state, view
from models.flows import onchain
from models.proofs import contract_call

_PURPOSE = {"finalize_release": "heir.finalize_release", "claim_assets": "heir.claim_assets"}


class HeirStep(TypedDict):
    """What the heir's page offers now."""

    function: str | None  # finalize_release | claim_assets | None: nothing to sign
    wallet: str | None  # the bound wallet, None: prove one first
    transaction: Transaction | None  # their latest call of `function`
    request: wallet_requests.Prepared | None  # the call to sign now, if any
    problem: str | None  # why no call can be signed now, in the words of the 409/503


def due_function(*, capsule: Capsule) -> str | None:
    """The contract call this heir's capsule waits for, if any."""
    shown = state(capsule=capsule)
    if shown == READY:
        return "finalize_release"
    if shown == RELEASED_STATE and capsule["plan_id"] is not None and not capsule["claimed"]:
        return "claim_assets"
    return None


async def next_step(pool: Pool, *, gateway: SorobanGateway | None, capsule: Capsule) -> HeirStep:
    """The call due and their latest attempt. Nothing is built here: opening the page (or a mail
    scanner prefetching its link) asks the RPC node nothing and stores nothing."""
    function = due_function(capsule=capsule) if gateway is not None else None
    step = HeirStep(
        function=function, wallet=capsule["wallet_address"], transaction=None, request=None, problem=None
    )
    if gateway is None or function is None or capsule["wallet_address"] is None:
        return step
    step["transaction"] = await transactions.latest_for_beneficiary(
        pool, beneficiary_id=capsule["beneficiary_id"], function=function
    )
    return step


def signable(*, step: HeirStep) -> bool:
    """A call is due for a bound wallet and none is pending or confirmed."""
    done = step["transaction"] is not None and step["transaction"]["status"] in ("pending", "confirmed")
    return step["function"] is not None and step["wallet"] is not None and not done


BUILDS_WINDOW_SECONDS = 3600
TOO_MANY_BUILDS = N_(
    "You asked for a new signing request many times in the last hour. Please wait {minutes} "
    "minutes, then press the button again. Nothing is lost: what you sign later counts the same."
)


async def count_build(redis: ArqRedis, *, beneficiary_id: str, limit: int) -> None:
    """One more unsigned transaction built for this heir (two RPC calls each); 429 past `limit`
    an hour, whichever way it is asked (the page's button or the JSON build routes)."""
    retry = await ratelimit.hit(redis, f"heir-build:{beneficiary_id}", limit, BUILDS_WINDOW_SECONDS)
    if retry:
        raise TooManyRequests(_(TOO_MANY_BUILDS).format(minutes=max(1, math.ceil(retry / 60))), retry)


async def prepare(
    pool: Pool,
    redis: ArqRedis,
    *,
    gateway: SorobanGateway | None,
    capsule: Capsule,
    limit: int,
    now: datetime,
) -> HeirStep:
    """The page's button: the step with its signing request, the one shown before while it is
    unused and in time, else a fresh build through the RPC node (as `release/build` and
    `claim/build`, counted by `count_build`)."""
    step = await next_step(pool, gateway=gateway, capsule=capsule)
    if gateway is None or not signable(step=step):
        return step
    function = step["function"]
    assert function is not None
    purpose = _PURPOSE[function]
    subject = capsule["beneficiary_id"]
    step["request"] = await wallet_requests.reusable(redis, subject_id=subject, purpose=purpose, now=now)
    if step["request"] is not None:
        return step
    try:
        target = onchain.beneficiary_target(capsule=capsule, function=function, wallet_address=None, now=now)
        await count_build(redis, beneficiary_id=subject, limit=limit)
        prepared = await contract_call.issue(
            redis, gateway=gateway, purpose=purpose, subject_id=subject, target=target, now=now
        )
    except TooManyRequests:
        raise  # the button's own page says it (api/claim/capsule_page_wallet.py)
    except AppError as exc:  # not funded, refused by the contract, the node unreachable: said in words
        step["problem"] = exc.message if isinstance(exc.message, str) else " ".join(exc.message)
        return step
    await wallet_requests.keep_for_reuse(redis, subject_id=subject, prepared=prepared, now=now)
    step["request"] = prepared
    return step


async def page(
    pool: Pool,
    ring: KeyRing,
    *,
    gateway: SorobanGateway | None,
    capsule: Capsule,
    now: datetime,
    opened: bool,
) -> tuple[View, HeirStep]:
    """What the heir's page shows: the capsule (models.claim.capsules.view) and the step due,
    without its signing request (the button asks for that: `prepare`)."""
    shown = await view(pool, ring, capsule=capsule, now=now, opened=opened)
    step = await next_step(pool, gateway=gateway if opened else None, capsule=capsule)
    return shown, step


async def take_signed(
    pool: Pool,
    redis: ArqRedis,
    settings: Settings,
    *,
    gateway: SorobanGateway | None,
    capsule: Capsule,
    request_id: str,
    signed_xdr: str,
    now: datetime,
) -> WalletBinding | Transaction:
    """A signed envelope posted to a request's callback: the challenge binds the wallet (as
    `/wallet/verify`), a contract call is checked, stored `pending` and relayed (as `/submit`).
    Wrong envelopes (another transaction, another signer) are 400 and leave the request
    usable; a used, expired or another heir's request is 409/404."""
    request = await wallet_requests.peek(
        redis, request_id=request_id, subject_id=capsule["beneficiary_id"], now=now
    )
    if request["purpose"] == "heir.prove":
        return await heir_wallets.verify_transaction(
            pool, redis, settings, capsule=capsule, request=request, signed_xdr=signed_xdr, now=now
        )
    if gateway is None:
        raise soroban.not_configured()
    envelope = contract_call.decode(gateway=gateway, request=request, answer=signed_xdr)
    # The source must be the wallet bound to this beneficiary (docs/soroban.md "Beneficiary wallets").
    target = onchain.beneficiary_target(
        capsule=capsule,
        function=request["purpose"].removeprefix("heir."),
        wallet_address=envelope.source or "",
        now=now,
        refuse=BadRequest,
    )
    checked = await contract_call.take(
        redis, gateway=gateway, request=request, envelope=envelope, target=target, now=now
    )
    return await onchain.submit(pool, redis, target=target, checked=checked, xdr=signed_xdr, now=now)
