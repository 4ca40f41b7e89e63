"""A passkey device in Python, for tests that drive the real app's passkey pages without a
browser: it answers the WebAuthn options a passkey page carries (`data-passkey`) the way an
authenticator and the page's script would (attestation `none`, ES256, user verified), with a
signature counter the test chooses. The browser's own ceremony: tests/test_browser_passkeys.py."""

from __future__ import annotations

import base64
import hashlib
import html
import json
import re
import secrets
import struct
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import cbor2
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec

OPTIONS = re.compile(r'data-passkey="([^"]*)"')
FORM_ACTION = re.compile(r'<form id="passkey-form" method="post" action="([^"]+)"')


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def ceremony_of(page: str) -> tuple[str, dict[str, Any]]:
    """The form's action and the WebAuthn options on a passkey page."""
    action, options = FORM_ACTION.search(page), OPTIONS.search(page)
    assert action and options, "not a passkey page"
    return html.unescape(action.group(1)), json.loads(html.unescape(options.group(1)))


@dataclass
class SoftPasskey:
    """One device with one passkey (created by `create`)."""

    origin: str
    key: ec.EllipticCurvePrivateKey = field(default_factory=lambda: ec.generate_private_key(ec.SECP256R1()))
    credential_id: bytes = field(default_factory=lambda: secrets.token_bytes(16))
    counter: int = 0
    # A device that misbehaves: the COSE public key it registers instead of its own, and what
    # its client data says besides (e.g. a cross-origin frame's `crossOrigin` and `topOrigin`).
    cose: bytes | None = None
    client_extra: dict[str, Any] = field(default_factory=dict)

    def _client_data(self, kind: str, options: dict[str, Any]) -> bytes:
        return json.dumps(
            {
                "type": kind,
                "challenge": options["challenge"],
                "origin": self.origin,
                "crossOrigin": False,
                **self.client_extra,
            }
        ).encode()

    def _rp_hash(self, options: dict[str, Any]) -> bytes:
        rp_id = options.get("rpId") or options.get("rp", {}).get("id") or urlsplit(self.origin).hostname
        return hashlib.sha256(str(rp_id).encode()).digest()

    def create(self, options: dict[str, Any]) -> str:
        """`navigator.credentials.create`, serialised as the page's script posts it."""
        numbers = self.key.public_key().public_numbers()
        cose = self.cose or cbor2.dumps(
            {1: 2, 3: -7, -1: 1, -2: numbers.x.to_bytes(32, "big"), -3: numbers.y.to_bytes(32, "big")}
        )
        attested = bytes(16) + struct.pack(">H", len(self.credential_id)) + self.credential_id + cose
        auth_data = self._rp_hash(options) + bytes([0x45]) + struct.pack(">I", self.counter) + attested
        attestation = cbor2.dumps({"fmt": "none", "attStmt": {}, "authData": auth_data})
        return json.dumps(
            {
                "id": b64(self.credential_id),
                "rawId": b64(self.credential_id),
                "type": "public-key",
                "response": {
                    "clientDataJSON": b64(self._client_data("webauthn.create", options)),
                    "attestationObject": b64(attestation),
                    "transports": ["internal"],
                },
                "clientExtensionResults": {},
            }
        )

    def get(self, options: dict[str, Any], *, counter: int | None = None) -> str:
        """`navigator.credentials.get`: the counter goes up by one unless `counter` says what to send."""
        self.counter = self.counter + 1 if counter is None else counter
        auth_data = self._rp_hash(options) + bytes([0x05]) + struct.pack(">I", self.counter)
        client_data = self._client_data("webauthn.get", options)
        signature = self.key.sign(auth_data + hashlib.sha256(client_data).digest(), ec.ECDSA(hashes.SHA256()))
        return json.dumps(
            {
                "id": b64(self.credential_id),
                "rawId": b64(self.credential_id),
                "type": "public-key",
                "response": {
                    "clientDataJSON": b64(client_data),
                    "authenticatorData": b64(auth_data),
                    "signature": b64(signature),
                },
                "clientExtensionResults": {},
            }
        )
