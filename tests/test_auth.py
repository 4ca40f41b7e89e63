"""Wallet sign-in, sessions and JWT hardening, through the real app, Redis and PostgreSQL."""

from __future__ import annotations

import base64
import json
import re
import time
import uuid

import jwt
import psycopg2
import pytest
import redis.asyncio as aioredis
from stellar_sdk import Keypair

from core import tokens
from core.challenges import CAP as CHALLENGE_CAP
from core.challenges import KEY as CHALLENGE_KEY
from models.account import users
from tests.helpers import assert_error, challenge, sign, sign_in
from tests.plan_helpers import body_for

VERIFY = "/api/auth/wallet/verify"
CHALLENGE = "/api/auth/wallet/challenge"


async def test_challenge_message_names_service_wallet_nonce_and_times(client, settings):
    kp = Keypair.random()
    message = await challenge(client, kp.public_key)
    assert settings.service_name in message
    assert kp.public_key in message
    nonce = re.search(r"Nonce: ([0-9a-f]+)", message)
    assert nonce and len(nonce.group(1)) * 4 >= 128
    issued = re.search(r"Issued At: (\S+Z)", message)
    expires = re.search(r"Expiration Time: (\S+Z)", message)
    assert issued and expires
    r = aioredis.from_url(settings.redis_url)
    ttl = await r.ttl(CHALLENGE_KEY.format(kp.public_key, "127.0.0.1"))
    await r.aclose()
    assert 290 <= ttl <= 300


async def test_two_challenges_have_different_nonces(client):
    kp = Keypair.random()
    assert await challenge(client, kp.public_key) != await challenge(client, kp.public_key)


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"walletAddress": ""},
        {"walletAddress": "not-an-address"},
        {"walletAddress": "g" + "A" * 55},
        {"walletAddress": "G" + "A" * 54},
        {"walletAddress": 12345},
        {"walletAddress": None},
    ],
)
async def test_challenge_rejects_invalid_addresses(client, body):
    resp = await client.post(CHALLENGE, json=body)
    assert resp.status == 400
    payload = await resp.json()
    assert_error(payload, 400)
    assert "walletAddress" in payload["details"]


async def test_challenge_rejects_address_with_bad_checksum(client):
    address = Keypair.random().public_key
    # Change the last character: still matches the regex, but the CRC16 checksum breaks.
    tampered = address[:-1] + ("A" if address[-1] != "A" else "B")
    assert re.match(r"^G[A-Z2-7]{55}$", tampered)
    resp = await client.post(CHALLENGE, json={"walletAddress": tampered})
    assert resp.status == 400
    assert "checksum" in json.dumps(await resp.json())


@pytest.mark.parametrize("encoding", ["base64", "hex"])
@pytest.mark.parametrize("sep53", [False, True])
async def test_verify_accepts_base64_and_hex_over_raw_and_sep53(client, encoding, sep53):
    kp = Keypair.random()
    message = await challenge(client, kp.public_key)
    resp = await client.post(
        VERIFY, json={"walletAddress": kp.public_key, "signature": sign(kp, message, encoding, sep53)}
    )
    assert resp.status == 200, await resp.text()
    body = await resp.json()
    assert body["user"]["walletAddress"] == kp.public_key
    assert body["user"]["name"] is None
    uuid.UUID(body["user"]["id"])
    me = await client.get("/api/auth/me", headers={"Authorization": f"Bearer {body['token']}"})
    assert me.status == 200
    assert (await me.json())["id"] == body["user"]["id"]


async def test_second_sign_in_returns_the_same_account(client):
    kp = Keypair.random()
    first = await sign_in(client, kp)
    second = await sign_in(client, kp)
    assert first.user["id"] == second.user["id"]
    assert first.token != second.token


async def test_replayed_signature_is_rejected(client):
    kp = Keypair.random()
    message = await challenge(client, kp.public_key)
    body = {"walletAddress": kp.public_key, "signature": sign(kp, message)}
    assert (await client.post(VERIFY, json=body)).status == 200
    replay = await client.post(VERIFY, json=body)
    assert replay.status == 401
    assert_error(await replay.json(), 401)


async def test_several_live_challenges_each_verify_once(client):
    kp = Keypair.random()
    messages = [await challenge(client, kp.public_key) for _ in range(3)]
    for message in (messages[1], messages[0], messages[2]):  # any order: matched by what was signed
        body = {"walletAddress": kp.public_key, "signature": sign(kp, message)}
        assert (await client.post(VERIFY, json=body)).status == 200
        assert (await client.post(VERIFY, json=body)).status == 401  # single use


async def test_past_the_cap_a_new_challenge_retires_the_oldest_of_that_client(client):
    kp = Keypair.random()
    messages = [await challenge(client, kp.public_key) for _ in range(CHALLENGE_CAP + 1)]
    oldest = {"walletAddress": kp.public_key, "signature": sign(kp, messages[0])}
    assert (await client.post(VERIFY, json=oldest)).status == 401
    for message in messages[1:]:
        body = {"walletAddress": kp.public_key, "signature": sign(kp, message)}
        assert (await client.post(VERIFY, json=body)).status == 200


async def test_a_stranger_cannot_lock_a_wallet_out_of_sign_in(make_client):
    client = await make_client(trusted_proxy_hops=1)
    owner = Keypair.random()
    at_home, elsewhere = {"X-Forwarded-For": "198.51.100.7"}, {"X-Forwarded-For": "203.0.113.66"}
    message = await challenge(client, owner.public_key, headers=at_home)
    # A stranger asks for the owner's wallet until their own budget runs out...
    statuses = [
        (await client.post(CHALLENGE, json={"walletAddress": owner.public_key}, headers=elsewhere)).status
        for _ in range(15)
    ]
    assert statuses.count(200) == 10 and statuses[-1] == 429
    # ...yet the owner's outstanding challenge still verifies, and the owner can ask for more.
    body = {"walletAddress": owner.public_key, "signature": sign(owner, message)}
    assert (await client.post(VERIFY, json=body, headers=at_home)).status == 200
    for _ in range(9):  # the rest of the owner's own budget (one was used above)
        await challenge(client, owner.public_key, headers=at_home)


async def test_a_challenge_verifies_only_from_the_client_that_asked(make_client):
    client = await make_client(trusted_proxy_hops=1)
    kp = Keypair.random()
    message = await challenge(client, kp.public_key, headers={"X-Forwarded-For": "198.51.100.7"})
    body = {"walletAddress": kp.public_key, "signature": sign(kp, message)}
    other = await client.post(VERIFY, json=body, headers={"X-Forwarded-For": "198.51.100.8"})
    assert other.status == 401
    same = await client.post(VERIFY, json=body, headers={"X-Forwarded-For": "198.51.100.7"})
    assert same.status == 200


async def test_signature_by_another_key_is_rejected_and_challenge_survives(client):
    kp, attacker = Keypair.random(), Keypair.random()
    message = await challenge(client, kp.public_key)
    resp = await client.post(
        VERIFY, json={"walletAddress": kp.public_key, "signature": sign(attacker, message)}
    )
    assert resp.status == 401
    assert "Signature" in (await resp.json())["message"]
    # The owner can still use the challenge: a stranger cannot burn it.
    ok = await client.post(VERIFY, json={"walletAddress": kp.public_key, "signature": sign(kp, message)})
    assert ok.status == 200


async def test_signature_over_other_text_is_rejected(client):
    kp = Keypair.random()
    await challenge(client, kp.public_key)
    resp = await client.post(
        VERIFY, json={"walletAddress": kp.public_key, "signature": sign(kp, "something else")}
    )
    assert resp.status == 401


async def test_expired_challenge_is_rejected(client, settings, clock):
    kp = Keypair.random()
    message = await challenge(client, kp.public_key)
    clock.advance(seconds=settings.challenge_ttl_seconds + 1)
    resp = await client.post(VERIFY, json={"walletAddress": kp.public_key, "signature": sign(kp, message)})
    assert resp.status == 401
    assert "expired" in (await resp.json())["message"]


async def test_verify_without_challenge_is_rejected(client):
    kp = Keypair.random()
    resp = await client.post(VERIFY, json={"walletAddress": kp.public_key, "signature": sign(kp, "x")})
    assert resp.status == 401


@pytest.mark.parametrize(
    "signature",
    [
        "",
        "abc",
        "z" * 128,
        base64.b64encode(b"x" * 63).decode(),
        base64.b64encode(b"x" * 65).decode(),
        "0" * 126,
    ],
)
async def test_malformed_signature_is_400(client, signature):
    kp = Keypair.random()
    await challenge(client, kp.public_key)
    resp = await client.post(VERIFY, json={"walletAddress": kp.public_key, "signature": signature})
    assert resp.status == 400
    assert_error(await resp.json(), 400)


async def test_verify_requires_both_fields(client):
    resp = await client.post(VERIFY, json={})
    assert resp.status == 400
    details = (await resp.json())["details"]
    assert set(details) == {"walletAddress", "signature"}


# --- sessions -------------------------------------------------------------------------------


def _forge(settings, **changes):
    now = int(time.time())
    claims = {
        "sub": str(uuid.uuid4()),
        "iat": now,
        "exp": now + 3600,
        "jti": uuid.uuid4().hex,
        "iss": settings.jwt_issuer,
        "aud": settings.jwt_audience,
        "typ": "session",
    }
    claims.update(changes)
    return {k: v for k, v in claims.items() if v is not None}


async def _me_status(client, token: str) -> int:
    resp = await client.get("/api/auth/me", headers={"Authorization": f"Bearer {token}"})
    if resp.status == 401:
        assert_error(await resp.json(), 401)
        assert resp.headers["WWW-Authenticate"] == "Bearer"
    return resp.status


async def test_token_lifetime_is_seven_days_and_claims_complete(client, settings):
    session = await sign_in(client)
    claims = jwt.decode(
        session.token, settings.jwt_secret, algorithms=["HS256"], audience=settings.jwt_audience
    )
    assert claims["exp"] - claims["iat"] == 7 * 24 * 3600
    assert set(claims) == {"sub", "iat", "exp", "jti", "iss", "aud", "typ", "gen"}
    assert claims["gen"] == 0  # the session generation of an account never signed out everywhere
    assert jwt.get_unverified_header(session.token)["alg"] == "HS256"


async def test_alg_none_token_is_rejected(client, settings):
    session = await sign_in(client)
    claims = _forge(settings, sub=session.user["id"])
    header = base64.urlsafe_b64encode(b'{"alg":"none","typ":"JWT"}').rstrip(b"=").decode()
    payload = base64.urlsafe_b64encode(json.dumps(claims).encode()).rstrip(b"=").decode()
    assert await _me_status(client, f"{header}.{payload}.") == 401


async def test_tampered_token_is_rejected(client):
    session = await sign_in(client)
    header, payload, signature = session.token.split(".")
    claims = json.loads(base64.urlsafe_b64decode(payload + "=="))
    claims["sub"] = str(uuid.uuid4())
    forged = base64.urlsafe_b64encode(json.dumps(claims).encode()).rstrip(b"=").decode()
    assert await _me_status(client, f"{header}.{forged}.{signature}") == 401
    assert (
        await _me_status(client, session.token[:-2] + ("AA" if session.token[-2:] != "AA" else "BB")) == 401
    )


@pytest.mark.parametrize(
    "changes",
    [
        {"exp": int(time.time()) - 10},
        {"aud": "someone-else"},
        {"iss": "another-service"},
        {"typ": "refresh"},
        {"jti": None},
        {"aud": None},
        {"sub": "not-a-uuid"},
    ],
    ids=["expired", "wrong-audience", "wrong-issuer", "wrong-type", "no-jti", "no-aud", "bad-sub"],
)
async def test_invalid_claims_are_rejected(client, settings, changes):
    session = await sign_in(client)
    changes.setdefault("sub", session.user["id"])
    token = jwt.encode(_forge(settings, **changes), settings.jwt_secret, algorithm="HS256")
    assert await _me_status(client, token) == 401


async def test_token_signed_with_another_secret_or_algorithm_is_rejected(client, settings):
    session = await sign_in(client)
    claims = _forge(settings, sub=session.user["id"])
    assert await _me_status(client, jwt.encode(claims, "x" * 48, algorithm="HS256")) == 401
    assert await _me_status(client, jwt.encode(claims, settings.jwt_secret, algorithm="HS512")) == 401


@pytest.mark.parametrize(
    "header", [None, "", "Bearer", "Bearer ", "Basic abc", "Token abc", "Bearer not.a.jwt"]
)
async def test_missing_or_malformed_authorization_is_401(client, header):
    headers = {} if header is None else {"Authorization": header}
    for method, path in [
        ("GET", "/api/auth/me"),
        ("POST", "/api/auth/logout"),
        ("GET", "/api/users/me"),
        ("PATCH", "/api/users/me"),
        ("POST", "/api/auth/link-wallet"),
    ]:
        resp = await client.request(method, path, headers=headers, json={})
        assert resp.status == 401, (method, path)
        assert_error(await resp.json(), 401)


async def test_logout_is_a_courtesy(client):
    session = await sign_in(client)
    resp = await client.post("/api/auth/logout", headers=session.headers)
    assert resp.status == 200
    assert (await resp.json())["ok"] is True
    # Stateless, as the spec says: the token still works until it expires.
    assert (await client.get("/api/auth/me", headers=session.headers)).status == 200


@pytest.mark.parametrize("path", ["/api/auth/register", "/api/auth/login"])
async def test_email_password_routes_are_disabled(client, path):
    resp = await client.post(path, json={"email": "a@b.c", "password": "hunter22"})
    assert resp.status == 410
    body = await resp.json()
    assert_error(body, 410)
    assert "disabled" in body["message"]


# --- linking wallets --------------------------------------------------------------------------


async def _link(client, session, keypair, signer=None):
    message = await challenge(client, keypair.public_key)
    return await client.post(
        "/api/auth/link-wallet",
        headers=session.headers,
        json={"walletAddress": keypair.public_key, "signature": sign(signer or keypair, message)},
    )


async def test_link_wallet_then_sign_in_with_it_reaches_the_same_account(client):
    session = await sign_in(client)
    second = Keypair.random()
    resp = await _link(client, session, second)
    assert resp.status == 200, await resp.text()
    body = await resp.json()
    assert body["wallets"] == [session.keypair.public_key, second.public_key]
    again = await sign_in(client, second)
    assert again.user["id"] == session.user["id"]
    assert again.user["walletAddress"] == session.keypair.public_key


async def test_link_wallet_requires_proof_of_possession(client):
    session = await sign_in(client)
    resp = await _link(client, session, Keypair.random(), signer=Keypair.random())
    assert resp.status == 401


async def test_link_wallet_owned_by_another_account_is_409(client):
    alice = await sign_in(client)
    bob = await sign_in(client)
    resp = await _link(client, alice, bob.keypair)
    assert resp.status == 409
    assert_error(await resp.json(), 409)


async def test_link_own_wallet_again_is_harmless(client):
    session = await sign_in(client)
    resp = await _link(client, session, session.keypair)
    assert resp.status == 200
    assert (await resp.json())["wallets"] == [session.keypair.public_key]


# --- rate limits ----------------------------------------------------------------------------


async def test_challenge_rate_limit_per_address_and_wallet(client):
    kp = Keypair.random()
    for _ in range(10):
        assert (await client.post(CHALLENGE, json={"walletAddress": kp.public_key})).status == 200
    resp = await client.post(CHALLENGE, json={"walletAddress": kp.public_key})
    assert resp.status == 429
    assert_error(await resp.json(), 429)
    assert 1 <= int(resp.headers["Retry-After"]) <= 60
    # Another wallet from the same address is unaffected by this wallet's limit.
    assert (await client.post(CHALLENGE, json={"walletAddress": Keypair.random().public_key})).status == 200


async def test_challenge_rate_limit_per_ip(make_client):
    client = await make_client(rate_limit_challenge_per_ip=3)
    for _ in range(3):
        assert (
            await client.post(CHALLENGE, json={"walletAddress": Keypair.random().public_key})
        ).status == 200
    resp = await client.post(CHALLENGE, json={"walletAddress": Keypair.random().public_key})
    assert resp.status == 429
    assert "Retry-After" in resp.headers


async def test_forwarded_for_is_ignored_unless_proxy_is_trusted(make_client):
    untrusted = await make_client(rate_limit_challenge_per_ip=2)
    for i in range(2):
        headers = {"X-Forwarded-For": f"203.0.113.{i}"}
        body = {"walletAddress": Keypair.random().public_key}
        assert (await untrusted.post(CHALLENGE, json=body, headers=headers)).status == 200
    spoofed = await untrusted.post(
        CHALLENGE,
        json={"walletAddress": Keypair.random().public_key},
        headers={"X-Forwarded-For": "203.0.113.9"},
    )
    assert spoofed.status == 429


async def test_trusted_proxy_limits_each_forwarded_client(make_client):
    client = await make_client(rate_limit_challenge_per_ip=2, trusted_proxy_hops=1)
    for ip in ("198.51.100.1", "198.51.100.1", "198.51.100.2", "198.51.100.2"):
        resp = await client.post(
            CHALLENGE, json={"walletAddress": Keypair.random().public_key}, headers={"X-Forwarded-For": ip}
        )
        assert resp.status == 200
    resp = await client.post(
        CHALLENGE,
        json={"walletAddress": Keypair.random().public_key},
        headers={"X-Forwarded-For": "198.51.100.1"},
    )
    assert resp.status == 429


def test_a_verified_token_still_expires_while_remembered(monkeypatch):
    secret = "x9" * 24
    token = tokens.issue(secret, str(uuid.uuid4()), "iss", "aud", ttl_seconds=60)
    assert tokens.verify(secret, token, "iss", "aud")["typ"] == "session"
    assert tokens.verify(secret, token, "iss", "aud")["typ"] == "session"  # served from the cache
    for other in (("y8" * 24, "iss", "aud"), (secret, "iss", "other"), (secret, "other", "aud")):
        with pytest.raises(tokens.InvalidToken):  # a different secret, issuer or audience: no cache hit
            tokens.verify(other[0], token, other[1], other[2])
    now = time.time()
    monkeypatch.setattr(tokens.time, "time", lambda: now + 61)
    with pytest.raises(tokens.InvalidToken):
        tokens.verify(secret, token, "iss", "aud")


async def test_a_token_whose_account_is_gone_is_401_on_reads_and_writes(client, settings, clock):
    session = await sign_in(client)
    assert (await client.get("/api/assets", headers=session.headers)).status == 200  # now remembered
    with psycopg2.connect(settings.database_url) as conn, conn.cursor() as cur:
        cur.execute("DELETE FROM users WHERE id = %s", (session.user["id"],))
    conn.close()
    # Within the existence cache's lifetime, a write still fails cleanly (no foreign-key 500)...
    for collection in ("assets", "beneficiaries", "guardians", "messages"):
        resp = await client.post(f"/api/{collection}", headers=session.headers, json=body_for(collection))
        assert resp.status == 401, (collection, await resp.text())
        assert_error(await resp.json(), 401)
    # ...and once it expires every route refuses the session.
    clock.advance(seconds=users.ACCOUNT_CHECK_SECONDS + 1)
    for method, path in (("GET", "/api/assets"), ("GET", "/api/auth/me"), ("PATCH", "/api/users/me")):
        resp = await client.request(method, path, headers=session.headers, json={"name": "x"})
        assert resp.status == 401, (path, await resp.text())
        assert (await resp.json())["message"] == "This account no longer exists"
    # A fresh sign-in with the same wallet creates a new account and works.
    again = await sign_in(client, session.keypair)
    assert again.user["id"] != session.user["id"]
    assert (await client.get("/api/assets", headers=again.headers)).status == 200
