"""Session JWTs: HS256 only, every registered claim required and checked.

Pinning the algorithm on decode shuts out `alg: none` and key-confusion tricks; `aud`/`iss`
stop a token minted for another service (sharing a secret by accident) from being accepted.
`typ` separates session tokens from any other token type signed with the same secret later.
`gen` is the account's session generation when the token was issued (absent: 0, as in tokens
issued before it existed); `POST /api/auth/logout-all` raises the account's, which ends every
token carrying a lower one (api/middleware.py `authenticate`).
"""

from __future__ import annotations

import functools
import time
import uuid
from typing import NotRequired, TypedDict, cast

import jwt

ALGORITHM = "HS256"
SESSION_TYPE = "session"
REQUIRED_CLAIMS = ["sub", "iat", "exp", "jti", "iss", "aud", "typ"]


class InvalidToken(Exception):
    pass


class Claims(TypedDict):
    """A verified session token's claims (all of REQUIRED_CLAIMS, checked)."""

    sub: str  # the user id
    iat: int
    exp: int | float
    jti: str
    iss: str
    aud: str
    typ: str
    gen: NotRequired[int]  # the session generation (absent in tokens issued before it existed: 0)


def issue(
    secret: str, user_id: str, issuer: str, audience: str, ttl_seconds: int, *, generation: int = 0
) -> str:
    now = int(time.time())
    claims = {
        "sub": user_id,
        "iat": now,
        "exp": now + ttl_seconds,
        "jti": uuid.uuid4().hex,
        "iss": issuer,
        "aud": audience,
        "typ": SESSION_TYPE,
        "gen": generation,
    }
    return jwt.encode(claims, secret, algorithm=ALGORITHM)


def generation(claims: Claims) -> int:
    return claims.get("gen", 0)


def verify(secret: str, token: str, issuer: str, audience: str) -> Claims:
    claims = _verified(secret, token, issuer, audience)
    # Checked on every call: a cached token must still stop working when it expires.
    if claims["exp"] <= time.time():
        raise InvalidToken("ExpiredSignatureError")
    return claims.copy()


@functools.lru_cache(maxsize=4096)
def _verified(secret: str, token: str, issuer: str, audience: str) -> Claims:
    """Full verification, remembered per token: the same session token arrives on every request
    of a client, and PyJWT's decode is a large share of a light request's CPU.
    Only tokens that passed are cached (a failure raises), so forged tokens cannot fill the cache."""
    try:
        decoded = jwt.decode(
            token,
            secret,
            algorithms=[ALGORITHM],
            audience=audience,
            issuer=issuer,
            options={"require": REQUIRED_CLAIMS},
        )
    except jwt.PyJWTError as exc:
        raise InvalidToken(type(exc).__name__) from None
    claims = cast(Claims, decoded)  # REQUIRED_CLAIMS present; their values checked below
    if claims["typ"] != SESSION_TYPE:
        raise InvalidToken("wrong token type")
    try:
        uuid.UUID(str(claims["sub"]))
    except ValueError:
        raise InvalidToken("malformed subject") from None
    if not isinstance(claims["exp"], int | float):
        raise InvalidToken("malformed expiry")
    gen = claims.get("gen", 0)
    if type(gen) is not int or gen < 0:  # bool is an int subclass: refused too
        raise InvalidToken("malformed session generation")
    return claims
