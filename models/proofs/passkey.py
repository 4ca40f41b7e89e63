"""Proof by a passkey (WebAuthn, checked with py_webauthn): a guardian without a Stellar wallet
registers one when they accept from their page, and every later answer is an assertion over a
one-time challenge bound to that answer.

The challenge is the SHA-256 of a statement naming what is asked, the plan and its
verification round (for an approval: the attestation text itself), so an assertion made for one
answer cannot prove another. The request is kept in Redis for TIMEOUT_SECONDS and used once;
nothing of it is personal (ids, a purpose, a reason word, a nonce). The relying party is the
host of PUBLIC_BASE_URL (a host name: an IP address cannot be an RP ID) and its origin; user
verification is required, attestation `none`. docs/security.md, "Guardians with a passkey".
"""

from __future__ import annotations

import hashlib
import ipaddress
import json
import logging
import secrets
from datetime import UTC, datetime, timedelta
from typing import Literal, NotRequired, TypedDict
from urllib.parse import urlsplit

from cryptography.hazmat.primitives.asymmetric.ec import SECP256R1, EllipticCurvePublicKey
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from cryptography.hazmat.primitives.asymmetric.rsa import RSAPublicKey
from redis.asyncio import Redis
from webauthn import (
    generate_authentication_options,
    generate_registration_options,
    options_to_json,
    verify_authentication_response,
    verify_registration_response,
)
from webauthn.helpers import (
    base64url_to_bytes,
    decode_credential_public_key,
    decoded_public_key_to_cryptography,
)
from webauthn.helpers.cose import COSEAlgorithmIdentifier
from webauthn.helpers.exceptions import InvalidJSONStructure, WebAuthnException
from webauthn.helpers.structs import (
    AttestationConveyancePreference,
    AuthenticatorSelectionCriteria,
    AuthenticatorTransport,
    PublicKeyCredentialDescriptor,
    ResidentKeyRequirement,
    UserVerificationRequirement,
)

from core.errors import BadRequest, Conflict, NotFound, ServiceUnavailable, Unauthorized
from core.settings import Settings
from core.text import bounded_json
from core.text.i18n import N_

log = logging.getLogger(__name__)

KEY = "passkey:request:{}"
TIMEOUT_SECONDS = 300
Ceremony = Literal["create", "get"]
USED = N_(
    "This passkey request was already used or has expired, so nothing was recorded. "
    "Go back to your guardian page and press the button again."
)
NOT_SENT = N_(
    "Your browser did not send a passkey, so nothing was recorded. Passkeys need a current phone or "
    "computer with scripts allowed for this page; or ask the owner to record a Stellar wallet for you."
)
REFUSED = N_(
    "That passkey could not be checked, so nothing was recorded. Go back to your page and try again."
)
NOT_YOURS = N_("That passkey is not one registered for you on this page, so nothing was recorded.")
OTHER_NOTE = N_(
    "The note sent is not the one this passkey request was made with, so nothing was recorded. "
    "Go back to your page, type the note there and press the button again."
)
UNUSABLE = N_(
    "This passkey uses a kind of key this service cannot check, so it was not registered and "
    "nothing was recorded. Try a passkey on another phone or computer, or ask the owner to record "
    "a Stellar wallet for you."
)
CLONED = N_(
    "That passkey's counter went backwards, which happens when a passkey has been copied; nothing "
    "was recorded. Use another of your passkeys, or ask the owner to invite you again."
)


class Passkey(TypedDict):
    """A registered passkey, as models.contents.guardian_passkeys keeps it."""

    credential_id: bytes
    guardian_id: str
    public_key: bytes
    sign_count: int
    transports: list[str]


class PasskeyRequest(TypedDict):
    """One answer asked of a guardian's passkey: what (purpose, reason word), for which plan and
    round, and the ceremony the page runs."""

    id: str
    purpose: str
    ceremony: Ceremony
    subject_id: str  # the guardian
    plan_id: str
    round: int
    extra: str | None
    nonce: str
    expires_at: datetime
    # An approval's attestation text, kept with its request: the assertion proves this very
    # text, whatever later asks from the page issue meanwhile.
    text: NotRequired[str | None]
    # A report's or objection's note, by its SHA-256 (`note_digest`): typed on the guardian's
    # page before the request exists, so the assertion covers it and the answer must carry it.
    note: NotRequired[str | None]


DEFAULT_PORTS = {"http": 80, "https": 443}
# The keys the service verifies, each with the one key type (and curve) it signs with: ES256 on
# P-256, EdDSA on Ed25519, RS256 with at least RSA_MIN_BITS and the exponent 65537. Offered in
# the creation options and checked at registration, so no key is kept that could never verify.
ES256 = COSEAlgorithmIdentifier.ECDSA_SHA_256
EDDSA = COSEAlgorithmIdentifier.EDDSA
RS256 = COSEAlgorithmIdentifier.RSASSA_PKCS1_v1_5_SHA_256
ALGORITHMS = [ES256, EDDSA, RS256]
RSA_MIN_BITS = 2048
RSA_EXPONENT = 65537


def relying_party(*, settings: Settings) -> tuple[str, str]:
    """(RP ID, origin): the host of PUBLIC_BASE_URL and its origin as a browser serialises it
    (scheme and host in lower case, no userinfo, the port only when not the scheme's default),
    so `HTTPS://Example.org:443` still matches; 503 for an IP address."""
    split = urlsplit(settings.public_base_url)
    host = split.hostname or ""  # lower-cased, without userinfo or port
    if not host or is_ip(host=host):
        raise ServiceUnavailable(
            N_(
                "Passkeys are not available on this service: its address is a number, not a name. "
                "Ask the owner to record a Stellar wallet for you instead."
            )
        )
    scheme = split.scheme.lower()
    port = split.port
    shown = "" if port is None or port == DEFAULT_PORTS.get(scheme) else f":{port}"
    return host, f"{scheme}://{host}{shown}"


def is_ip(*, host: str) -> bool:
    try:
        ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return False
    return True


def statement(*, request: PasskeyRequest) -> str:
    """What the challenge binds: an approval's attestation text, else the answer's words."""
    text = request.get("text")
    if text is not None:
        return text
    bound = request.get("note")
    return (
        f"Guardian answer: {request['purpose']}\nPlan: {request['plan_id']}\nRound: {request['round']}\n"
        f"Reason: {request['extra'] or '-'}\nNonce: {request['nonce']}"
        + (f"\nNote: {bound}" if bound else "")
    )


def note_digest(*, note: str | None) -> str | None:
    """The SHA-256 a request binds a note by (line breaks as LF: a form posts them as CRLF)."""
    if not note:
        return None
    return hashlib.sha256(note.replace("\r\n", "\n").encode()).hexdigest()


def require_note(*, request: PasskeyRequest, note: str | None) -> None:
    """401 unless `note` is the one the request was made with (none for none)."""
    if note_digest(note=note) != request.get("note"):
        raise Unauthorized(OTHER_NOTE)


def challenge(*, request: PasskeyRequest) -> bytes:
    return hashlib.sha256(statement(request=request).encode()).digest()


async def issue(
    redis: Redis,
    *,
    purpose: str,
    ceremony: Ceremony,
    subject_id: str,
    plan_id: str,
    round_: int,
    now: datetime,
    extra: str | None = None,
    text: str | None = None,
    note: str | None = None,
) -> PasskeyRequest:
    """Keep a request for one answer, TIMEOUT_SECONDS long (an approval's with its `text`, a
    report's or objection's with its `note`'s digest)."""
    request: PasskeyRequest = {
        "id": secrets.token_urlsafe(16),
        "purpose": purpose,
        "ceremony": ceremony,
        "subject_id": subject_id,
        "plan_id": plan_id,
        "round": round_,
        "extra": extra,
        "nonce": secrets.token_hex(16),
        "expires_at": now + timedelta(seconds=TIMEOUT_SECONDS),
        "text": text,
        "note": note_digest(note=note),
    }
    record = {**request, "expires_at": request["expires_at"].timestamp()}
    await redis.set(KEY.format(request["id"]), json.dumps(record), ex=TIMEOUT_SECONDS)
    return request


async def peek(redis: Redis, *, request_id: str, subject_id: str, now: datetime) -> PasskeyRequest:
    """The live request of this id for this guardian: 404 for another's, 409 used or expired."""
    if not (0 < len(request_id) <= 64):
        raise NotFound("Passkey request")
    raw = await redis.get(KEY.format(request_id))
    if raw is None:
        raise Conflict(USED)
    data = json.loads(raw)
    request: PasskeyRequest = {
        "id": request_id,
        "purpose": data["purpose"],
        "ceremony": data["ceremony"],
        "subject_id": data["subject_id"],
        "plan_id": data["plan_id"],
        "round": int(data["round"]),
        "extra": data["extra"],
        "nonce": data["nonce"],
        "expires_at": datetime.fromtimestamp(data["expires_at"], UTC),
        "text": data.get("text"),
        "note": data.get("note"),
    }
    if request["subject_id"] != subject_id:
        raise NotFound("Passkey request")
    if request["expires_at"] <= now:
        raise Conflict(USED)
    return request


async def take(redis: Redis, *, request: PasskeyRequest) -> None:
    """Use the request up, once: a replayed assertion finds nothing here."""
    if not await redis.delete(KEY.format(request["id"])):
        raise Conflict(USED)


def _descriptors(passkeys: list[Passkey]) -> list[PublicKeyCredentialDescriptor]:
    known = {t.value for t in AuthenticatorTransport}
    return [
        PublicKeyCredentialDescriptor(
            id=p["credential_id"],
            transports=[AuthenticatorTransport(t) for t in p["transports"] if t in known] or None,
        )
        for p in passkeys
    ]


def creation_options(
    *,
    settings: Settings,
    request: PasskeyRequest,
    user_name: str,
    display_name: str,
    existing: list[Passkey],
) -> str:
    """The options `navigator.credentials.create` takes (JSON), for this request's challenge."""
    rp_id, _origin = relying_party(settings=settings)
    options = generate_registration_options(
        rp_id=rp_id,
        rp_name=settings.service_name,
        user_id=request["subject_id"].encode(),
        user_name=user_name,
        user_display_name=display_name,
        challenge=challenge(request=request),
        timeout=TIMEOUT_SECONDS * 1000,
        attestation=AttestationConveyancePreference.NONE,
        authenticator_selection=AuthenticatorSelectionCriteria(
            resident_key=ResidentKeyRequirement.PREFERRED,
            user_verification=UserVerificationRequirement.REQUIRED,
        ),
        exclude_credentials=_descriptors(existing),
        supported_pub_key_algs=ALGORITHMS,
    )
    return options_to_json(options)


def request_options(*, settings: Settings, request: PasskeyRequest, passkeys: list[Passkey]) -> str:
    """The options `navigator.credentials.get` takes (JSON): this guardian's passkeys only."""
    rp_id, _origin = relying_party(settings=settings)
    options = generate_authentication_options(
        rp_id=rp_id,
        challenge=challenge(request=request),
        timeout=TIMEOUT_SECONDS * 1000,
        allow_credentials=_descriptors(passkeys),
        user_verification=UserVerificationRequirement.REQUIRED,
    )
    return options_to_json(options)


def _parsed(answer: str) -> dict:
    """The posted credential, parsed once with bounds (a 400 in words for anything else), its
    client data too: the library parses that without bounds, and trusts `crossOrigin`."""
    if not answer.strip():
        raise BadRequest(NOT_SENT)
    try:
        parsed = bounded_json.loads(answer)
    except bounded_json.Unparsed:
        raise BadRequest(NOT_SENT) from None
    if not isinstance(parsed, dict) or not isinstance(parsed.get("rawId"), str):
        raise BadRequest(NOT_SENT)
    _require_same_origin(parsed)
    return parsed


def _require_same_origin(parsed: dict) -> None:
    """An answer made inside another site's frame is refused, whatever the frame's top origin
    says: the guardian's page is never framed (its headers forbid it), so a cross-origin
    ceremony is someone else's page asking the guardian's passkey."""
    response = parsed.get("response")
    raw = response.get("clientDataJSON") if isinstance(response, dict) else None
    if not isinstance(raw, str):
        raise BadRequest(NOT_SENT)
    try:
        client_data = bounded_json.loads(base64url_to_bytes(raw))
    except (bounded_json.Unparsed, ValueError, TypeError):
        raise BadRequest(NOT_SENT) from None
    if not isinstance(client_data, dict):
        raise BadRequest(NOT_SENT)
    if client_data.get("crossOrigin", False) is not False or "topOrigin" in client_data:
        raise Unauthorized(REFUSED)


def usable_key(*, public_key: bytes) -> bool:
    """Whether a credential public key (COSE) is one this service verifies, checked the way
    verification will load it: the library's decoding (an EC2 point off its curve, an RSA
    modulus that is no modulus, fail there), then its algorithm, key type and curve, and an
    RSA key's size and exponent."""
    try:
        decoded = decode_credential_public_key(public_key)
        key = decoded_public_key_to_cryptography(decoded)
    except (WebAuthnException, ValueError, TypeError, KeyError):
        return False
    if isinstance(key, EllipticCurvePublicKey):
        return decoded.alg == ES256 and isinstance(key.curve, SECP256R1)
    if isinstance(key, Ed25519PublicKey):
        return decoded.alg == EDDSA
    if isinstance(key, RSAPublicKey):
        size, exponent = key.key_size, key.public_numbers().e
        return decoded.alg == RS256 and size >= RSA_MIN_BITS and exponent == RSA_EXPONENT
    return False


def credential_id(*, answer: str) -> bytes:
    """The credential id an assertion names (400 for something that is not one)."""
    try:
        return base64url_to_bytes(_parsed(answer)["rawId"])
    except (ValueError, TypeError):
        raise BadRequest(NOT_SENT) from None


def check_registration(*, settings: Settings, request: PasskeyRequest, answer: str) -> Passkey:
    """A new passkey from `navigator.credentials.create`, verified once: this request's
    challenge, this origin and RP ID, the user verified. Nothing is kept here."""
    rp_id, origin = relying_party(settings=settings)
    parsed = _parsed(answer)
    try:
        verified = verify_registration_response(
            credential=parsed,
            expected_challenge=challenge(request=request),
            expected_rp_id=rp_id,
            expected_origin=origin,
            require_user_verification=True,
            supported_pub_key_algs=ALGORITHMS,
        )
    except (InvalidJSONStructure, KeyError, TypeError, ValueError, RecursionError):
        raise BadRequest(NOT_SENT) from None
    except WebAuthnException as refused:
        # The library's own algorithm check (last of its checks: the ceremony was otherwise
        # right) says why in a sentence of its own; the guardian is told in theirs.
        if str(refused).startswith("Unsupported credential public key alg"):
            raise BadRequest(UNUSABLE) from None
        raise Unauthorized(REFUSED) from None
    if not usable_key(public_key=verified.credential_public_key):
        raise BadRequest(UNUSABLE)
    transports = parsed.get("response", {}).get("transports") or []
    return {
        "credential_id": verified.credential_id,
        "guardian_id": request["subject_id"],
        "public_key": verified.credential_public_key,
        "sign_count": verified.sign_count,
        "transports": [t for t in transports if isinstance(t, str)][:8],
    }


def check_assertion(*, settings: Settings, request: PasskeyRequest, answer: str, passkey: Passkey) -> int:
    """An assertion from `navigator.credentials.get`, verified once against this guardian's
    passkey and this request's challenge (origin, RP ID, user verified). Returns the new
    counter. A counter that did not go up (a drop to 0 included) is refused and logged as a
    possibly copied passkey; synced passkeys always report 0 and keep 0, which passes."""
    rp_id, origin = relying_party(settings=settings)
    try:
        verified = verify_authentication_response(
            credential=_parsed(answer),
            expected_challenge=challenge(request=request),
            expected_rp_id=rp_id,
            expected_origin=origin,
            credential_public_key=passkey["public_key"],
            credential_current_sign_count=0,  # the counter rule is ours, below
            require_user_verification=True,
        )
    except (InvalidJSONStructure, KeyError, TypeError, ValueError, RecursionError):
        raise BadRequest(NOT_SENT) from None
    except WebAuthnException:
        raise Unauthorized(REFUSED) from None
    count = int(verified.new_sign_count)
    if counter_went_back(stored=passkey["sign_count"], sent=count):
        log.warning(
            "passkey counter did not increase: possible cloned authenticator",
            extra={"guardian_id": passkey["guardian_id"], "stored": passkey["sign_count"], "sent": count},
        )
        raise Unauthorized(CLONED)
    return count


def counter_went_back(*, stored: int, sent: int) -> bool:
    """A counter that did not go up (WebAuthn §7.2 step 21): a copied authenticator may be
    answering. 0 after 0 passes (synced passkeys never count); 0 after a positive counter does not."""
    return not ((sent == 0 and stored == 0) or sent > stored)
