"""Helpers for the on-chain tests: settings pointing at the emulator, signing like a wallet."""

from __future__ import annotations

from typing import Any

from stellar_sdk import Keypair, TransactionEnvelope

from core.clock import Clock
from core.settings import Settings
from core.stellar.soroban import CheckedTransaction, SorobanGateway
from core.stellar.soroban_check import check_signed
from testing.soroban_rpc import SorobanRpcEmulator


def contract_overrides(rpc: SorobanRpcEmulator) -> dict[str, Any]:
    """Settings overrides that point the API and the worker at the emulator's contract."""
    return {
        "service_contract_id": rpc.contract_id,
        "soroban_rpc_url": rpc.url,
        "stellar_network_passphrase": rpc.passphrase,
        "soroban_rpc_timeout_seconds": 2,
    }


def gateway_for(rpc: SorobanRpcEmulator) -> SorobanGateway:
    assert rpc.contract_id is not None
    return SorobanGateway(rpc_url=rpc.url, contract_id=rpc.contract_id, passphrase=rpc.passphrase, timeout=2)


def sign_xdr(xdr: str, keypair: Keypair, passphrase: str) -> str:
    """What a wallet does with a built transaction: sign its hash for the network, return the XDR."""
    envelope = TransactionEnvelope.from_xdr(xdr, passphrase)
    envelope.sign(keypair)
    return envelope.to_xdr()


async def signed_call(
    rpc: SorobanRpcEmulator, clock: Clock, *, function: str, owner: str, signer: Keypair
) -> tuple[str, CheckedTransaction]:
    """Build through the service's gateway, sign with the signer's key, check like submit does."""
    gateway = gateway_for(rpc)
    try:
        built = await gateway.build(function=function, owner=owner, signer=signer.public_key, now=clock.now())
    finally:
        await gateway.close()
    xdr = sign_xdr(built["xdr"], signer, rpc.passphrase)
    checked = check_signed(
        xdr,
        contract_id=gateway.contract_id,
        passphrase=rpc.passphrase,
        function=function,
        owner=owner,
        signer=signer.public_key,
        now=clock.now(),
    )
    return xdr, checked


def worker_settings(settings: Settings, rpc: SorobanRpcEmulator) -> dict[str, Any]:
    return {"settings": contract_overrides(rpc)}


async def prove_wallet(client: Any, token: str, keypair: Keypair, **sign_options: Any) -> Any:
    """What an heir's wallet page does: ask for a challenge through the claim token, sign it with
    the wallet, post the signature. Returns the verify response."""
    from tests.helpers import sign

    address = keypair.public_key
    resp = await client.post(f"/api/claim/{token}/wallet/challenge", json={"walletAddress": address})
    assert resp.status == 200, await resp.text()
    message = (await resp.json())["message"]
    return await client.post(
        f"/api/claim/{token}/wallet/verify",
        json={"walletAddress": address, "signature": sign(keypair, message, **sign_options)},
    )
