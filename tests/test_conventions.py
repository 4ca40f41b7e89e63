"""Conventions every route inherits: error body, 404/405, bad JSON, 500 without internals,
request ids, OpenAPI, pagination helper."""

from __future__ import annotations

import logging
from datetime import UTC, datetime

import pytest
from aiohttp import web

from api.app import create_app
from api.public import public
from models.pagination import decode_cursor, encode_cursor
from tests.helpers import assert_error, sign_in


async def test_unknown_route_is_404_with_standard_body(client):
    for path in ("/api/nope", "/nope", "/api/beneficiaries-typo/x"):
        resp = await client.get(path)
        assert resp.status == 404
        assert_error(await resp.json(), 404)


async def test_wrong_method_is_405_with_allow_header(client):
    resp = await client.delete("/api/health")
    assert resp.status == 405
    assert_error(await resp.json(), 405)
    assert "GET" in resp.headers["Allow"]


@pytest.mark.parametrize(
    "data,content_type,expected",
    [
        ("{not json", "application/json", "Malformed JSON"),
        ("\xff\xfe", "application/json", "Malformed JSON"),
        ('{"walletAddress": "G"}', "text/plain", "Content-Type must be application/json"),
        ("walletAddress=G", "application/x-www-form-urlencoded", "Content-Type must be application/json"),
        ("[1, 2]", "application/json", "Invalid input type"),
        ('"just a string"', "application/json", "Invalid input type"),
    ],
)
async def test_bad_bodies_are_400(client, data, content_type, expected):
    resp = await client.post(
        "/api/auth/wallet/challenge", data=data.encode("latin-1"), headers={"Content-Type": content_type}
    )
    assert resp.status == 400
    body = await resp.json()
    assert_error(body, 400)
    assert expected in str(body["message"])


async def test_unknown_fields_are_stripped(client):
    session = await sign_in(client)
    resp = await client.patch(
        "/api/users/me", headers=session.headers, json={"name": "Grace", "id": "x", "walletAddress": "G"}
    )
    assert resp.status == 200
    body = await resp.json()
    assert body["id"] == session.user["id"] and body["walletAddress"] == session.keypair.public_key


async def test_unexpected_error_is_500_without_internals(aiohttp_client, settings, caplog):
    app = create_app(settings)

    @public
    async def boom(request: web.Request) -> web.Response:
        raise RuntimeError("secret internals: SELECT * FROM users")

    app.router.add_get("/api/health/boom", boom)
    client = await aiohttp_client(app)
    with caplog.at_level(logging.ERROR):
        resp = await client.get("/api/health/boom")
    assert resp.status == 500
    body = await resp.json()
    assert body == {"statusCode": 500, "error": "Internal Server Error", "message": "Internal server error"}
    assert "secret internals" in caplog.text  # logged for operators, not returned


async def test_body_too_large_for_json_routes_is_413(client):
    resp = await client.post(
        "/api/auth/wallet/challenge",
        data=b"{" + b" " * (2 * 1024 * 1024) + b"}",
        headers={"Content-Type": "application/json"},
    )
    assert resp.status == 413
    assert_error(await resp.json(), 413)


async def test_every_response_has_a_request_id(client):
    ok = await client.get("/api/health")
    missing = await client.get("/api/nope")
    assert len(ok.headers["X-Request-Id"]) == 32
    assert ok.headers["X-Request-Id"] != missing.headers.get("X-Request-Id")


async def test_openapi_document_and_swagger_ui(client):
    resp = await client.get("/api/docs/openapi.json")
    assert resp.status == 200
    spec = await resp.json()
    assert spec["openapi"].startswith("3.")
    paths = spec["paths"]
    for path in (
        "/api/health",
        "/api/auth/wallet/challenge",
        "/api/auth/wallet/verify",
        "/api/auth/me",
        "/api/auth/logout",
        "/api/auth/link-wallet",
        "/api/users/me",
    ):
        assert path in paths, path
    verify = paths["/api/auth/wallet/verify"]["post"]
    assert "requestBody" in verify
    assert {"200", "400", "401"} <= set(verify["responses"])
    ui = await client.get("/api/docs")
    assert ui.status == 200
    assert "swagger" in (await ui.text()).lower()


def test_cursor_round_trip_and_rejects_garbage():
    stamp = datetime(2026, 1, 2, 3, 4, 5, 678901, tzinfo=UTC)
    row_id = "0b6c3c9e-0e55-4d5c-9b8f-9d0f1f9b2a11"
    assert decode_cursor(cursor=encode_cursor(created_at=stamp, row_id=row_id)) == (stamp, row_id)
    for garbage in ("", "abc", "!!!", encode_cursor(created_at=stamp, row_id="not-a-uuid")):
        with pytest.raises(ValueError):
            decode_cursor(cursor=garbage)


async def test_nul_characters_are_400_everywhere(client):
    """PostgreSQL text cannot hold U+0000; found by schemathesis as a 500."""
    session = await sign_in(client)
    body = {
        "name": "Ada\x00",
        "relationship": "daughter",
        "email": "ada@example.org",
        "allocationPercentage": 10,
    }
    for method, path, kwargs in (
        ("POST", "/api/beneficiaries", {"json": body}),
        ("PATCH", "/api/users/me", {"json": {"name": "x\x00y"}}),
        (
            "POST",
            "/api/messages",
            {"json": {"content": "\x00", "releaseRule": {"kind": "on_release"}, "audience": {"all": True}}},
        ),
        ("GET", "/api/activity?kind=a%00b", {}),
    ):
        resp = await client.request(method, path, headers=session.headers, **kwargs)
        assert resp.status == 400, (method, path, await resp.text())
        assert "NUL" in str((await resp.json())["message"])


@pytest.mark.parametrize(
    "since,status",
    [
        ("0207-12-17T08:52:31+16:09", 200),  # an offset Python accepts and PostgreSQL would not
        ("2026-01-01T00:00:00-23:59", 200),
        ("0001-01-01T00:00:00+05:00", 400),  # before year 1 once in UTC
        ("2026-01-01T00:00:00", 400),  # no zone
    ],
)
async def test_time_filters_are_compared_in_utc(client, since, status):
    session = await sign_in(client)
    resp = await client.get("/api/activity", params={"since": since}, headers=session.headers)
    assert resp.status == status, await resp.text()
