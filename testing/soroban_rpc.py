"""A Soroban RPC emulator: an aiohttp JSON-RPC server standing in for a real RPC node in tests.

It answers the calls the service makes (getHealth, getNetwork, getLatestLedger,
getLedgerEntries, simulateTransaction, sendTransaction, getTransaction) with values built
from stellar-sdk's XDR types, so everything it returns decodes for real, and it checks what
it is sent the way a node would: the envelope decodes, the signature over the hash for *its*
network passphrase is the source account's, the sequence number is the next one, the time
bound has not passed. The contract itself is scripted by the test (which calls fail with
which `Error(Contract, #N)`), as are the node's moods: `TRY_AGAIN_LATER`, `NOT_FOUND` for a
few polls, timeouts, HTTP 500 and garbage JSON.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import secrets
import socket
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

import pytest_asyncio
from aiohttp import web
from stellar_sdk import Keypair, Network, SorobanDataBuilder, StrKey, TransactionEnvelope, scval, xdr
from stellar_sdk.exceptions import BadSignatureError
from stellar_sdk.operation import InvokeHostFunction

from core.clock import Clock

TESTNET = Network.TESTNET_NETWORK_PASSPHRASE
RESOURCE_FEE = 94_321
BASE_LEDGER = 50_000
# How a node says "this envelope is not even a transaction" (JSON-RPC invalid params).
INVALID_PARAMS = -32602


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def contract_error_event(code: int) -> xdr.DiagnosticEvent:
    """The diagnostic event a host emits when a contract returns `Error(Contract, #code)`."""
    error = xdr.SCVal(
        xdr.SCValType.SCV_ERROR,
        error=xdr.SCError(xdr.SCErrorType.SCE_CONTRACT, contract_code=xdr.Uint32(code)),
    )
    body = xdr.ContractEventBody(
        0, xdr.ContractEventV0(topics=[scval.to_symbol("error"), error], data=scval.to_void())
    )
    event = xdr.ContractEvent(xdr.ExtensionPoint(0), None, xdr.ContractEventType.DIAGNOSTIC, body)
    return xdr.DiagnosticEvent(in_successful_contract_call=False, event=event)


def transaction_result(
    code: xdr.TransactionResultCode, fee: int, op: xdr.InvokeHostFunctionResult | None = None
) -> str:
    results = None
    if op is not None:
        tr = xdr.OperationResultTr(xdr.OperationType.INVOKE_HOST_FUNCTION, invoke_host_function_result=op)
        results = [xdr.OperationResult(xdr.OperationResultCode.opINNER, tr)]
    result = xdr.TransactionResultResult(code, results=results)
    return xdr.TransactionResult(xdr.Int64(fee), result, xdr.TransactionResultExt(0)).to_xdr()


def account_entry(address: str, sequence: int) -> xdr.LedgerEntryData:
    account = xdr.AccountEntry(
        account_id=Keypair.from_public_key(address).xdr_account_id(),
        balance=xdr.Int64(10_000 * 10**7),
        seq_num=xdr.SequenceNumber(xdr.Int64(sequence)),
        num_sub_entries=xdr.Uint32(0),
        inflation_dest=None,
        flags=xdr.Uint32(0),
        home_domain=xdr.String32(b""),
        thresholds=xdr.Thresholds(b"\x01\x00\x00\x00"),
        signers=[],
        ext=xdr.AccountEntryExt(0),
    )
    return xdr.LedgerEntryData(xdr.LedgerEntryType.ACCOUNT, account=account)


@dataclass
class Sent:
    """A transaction the node accepted: it will be found after `polls_left` NOT_FOUND answers."""

    hash: str
    envelope_xdr: str
    function: str
    args: list[xdr.SCVal]
    fee: int
    polls_left: int
    error_code: int | None
    ledger: int = 0
    created_at: int = 0


@dataclass
class Fault:
    kind: str  # "timeout" | "http500" | "garbage" | "rpc_error"
    method: str | None  # None: whatever comes next
    count: int


@dataclass
class SorobanRpcEmulator:
    passphrase: str = TESTNET
    contract_id: str | None = None
    now: Callable[[], float] = time.time
    # Scripting ------------------------------------------------------------------------------
    accounts: dict[str, int] = field(default_factory=dict)  # address -> current sequence number
    # function -> code: simulation fails inside the contract.
    simulation_errors: dict[str, int] = field(default_factory=dict)
    # function -> code: simulation passes but the transaction FAILS when applied.
    execution_errors: dict[str, int] = field(default_factory=dict)
    send_script: list[str] = field(default_factory=list)  # statuses for the next sendTransactions
    not_found_polls: int = 0  # getTransaction says NOT_FOUND this many times before the outcome
    timeout_seconds: float = 30.0  # how long a "timeout" fault keeps the caller waiting
    latency_seconds: float = 0.0  # every answer waits this long, as a node across a network would
    # Observations ---------------------------------------------------------------------------
    calls: list[tuple[str, Any]] = field(default_factory=list)
    sent: dict[str, Sent] = field(default_factory=dict)
    faults: list[Fault] = field(default_factory=list)
    ledger: int = BASE_LEDGER
    url: str = ""
    _runner: web.AppRunner | None = None
    _stopping: asyncio.Event = field(default_factory=asyncio.Event)

    # Test controls --------------------------------------------------------------------------
    def fund(self, address: str, sequence: int | None = None) -> None:
        self.accounts[address] = (
            sequence if sequence is not None else 4_294_967_296 * (len(self.accounts) + 7)
        )

    def fail_next(self, kind: str, *, method: str | None = None, count: int = 1) -> None:
        self.faults.append(Fault(kind, method, count))

    def calls_to(self, method: str) -> list[Any]:
        return [params for name, params in self.calls if name == method]

    async def start(self) -> str:
        app = web.Application()
        app.router.add_post("/", self._handle)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        port = free_port()
        await web.TCPSite(self._runner, "127.0.0.1", port).start()
        self.url = f"http://127.0.0.1:{port}/"
        return self.url

    async def stop(self) -> None:
        self._stopping.set()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    # JSON-RPC -------------------------------------------------------------------------------
    def _take_fault(self, method: str) -> str | None:
        for fault in self.faults:
            if fault.method in (None, method):
                fault.count -= 1
                if fault.count <= 0:
                    self.faults.remove(fault)
                return fault.kind
        return None

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        try:
            body = await request.json()
        except ValueError:
            return web.json_response(
                {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "parse error"}}
            )
        method, params, req_id = body.get("method"), body.get("params") or {}, body.get("id")
        self.calls.append((method, params))
        if self.latency_seconds:
            await asyncio.sleep(self.latency_seconds)
        fault = self._take_fault(method)
        if fault == "timeout":  # hang, but let stop() end it at once
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stopping.wait(), self.timeout_seconds)
        elif fault == "http500":
            return web.Response(status=500, text="<html>upstream exploded</html>")
        elif fault == "garbage":
            return web.Response(status=200, text="{not json", content_type="application/json")
        elif fault == "rpc_error":
            return web.json_response(
                {"jsonrpc": "2.0", "id": req_id, "error": {"code": -32603, "message": "internal"}}
            )
        handler = getattr(self, f"rpc_{method}", None)
        if handler is None:
            error = {"code": -32601, "message": "method not found"}
            return web.json_response({"jsonrpc": "2.0", "id": req_id, "error": error})
        try:
            result = handler(params)
        except RpcError as exc:
            return web.json_response(
                {"jsonrpc": "2.0", "id": req_id, "error": {"code": exc.code, "message": str(exc)}}
            )
        return web.json_response({"jsonrpc": "2.0", "id": req_id, "result": result})

    def _ledger_fields(self) -> dict[str, Any]:
        return {"latestLedger": self.ledger, "latestLedgerCloseTime": str(int(self.now()))}

    def rpc_getHealth(self, params: Any) -> dict[str, Any]:
        return {
            "status": "healthy",
            "latestLedger": self.ledger,
            "oldestLedger": self.ledger - 17280,
            "ledgerRetentionWindow": 17280,
        }

    def rpc_getNetwork(self, params: Any) -> dict[str, Any]:
        return {"passphrase": self.passphrase, "protocolVersion": 22}

    def rpc_getLatestLedger(self, params: Any) -> dict[str, Any]:
        return {
            "id": hashlib.sha256(str(self.ledger).encode()).hexdigest(),
            "protocolVersion": 22,
            "sequence": self.ledger,
        }

    def rpc_getLedgerEntries(self, params: Any) -> dict[str, Any]:
        entries = []
        for key_xdr in params.get("keys", []):
            key = xdr.LedgerKey.from_xdr(key_xdr)
            if key.type != xdr.LedgerEntryType.ACCOUNT:
                continue
            assert key.account is not None and key.account.account_id.account_id.ed25519 is not None
            address = StrKey.encode_ed25519_public_key(key.account.account_id.account_id.ed25519.uint256)
            if address in self.accounts:
                data = account_entry(address, self.accounts[address])
                entries.append(
                    {"key": key_xdr, "xdr": data.to_xdr(), "lastModifiedLedgerSeq": self.ledger - 3}
                )
        return {"entries": entries, "latestLedger": self.ledger}

    def _decode_invoke(self, envelope: TransactionEnvelope) -> tuple[str, list[xdr.SCVal]]:
        ops = envelope.transaction.operations
        if len(ops) != 1 or not isinstance(ops[0], InvokeHostFunction):
            raise RpcError(INVALID_PARAMS, "transaction must hold exactly one invoke host function operation")
        fn = ops[0].host_function
        if fn.type != xdr.HostFunctionType.HOST_FUNCTION_TYPE_INVOKE_CONTRACT or fn.invoke_contract is None:
            raise RpcError(INVALID_PARAMS, "only contract invocations are emulated")
        invoke = fn.invoke_contract
        contract = invoke.contract_address.contract_id
        if contract is None:
            raise RpcError(INVALID_PARAMS, "not a contract address")
        contract_id = StrKey.encode_contract(contract.contract_id.hash)
        if self.contract_id is not None and contract_id != self.contract_id:
            raise _Missing()
        return invoke.function_name.sc_symbol.decode(), list(invoke.args)

    def _parse(self, params: Any) -> TransactionEnvelope:
        try:
            return TransactionEnvelope.from_xdr(params["transaction"], self.passphrase)
        except Exception:
            raise RpcError(INVALID_PARAMS, "invalid transaction XDR") from None

    def rpc_simulateTransaction(self, params: Any) -> dict[str, Any]:
        envelope = self._parse(params)
        try:
            function, args = self._decode_invoke(envelope)
        except _Missing:
            return {
                "error": "HostError: Error(Storage, MissingValue)\n\ncontract instance not found",
                "latestLedger": self.ledger,
            }
        if function in self.simulation_errors:
            code = self.simulation_errors[function]
            event = contract_error_event(code).to_xdr()
            return {
                "error": f"HostError: Error(Contract, #{code})\n\nEvent log (newest first):\n   0: ...",
                "events": [event],
                "latestLedger": self.ledger,
            }
        source = envelope.transaction.source.account_id
        invoke = envelope.transaction.operations[0]
        assert isinstance(invoke, InvokeHostFunction) and invoke.host_function.invoke_contract is not None
        contract_address = invoke.host_function.invoke_contract.contract_address
        instance = xdr.LedgerKey(
            xdr.LedgerEntryType.CONTRACT_DATA,
            contract_data=xdr.LedgerKeyContractData(
                contract_address,
                xdr.SCVal(xdr.SCValType.SCV_LEDGER_KEY_CONTRACT_INSTANCE),
                xdr.ContractDataDurability.PERSISTENT,
            ),
        )
        plan_key = xdr.LedgerKey(
            xdr.LedgerEntryType.CONTRACT_DATA,
            contract_data=xdr.LedgerKeyContractData(
                contract_address, args[0] if args else scval.to_void(), xdr.ContractDataDurability.PERSISTENT
            ),
        )
        data = (
            SorobanDataBuilder()
            .set_resources(2_000_000, 3_000, 400)
            .set_read_only([instance])
            .set_read_write([plan_key])
            .set_resource_fee(RESOURCE_FEE)
            .build()
        )
        # The caller (second argument) authorizes the call; it is the source account here, so
        # the entry uses the transaction's own signature (source-account credentials).
        caller = scval.from_address(args[1]).address if len(args) > 1 else source
        if caller == source:
            credentials = xdr.SorobanCredentials(
                xdr.SorobanCredentialsType.SOROBAN_CREDENTIALS_SOURCE_ACCOUNT
            )
        else:
            credentials = xdr.SorobanCredentials(
                xdr.SorobanCredentialsType.SOROBAN_CREDENTIALS_ADDRESS,
                address=xdr.SorobanAddressCredentials(
                    scval.from_address(args[1]).to_xdr_sc_address(),
                    xdr.Int64(7),
                    xdr.Uint32(self.ledger + 100),
                    scval.to_void(),
                ),
            )
        auth = xdr.SorobanAuthorizationEntry(
            credentials,
            xdr.SorobanAuthorizedInvocation(
                xdr.SorobanAuthorizedFunction(
                    xdr.SorobanAuthorizedFunctionType.SOROBAN_AUTHORIZED_FUNCTION_TYPE_CONTRACT_FN,
                    contract_fn=invoke.host_function.invoke_contract,
                ),
                [],
            ),
        )
        return {
            "transactionData": data.to_xdr(),
            "minResourceFee": str(RESOURCE_FEE),
            "events": [],
            "results": [{"auth": [auth.to_xdr()], "xdr": scval.to_void().to_xdr()}],
            "cost": {"cpuInsns": "1500000", "memBytes": "2500000"},
            "latestLedger": self.ledger,
        }

    def _reject(self, code: xdr.TransactionResultCode, fee: int, tx_hash: str) -> dict[str, Any]:
        return {
            "status": "ERROR",
            "hash": tx_hash,
            "errorResultXdr": transaction_result(code, fee),
            **self._ledger_fields(),
        }

    def rpc_sendTransaction(self, params: Any) -> dict[str, Any]:
        envelope = self._parse(params)
        tx = envelope.transaction
        tx_hash = envelope.hash_hex()
        scripted = self.send_script.pop(0) if self.send_script else None
        if scripted == "TRY_AGAIN_LATER":
            return {"status": "TRY_AGAIN_LATER", "hash": tx_hash, **self._ledger_fields()}
        if scripted == "ERROR":
            return self._reject(xdr.TransactionResultCode.txINTERNAL_ERROR, 100, tx_hash)
        if tx_hash in self.sent or scripted == "DUPLICATE":
            return {"status": "DUPLICATE", "hash": tx_hash, **self._ledger_fields()}
        source = tx.source.account_id
        if source not in self.accounts:
            return self._reject(xdr.TransactionResultCode.txNO_ACCOUNT, 0, tx_hash)
        signer = Keypair.from_public_key(source)
        signed = False
        for signature in envelope.signatures:
            if signature.signature_hint != signer.signature_hint():
                continue
            try:
                signer.verify(envelope.hash(), signature.signature)
                signed = True
            except BadSignatureError:
                pass
        if not signed:  # a wrong network passphrase lands here too: the hash differs
            return self._reject(xdr.TransactionResultCode.txBAD_AUTH, 100, tx_hash)
        if tx.sequence != self.accounts[source] + 1:
            return self._reject(xdr.TransactionResultCode.txBAD_SEQ, 100, tx_hash)
        bounds = tx.preconditions.time_bounds if tx.preconditions else None
        if bounds is not None and bounds.max_time and bounds.max_time < self.now():
            return self._reject(xdr.TransactionResultCode.txTOO_LATE, 100, tx_hash)
        if tx.soroban_data is None or tx.fee < tx.soroban_data.resource_fee.int64:
            return self._reject(xdr.TransactionResultCode.txSOROBAN_INVALID, 100, tx_hash)
        try:
            function, args = self._decode_invoke(envelope)
        except _Missing:
            function, args = "?", []
        self.accounts[source] = tx.sequence
        self.sent[tx_hash] = Sent(
            hash=tx_hash,
            envelope_xdr=params["transaction"],
            function=function,
            args=args,
            fee=tx.fee,
            polls_left=self.not_found_polls,
            error_code=self.execution_errors.get(function),
        )
        return {"status": "PENDING", "hash": tx_hash, **self._ledger_fields()}

    def rpc_getTransaction(self, params: Any) -> dict[str, Any]:
        tx_hash = params.get("hash", "")
        common = {
            "txHash": tx_hash,
            **self._ledger_fields(),
            "oldestLedger": self.ledger - 17280,
            "oldestLedgerCloseTime": str(int(self.now()) - 86400),
        }
        sent = self.sent.get(tx_hash)
        if sent is None:
            return {"status": "NOT_FOUND", **common}
        if sent.polls_left > 0:
            sent.polls_left -= 1
            return {"status": "NOT_FOUND", **common}
        if not sent.ledger:
            self.ledger += 1
            sent.ledger, sent.created_at = self.ledger, int(self.now())
            common.update(self._ledger_fields())
        found = {
            **common,
            "ledger": sent.ledger,
            "createdAt": str(sent.created_at),
            "applicationOrder": 1,
            "feeBump": False,
            "envelopeXdr": sent.envelope_xdr,
        }
        if sent.error_code is None:
            op = xdr.InvokeHostFunctionResult(
                xdr.InvokeHostFunctionResultCode.INVOKE_HOST_FUNCTION_SUCCESS, success=xdr.Hash(bytes(32))
            )
            code = xdr.TransactionResultCode.txSUCCESS
            return {**found, "status": "SUCCESS", "resultXdr": transaction_result(code, sent.fee - 1000, op)}
        op = xdr.InvokeHostFunctionResult(xdr.InvokeHostFunctionResultCode.INVOKE_HOST_FUNCTION_TRAPPED)
        return {
            **found,
            "status": "FAILED",
            "resultXdr": transaction_result(xdr.TransactionResultCode.txFAILED, sent.fee - 1000, op),
            "diagnosticEventsXdr": [contract_error_event(sent.error_code).to_xdr()],
        }


class RpcError(Exception):
    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code


class _Missing(Exception):
    """The transaction calls a contract this node does not have."""


def random_contract_id() -> str:
    return StrKey.encode_contract(secrets.token_bytes(32))


@pytest_asyncio.fixture
async def soroban_rpc(clock: Clock) -> AsyncIterator[SorobanRpcEmulator]:
    """A running emulator that knows the test's contract and reads the test's clock."""
    emulator = SorobanRpcEmulator(contract_id=random_contract_id(), now=lambda: clock.now().timestamp())
    await emulator.start()
    yield emulator
    await emulator.stop()
