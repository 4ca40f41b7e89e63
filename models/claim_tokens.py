"""The heir's claim token, the capsule's only credential: minted (32 CSPRNG bytes, 64 lowercase
hex), found again by its SHA-256 digest, and sealed under the ENCRYPTION_KEYS ring (purpose
"claim-token", bound to the beneficiary id) so the owner can be shown it again while a database
dump alone opens nothing. On the ground: the beneficiaries' rows keep it (models.contents), the
claim-link email and the key check open it.
"""

from __future__ import annotations

import functools
import hashlib
import secrets
import uuid

from core.files.crypto import KeyRing

SEAL_PURPOSE = "claim-token"


def new_claim_token() -> str:
    return secrets.token_bytes(32).hex()


def claim_token_digest(*, token: str) -> bytes:
    return hashlib.sha256(token.encode("ascii")).digest()


def _token_aad(beneficiary_id: str) -> bytes:
    # Binds the sealed token to its row: a sealed value copied onto another row will not open.
    return uuid.UUID(beneficiary_id).bytes


def seal_claim_token(ring: KeyRing, *, beneficiary_id: str, token: str) -> str:
    return ring.seal(SEAL_PURPOSE, token.encode("ascii"), _token_aad(beneficiary_id))


@functools.lru_cache(maxsize=16384)
def _open_token(ring: KeyRing, sealed: str, beneficiary_id: str) -> str:
    """Opened tokens are cached: a 50-row page would otherwise spend a seventh of its CPU on
    AES-GCM opens. The process holds the ring's keys anyway, so remembering what they opened
    exposes nothing more; a rotated or re-sealed token has a new sealed value, hence a new
    entry, and failures are never cached."""
    return ring.open(SEAL_PURPOSE, sealed, _token_aad(beneficiary_id)).decode("ascii")


def open_claim_token(ring: KeyRing, *, sealed: str, beneficiary_id: str) -> str:
    """The claim token from its sealed column (the owner's view, the claim-link email rendered at
    send time, the key check)."""
    return _open_token(ring, sealed, beneficiary_id)


def reseal_claim_token(ring: KeyRing, *, sealed: str, beneficiary_id: str) -> str:
    """The same token sealed again under the ring's primary key (uncached: a key rotation reads each
    row once); IntegrityError when no key of the ring opens it."""
    token = ring.open(SEAL_PURPOSE, sealed, _token_aad(beneficiary_id)).decode("ascii")
    return seal_claim_token(ring, beneficiary_id=beneficiary_id, token=token)
