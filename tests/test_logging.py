"""Logs carry request ids and paths, never signatures, tokens or claim tokens."""

from __future__ import annotations

import json
import logging

from stellar_sdk import Keypair

from core.logging import JsonFormatter, redact_path
from tests.helpers import challenge, sign


def _formatted(caplog) -> str:
    formatter = JsonFormatter()
    return "\n".join(formatter.format(r) for r in caplog.records)


async def test_sign_in_logs_contain_neither_signature_nor_token(client, caplog):
    kp = Keypair.random()
    with caplog.at_level(logging.DEBUG):
        message = await challenge(client, kp.public_key)
        signature = sign(kp, message)
        resp = await client.post(
            "/api/auth/wallet/verify", json={"walletAddress": kp.public_key, "signature": signature}
        )
        token = (await resp.json())["token"]
        await client.get("/api/auth/me", headers={"Authorization": f"Bearer {token}"})
        # A failed attempt must not leak the attempted signature either.
        bad = sign(Keypair.random(), message, "hex")
        await client.post("/api/auth/wallet/verify", json={"walletAddress": kp.public_key, "signature": bad})
    text = _formatted(caplog)
    assert "/api/auth/wallet/verify" in text  # the requests were logged...
    for secret in (signature, token, bad, token.split(".")[2]):
        assert secret not in text  # ...without their secrets
    lines = [json.loads(line) for line in text.splitlines()]
    access = [entry for entry in lines if entry["logger"] == "api.access"]
    assert len(access) >= 4
    assert all(len(entry["requestId"]) == 32 for entry in access)


async def test_claim_paths_are_redacted_in_access_logs(client, caplog):
    token = "ab" * 32
    with caplog.at_level(logging.INFO):
        await client.get(f"/api/claim/{token}")
        await client.get(f"/api/claim/{token}/documents/x/download")
    text = _formatted(caplog)
    assert token not in text
    assert "/api/claim/<redacted>" in text


def test_redact_path():
    assert redact_path("/api/claim/abc123/submit") == "/api/claim/<redacted>/submit"
    assert redact_path("/api/claim/abc123") == "/api/claim/<redacted>"
    assert redact_path("/api/beneficiaries/1") == "/api/beneficiaries/1"
