"""The owner's page session (api/owner/session.py, models/account/sessions.py), through the real
app: the cookie and its flags, CSRF, the host rule, idle and lifetime limits, the account's
session generation, and the API staying bearer-only."""

from __future__ import annotations

import hashlib
from http.cookies import SimpleCookie

import psycopg2
from stellar_sdk import Keypair

from tests.helpers import sign_in
from tests.support.owner import browse_as_the_service, form_token, service_origin, sign_in_page

ORIGIN = "https://legacy.example.test"


def _set_cookies(resp) -> dict[str, dict[str, str]]:
    """Every Set-Cookie of a response, by name, with its attributes as written."""
    found: dict[str, dict[str, str]] = {}
    for header in resp.headers.getall("Set-Cookie", []):
        cookie = SimpleCookie()
        cookie.load(header)
        for name, morsel in cookie.items():
            found[name] = {
                "value": morsel.value,
                "raw": header,
                **{k: str(v) for k, v in morsel.items() if v},
            }
    return found


def _flags(raw: str) -> set[str]:
    return {part.strip().split("=")[0].lower() for part in raw.split(";")[1:]}


async def _plan_status(client) -> int:
    return (await client.get("/plan", allow_redirects=False)).status


async def test_the_cookie_is_an_opaque_id_with_every_flag_over_https(client, settings):
    keypair = Keypair.random()
    browse_as_the_service(client)
    named = await client.post(
        "/sign-in/wallet", data={"walletAddress": keypair.public_key}, allow_redirects=False
    )
    pending = _set_cookies(named)["__Host-lps_sign_in"]
    assert {"httponly", "secure", "samesite", "path"} <= _flags(pending["raw"])
    assert pending["samesite"] == "Lax" and pending["path"] == "/"
    from tests.helpers import sign
    from tests.support.owner import challenge_text

    waiting = await (await client.get("/sign-in/wait")).text()
    assert pending["value"] not in waiting  # never in the page, the URI or its QR code
    signed = await client.post(
        "/sign-in/signature",
        data={"signature": sign(keypair, challenge_text(waiting))},
        allow_redirects=False,
    )
    assert signed.status == 303 and signed.headers["Location"] == "/plan"
    cookies = _set_cookies(signed)
    session = cookies["__Host-lps_session"]
    assert {"httponly", "secure", "samesite", "path"} <= _flags(session["raw"])
    assert session["samesite"] == "Lax" and session["path"] == "/" and "domain" not in session
    assert int(session["max-age"]) <= settings.jwt_ttl_seconds
    # The pending cookie is cleared with the same flags.
    cleared = cookies["__Host-lps_sign_in"]
    assert cleared["value"] == "" and {"httponly", "secure", "samesite", "path"} <= _flags(cleared["raw"])
    # Opaque: no JWT (three dot-separated parts), and the server keeps only its digest.
    assert session["value"].count(".") < 2
    with psycopg2.connect(settings.database_url) as conn, conn.cursor() as cur:
        cur.execute("SELECT digest FROM owner_sessions")
        (stored,) = cur.fetchone()
    conn.close()
    assert bytes(stored) == hashlib.sha256(session["value"].encode()).digest()
    assert await _plan_status(client) == 200


async def test_over_plain_http_the_cookie_has_no_prefix_and_no_secure(make_client):
    client = await make_client(public_base_url="http://legacy.example.test")
    await sign_in_page(client, Keypair.random())
    page = await client.get("/plan", allow_redirects=False)
    assert page.status == 200
    out = await client.post(
        "/sign-out", data={"formToken": form_token(await page.text())}, allow_redirects=False
    )
    cleared = _set_cookies(out)["lps_session"]
    assert "secure" not in _flags(cleared["raw"]) and {"httponly", "samesite", "path"} <= _flags(
        cleared["raw"]
    )


async def test_signed_out_pages_go_to_sign_in_and_come_back_only_under_plan(client):
    browse_as_the_service(client)
    resp = await client.get("/plan/account", allow_redirects=False)
    assert (resp.status, resp.headers["Location"]) == (303, "/sign-in?next=/plan/account")
    assert (await client.get("/", allow_redirects=False)).headers["Location"] == "/plan"
    keypair = Keypair.random()
    from tests.helpers import sign
    from tests.support.owner import challenge_text, start_sign_in

    for asked, lands in (
        ("/plan/account", "/plan/account"),
        ("https://evil.example/plan", "/plan"),
        ("//evil", "/plan"),
    ):
        waiting = await start_sign_in(client, keypair.public_key, next_path=asked)
        signed = await client.post(
            "/sign-in/signature",
            data={"signature": sign(keypair, challenge_text(waiting))},
            allow_redirects=False,
        )
        assert signed.headers["Location"] == lands


async def test_a_get_under_another_host_goes_to_the_service_origin(client):
    resp = await client.get("/plan/account?x=1", headers={"Host": "other.example"}, allow_redirects=False)
    assert (resp.status, resp.headers["Location"]) == (303, f"{ORIGIN}/plan/account?x=1")
    resp = await client.get("/sign-in", headers={"Host": "other.example"}, allow_redirects=False)
    assert resp.headers["Location"] == f"{ORIGIN}/sign-in"
    # The heir's and guardian's pages stay as they are.
    resp = await client.get("/claim", headers={"Host": "other.example"}, allow_redirects=False)
    assert resp.status == 200


async def test_a_post_from_elsewhere_or_without_the_token_is_refused_and_changes_nothing(client, settings):
    keypair = Keypair.random()
    api = await sign_in(client, keypair)
    await sign_in_page(client, keypair)
    token = form_token(await (await client.get("/plan")).text())
    path = "/plan/account/sign-out-everywhere"
    refusals = (
        ({"Origin": "https://evil.example"}, {"formToken": token}),
        ({"Origin": "null"}, {"formToken": token}),
        ({"Origin": "http://legacy.example.test"}, {"formToken": token}),  # another scheme is another origin
        ({"Origin": ORIGIN}, {}),
        ({"Origin": ORIGIN}, {"formToken": token + "x"}),
    )
    for headers, data in refusals:
        resp = await client.post(path, headers=headers, data=data, allow_redirects=False)
        assert resp.status == 403, (headers, data)
        assert resp.headers["Content-Type"].startswith("text/html")
        assert "Nothing was done" in await resp.text()
    # Without Origin, the Referer must be under the service's origin.
    del client.session.headers["Origin"]
    resp = await client.post(
        path, headers={"Referer": "https://evil.example/plan"}, data={"formToken": token}
    )
    assert resp.status == 403
    resp = await client.post(path, data={"formToken": token}, allow_redirects=False)
    assert resp.status == 403  # neither Origin nor Referer
    # Nothing recorded: the API token and the page session still work, no timeline entry.
    assert (await client.get("/api/auth/me", headers=api.headers)).status == 200
    client.session.headers["Origin"] = service_origin(client)
    assert await _plan_status(client) == 200
    activity = await (await client.get("/api/activity", headers=api.headers)).json()
    assert not [e for e in activity if e["kind"] == "user.sessions_ended"]
    # The same form from the page itself, with a Referer and no Origin, goes through.
    del client.session.headers["Origin"]
    resp = await client.post(
        path, headers={"Referer": f"{ORIGIN}/plan/account"}, data={"formToken": token}, allow_redirects=False
    )
    assert resp.status == 303
    assert (await client.get("/api/auth/me", headers=api.headers)).status == 401


async def test_sign_in_forms_from_another_site_are_refused(client):
    browse_as_the_service(client)
    for origin in ("https://evil.example", "null"):
        resp = await client.post(
            "/sign-in/wallet", headers={"Origin": origin}, data={"walletAddress": Keypair.random().public_key}
        )
        assert resp.status == 403


async def test_an_idle_session_ends_and_a_used_one_lives_until_its_lifetime(make_client, clock, settings):
    client = await make_client(session_idle_seconds=600, jwt_ttl_seconds=3600)
    await sign_in_page(client, Keypair.random())
    for _ in range(3):
        clock.advance(seconds=500)  # under the idle limit each time
        assert await _plan_status(client) == 200
    clock.advance(seconds=601)
    assert await _plan_status(client) == 303
    # Used every few minutes, it still ends at its lifetime.
    await sign_in_page(client, Keypair.random())
    for _ in range(7):
        clock.advance(seconds=500)
        assert await _plan_status(client) == 200
    clock.advance(seconds=500)  # 4000 s after sign-in
    assert await _plan_status(client) == 303


async def test_the_session_id_rotates_at_sign_in(client):
    keypair = Keypair.random()
    await sign_in_page(client, keypair)
    first = client.session.cookie_jar.filter_cookies(client.make_url("/"))["__Host-lps_session"].value
    await sign_in_page(client, keypair)
    second = client.session.cookie_jar.filter_cookies(client.make_url("/"))["__Host-lps_session"].value
    assert first != second
    assert await _plan_status(client) == 200
    client.session.cookie_jar.update_cookies({"__Host-lps_session": first}, client.make_url("/"))
    assert await _plan_status(client) == 303  # the old id ended at the new sign-in


async def test_sign_out_everywhere_from_the_api_ends_the_page_session(client):
    keypair = Keypair.random()
    await sign_in_page(client, keypair)
    api = await sign_in(client, keypair)
    assert (await client.post("/api/auth/logout-all", headers=api.headers)).status == 200
    assert await _plan_status(client) == 303


async def test_removing_a_wallet_or_deleting_the_account_ends_the_page_session(client):
    keypair, second = Keypair.random(), Keypair.random()
    api = await sign_in(client, keypair)
    from tests.helpers import challenge, sign

    message = await challenge(client, second.public_key)
    linked = await client.post(
        "/api/auth/link-wallet",
        headers=api.headers,
        json={"walletAddress": second.public_key, "signature": sign(second, message)},
    )
    assert linked.status == 200
    await sign_in_page(client, keypair)
    api = await sign_in(client, keypair)
    assert (await client.delete(f"/api/auth/wallets/{second.public_key}", headers=api.headers)).status == 204
    assert await _plan_status(client) == 303
    await sign_in_page(client, keypair)
    api = await sign_in(client, keypair)
    deleted = await client.delete("/api/users/me", headers=api.headers, json={"confirm": keypair.public_key})
    assert deleted.status == 202, await deleted.text()
    assert await _plan_status(client) == 303


async def test_sign_out_ends_this_session_only(client):
    keypair = Keypair.random()
    api = await sign_in(client, keypair)
    await sign_in_page(client, keypair)
    token = form_token(await (await client.get("/plan")).text())
    out = await client.post("/sign-out", data={"formToken": token}, allow_redirects=False)
    assert (out.status, out.headers["Location"]) == (303, "/sign-in?signed-out=1")
    assert await _plan_status(client) == 303
    assert (await client.get("/api/auth/me", headers=api.headers)).status == 200


async def test_the_api_stays_bearer_only_and_cors_allows_no_credentials(make_client):
    client = await make_client(cors_allowed_origins="https://app.example.test")
    await sign_in_page(client, Keypair.random())
    assert await _plan_status(client) == 200
    me = await client.get("/api/auth/me")
    assert me.status == 401  # the page's cookie opens no API route
    preflight = await client.options(
        "/api/auth/me",
        headers={"Origin": "https://app.example.test", "Access-Control-Request-Method": "GET"},
    )
    assert preflight.status == 204
    assert "Access-Control-Allow-Credentials" not in preflight.headers
    answer = await client.get("/api/auth/me", headers={"Origin": "https://app.example.test"})
    assert "Access-Control-Allow-Credentials" not in answer.headers


async def test_owner_pages_send_same_origin_referrers(client):
    await sign_in_page(client, Keypair.random())
    for path in ("/plan", "/sign-in", "/plan/account"):
        resp = await client.get(path, allow_redirects=False)
        assert resp.headers["Referrer-Policy"] == "same-origin", path
        assert resp.headers["Cache-Control"] == "no-store"
        assert "script-src 'unsafe-inline'" not in resp.headers["Content-Security-Policy"]
    assert (await client.get("/claim")).headers["Referrer-Policy"] == "no-referrer"
    page = await (await client.get("/plan")).text()
    assert 'content="same-origin"' in page and 'content="no-referrer"' not in page


async def test_sessions_that_can_open_nothing_are_purged_every_hour(client, clock, settings):
    from api.keys import DB
    from models.account import sessions
    from workers.main import CRON_JOBS

    assert any(job.name.endswith("purge_owner_sessions") for job in CRON_JOBS)
    await sign_in_page(client, Keypair.random())
    pool = client.server.app[DB]
    assert await sessions.purge(pool, idle_seconds=settings.session_idle_seconds, now=clock.now()) == 0
    clock.advance(seconds=settings.session_idle_seconds + 1)
    assert await sessions.purge(pool, idle_seconds=settings.session_idle_seconds, now=clock.now()) == 1
    with psycopg2.connect(settings.database_url) as conn, conn.cursor() as cur:
        cur.execute("SELECT count(*) FROM owner_sessions")
        assert cur.fetchone()[0] == 0
    conn.close()


def test_the_idle_limit_is_plain_seconds_of_at_least_one(tmp_path):
    import pytest

    from core.settings import ConfigError, load_settings

    base = {"APP_ENV": "development", "DATA_DIR": str(tmp_path)}
    assert load_settings(base).session_idle_seconds == 1800
    assert load_settings({**base, "SESSION_IDLE_SECONDS": "1"}).session_idle_seconds == 1
    for bad in ("0", "-5", "30m"):
        with pytest.raises(ConfigError):
            load_settings({**base, "SESSION_IDLE_SECONDS": bad})
