"""Wallet sign-in: challenge, proof of possession, session token.

Kept here rather than in the handlers so the same proof is reused by sign-in and by
linking a second wallet, and so every rule (rate limits, single use) lives in one place.
"""

from __future__ import annotations

from datetime import datetime

from arq.connections import ArqRedis
from redis.asyncio import Redis

from core import challenges, ratelimit, tokens
from core.db import Pool
from core.errors import BadRequest, Conflict, TooManyRequests, Unauthorized
from core.files.crypto import KeyRing
from core.settings import Settings
from core.stellar.wallet import decode_signature, verify_signature
from core.text.i18n import N_, _
from models import wallet_requests
from models.account import dev_wallet, passkeys, pending_sign_ins, sessions, users
from models.flows import lifecycle
from models.proofs import challenge, passkey
from models.wallet_requests import Prepared


async def request_challenge(
    redis: Redis, settings: Settings, *, wallet_address: str, client_ip: str, now: datetime
) -> str:
    """Issue a challenge within the per-address budget and the per-(address, wallet) budget.

    Nothing is counted per wallet alone: that budget could be spent by anyone, locking the
    owner out of sign-in.
    """
    retry = await ratelimit.hit(redis, f"challenge:ip:{client_ip}", settings.rate_limit_challenge_per_ip)
    if retry:
        raise TooManyRequests("Too many sign-in challenges from this address; try again later", retry)
    retry = await ratelimit.hit(
        redis, f"challenge:ip-wallet:{client_ip}:{wallet_address}", settings.rate_limit_challenge_per_wallet
    )
    if retry:
        raise TooManyRequests("Too many sign-in challenges for this wallet; try again later", retry)
    return await challenges.issue(
        redis,
        service=settings.service_name,
        wallet_address=wallet_address,
        client=client_ip,
        ttl_seconds=settings.challenge_ttl_seconds,
        now=now,
    )


async def prove_wallet(
    redis: Redis, *, wallet_address: str, signature: str, client_ip: str, now: datetime
) -> None:
    """Find the live challenge this signature signs (from this client) and burn it."""
    raw_signature = decode_signature(signature)
    if raw_signature is None:
        raise BadRequest(
            ["signature: Must be a 64-byte ed25519 signature, base64 (88 chars) or hex (128 chars)."],
            details={"signature": ["Not a valid signature encoding."]},
        )
    candidates = await challenges.live(redis, wallet_address=wallet_address, client=client_ip, now=now)
    if not candidates:
        raise Unauthorized("No valid challenge for this wallet (expired or already used); request a new one")
    signed = next((m for m in candidates if verify_signature(wallet_address, m, raw_signature)), None)
    if signed is None:
        raise Unauthorized("Signature does not match a challenge for this wallet")
    if not await challenges.consume(redis, wallet_address=wallet_address, client=client_ip, message=signed):
        raise Unauthorized("No valid challenge for this wallet (expired or already used); request a new one")


async def sign_in(
    pool: Pool,
    redis: ArqRedis,
    settings: Settings,
    *,
    wallet_address: str,
    signature: str,
    client_ip: str,
    now: datetime,
) -> tuple[str, users.SigningIn]:
    """Prove the wallet, find or create the account; the owner's sign-in counts as a check-in.
    The token carries the account's current session generation (read with the account)."""
    await prove_wallet(
        redis, wallet_address=wallet_address, signature=signature, client_ip=client_ip, now=now
    )
    user = await users.sign_in(pool, settings.key_ring, wallet_address=wallet_address)
    await lifecycle.check_in_on_sign_in(pool, redis, user_id=user["id"], now=now)
    token = tokens.issue(
        settings.jwt_secret,
        user["id"],
        settings.jwt_issuer,
        settings.jwt_audience,
        settings.jwt_ttl_seconds,
        generation=user["session_generation"],
    )
    return token, user


async def link_wallet(
    pool: Pool,
    redis: Redis,
    ring: KeyRing,
    *,
    user_id: str,
    wallet_address: str,
    signature: str,
    client_ip: str,
    now: datetime,
) -> users.UserWithWallets:
    await prove_wallet(
        redis, wallet_address=wallet_address, signature=signature, client_ip=client_ip, now=now
    )
    return await users.link_wallet(pool, ring, user_id=user_id, wallet_address=wallet_address, now=now)


# The owner's own pages (/sign-in): the same proofs and the same account and check-in functions as
# POST /api/auth/wallet/verify, ending in a page session (models.account.sessions) instead of a
# token. docs/security.md, "Signing in from the pages".
SIGN_IN_PURPOSE = "owner.sign_in"
NO_PENDING = N_(
    "This sign-in has expired or was already used, so nothing was done. Start again: type your "
    "wallet's address, or use your passkey."
)
NOT_SIGNED = N_(
    "That signature does not sign the text shown for this wallet, so nothing was done. Sign the text "
    "exactly as shown, with the wallet you named, and paste the signature again."
)


# The SEP-7 message a wallet shows (at most 300 characters, in the reader's language): the code
# the waiting page shows too, and the one rule that keeps a stranger's request from signing anyone in.
SIGN_IN_WORDS = N_(
    "Sign-in code {code}. Sign only if you just started this sign-in yourself, on your own screen, "
    "and it shows this same code."
)


def sign_in_words(*, code: str) -> str:
    return _(SIGN_IN_WORDS).format(code=code)


async def start_page_sign_in(
    redis: ArqRedis,
    settings: Settings,
    *,
    wallet_address: str,
    client_ip: str,
    next_path: str,
    replacing: str | None,
    now: datetime,
) -> pending_sign_ins.Started:
    """A wallet named on /sign-in: within the challenge's rate limits, the spec's challenge text
    (for a wallet that signs messages) and a SEP-10-style challenge as a signing request (for
    any wallet, by SEP-7), both bound to a new pending sign-in of this browser."""
    message = await request_challenge(
        redis, settings, wallet_address=wallet_address, client_ip=client_ip, now=now
    )
    if replacing:
        await pending_sign_ins.drop(redis, cookie=replacing)
    started = pending_sign_ins.begin(
        wallet=wallet_address, next_path=next_path, ttl_seconds=settings.challenge_ttl_seconds, now=now
    )
    pending = started["pending"]
    prepared = await challenge.issue(
        redis, settings, purpose=SIGN_IN_PURPOSE, subject_id=pending["digest"], signer=wallet_address, now=now
    )
    pending["request_id"], pending["xdr"], pending["text"] = prepared["id"], prepared["xdr"], message
    pending["valid_until"] = min(pending["valid_until"], prepared["valid_until"])
    await pending_sign_ins.keep(redis, pending=pending, now=now)
    return started


async def answer_sign_in_request(
    redis: ArqRedis, settings: Settings, *, request_id: str, signed_xdr: str, now: datetime
) -> None:
    """The wallet's answer to a sign-in's signing request (its callback): verified first (an
    envelope that does not verify uses nothing up), then the request used up and the browser's
    pending sign-in marked proven; that browser is signed in on its next request."""
    request = await wallet_requests.find(redis, request_id=request_id, purpose=SIGN_IN_PURPOSE, now=now)
    pending = await pending_sign_ins.by_digest(redis, digest_hex=request["subject_id"], now=now)
    if pending is None or pending["request_id"] != request_id:
        raise Conflict(NO_PENDING)
    await challenge.check(redis, settings, request=request, answer=signed_xdr)
    if not await pending_sign_ins.mark_proven(redis, pending=pending):
        raise Conflict(NO_PENDING)


async def open_page_session(
    pool: Pool,
    redis: ArqRedis,
    settings: Settings,
    *,
    user: users.SigningIn,
    wallet_address: str | None,
    passkey_id: bytes | None,
    replacing: str | None,
    now: datetime,
) -> sessions.Opened:
    """The proven owner's page session: the sign-in counts as a check-in while Active (as the
    API's), the session is opened under the account's current generation and the owner told."""
    await lifecycle.check_in_on_sign_in(pool, redis, user_id=user["id"], now=now)
    return await sessions.open_session(
        pool,
        settings.key_ring,
        user_id=user["id"],
        generation=user["session_generation"],
        wallet_address=wallet_address,
        passkey_id=passkey_id,
        replacing=replacing,
        lifetime_seconds=settings.jwt_ttl_seconds,
        idle_seconds=settings.session_idle_seconds,
        now=now,
    )


async def finish_wallet_sign_in(
    pool: Pool,
    redis: ArqRedis,
    settings: Settings,
    *,
    pending_cookie: str,
    replacing: str | None,
    now: datetime,
) -> tuple[sessions.Opened, str] | None:
    """The browser's next request after its wallet answered: its pending sign-in used up, the
    account found or created, the session opened. None while the wallet has not answered.
    Returns the session and where to go."""
    pending = await pending_sign_ins.take_proven(redis, cookie=pending_cookie, now=now)
    if pending is None or pending["wallet"] is None:
        return None
    user = await users.sign_in(pool, settings.key_ring, wallet_address=pending["wallet"])
    opened = await open_page_session(
        pool,
        redis,
        settings,
        user=user,
        wallet_address=pending["wallet"],
        passkey_id=None,
        replacing=replacing,
        now=now,
    )
    return opened, pending["next"]


async def sign_in_by_signature(
    pool: Pool,
    redis: ArqRedis,
    settings: Settings,
    *,
    pending_cookie: str | None,
    signature: str,
    client_ip: str,
    replacing: str | None,
    now: datetime,
) -> tuple[sessions.Opened, str]:
    """The spec's challenge text signed (base64 or hex, raw or SEP-53), for the wallet this
    browser named: proven as POST /api/auth/wallet/verify proves it, then the page session."""
    pending = await pending_sign_ins.of_cookie(redis, cookie=pending_cookie, now=now)
    if pending is None or pending["wallet"] is None or pending_cookie is None:
        raise Conflict(NO_PENDING)
    try:
        await prove_wallet(
            redis, wallet_address=pending["wallet"], signature=signature, client_ip=client_ip, now=now
        )
    except Unauthorized:
        raise Unauthorized(NOT_SIGNED) from None
    await pending_sign_ins.drop(redis, cookie=pending_cookie)
    user = await users.sign_in(pool, settings.key_ring, wallet_address=pending["wallet"])
    opened = await open_page_session(
        pool,
        redis,
        settings,
        user=user,
        wallet_address=pending["wallet"],
        passkey_id=None,
        replacing=replacing,
        now=now,
    )
    return opened, pending["next"]


NOT_A_PASSKEY_HERE = N_(
    "That passkey does not sign in to any account here, so nothing was done. Sign in with your wallet, "
    "then add this passkey on your account page."
)


async def start_passkey_sign_in(
    redis: ArqRedis,
    settings: Settings,
    *,
    client_ip: str,
    next_path: str,
    replacing: str | None,
    now: datetime,
) -> tuple[pending_sign_ins.Started, passkey.PasskeyRequest]:
    """A passkey sign-in (a discoverable credential: no address typed), within the per-address
    challenge budget, bound to a new pending sign-in of this browser."""
    retry = await ratelimit.hit(redis, f"challenge:ip:{client_ip}", settings.rate_limit_challenge_per_ip)
    if retry:
        raise TooManyRequests(N_("Too many sign-in attempts from this address; try again later"), retry)
    if replacing:
        await pending_sign_ins.drop(redis, cookie=replacing)
    started = pending_sign_ins.begin(
        wallet=None, next_path=next_path, ttl_seconds=settings.challenge_ttl_seconds, now=now
    )
    pending = started["pending"]
    request = await passkey.issue(
        redis,
        purpose=SIGN_IN_PURPOSE,
        ceremony="get",
        subject_id=pending["digest"],
        plan_id="",
        round_=0,
        now=now,
    )
    pending["request_id"] = request["id"]
    pending["valid_until"] = min(pending["valid_until"], request["expires_at"])
    await pending_sign_ins.keep(redis, pending=pending, now=now)
    return started, request


async def sign_in_by_passkey(
    pool: Pool,
    redis: ArqRedis,
    settings: Settings,
    *,
    pending_cookie: str | None,
    request_id: str,
    answer: str,
    replacing: str | None,
    now: datetime,
) -> tuple[sessions.Opened, str]:
    """The assertion of one of an owner's passkeys, for this browser's pending passkey sign-in:
    checked as a guardian's is (models.proofs.passkey), its request used up once, then the
    page session (which ends if that passkey is removed)."""
    pending = await pending_sign_ins.of_cookie(redis, cookie=pending_cookie, now=now)
    if pending is None or pending_cookie is None or pending["request_id"] != request_id:
        raise Conflict(NO_PENDING)
    request = await passkey.peek(redis, request_id=request_id, subject_id=pending["digest"], now=now)
    found = await passkeys.get(pool, credential_id=passkey.credential_id(answer=answer))
    user = (
        None
        if found is None
        else await users.get_signing_in(pool, settings.key_ring, user_id=found["user_id"])
    )
    if found is None or user is None:
        raise Unauthorized(NOT_A_PASSKEY_HERE)
    count = passkey.check_assertion(
        settings=settings, request=request, answer=answer, passkey=passkeys.as_proof(passkey=found)
    )
    await passkey.take(redis, request=request)
    await pending_sign_ins.drop(redis, cookie=pending_cookie)
    await passkeys.used(pool, credential_id=found["credential_id"], sign_count=count, now=now)
    opened = await open_page_session(
        pool,
        redis,
        settings,
        user=user,
        wallet_address=None,
        passkey_id=found["credential_id"],
        replacing=replacing,
        now=now,
    )
    return opened, pending["next"]


async def sign_in_test_owner(
    pool: Pool, redis: ArqRedis, settings: Settings, *, replacing: str | None, now: datetime
) -> tuple[sessions.Opened, users.SigningIn]:
    """Development only: the test wallet kept under DATA_DIR signs in, as any wallet does."""
    wallet = dev_wallet.keypair(data_dir=settings.data_dir).public_key
    user = await users.sign_in(pool, settings.key_ring, wallet_address=wallet)
    opened = await open_page_session(
        pool, redis, settings, user=user, wallet_address=wallet, passkey_id=None, replacing=replacing, now=now
    )
    return opened, user


async def add_owner_passkey(
    pool: Pool,
    redis: ArqRedis,
    settings: Settings,
    *,
    user_id: str,
    request_id: str,
    answer: str,
    now: datetime,
) -> None:
    """A passkey created on the account page: this owner's request, checked once (origin, RP ID,
    the user verified), kept; the request used up."""
    request = await passkey.peek(redis, request_id=request_id, subject_id=user_id, now=now)
    created = passkey.check_registration(settings=settings, request=request, answer=answer)
    await passkey.take(redis, request=request)
    if not await passkeys.add(pool, user_id=user_id, passkey=created, now=now):
        raise Conflict(N_("This passkey is already added."))


# Linking a wallet from the account page, by SEP-7 as well as by the challenge text: the request
# is the signed-in owner's (its subject), for the wallet they typed (its signer).
LINK_PURPOSE = "owner.link_wallet"
LINK_WORDS = N_(
    "Link this wallet to your legacy plan account. Sign only if you asked for it yourself, just now, "
    "on your own screen."
)


async def start_wallet_link(
    redis: ArqRedis, settings: Settings, *, user_id: str, wallet_address: str, client_ip: str, now: datetime
) -> tuple[str, Prepared]:
    """Within the challenge's limits: the spec's text to sign and a signing request, both for the
    wallet the owner typed."""
    message = await request_challenge(
        redis, settings, wallet_address=wallet_address, client_ip=client_ip, now=now
    )
    prepared = await challenge.issue(
        redis, settings, purpose=LINK_PURPOSE, subject_id=user_id, signer=wallet_address, now=now
    )
    return message, prepared


async def answer_wallet_link(
    pool: Pool, redis: ArqRedis, settings: Settings, *, request_id: str, signed_xdr: str, now: datetime
) -> users.UserWithWallets:
    """The wallet's signed challenge (its callback): verified before anything is used up, then
    linked to the account that asked, with POST /api/auth/link-wallet's rules."""
    request = await wallet_requests.find(redis, request_id=request_id, purpose=LINK_PURPOSE, now=now)
    await challenge.check(redis, settings, request=request, answer=signed_xdr)
    return await users.link_wallet(
        pool, settings.key_ring, user_id=request["subject_id"], wallet_address=request["signer"], now=now
    )
