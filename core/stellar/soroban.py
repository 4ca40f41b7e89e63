"""The Soroban contract: building unsigned calls, checking signed ones, talking to the RPC node.

The service never holds a key that signs for anyone. It builds the exact call a guardian or a
beneficiary must sign (`build`), refuses to relay anything it would not have built
(`check_signed`), and reports only what the RPC node says (`send`, `status`): a transaction is
confirmed when the node says SUCCESS, failed when it says FAILED (with the contract's error
code when there is one), and pending until then. The contract interface and its error codes
are assumed (docs/soroban.md); `CONTRACT_ERRORS` is the one place the codes live in code.
"""

from __future__ import annotations

import contextlib
import json
import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, TypedDict

import pydantic
from stellar_sdk import (
    Network,
    SorobanServerAsync,
    TransactionBuilder,
    scval,
)
from stellar_sdk import xdr as stellar_xdr
from stellar_sdk.client.aiohttp_client import AiohttpClient
from stellar_sdk.exceptions import (
    AccountNotFoundException,
    BaseRequestError,
    PrepareTransactionException,
    SorobanRpcErrorResponse,
)
from stellar_sdk.soroban_rpc import GetTransactionStatus, SendTransactionStatus

from core.errors import AppError, Conflict, ServiceUnavailable
from core.settings import Settings

# (function, name of its second argument): the first is always the plan owner's wallet, the
# second the signer's own wallet, which must also be the transaction's source account.
FUNCTIONS: dict[str, tuple[str, str]] = {
    "approve_guardian": ("owner", "guardian"),
    "finalize_release": ("owner", "caller"),
    "claim_assets": ("owner", "beneficiary"),
}

# ASSUMED error codes of the contract (docs/soroban.md): change them here and there together.
CONTRACT_ERRORS: dict[int, str] = {
    1: "The contract is not initialised",
    2: "No plan is registered on-chain for this owner",
    3: "This wallet is not a guardian of the plan",
    4: "This guardian has already approved",
    5: "Not enough guardians have approved yet",
    6: "The owner's cancel window has not ended yet",
    7: "The plan has already been released",
    8: "The plan has not been released yet",
    9: "This wallet is not a beneficiary of the plan",
    10: "This beneficiary has already claimed",
    11: "The owner cancelled the release",
}

# How long a built transaction stays valid: long enough to read and sign it in a wallet,
# short enough that a forgotten one cannot be relayed days later.
BUILD_VALIDITY = timedelta(minutes=5)
# A signed envelope may not claim validity beyond this (nothing the service would not build).
MAX_VALIDITY = timedelta(minutes=15)
BASE_FEE = 100  # stroops per operation, the network minimum; the resource fee comes from simulation
RPC_RETRY_AFTER = 10  # seconds a client is told to wait when the RPC node is unreachable
CONTRACT_ERROR_RE = re.compile(r"Error\(Contract, #(\d+)\)")
KNOWN_NETWORKS = {
    Network.PUBLIC_NETWORK_PASSPHRASE: "the public network",
    Network.TESTNET_NETWORK_PASSPHRASE: "testnet",
    Network.FUTURENET_NETWORK_PASSPHRASE: "futurenet",
}


def contract_error_message(code: int) -> str:
    meaning = CONTRACT_ERRORS.get(code)
    return (
        f"{meaning} (contract error #{code})" if meaning else f"The contract refused the call (error #{code})"
    )


class ContractError(Conflict):
    """The contract itself refused the call: 409 with `contractErrorCode`."""

    def __init__(self, code: int, prefix: str = "") -> None:
        super().__init__(prefix + contract_error_message(code), extra={"contractErrorCode": code})
        self.code = code


class RpcUnavailable(ServiceUnavailable):
    """The RPC node could not be reached, timed out, or answered nonsense: 503, try again later."""

    def __init__(self, what: str) -> None:
        super().__init__(
            f"The Stellar RPC node is unavailable ({what}); try again shortly",
            headers={"Retry-After": str(RPC_RETRY_AFTER)},
        )


def not_configured() -> ServiceUnavailable:
    return ServiceUnavailable(
        "On-chain transactions are not available: the service has no contract configured"
        " (SERVICE_CONTRACT_ID)"
    )


class BuiltTransaction(TypedDict):
    xdr: str
    network_passphrase: str
    contract_id: str
    function: str
    args: list[dict[str, str]]
    fee: int
    valid_until: datetime


class CheckedTransaction(TypedDict):
    hash: str
    function: str
    source: str
    valid_until: datetime


@dataclass(frozen=True)
class SendResult:
    status: str  # PENDING | DUPLICATE | TRY_AGAIN_LATER | ERROR
    result_code: str | None = None  # ERROR: the transaction result code (txBAD_SEQ, ...)
    contract_error_code: int | None = None


@dataclass(frozen=True)
class TransactionStatus:
    status: str  # SUCCESS | FAILED | NOT_FOUND
    ledger: int | None = None
    closed_at: datetime | None = None
    result_code: str | None = None
    contract_error_code: int | None = None


def readable_args(function: str, owner: str, signer: str) -> list[dict[str, str]]:
    first, second = FUNCTIONS[function]
    return [
        {"name": first, "type": "Address", "value": owner},
        {"name": second, "type": "Address", "value": signer},
    ]


def _contract_code_in_events(events_xdr: list[str] | None) -> int | None:
    """The N of the first `Error(Contract, #N)` among diagnostic events (how hosts report it)."""
    for raw in events_xdr or []:
        try:
            event = stellar_xdr.DiagnosticEvent.from_xdr(raw).event
        except Exception:  # noqa: S112 - one undecodable event must not hide the others
            continue
        body = event.body.v0
        if body is None:
            continue
        for value in [*body.topics, body.data]:
            error = value.error
            if (
                value.type == stellar_xdr.SCValType.SCV_ERROR
                and error is not None
                and error.type == stellar_xdr.SCErrorType.SCE_CONTRACT
                and error.contract_code is not None
            ):
                return int(error.contract_code.uint32)
    return None


def _result_code(result_xdr: str | None) -> str | None:
    if not result_xdr:
        return None
    try:
        result = stellar_xdr.TransactionResult.from_xdr(result_xdr).result
    except Exception:
        return None
    code: str = result.code.name
    for op in result.results or []:
        invoke = op.tr.invoke_host_function_result if op.tr is not None else None
        if (
            invoke is not None
            and invoke.code != stellar_xdr.InvokeHostFunctionResultCode.INVOKE_HOST_FUNCTION_SUCCESS
        ):
            code += f"/{invoke.code.name}"
    return code


class SorobanGateway:
    """The one client of the RPC node per process (API and worker), bound to the contract."""

    def __init__(self, *, rpc_url: str, contract_id: str, passphrase: str, timeout: float = 10.0) -> None:
        self.contract_id = contract_id
        self.passphrase = passphrase
        self.server = SorobanServerAsync(
            rpc_url, client=AiohttpClient(post_timeout=timeout, backoff_factor=None)
        )

    async def close(self) -> None:
        await self.server.close()

    @contextlib.asynccontextmanager
    async def _rpc(self, what: str) -> Any:
        """Every RPC failure that is not the contract speaking becomes RpcUnavailable (503)."""
        try:
            yield
        except (AppError, AccountNotFoundException, PrepareTransactionException):
            raise
        except TimeoutError:
            raise RpcUnavailable(f"{what} timed out") from None
        except (
            BaseRequestError,
            SorobanRpcErrorResponse,
            json.JSONDecodeError,
            pydantic.ValidationError,
        ) as exc:
            raise RpcUnavailable(f"{what} failed: {type(exc).__name__}") from None
        except OSError as exc:
            raise RpcUnavailable(f"{what} failed: {type(exc).__name__}") from None

    async def build(self, *, function: str, owner: str, signer: str, now: datetime) -> BuiltTransaction:
        """The unsigned, simulated and assembled call, valid for BUILD_VALIDITY from `now`."""
        async with self._rpc("loading the account"):
            try:
                account = await self.server.load_account(signer)
            except AccountNotFoundException:
                raise Conflict(
                    f"The wallet {signer} does not exist on the network yet:"
                    " fund it with a little XLM, then try again"
                ) from None
        valid_until = (now + BUILD_VALIDITY).replace(microsecond=0)
        envelope = (
            TransactionBuilder(account, self.passphrase, base_fee=BASE_FEE)
            .append_invoke_contract_function_op(
                self.contract_id, function, [scval.to_address(owner), scval.to_address(signer)]
            )
            .add_time_bounds(0, int(valid_until.timestamp()))
            .build()
        )
        async with self._rpc("simulating the call"):
            simulation = await self.server.simulate_transaction(envelope)
        if simulation.error:
            match = CONTRACT_ERROR_RE.search(simulation.error) or None
            code = int(match.group(1)) if match else _contract_code_in_events(simulation.events)
            if code is not None:
                raise ContractError(code, "The contract would refuse this call: ")
            raise Conflict("The contract call cannot be simulated; the network refused it")
        async with self._rpc("assembling the call"):
            prepared = await self.server.prepare_transaction(envelope, simulation)
        return {
            "xdr": prepared.to_xdr(),
            "network_passphrase": self.passphrase,
            "contract_id": self.contract_id,
            "function": function,
            "args": readable_args(function, owner, signer),
            "fee": prepared.transaction.fee,
            "valid_until": valid_until,
        }

    async def send(self, envelope_xdr: str) -> SendResult:
        async with self._rpc("sending the transaction"):
            response = await self.server.send_transaction(envelope_xdr)
        status = response.status.value
        if response.status == SendTransactionStatus.ERROR:
            return SendResult(
                status,
                _result_code(response.error_result_xdr),
                _contract_code_in_events(response.diagnostic_events_xdr),
            )
        return SendResult(status)

    async def status(self, tx_hash: str) -> TransactionStatus:
        async with self._rpc("asking for the transaction"):
            response = await self.server.get_transaction(tx_hash)
        if response.status == GetTransactionStatus.NOT_FOUND:
            return TransactionStatus("NOT_FOUND")
        closed_at = datetime.fromtimestamp(response.create_at, UTC) if response.create_at else None
        if response.status == GetTransactionStatus.SUCCESS:
            return TransactionStatus("SUCCESS", response.ledger, closed_at)
        return TransactionStatus(
            "FAILED",
            response.ledger,
            closed_at,
            _result_code(response.result_xdr),
            _contract_code_in_events(response.diagnostic_events_xdr),
        )


def open_soroban(settings: Settings) -> SorobanGateway | None:
    """The process's gateway, or None when no contract is configured (routes answer 503)."""
    if not settings.service_contract_id:
        return None
    return SorobanGateway(
        rpc_url=settings.soroban_rpc_url,
        contract_id=settings.service_contract_id,
        passphrase=settings.stellar_network_passphrase,
        timeout=settings.soroban_rpc_timeout_seconds,
    )
