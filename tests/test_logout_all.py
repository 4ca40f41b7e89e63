"""POST /api/auth/logout-all: every session of the account ends, at once on the process that
answered and within the account-check bound (ACCOUNT_CHECK_SECONDS) on every other one.

Two API processes are two apps here, each with its own account check (what a process keeps in
memory), sharing the database, Redis and the test's clock, which stands in for the 30 s.
"""

from __future__ import annotations

from datetime import datetime, timedelta

import jwt
import pytest

from core import tokens
from models.account import users
from tests.helpers import assert_error, sign_in
from tests.plan_helpers import body_for

LOGOUT_ALL = "/api/auth/logout-all"


def _at(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


async def _status(client, session, method: str = "GET", path: str = "/api/auth/me") -> int:
    kwargs = {"json": body_for("assets")} if method == "POST" else {}
    resp = await client.request(method, path, headers=session.headers, **kwargs)
    if resp.status == 401:
        body = await resp.json()
        assert_error(body, 401)
        assert body["message"] == "This session was ended (signed out everywhere); sign in again"
        assert resp.headers["WWW-Authenticate"] == "Bearer"
    return resp.status


@pytest.fixture
async def two(make_client):
    """Two API processes of one deployment."""
    return await make_client(), await make_client()


async def test_every_session_ends_at_once_here_and_within_the_bound_elsewhere(two, clock):
    here, there = two
    phone = await sign_in(here)
    laptop = await sign_in(here, phone.keypair)  # a second session of the same account
    for client in (here, there):  # both processes have read the account and trust it for 30 s
        for session in (phone, laptop):
            assert await _status(client, session) == 200
    before = clock.now()
    resp = await here.post(LOGOUT_ALL, headers=phone.headers)
    assert resp.status == 200, await resp.text()
    body = await resp.json()
    assert body["ok"] is True
    ended_here, everywhere = _at(body["endedHere"]), _at(body["endedEverywhereBy"])
    assert before - timedelta(seconds=1) <= ended_here <= clock.now()
    assert everywhere - ended_here == timedelta(seconds=users.ACCOUNT_CHECK_SECONDS)
    assert "on this server now" in body["message"] and body["endedEverywhereBy"] in body["message"]
    assert resp.headers["Cache-Control"] == "no-store"
    # The process that answered refuses both sessions at once, on reads and writes alike.
    for session in (phone, laptop):
        for method, path in (("GET", "/api/auth/me"), ("GET", "/api/assets"), ("POST", "/api/assets")):
            assert await _status(here, session, method, path) == 401, (method, path)
        assert await _status(here, session, "POST", LOGOUT_ALL) == 401
    # The other process still trusts what it read, as the response said, until the bound...
    assert await _status(there, laptop) == 200
    clock.advance(seconds=users.ACCOUNT_CHECK_SECONDS - 1)
    assert await _status(there, laptop) == 200
    # ...and past it refuses them too.
    clock.advance(seconds=2)
    for session in (phone, laptop):
        assert await _status(there, session) == 401
        assert await _status(there, session, "POST", "/api/assets") == 401


async def test_sessions_issued_afterwards_work_everywhere_and_teach_the_other_process(two):
    here, there = two
    old = await sign_in(here)
    assert await _status(there, old) == 200  # `there` trusts generation 0 for 30 s
    assert (await here.post(LOGOUT_ALL, headers=old.headers)).status == 200
    # Signing in again, on either process, gives a session that works on both at once.
    fresh_here = await sign_in(here, old.keypair)
    fresh_there = await sign_in(there, old.keypair)
    assert fresh_here.user["id"] == old.user["id"]
    for session in (fresh_here, fresh_there):
        for client in (here, there):
            assert await _status(client, session) == 200
            assert await _status(client, session, "POST", "/api/assets") == 201
    # Having seen a session of the new generation, `there` refuses the old one without waiting.
    assert await _status(there, old) == 401
    # Signing out everywhere again ends the new ones too; the generation keeps rising.
    assert (await there.post(LOGOUT_ALL, headers=fresh_here.headers)).status == 200
    assert await _status(there, fresh_here) == 401 and await _status(there, fresh_there) == 401
    newest = await sign_in(there, old.keypair)
    assert tokens.generation(jwt.decode(newest.token, options={"verify_signature": False})) == 2
    assert await _status(here, newest) == 200


async def test_other_accounts_are_untouched_and_the_timeline_says_it(client):
    owner, other = await sign_in(client), await sign_in(client)
    assert (await client.post(LOGOUT_ALL, headers=owner.headers)).status == 200
    assert await _status(client, other) == 200
    again = await sign_in(client, owner.keypair)
    resp = await client.get("/api/activity", headers=again.headers)
    entries = await resp.json()
    assert entries[0]["kind"] == "user.sessions_ended"
    assert entries[0]["summary"] == "Signed out of every session"


async def test_logout_all_needs_a_live_session(client):
    resp = await client.post(LOGOUT_ALL)
    assert resp.status == 401
    assert_error(await resp.json(), 401)


async def test_tokens_from_before_generations_count_as_generation_zero(client, settings):
    """Tokens issued before this feature carry no `gen`: they are generation 0, valid until the
    account's first logout-all; a `gen` that is not a non-negative integer is no token at all."""
    session = await sign_in(client)
    claims = jwt.decode(session.token, options={"verify_signature": False})
    del claims["gen"]
    legacy = jwt.encode(claims, settings.jwt_secret, algorithm="HS256")
    headers = {"Authorization": f"Bearer {legacy}"}
    assert (await client.get("/api/auth/me", headers=headers)).status == 200
    for bad in (-1, True, 1.0, "1", None, [1]):
        forged = jwt.encode({**claims, "gen": bad}, settings.jwt_secret, algorithm="HS256")
        resp = await client.get("/api/auth/me", headers={"Authorization": f"Bearer {forged}"})
        assert resp.status == 401, bad
        assert (await resp.json())["message"] == "Invalid or expired token"
    assert (await client.post(LOGOUT_ALL, headers=headers)).status == 200
    resp = await client.get("/api/auth/me", headers=headers)
    assert resp.status == 401
