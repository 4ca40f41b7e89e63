"""Each guardian's page link, `<PUBLIC_BASE_URL>/guardian/<token>`: a capability like an heir's
claim link (acting on the page still needs the guardian's wallet to sign).

Derived rather than stored, as check-in links are (models.check_in_links): an HMAC of the
guardian's id and page version under a subkey of the key ring, made when an email is rendered,
so every email to the guardian carries the same link; the guardians table keeps only its SHA-256
digest and the id of the key it was made under (models.contents.guardians.remember_pages). A new
email address or wallet bumps the version: the old link opens nothing. docs/lifecycle.md.
"""

from __future__ import annotations

import hashlib
import hmac

from core.files.crypto import KeyRing

PURPOSE = "guardian-page"


def token_for(ring: KeyRing, *, key_id: str, guardian_id: str, version: int) -> str:
    """The page's 256-bit token (64 hex), the same at every rendering for this version."""
    subkey = ring.subkey(key_id, PURPOSE)
    return hmac.new(subkey, f"{guardian_id}:{version}".encode("ascii"), hashlib.sha256).hexdigest()


def digest(*, token: str) -> bytes:
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).digest()


def url(*, base_url: str, token: str) -> str:
    return f"{base_url}/guardian/{token}"
