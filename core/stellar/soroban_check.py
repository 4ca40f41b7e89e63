"""The submit check: refuse (400) any signed envelope the service would not have built.

Works on the XDR as received, decoded once with stellar-sdk's generated XDR types (not the
higher-level `TransactionEnvelope`, which converts every field to Python objects and back to
hash them: three times the cost). The hash is computed from the transaction's own bytes as
sent, so it is exactly the one the network will report.
"""

from __future__ import annotations

import base64
import binascii
import functools
import hashlib
from dataclasses import dataclass
from datetime import UTC, datetime

from stellar_sdk import Keypair, StrKey, scval, xdr
from stellar_sdk.exceptions import BadSignatureError
from xdrlib3 import Unpacker  # with the generated .unpack: docs/conventions.md, Library internals

from core.errors import BadRequest
from core.stellar.soroban import FUNCTIONS, KNOWN_NETWORKS, MAX_VALIDITY, CheckedTransaction

NOT_AN_ENVELOPE = (
    "This is not a signed Stellar transaction (nor one the service relays: a fee-bump is not). Copy the "
    "signed transaction from your wallet and paste it again."
)
_TAG_TX = xdr.EnvelopeType.ENVELOPE_TYPE_TX.value.to_bytes(4, "big")


@dataclass(frozen=True)
class Envelope:
    """A decoded v1 transaction envelope and the raw bytes of its transaction."""

    tx: xdr.Transaction
    signatures: list[xdr.DecoratedSignature]
    tx_bytes: bytes

    def hash(self, passphrase: str) -> bytes:
        network_id = hashlib.sha256(passphrase.encode()).digest()
        return hashlib.sha256(network_id + _TAG_TX + self.tx_bytes).digest()

    @property
    def source(self) -> str | None:
        account = self.tx.source_account
        if account.type != xdr.CryptoKeyType.KEY_TYPE_ED25519 or account.ed25519 is None:
            return None  # a muxed source is nothing the service builds
        return StrKey.encode_ed25519_public_key(account.ed25519.uint256)

    @property
    def invoke(self) -> xdr.InvokeHostFunctionOp | None:
        ops = self.tx.operations
        if len(ops) != 1 or ops[0].body.type != xdr.OperationType.INVOKE_HOST_FUNCTION:
            return None
        return ops[0].body.invoke_host_function_op

    @property
    def function(self) -> str:
        op = self.invoke
        call = op.host_function.invoke_contract if op is not None else None
        return call.function_name.sc_symbol.decode(errors="replace") if call is not None else ""


def decode(envelope_xdr: str) -> Envelope:
    """400 unless this is exactly one base64 v1 transaction envelope (nothing trailing)."""
    try:
        raw = base64.b64decode(envelope_xdr.strip(), validate=True)
        unpacker = Unpacker(raw)
        envelope = xdr.TransactionEnvelope.unpack(unpacker)
        unpacker.done()
    except (binascii.Error, ValueError, EOFError, TypeError, AttributeError, Exception):
        raise BadRequest(NOT_AN_ENVELOPE) from None
    if envelope.type != xdr.EnvelopeType.ENVELOPE_TYPE_TX or envelope.v1 is None:
        raise BadRequest(NOT_AN_ENVELOPE)
    signatures = envelope.v1.signatures
    # What follows the transaction: a count, then per signature a 4-byte hint and a
    # length-prefixed signature padded to 4 bytes.
    tail = 4 + sum(8 + (len(s.signature.signature) + 3) // 4 * 4 for s in signatures)
    return Envelope(envelope.v1.tx, signatures, raw[4 : len(raw) - tail])


def peek(envelope_xdr: str) -> tuple[Envelope, str, str]:
    """The decoded envelope, the function it calls ("" if none) and its source, to pick the
    checks that apply. Nothing here is trusted yet: check_signed decides."""
    envelope = decode(envelope_xdr)
    return envelope, envelope.function, envelope.source or ""


@functools.lru_cache(maxsize=4096)
def _account_bytes(address: str) -> bytes:
    return StrKey.decode_ed25519_public_key(address)


@functools.lru_cache(maxsize=16)
def _contract_bytes(contract_id: str) -> bytes:
    return StrKey.decode_contract(contract_id)


@functools.lru_cache(maxsize=4096)
def _keypair(address: str) -> Keypair:
    return Keypair.from_public_key(address)


def _account_in(value: xdr.SCVal) -> bytes | None:
    """The raw key of an account Address argument (compared as bytes: StrKey encoding of every
    argument was a large part of the check's cost)."""
    address = value.address
    if value.type != xdr.SCValType.SCV_ADDRESS or address is None or address.account_id is None:
        return None
    key = address.account_id.account_id.ed25519
    return key.uint256 if key is not None else None


def _readable(value: xdr.SCVal) -> str:
    try:
        return scval.from_address(value).address
    except Exception:
        return "something that is not an address"


def _time_bounds(tx: xdr.Transaction) -> xdr.TimeBounds | None:
    cond = tx.cond
    if cond.type == xdr.PreconditionType.PRECOND_TIME:
        return cond.time_bounds
    if cond.type == xdr.PreconditionType.PRECOND_V2 and cond.v2 is not None:
        return cond.v2.time_bounds
    return None


def check_signed(
    envelope: Envelope | str,
    *,
    contract_id: str,
    passphrase: str,
    function: str,
    owner: str,
    signer: str,
    now: datetime,
) -> CheckedTransaction:
    """Refuse (400) anything the service would not have built for this signer, or that cannot land.

    Checked before anything is stored: one envelope for this network, one invoke of our
    contract's allowed function with this plan's owner and this signer as arguments, the
    signer as source, a valid source signature over the hash, a time bound not yet passed.
    """
    if isinstance(envelope, str):
        envelope = decode(envelope)
    op = _check_call(envelope, contract_id=contract_id, function=function, owner=owner, signer=signer)
    _check_source(envelope.tx, op, signer=signer)
    tx_hash = _check_signature(envelope, signer, passphrase)
    valid_until = _valid_until(envelope.tx, now=now)
    return {"hash": tx_hash.hex(), "function": function, "source": signer, "valid_until": valid_until}


def _check_call(
    envelope: Envelope, *, contract_id: str, function: str, owner: str, signer: str
) -> xdr.InvokeHostFunctionOp:
    """One invoke of our contract's allowed function, with this owner and this signer."""
    op = envelope.invoke
    if op is None:
        raise BadRequest("The transaction must contain exactly one contract call (invoke host function)")
    call = op.host_function.invoke_contract
    address = call.contract_address if call is not None else None
    if call is None or address is None or address.contract_id is None:
        raise BadRequest("The operation must call the service's contract")
    called = address.contract_id.contract_id.hash
    if called != _contract_bytes(contract_id):
        other = StrKey.encode_contract(called)
        raise BadRequest(f"The transaction calls contract {other}, not the service's contract {contract_id}")
    name = envelope.function
    if name != function:
        raise BadRequest(f"This route relays only {function}, not {name}")
    args = call.args
    first, second = FUNCTIONS[function]
    if len(args) != 2:
        raise BadRequest(f"{function} takes two arguments ({first}, {second}); got {len(args)}")
    if _account_in(args[0]) != _account_bytes(owner):
        raise BadRequest(f"The {first} argument must be this plan's owner {owner}, not {_readable(args[0])}")
    if _account_in(args[1]) != _account_bytes(signer):
        raise BadRequest(f"The {second} argument must be your wallet {signer}, not {_readable(args[1])}")
    return op


def _check_source(tx: xdr.Transaction, op: xdr.InvokeHostFunctionOp, *, signer: str) -> None:
    """The signer as the only source, prepared (Soroban resources), no other account's auth."""
    op_source = tx.operations[0].source_account
    source = tx.source_account
    own_source = source.type == xdr.CryptoKeyType.KEY_TYPE_ED25519 and source.ed25519 is not None
    if not own_source or source.ed25519.uint256 != _account_bytes(signer) or op_source is not None:  # type: ignore[union-attr]
        raise BadRequest(f"The transaction's source account must be your wallet {signer}")
    if tx.ext.v != 1 or tx.ext.soroban_data is None:
        raise BadRequest("The transaction was not prepared (no Soroban resources); use the build route")
    for entry in op.auth:
        if entry.credentials.type != xdr.SorobanCredentialsType.SOROBAN_CREDENTIALS_SOURCE_ACCOUNT:
            raise BadRequest("The transaction carries authorisations for other accounts")


def _valid_until(tx: xdr.Transaction, *, now: datetime) -> datetime:
    """The time bound, if it is set, not passed, and no further away than the service allows."""
    bounds = _time_bounds(tx)
    max_time = bounds.max_time.time_point.uint64 if bounds is not None else 0
    if max_time == 0:
        raise BadRequest("The transaction has no time bound; use the build route")
    valid_until = datetime.fromtimestamp(max_time, UTC)
    if valid_until <= now:
        raise BadRequest("The transaction's time bound has passed; build and sign it again")
    if valid_until > now + MAX_VALIDITY:
        raise BadRequest(
            "The transaction's time bound is further away than the service allows; use the build route"
        )
    return valid_until


def _check_signature(envelope: Envelope, signer: str, passphrase: str) -> bytes:
    """The hash for this network, once the signer's signature over it verifies; 400 otherwise."""
    keypair = _keypair(signer)
    hint = keypair.signature_hint()
    mine = [s.signature.signature for s in envelope.signatures if s.hint.signature_hint == hint]
    if not mine:
        raise BadRequest(
            f"The transaction is not signed by the wallet asked for, {signer}. Sign it with that wallet and "
            "send it again."
        )
    if len(envelope.signatures) > 1:
        # The network refuses a signature it does not need (txBAD_AUTH_EXTRA): relaying it would
        # use the request up for a transaction that can never land.
        raise BadRequest(
            "The transaction carries more signatures than your wallet's one, and the network would "
            "refuse it. Sign it with your wallet alone and send it again."
        )
    tx_hash = envelope.hash(passphrase)
    if any(_verifies(keypair, tx_hash, signature) for signature in mine):
        return tx_hash
    # The hash covers the network passphrase: say which network it was signed for, if known.
    for other, label in KNOWN_NETWORKS.items():
        if other != passphrase and any(_verifies(keypair, envelope.hash(other), s) for s in mine):
            raise BadRequest(f"The transaction was signed for {label}, not this service's network")
    raise BadRequest("The signature does not match the transaction (signed for another network, or altered)")


def _verifies(keypair: Keypair, data: bytes, signature: bytes) -> bool:
    try:
        keypair.verify(data, signature)
        return True
    except BadSignatureError:
        return False
