"""SEP-10-style challenge transactions: a wallet proves it holds a key by signing a transaction
that can never be submitted (sequence 0, a `manageData` operation, signed first by the
service's URI_REQUEST_SIGNING_KEY). Wallets that cannot sign free-form messages can all sign
this. stellar-sdk reads and verifies them (`stellar_sdk.sep.stellar_web_authentication`).

The `manageData` value is 64 bytes: 48 random bytes in base64 for a plain proof, or the
SHA-256 of a text in hex (64 characters, which stellar-sdk's check also accepts) when the
signature must approve that text (a guardian's attestation). Challenges are timed on the wall
clock, as stellar-sdk verifies them. Decisions: docs/pages.md, docs/soroban.md.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import os
import time
from typing import TypedDict

from stellar_sdk import Account, Keypair, ManageData, TransactionBuilder, TransactionEnvelope
from stellar_sdk.exceptions import SdkError
from stellar_sdk.sep.exceptions import InvalidSep10ChallengeError
from stellar_sdk.sep.stellar_web_authentication import (
    read_challenge_transaction,
    verify_challenge_transaction_signed_by_client_master_key,
)

from core.errors import BadRequest

TIMEOUT_SECONDS = 300  # as long as a contract call's request (core.stellar.soroban.BUILD_VALIDITY)
NOT_A_CHALLENGE = (
    "This is not what the service asked the wallet {client} to sign. Copy the signed transaction of the "
    "request shown on the page and paste it again."
)


class Challenge(TypedDict):
    xdr: str
    hash: str  # hex, what the request record keeps
    valid_until: int  # epoch seconds, the transaction's upper time bound


def digest_value(text: str) -> bytes:
    """The manageData value that binds a challenge to this text: its SHA-256, hex."""
    return hashlib.sha256(text.encode()).hexdigest().encode("ascii")


def build(
    server: Keypair, *, client: str, home_domain: str, passphrase: str, value: bytes | None = None
) -> Challenge:
    """A challenge for `client` to sign, as stellar-sdk's `build_challenge_transaction` makes
    one, with `value` (64 bytes) in place of the random nonce when given."""
    now = int(time.time())
    nonce = value if value is not None else base64.b64encode(os.urandom(48))
    envelope = (
        TransactionBuilder(Account(server.public_key, -1), passphrase, 100)
        .add_time_bounds(min_time=now, max_time=now + TIMEOUT_SECONDS)
        .append_manage_data_op(data_name=f"{home_domain} auth", data_value=nonce, source=client)
        .append_manage_data_op(data_name="web_auth_domain", data_value=home_domain, source=server.public_key)
        .build()
    )
    envelope.sign(server)
    return {"xdr": envelope.to_xdr(), "hash": envelope.hash_hex(), "valid_until": now + TIMEOUT_SECONDS}


def verify(
    signed_xdr: str,
    *,
    server_key: str,
    client: str,
    home_domain: str,
    passphrase: str,
    value: bytes | None = None,
) -> str:
    """The signed challenge's hash once stellar-sdk finds it well formed, in time, signed by the
    service and by `client`'s master key and nothing else; with `value`, its manageData value
    must be exactly that. 400 otherwise, a wrong signer included: the signed challenge is the
    body of a signing request's callback, not a credential of a session (docs/pages.md)."""
    try:
        read = read_challenge_transaction(signed_xdr, server_key, home_domain, home_domain, passphrase)
    except (InvalidSep10ChallengeError, SdkError, binascii.Error, Exception):
        # The XDR runtime raises what it likes (EOFError, ValueError...) on bytes that are not an envelope.
        raise BadRequest(NOT_A_CHALLENGE.format(client=client)) from None
    if read.client_account_id != client:
        raise BadRequest(
            f"This was a request for another wallet. The wallet asked for here is {client}: sign the "
            "request shown on the page with it."
        )
    op = read.transaction.transaction.operations[0]
    if value is not None and not (isinstance(op, ManageData) and op.data_value == value):
        raise BadRequest(NOT_A_CHALLENGE.format(client=client))
    try:
        verify_challenge_transaction_signed_by_client_master_key(
            signed_xdr, server_key, home_domain, home_domain, passphrase
        )
    except InvalidSep10ChallengeError:
        raise BadRequest(
            f"This was not signed by the wallet asked for, {client}. Sign it with that wallet (your wallet "
            "app shows its address) and paste it again."
        ) from None
    envelope: TransactionEnvelope = read.transaction
    return envelope.hash_hex()
