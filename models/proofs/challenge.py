"""Proof by a SEP-10-style challenge inside a SEP-7 request: the service signs a challenge
transaction for the wallet that must answer, the wallet signs it back. Bound to a text (a
guardian's attestation) by carrying the text's SHA-256 as its manageData value."""

from __future__ import annotations

from datetime import datetime, timedelta

from redis.asyncio import Redis

from core.settings import Settings
from core.stellar import sep7, sep10
from models import wallet_requests
from models.wallet_requests import Prepared, WalletRequest


async def issue(
    redis: Redis,
    settings: Settings,
    *,
    purpose: str,
    subject_id: str,
    signer: str,
    now: datetime,
    text: str | None = None,
    extra: str | None = None,
) -> Prepared:
    """A challenge for `signer`, signed by the service, kept as a request for one answer."""
    built = sep10.build(
        settings.uri_request_signing_key,
        client=signer,
        home_domain=sep7.origin_domain(settings.public_base_url),
        passphrase=settings.stellar_network_passphrase,
        value=None if text is None else sep10.digest_value(text),
    )
    expires_at = now + timedelta(seconds=sep10.TIMEOUT_SECONDS)
    request_id = await wallet_requests.issue(
        redis,
        purpose=purpose,
        subject_id=subject_id,
        signer=signer,
        tx_hash=built["hash"],
        expires_at=expires_at,
        now=now,
        extra=extra,
    )
    return {
        "id": request_id,
        "purpose": purpose,
        "signer": signer,
        "xdr": built["xdr"],
        "valid_until": expires_at,
    }


async def check(
    redis: Redis, settings: Settings, *, request: WalletRequest, answer: str, text: str | None = None
) -> str:
    """The signed challenge verified once (stellar-sdk: ours, in time, signed by the request's
    wallet and nothing else; bound to `text` when given), then the request used up. 400
    leave it usable. Returns the evidence to keep: the signed envelope."""
    signed_hash = sep10.verify(
        answer,
        server_key=settings.uri_request_signing_key.public_key,
        client=request["signer"],
        home_domain=sep7.origin_domain(settings.public_base_url),
        passphrase=settings.stellar_network_passphrase,
        value=None if text is None else sep10.digest_value(text),
    )
    wallet_requests.require_hash(request=request, tx_hash=signed_hash)
    await wallet_requests.take(redis, request=request)
    return answer
