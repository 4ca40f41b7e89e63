"""Stellar wallet addresses and ed25519 signature checks for sign-in.

Wallets differ in what they sign: older Freighter signs the raw challenge bytes, Freighter
>= 5.34 signs SEP-53 (`sha256("Stellar Signed Message:\\n" + message)`), and signatures
arrive base64- or hex-encoded. Accepting all four keeps every wallet working while the key
check itself stays strict.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import re

from stellar_sdk import Keypair, StrKey
from stellar_sdk.exceptions import BadSignatureError

ADDRESS_RE = re.compile(r"^G[A-Z2-7]{55}$")
HEX_SIGNATURE_RE = re.compile(r"^[0-9a-fA-F]{128}$")
SEP53_PREFIX = b"Stellar Signed Message:\n"


def is_valid_address(address: str) -> bool:
    """The spec's regex and the StrKey checksum, so a typo'd address never becomes an account."""
    return bool(ADDRESS_RE.match(address)) and StrKey.is_valid_ed25519_public_key(address)


def decode_signature(signature: str) -> bytes | None:
    """64 raw bytes from hex (128 chars) or base64 (88 chars); None when it is neither."""
    signature = signature.strip()
    if HEX_SIGNATURE_RE.match(signature):
        return bytes.fromhex(signature)
    try:
        raw = base64.b64decode(signature, validate=True)
    except (binascii.Error, ValueError):
        return None
    return raw if len(raw) == 64 else None


def verify_signature(address: str, message: str, signature: bytes) -> bool:
    """True when `signature` is by `address` over the raw message or its SEP-53 digest."""
    keypair = Keypair.from_public_key(address)
    payload = message.encode()
    for candidate in (payload, hashlib.sha256(SEP53_PREFIX + payload).digest()):
        try:
            keypair.verify(candidate, signature)
            return True
        except BadSignatureError:
            continue
    return False
