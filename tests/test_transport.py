"""Slow and broken clients, and the headers every answer carries (CORS included).

Raw sockets send what a well-behaved client library never would: bodies that never finish,
declared lengths far past the limit, a hang-up mid-body.
"""

from __future__ import annotations

import asyncio
import json
import logging

from stellar_sdk import Keypair

from tests.helpers import assert_error, sign_in

CHALLENGE = "/api/auth/wallet/challenge"
WEB = "https://app.example.org"


async def _open(client):
    return await asyncio.open_connection(client.server.host, client.server.port)


async def _response(reader) -> tuple[int, dict[str, str], bytes]:
    raw = await asyncio.wait_for(reader.read(65536), 15)
    head, _, body = raw.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
    return int(lines[0].split(" ")[1]), headers, body


def _post_head(path: str, length: int, extra: str = "") -> bytes:
    return (
        f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        f"Content-Length: {length}\r\n{extra}\r\n"
    ).encode()


async def test_a_json_body_that_never_finishes_is_408_and_the_connection_closes(make_client):
    client = await make_client(request_body_timeout_seconds=1)
    reader, writer = await _open(client)
    writer.write(_post_head(CHALLENGE, 100) + b'{"walletAddress": ')  # and nothing more
    await writer.drain()
    status, headers, body = await _response(reader)
    assert status == 408
    assert_error(json.loads(body), 408)
    # Not kept alive: aiohttp discards what may still come for a few seconds, then closes.
    assert headers.get("connection") == "close"
    writer.close()


async def test_a_declared_length_past_the_limit_is_413_before_the_body_is_read(client):
    session = await sign_in(client)
    for path, auth in ((CHALLENGE, ""), ("/api/assets", f"Authorization: Bearer {session.token}\r\n")):
        reader, writer = await _open(client)
        writer.write(_post_head(path, 50 * 1024 * 1024, auth))  # headers only: no body is ever sent
        await writer.drain()
        status, _, body = await _response(reader)
        assert status == 413, body
        assert_error(json.loads(body), 413)
        writer.close()


async def test_a_client_hanging_up_mid_body_leaves_one_quiet_line_not_a_500(client, caplog):
    with caplog.at_level(logging.INFO):
        _, writer = await _open(client)
        writer.write(_post_head(CHALLENGE, 1000) + b'{"walletAddress": "G')
        await writer.drain()
        await asyncio.sleep(0.05)
        writer.close()
        for _ in range(100):  # until the server has noticed and logged the request
            await asyncio.sleep(0.02)
            if any(getattr(r, "status", None) for r in caplog.records if r.name == "api.access"):
                break
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING], caplog.text
    access = [r for r in caplog.records if r.name == "api.access"]
    assert [r.status for r in access] == [499]
    # The server is fine afterwards.
    resp = await client.post(CHALLENGE, json={"walletAddress": Keypair.random().public_key})
    assert resp.status == 200


async def test_every_answer_has_nosniff_no_store_and_no_versions(client):
    session = await sign_in(client)
    for method, path, headers in (
        ("GET", "/api/auth/me", session.headers),
        ("GET", "/api/assets", session.headers),
        ("GET", "/api/health", {}),
        ("GET", "/api/assets", {}),  # 401
        ("GET", "/api/nope", {}),  # 404
    ):
        resp = await client.request(method, path, headers=headers)
        assert resp.headers["X-Content-Type-Options"] == "nosniff", path
        assert resp.headers["Cache-Control"] == "no-store", path
        assert resp.headers["Server"] == "legacy-planning", path
    # Even aiohttp's own answer to a request it cannot parse names no versions.
    reader, writer = await _open(client)
    writer.write(b"G(E)T / HTTP/1.1\r\n\r\n")
    await writer.drain()
    status, headers, _ = await _response(reader)
    writer.close()
    assert status == 400
    assert "aiohttp" not in headers.get("server", "") and "Python" not in headers.get("server", "")


async def test_cors_allows_exactly_the_configured_origins(make_client):
    client = await make_client(cors_allowed_origins=f"{WEB}, http://localhost:5173")
    preflight = await client.options(
        "/api/assets",
        headers={
            "Origin": WEB,
            "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "authorization, content-type",
        },
    )
    assert preflight.status == 204
    assert preflight.headers["Access-Control-Allow-Origin"] == WEB
    assert "POST" in preflight.headers["Access-Control-Allow-Methods"]
    assert "Authorization" in preflight.headers["Access-Control-Allow-Headers"]
    assert "Access-Control-Allow-Credentials" not in preflight.headers
    # The actual request (even a 401) carries the CORS headers, so the web client can read it.
    resp = await client.get("/api/assets", headers={"Origin": WEB})
    assert resp.status == 401
    assert resp.headers["Access-Control-Allow-Origin"] == WEB
    assert "Link" in resp.headers["Access-Control-Expose-Headers"]
    assert "Origin" in resp.headers.getall("Vary")
    session = await sign_in(client)
    ok = await client.get("/api/assets", headers={**session.headers, "Origin": "http://localhost:5173"})
    assert ok.headers["Access-Control-Allow-Origin"] == "http://localhost:5173"
    # A method the path lacks, or an unknown path: no preflight approval.
    for method, path in (("PUT", "/api/assets"), ("GET", "/api/nope")):
        resp = await client.options(path, headers={"Origin": WEB, "Access-Control-Request-Method": method})
        assert resp.status in (404, 405), (method, path)
        assert "Access-Control-Allow-Methods" not in resp.headers
    # Any other origin, a lookalike, "null": no CORS headers at all.
    for origin, method, path in (
        ("https://evil.example", "POST", "/api/assets"),
        ("https://app.example.org.evil.example", "POST", "/api/assets"),
        ("null", "POST", "/api/assets"),
    ):
        resp = await client.options(path, headers={"Origin": origin, "Access-Control-Request-Method": method})
        assert resp.status == 405, (origin, method, path)
        assert "Access-Control-Allow-Origin" not in resp.headers
        resp = await client.get("/api/health", headers={"Origin": origin})
        assert "Access-Control-Allow-Origin" not in resp.headers


async def test_without_cors_origins_there_are_no_cors_headers(client):
    resp = await client.options(
        "/api/assets", headers={"Origin": WEB, "Access-Control-Request-Method": "GET"}
    )
    assert resp.status == 405
    assert "Access-Control-Allow-Origin" not in resp.headers
    resp = await client.get("/api/health", headers={"Origin": WEB})
    assert "Access-Control-Allow-Origin" not in resp.headers
