"""The RPC emulator against stellar-sdk's own client, and core.stellar.soroban's
build/check/send/status on it."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from stellar_sdk import Keypair, Network, SorobanServerAsync, TransactionBuilder, TransactionEnvelope, scval
from stellar_sdk import xdr as x
from stellar_sdk.exceptions import AccountNotFoundException, BadResponseError, SorobanRpcErrorResponse
from stellar_sdk.soroban_rpc import GetTransactionStatus, SendTransactionStatus

from core.clock import Clock
from core.errors import BadRequest, Conflict
from core.stellar import soroban, soroban_check
from testing.soroban_rpc import SorobanRpcEmulator, random_contract_id


def gateway(rpc: SorobanRpcEmulator, timeout: float = 5.0) -> soroban.SorobanGateway:
    assert rpc.contract_id is not None
    return soroban.SorobanGateway(
        rpc_url=rpc.url, contract_id=rpc.contract_id, passphrase=rpc.passphrase, timeout=timeout
    )


async def prepared(
    rpc: SorobanRpcEmulator, signer: Keypair, owner: str, function: str = "claim_assets", max_time: int = 0
) -> Any:
    async with SorobanServerAsync(rpc.url) as server:
        account = await server.load_account(signer.public_key)
        tx = (
            TransactionBuilder(account, rpc.passphrase, base_fee=100)
            .append_invoke_contract_function_op(
                rpc.contract_id, function, [scval.to_address(owner), scval.to_address(signer.public_key)]
            )
            .add_time_bounds(0, max_time or int(rpc.now()) + 300)
            .build()
        )
        return await server.prepare_transaction(tx)


async def test_sdk_client_reads_what_the_emulator_answers(soroban_rpc: SorobanRpcEmulator) -> None:
    signer, owner = Keypair.random(), Keypair.random()
    soroban_rpc.fund(signer.public_key, 1000)
    async with SorobanServerAsync(soroban_rpc.url) as server:
        assert (await server.get_health()).status == "healthy"
        assert (await server.get_network()).passphrase == Network.TESTNET_NETWORK_PASSPHRASE
        assert (await server.get_latest_ledger()).sequence == soroban_rpc.ledger
        assert (await server.load_account(signer.public_key)).sequence == 1000
        with pytest.raises(AccountNotFoundException):
            await server.load_account(owner.public_key)
    tx = await prepared(soroban_rpc, signer, owner.public_key)
    assert tx.transaction.soroban_data.resource_fee.int64 > 0
    assert tx.transaction.fee > 100
    auth = tx.transaction.operations[0].auth
    assert auth[0].credentials.type == x.SorobanCredentialsType.SOROBAN_CREDENTIALS_SOURCE_ACCOUNT

    tx.sign(signer)
    async with SorobanServerAsync(soroban_rpc.url) as server:
        sent = await server.send_transaction(tx)
        assert sent.status == SendTransactionStatus.PENDING and sent.hash == tx.hash_hex()
        assert (await server.send_transaction(tx)).status == SendTransactionStatus.DUPLICATE
        got = await server.get_transaction(tx.hash_hex())
        assert got.status == GetTransactionStatus.SUCCESS and got.ledger == soroban_rpc.ledger
        result = x.TransactionResult.from_xdr(got.result_xdr)
        assert result.result.code == x.TransactionResultCode.txSUCCESS


async def test_send_checks_signature_sequence_network_and_time(
    soroban_rpc: SorobanRpcEmulator, clock: Clock
) -> None:
    signer, owner = Keypair.random(), Keypair.random()
    soroban_rpc.fund(signer.public_key, 1000)

    async def send(envelope: TransactionEnvelope) -> str:
        async with SorobanServerAsync(soroban_rpc.url) as server:
            response = await server.send_transaction(envelope)
        if response.status != SendTransactionStatus.ERROR:
            return response.status.value
        return x.TransactionResult.from_xdr(response.error_result_xdr).result.code.name

    unsigned = await prepared(soroban_rpc, signer, owner.public_key)
    assert await send(unsigned) == "txBAD_AUTH"
    wrong_key = TransactionEnvelope.from_xdr(unsigned.to_xdr(), soroban_rpc.passphrase)
    wrong_key.sign(Keypair.random())
    assert await send(wrong_key) == "txBAD_AUTH"
    other_net = TransactionEnvelope.from_xdr(unsigned.to_xdr(), Network.PUBLIC_NETWORK_PASSPHRASE)
    other_net.sign(signer)
    assert await send(other_net) == "txBAD_AUTH"
    good = TransactionEnvelope.from_xdr(unsigned.to_xdr(), soroban_rpc.passphrase)
    good.sign(signer)
    clock.advance(minutes=10)
    assert await send(good) == "txTOO_LATE"
    stale = await prepared(soroban_rpc, signer, owner.public_key)  # built before the next one lands
    stale.sign(signer)
    fresh = await prepared(soroban_rpc, signer, owner.public_key, "finalize_release")
    fresh.sign(signer)
    assert await send(fresh) == "PENDING"
    assert await send(stale) == "txBAD_SEQ"


async def test_scripted_statuses_and_contract_failures(soroban_rpc: SorobanRpcEmulator) -> None:
    signer, owner = Keypair.random(), Keypair.random()
    soroban_rpc.fund(signer.public_key)
    soroban_rpc.execution_errors["claim_assets"] = 10
    soroban_rpc.not_found_polls = 2
    soroban_rpc.send_script = ["TRY_AGAIN_LATER"]
    tx = await prepared(soroban_rpc, signer, owner.public_key)
    tx.sign(signer)
    gw = gateway(soroban_rpc)
    try:
        assert (await gw.send(tx.to_xdr())).status == "TRY_AGAIN_LATER"
        assert (await gw.status(tx.hash_hex())).status == "NOT_FOUND"  # never accepted
        assert (await gw.send(tx.to_xdr())).status == "PENDING"
        assert [(await gw.status(tx.hash_hex())).status for _ in range(2)] == ["NOT_FOUND"] * 2
        final = await gw.status(tx.hash_hex())
        assert final.status == "FAILED" and final.contract_error_code == 10
        assert final.result_code == "txFAILED/INVOKE_HOST_FUNCTION_TRAPPED" and final.ledger
        soroban_rpc.send_script = ["ERROR"]
        rejected = await gw.send(tx.to_xdr())
        assert rejected.status == "ERROR" and rejected.result_code == "txINTERNAL_ERROR"
    finally:
        await gw.close()


async def test_faults_on_demand(soroban_rpc: SorobanRpcEmulator) -> None:
    soroban_rpc.timeout_seconds = 2
    async with SorobanServerAsync(soroban_rpc.url) as server:
        soroban_rpc.fail_next("http500")
        with pytest.raises(BadResponseError):
            await server.get_health()
        soroban_rpc.fail_next("rpc_error", method="getNetwork")
        assert (await server.get_health()).status == "healthy"  # the fault waits for its method
        with pytest.raises(SorobanRpcErrorResponse):
            await server.get_network()
    gw = gateway(soroban_rpc, timeout=0.2)
    signer = Keypair.random()
    soroban_rpc.fund(signer.public_key)
    try:
        for kind in ("timeout", "http500", "garbage"):
            soroban_rpc.fail_next(kind)
            with pytest.raises(soroban.RpcUnavailable) as caught:
                await gw.build(
                    function="claim_assets",
                    owner=Keypair.random().public_key,
                    signer=signer.public_key,
                    now=Clock().now(),
                )
            assert caught.value.status == 503 and caught.value.headers["Retry-After"]
    finally:
        await gw.close()


async def test_build_answers_honestly(soroban_rpc: SorobanRpcEmulator, clock: Clock) -> None:
    signer, owner = Keypair.random(), Keypair.random()
    gw = gateway(soroban_rpc)
    try:
        with pytest.raises(Conflict, match="fund it"):
            await gw.build(
                function="approve_guardian", owner=owner.public_key, signer=signer.public_key, now=clock.now()
            )
        soroban_rpc.fund(signer.public_key)
        soroban_rpc.simulation_errors["approve_guardian"] = 4
        with pytest.raises(soroban.ContractError) as caught:
            await gw.build(
                function="approve_guardian", owner=owner.public_key, signer=signer.public_key, now=clock.now()
            )
        assert caught.value.extra == {"contractErrorCode": 4} and "already approved" in str(caught.value)
        built = await gw.build(
            function="claim_assets", owner=owner.public_key, signer=signer.public_key, now=clock.now()
        )
    finally:
        await gw.close()
    assert built["function"] == "claim_assets"
    assert [a["value"] for a in built["args"]] == [owner.public_key, signer.public_key]
    envelope = TransactionEnvelope.from_xdr(built["xdr"], soroban_rpc.passphrase)
    assert envelope.transaction.fee == built["fee"] and not envelope.signatures
    assert timedelta(minutes=4) < built["valid_until"] - clock.now() <= timedelta(minutes=5)
    envelope.sign(signer)
    checked = soroban_check.check_signed(
        envelope.to_xdr(),
        contract_id=gw.contract_id,
        passphrase=soroban_rpc.passphrase,
        function="claim_assets",
        owner=owner.public_key,
        signer=signer.public_key,
        now=clock.now(),
    )
    assert checked["hash"] == envelope.hash_hex() and checked["source"] == signer.public_key


def test_check_signed_refuses_garbage() -> None:
    for bad in ("", "not base64!", "AAAA"):
        with pytest.raises(BadRequest):
            soroban_check.check_signed(
                bad,
                contract_id=random_contract_id(),
                passphrase=Network.TESTNET_NETWORK_PASSPHRASE,
                function="claim_assets",
                owner="G",
                signer="G",
                now=Clock().now(),
            )
