"""Proof by an ed25519 signature over a text, made by a wallet that signs messages (the JSON
approval route: the guardian signs the attestation itself)."""

from __future__ import annotations

from core.errors import BadRequest, Unauthorized
from core.stellar.wallet import decode_signature, verify_signature
from core.text.i18n import N_


def decode(*, answer: str) -> bytes:
    """The signature's bytes; 400 for something that is not a signature (before anything is read)."""
    raw = decode_signature(answer)
    if raw is None:
        raise BadRequest(
            ["signature: Must be a 64-byte ed25519 signature, base64 (88 chars) or hex (128 chars)."],
            details={"signature": ["Not a valid signature encoding."]},
        )
    return raw


def check(*, wallet_address: str, text: str, signature: bytes) -> None:
    """401 for a signature by another key or over another text."""
    if not verify_signature(wallet_address, text, signature):
        raise Unauthorized(N_("The signature does not match the attestation for your guardian wallet"))
