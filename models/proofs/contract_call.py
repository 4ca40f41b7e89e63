"""Proof by a contract call: the service builds the unsigned call for the wallet that must
sign (build → hash → issue), the wallet signs it, and the signed envelope is taken back once
(decode → check → take); models.flows.onchain `submit` then stores it `pending` and has the
worker relay it. The heir's finalise and claim and the guardian's on-chain approval all go
through here."""

from __future__ import annotations

from datetime import datetime
from typing import TypedDict

from arq.connections import ArqRedis
from stellar_sdk import TransactionEnvelope

from core.stellar import soroban_check
from core.stellar.soroban import CheckedTransaction, SorobanGateway
from core.stellar.soroban_check import Envelope, check_signed
from models import wallet_requests
from models.wallet_requests import Prepared, WalletRequest


class Target(TypedDict):
    """Who may sign which call (models.flows.onchain decides it): the contract's `owner`
    argument (the owner's wallet), the signer (second argument and source account), and the
    rows a stored call belongs to."""

    function: str
    owner_id: str
    owner_wallet: str
    plan_id: str
    signer: str
    guardian_id: str | None
    beneficiary_id: str | None


async def issue(
    redis: ArqRedis, *, gateway: SorobanGateway, purpose: str, subject_id: str, target: Target, now: datetime
) -> Prepared:
    """The call `target` may make, built through the RPC node, kept as a request by its hash."""
    built = await gateway.build(
        function=target["function"], owner=target["owner_wallet"], signer=target["signer"], now=now
    )
    tx_hash = TransactionEnvelope.from_xdr(built["xdr"], built["network_passphrase"]).hash_hex()
    request_id = await wallet_requests.issue(
        redis,
        purpose=purpose,
        subject_id=subject_id,
        signer=target["signer"],
        tx_hash=tx_hash,
        expires_at=built["valid_until"],
        now=now,
    )
    return {
        "id": request_id,
        "purpose": purpose,
        "signer": target["signer"],
        "xdr": built["xdr"],
        "valid_until": built["valid_until"],
    }


def decode(*, gateway: SorobanGateway, request: WalletRequest, answer: str) -> soroban_check.Envelope:
    """The signed envelope, 400 unless it is the transaction this request asked for."""
    envelope = soroban_check.decode(answer)
    wallet_requests.require_hash(request=request, tx_hash=envelope.hash(gateway.passphrase).hex())
    return envelope


async def take(
    redis: ArqRedis,
    *,
    gateway: SorobanGateway,
    request: WalletRequest,
    envelope: soroban_check.Envelope,
    target: Target,
    now: datetime,
) -> CheckedTransaction:
    """The decoded envelope checked once against what `target` may sign (400 otherwise, the
    request still usable), then the request used up (decode → check → take)."""
    checked = check(
        envelope=envelope,
        target=target,
        contract_id=gateway.contract_id,
        passphrase=gateway.passphrase,
        now=now,
    )
    await wallet_requests.take(redis, request=request)
    return checked


def check(
    *, envelope: Envelope | str, target: Target, contract_id: str, passphrase: str, now: datetime
) -> CheckedTransaction:
    """The signed envelope checked against what this target may sign (400 otherwise)."""
    return check_signed(
        envelope,
        contract_id=contract_id,
        passphrase=passphrase,
        function=target["function"],
        owner=target["owner_wallet"],
        signer=target["signer"],
        now=now,
    )
