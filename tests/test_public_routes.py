"""Authenticated by default: walk the real router; only routes declared @public skip the JWT."""

from __future__ import annotations

import re
import uuid
from urllib.parse import urlsplit

import pytest
from aiohttp import web
from stellar_sdk import Keypair

from api import app as app_module
from api.claim.gate import ungated_claim_routes
from api.keys import PUBLIC_ROUTES, SETTINGS
from api.owner.session import is_owner_page
from api.public import public
from tests.capsule_helpers import assert_private
from tests.helpers import assert_error

# The whole anonymous surface. Adding a public route means adding it here, deliberately.
EXPECTED_PUBLIC = {
    ("GET", "/api/health"),
    ("HEAD", "/api/health"),
    # Its own bearer token (METRICS_TOKEN), not a session; 404 when unset.
    ("GET", "/api/metrics"),
    ("HEAD", "/api/metrics"),
    ("POST", "/api/auth/wallet/challenge"),
    ("POST", "/api/auth/wallet/verify"),
    ("POST", "/api/auth/register"),
    ("POST", "/api/auth/login"),
    ("POST", "/api/auth/forgot-password"),
    ("POST", "/api/auth/reset-password"),
    # The beneficiary's capsule: the claim token in the path is the credential (docs/capsule.md).
    ("GET", "/api/claim/{token}"),
    ("HEAD", "/api/claim/{token}"),
    ("GET", "/api/claim/{token}/documents/{id}/download"),
    ("HEAD", "/api/claim/{token}/documents/{id}/download"),
    ("GET", "/api/claim/{token}/messages/{id}/media"),
    ("HEAD", "/api/claim/{token}/messages/{id}/media"),
    ("GET", "/api/claim/{token}/export"),
    # An heir asks the guardians to verify (#24): the claim token is the credential.
    ("POST", "/api/claim/{token}/request"),
    # The beneficiary's on-chain calls: the claim token in the path is the credential.
    ("POST", "/api/claim/{token}/release/build"),
    ("POST", "/api/claim/{token}/claim/build"),
    ("POST", "/api/claim/{token}/submit"),
    ("GET", "/api/claim/{token}/transactions/{id}"),
    ("HEAD", "/api/claim/{token}/transactions/{id}"),
    # The service's own pages (docs/pages.md): what the emailed links open without a web client.
    ("GET", "/claim/{token}"),
    ("HEAD", "/claim/{token}"),
    ("GET", "/check-in/{token}"),
    ("HEAD", "/check-in/{token}"),
    ("POST", "/check-in/{token}"),
    # "I don't know this person": the page (GET changes nothing) and its one-click POST (RFC 8058).
    ("GET", "/stop-emails/{token}"),
    ("HEAD", "/stop-emails/{token}"),
    ("POST", "/stop-emails/{token}"),
    # The heir finishes from the page: names a wallet; wallets post signed requests back (SEP-7).
    ("POST", "/claim/{token}/wallet"),
    ("POST", "/claim/{token}/sign"),
    ("POST", "/claim/{token}/request"),
    ("POST", "/claim/{token}/gender"),
    ("GET", "/confirm-address/{token}"),
    ("HEAD", "/confirm-address/{token}"),
    ("POST", "/confirm-address/{token}"),
    ("GET", "/stop-address/{token}"),
    ("HEAD", "/stop-address/{token}"),
    ("POST", "/stop-address/{token}"),
    ("GET", "/address-looks-wrong/{token}"),
    ("HEAD", "/address-looks-wrong/{token}"),
    ("POST", "/address-looks-wrong/{token}"),
    # An heir who lost their link asks for it by address (the twin of POST /api/claim/resend).
    ("GET", "/claim"),
    ("HEAD", "/claim"),
    ("POST", "/claim"),
    ("POST", "/claim/{token}/sep7/{id}"),
    # Each guardian's page: the token in the path shows it; acting needs the guardian's wallet.
    ("GET", "/guardian/{token}"),
    ("HEAD", "/guardian/{token}"),
    ("POST", "/guardian/{token}/ask"),
    ("POST", "/guardian/{token}/sep7/{id}"),
    ("POST", "/guardian/{token}/passkey/{id}"),
    ("POST", "/guardian/{token}/gender"),
    ("GET", "/page.css"),
    ("HEAD", "/page.css"),
    ("GET", "/guardian-passkey.js"),
    ("HEAD", "/guardian-passkey.js"),
    ("GET", "/favicon.ico"),
    ("HEAD", "/favicon.ico"),
    # SEP-1: the network and the key that signs SEP-7 requests, for any wallet.
    ("GET", "/.well-known/stellar.toml"),
    ("HEAD", "/.well-known/stellar.toml"),
    # The owner's check-in without a wallet: the one-time token in the body is the credential.
    ("POST", "/api/legacy/check-in/link"),
    # An heir asks for their link again by address: no token (docs/capsule.md).
    ("POST", "/api/claim/resend"),
    # The heir proves the wallet they claim with: the claim token in the path is the credential.
    ("POST", "/api/claim/{token}/wallet/challenge"),
    ("POST", "/api/claim/{token}/wallet/verify"),
    # An heir confirms their address: the one-time token (in the path of the page, in the body of
    # its JSON twin) is the credential.
    ("POST", "/api/beneficiaries/confirm-email"),
    ("GET", "/confirm-email/{token}"),
    ("HEAD", "/confirm-email/{token}"),
    ("POST", "/confirm-email/{token}"),
    # The email provider's delivery events: the Standard Webhooks signature is the credential.
    ("POST", "/api/webhooks/email"),
    # The owner's own pages open to a signed-out browser (api/owner/session.py `owner_door`): the
    # front door and sign-in. Every other owner page (`owner_page`) is walked below instead.
    ("GET", "/"),
    ("HEAD", "/"),
    ("GET", "/sign-in"),
    ("HEAD", "/sign-in"),
    ("POST", "/sign-in/wallet"),
    ("GET", "/sign-in/wait"),
    ("HEAD", "/sign-in/wait"),
    ("POST", "/sign-in/signature"),
    ("POST", "/sign-in/passkey"),
    ("POST", "/sign-in/passkey/{id}"),
    # A sign-in's signing request: the wallet's signed envelope is the proof, as for guardians.
    ("POST", "/sign-in/sep7/{id}"),
    ("POST", "/plan/account/wallets/sep7/{id}"),
    # The OpenAPI document and its UI (added by aiohttp-apigami).
    ("GET", "/api/docs/openapi.json"),
    ("HEAD", "/api/docs/openapi.json"),
    ("GET", "/api/docs"),
    ("HEAD", "/api/docs"),
    ("GET", "/api/docs/static"),
    ("HEAD", "/api/docs/static"),
}

_VARIABLE = re.compile(r"\{([^}:]+)(?::[^}]*)?\}")


def _concrete(canonical: str) -> str:
    """A path that matches the route: every {variable} becomes a well-formed id."""
    return _VARIABLE.sub(lambda m: str(uuid.uuid4()), canonical)


def _routes(app: web.Application) -> list[tuple[str, str, web.AbstractRoute]]:
    routes = app.router.routes()
    return [(route.method, route.resource.canonical, route) for route in routes if route.resource]


def _owner_pages(app: web.Application) -> set[tuple[str, str]]:
    return {(method, path) for method, path, route in _routes(app) if is_owner_page(route.handler)}


async def test_declared_public_set_is_exactly_the_expected_one(client):
    app = client.server.app
    public_set = {(method, path) for method, path, route in _routes(app) if route in app[PUBLIC_ROUTES]}
    assert public_set - _owner_pages(app) == EXPECTED_PUBLIC


async def test_every_owner_page_sends_a_signed_out_browser_to_sign_in(client):
    """Every `/plan…` page and `/sign-out` is public to the JWT's middleware and signed in by its
    cookie: without one, a GET is a 303 to /sign-in and a POST from this service's page a 303 to
    /sign-in with nothing done; a POST from elsewhere is the 403 page, before anything else."""
    app = client.server.app
    pages = _owner_pages(app)
    assert ("GET", "/plan") in pages and ("POST", "/sign-out") in pages
    origin = app[SETTINGS].public_base_url
    host = {"Host": urlsplit(origin).netloc}
    for method, canonical in pages:
        path = _concrete(canonical)
        if method in ("GET", "HEAD"):
            resp = await client.request(method, path, headers=host, allow_redirects=False)
            assert resp.status == 303, (method, canonical)
            assert resp.headers["Location"].startswith("/sign-in"), (method, canonical)
            continue
        resp = await client.request(method, path, headers={**host, "Origin": origin}, allow_redirects=False)
        assert (resp.status, resp.headers["Location"]) == (303, "/sign-in"), (method, canonical)
        resp = await client.request(method, path, headers={**host, "Origin": "https://elsewhere.example"})
        assert resp.status == 403, (method, canonical)


async def test_every_route_not_declared_public_answers_401_without_a_token(client):
    app = client.server.app
    checked = 0
    for method, canonical, route in _routes(app):
        if route in app[PUBLIC_ROUTES]:
            continue
        path = _concrete(canonical)
        for headers in ({}, {"Authorization": "Bearer not.a.jwt"}):
            kwargs = {} if method in ("GET", "HEAD", "DELETE") else {"json": {}}
            resp = await client.request(method, path, headers=headers, **kwargs)
            assert resp.status == 401, (method, canonical, headers)
            assert resp.headers["WWW-Authenticate"] == "Bearer"
            if method != "HEAD":
                assert_error(await resp.json(), 401)
        checked += 1
    assert checked >= 30  # the walk really covered the API, not an empty router


async def test_openapi_marks_exactly_the_public_operations_as_anonymous(client):
    spec = await (await client.get("/api/docs/openapi.json")).json()
    anonymous = {
        (method.upper(), path)
        for path, operations in spec["paths"].items()
        for method, operation in operations.items()
        if operation.get("security") == []
    }
    expected = {
        (m, p) for m, p in EXPECTED_PUBLIC | _owner_pages(client.server.app) if not p.startswith("/api/docs")
    }
    assert anonymous == expected
    assert spec["security"] == [{"bearerAuth": []}]


@pytest.fixture
def extra_module(monkeypatch):
    """A route module a future author might add, with one declared-public and two plain routes."""
    routes = web.RouteTableDef()

    @routes.get("/api/auth/new-thing")
    async def new_auth_thing(request: web.Request) -> web.Response:
        return web.json_response({"anonymous": True})

    @routes.get("/api/claim/{token}/peek")
    async def claim_without_marker(request: web.Request) -> web.Response:
        return web.json_response({"anonymous": True})

    @routes.get("/api/claim/{token}/hello")
    @public
    async def claim(request: web.Request) -> web.Response:
        return web.json_response({"anonymous": True})

    module = type("module", (), {"routes": routes})
    monkeypatch.setattr(app_module, "ROUTE_MODULES", (*app_module.ROUTE_MODULES, module))


async def test_a_new_route_is_authenticated_unless_declared_public_whatever_its_path(
    extra_module, make_client
):
    client = await make_client()
    assert (await client.get("/api/auth/new-thing")).status == 401
    assert (await client.get("/api/claim/abc/peek")).status == 401
    resp = await client.get("/api/claim/abc/hello")
    assert resp.status == 200
    assert await resp.json() == {"anonymous": True}


async def test_unknown_paths_and_methods_are_404_and_405_before_authentication(client):
    assert (await client.get("/api/nope")).status == 404
    assert (await client.get("/nope")).status == 404
    assert (await client.put("/api/health")).status == 405


# The claim gate: every route that holds a claim token resolves it through one gate.


async def test_every_claim_route_goes_through_the_gate(client):
    app = client.server.app
    assert ungated_claim_routes(app) == []
    gated = [r for r in app.router.routes() if r.resource and r.resource.canonical.startswith("/api/claim/")]
    assert len(gated) >= 10  # capsule, download, media, release/claim build, submit, status (+ HEADs)


async def test_a_claim_route_that_bypasses_the_gate_is_found(extra_module, make_client):
    client = await make_client()
    assert sorted(ungated_claim_routes(client.server.app)) == [
        "GET /api/claim/{token}/hello",
        "GET /api/claim/{token}/peek",
        "HEAD /api/claim/{token}/hello",
        "HEAD /api/claim/{token}/peek",
    ]


async def test_the_gate_answers_an_unknown_token_before_the_handler_runs(client):
    """Whatever the route (even one whose integration is not configured, which would be 503),
    an unknown token is the same 404 with the capsule's privacy headers."""
    unknown = "ab" * 32
    body = {"walletAddress": Keypair.random().public_key, "signedXdr": "AAAA", "signature": "A" * 88}
    checked = 0
    for method, canonical, _route in _routes(client.server.app):
        if not canonical.startswith("/api/claim/{token}"):
            continue
        path = _VARIABLE.sub(lambda m: unknown if m.group(1) == "token" else str(uuid.uuid4()), canonical)
        kwargs = {"json": body} if method == "POST" else {}
        resp = await client.request(method, path, **kwargs)
        assert resp.status == 404, (method, canonical)
        assert_private(resp)
        checked += 1
    assert checked >= 10
