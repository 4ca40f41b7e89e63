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


# --------------------------------------------------------------------------------------------
# Request heads: a deadline for the head, a bound on idle keep-alive (#18; api/server.py)
# --------------------------------------------------------------------------------------------

HEALTH_HEAD = b"GET /api/health HTTP/1.1\r\nHost: x\r\n"


async def _closed_without_answer(reader) -> bool:
    """Wait (bounded) for the server to end the connection; True if it sent nothing first."""
    try:
        data = await asyncio.wait_for(reader.read(65536), 30)
    except ConnectionResetError:
        return True
    return data == b""


async def _trickle(writer, lines: int, every: float) -> int:
    """Send the request line, then one header line every `every` seconds; how many were sent
    before the server closed the connection."""
    writer.write(b"GET /api/health HTTP/1.1\r\n")
    sent = 0
    for n in range(lines):
        await asyncio.sleep(every)
        if writer.is_closing() or writer.transport.get_extra_info("socket") is None:
            break
        try:
            writer.write(f"X-Slow-{n}: x\r\n".encode())
            await writer.drain()
        except (ConnectionResetError, BrokenPipeError):
            break
        sent += 1
    return sent


async def test_heads_that_trickle_in_are_closed_at_the_deadline(make_client):
    """The hostile run's slow heads: a request line, then one header line every few seconds
    (here every 0.3 s against a 1 s deadline). Each connection is closed without an answer long
    before it would have finished its head, and long before the 60 s keep-alive bound could."""
    client = await make_client(request_head_timeout_seconds=1, keepalive_timeout_seconds=60)
    lines = 60  # 18 s of trickling if nobody stopped it

    async def one() -> tuple[bool, int]:
        reader, writer = await _open(client)
        trickling = asyncio.create_task(_trickle(writer, lines, 0.3))
        closed = await _closed_without_answer(reader)
        trickling.cancel()
        sent = await asyncio.gather(trickling, return_exceptions=True)
        writer.close()
        return closed, sent[0] if isinstance(sent[0], int) else -1

    results = await asyncio.gather(*(one() for _ in range(30)))
    assert all(closed for closed, _ in results), results
    # Cut off mid-head: the trickle task was cancelled, not finished (-1), or gave up early.
    assert all(sent < lines for _, sent in results), results
    # The server still serves.
    assert (await client.get("/api/health")).status in (200, 503)


async def test_a_connection_that_sends_nothing_is_closed_at_the_head_deadline(make_client):
    client = await make_client(request_head_timeout_seconds=1, keepalive_timeout_seconds=60)
    reader, writer = await _open(client)
    assert await _closed_without_answer(reader)  # within 30 s: the 60 s keep-alive cannot be it
    writer.close()


async def test_a_keep_alive_client_is_unaffected_by_the_head_deadline(make_client):
    """Idle between requests for longer than the head deadline, heads arriving in pieces within
    it, several requests on one connection: all answered, the connection kept."""
    client = await make_client(request_head_timeout_seconds=1, keepalive_timeout_seconds=60)
    reader, writer = await _open(client)
    for n in range(4):
        if n:
            await asyncio.sleep(1.5)  # idle past the head deadline: the keep-alive bound applies
        writer.write(HEALTH_HEAD[:20])  # the head in two pieces, well within the deadline
        await writer.drain()
        await asyncio.sleep(0.1)
        writer.write(HEALTH_HEAD[20:] + b"\r\n")
        await writer.drain()
        status, headers, _ = await _response(reader)
        assert status in (200, 503), n  # health answers 503 while the worker is not running
        assert headers.get("connection", "keep-alive").lower() != "close", n
    writer.close()


async def test_idle_keep_alive_connections_are_closed_after_the_bound(make_client):
    client = await make_client(request_head_timeout_seconds=30, keepalive_timeout_seconds=1)
    reader, writer = await _open(client)
    writer.write(HEALTH_HEAD + b"\r\n")
    await writer.drain()
    status, _, _ = await _response(reader)
    assert status in (200, 503)
    assert await _closed_without_answer(reader)  # idle: closed by the 1 s bound, not the 30 s one
    writer.close()


# --------------------------------------------------------------------------------------------
# aiohttp's own protocol errors, answered by the service (#18; api/server.py)
# --------------------------------------------------------------------------------------------

BEARER = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiJ0cmlja2xlIn0.c2lnbmF0dXJlLXNlY3JldC1wYXJ0"
CLAIM_TOKEN = "7e" * 32
MALFORMED_WITH_SECRETS = [
    # the hostile run's two: a control byte after the claim token, DEL in a header value
    f"GET /api/claim/{CLAIM_TOKEN}\x01 HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {BEARER}\r\n\r\n",
    f"GET /api/claim/{CLAIM_TOKEN} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {BEARER}\x7f\r\n\r\n",
    f"GET /api/claim/{CLAIM_TOKEN} HTTP/1.1\r\nAuthorization: Bearer {BEARER}\r\nX-Odd: a\x7fb\r\n\r\n",
    # a header line without a colon, an invalid method, an unknown version
    f"GET /api/claim/{CLAIM_TOKEN} HTTP/1.1\r\nAuthorization: Bearer {BEARER}\r\nBad Header Line\r\n\r\n",
    f"G(E)T /api/claim/{CLAIM_TOKEN} HTTP/1.1\r\nAuthorization: Bearer {BEARER}\r\n\r\n",
    f"GET /api/claim/{CLAIM_TOKEN} HTTP/9.9\r\nAuthorization: Bearer {BEARER}\r\n\r\n",
    f"GET /api/claim/{CLAIM_TOKEN} HTTP/1.1 extra\r\nAuthorization: Bearer {BEARER}\r\n\r\n",
    # a space in the target, a bad Content-Length, a header name with a space
    f"GET /api/claim/{CLAIM_TOKEN} x HTTP/1.1\r\nAuthorization: Bearer {BEARER}\r\n\r\n",
    f"POST /api/claim/{CLAIM_TOKEN}/submit HTTP/1.1\r\nAuthorization: Bearer {BEARER}\r\n"
    f"Content-Length: x{CLAIM_TOKEN}\r\n\r\n",
    f"GET /api/claim/{CLAIM_TOKEN} HTTP/1.1\r\nAuth orization: Bearer {BEARER}\r\n\r\n",
    # two Content-Lengths, Transfer-Encoding and Content-Length together
    f"POST /api/claim/{CLAIM_TOKEN}/submit HTTP/1.1\r\nAuthorization: Bearer {BEARER}\r\n"
    "Content-Length: 1\r\nContent-Length: 2\r\n\r\nab",
    f"POST /api/claim/{CLAIM_TOKEN}/submit HTTP/1.1\r\nAuthorization: Bearer {BEARER}\r\n"
    "Content-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
    # a header and a request line past aiohttp's line limit
    f"GET /api/claim/{CLAIM_TOKEN} HTTP/1.1\r\nAuthorization: Bearer {BEARER}" + "x" * 9000 + "\r\n\r\n",
    f"GET /api/claim/{CLAIM_TOKEN}" + "y" * 9000 + f" HTTP/1.1\r\nAuthorization: Bearer {BEARER}\r\n\r\n",
    # the other server-rendered paths, and a path that is not the capsule's
    f"GET /claim/{CLAIM_TOKEN}\x01 HTTP/1.1\r\nAuthorization: Bearer {BEARER}\r\n\r\n",
    f"GET /check-in/{CLAIM_TOKEN}\x01 HTTP/1.1\r\nAuthorization: Bearer {BEARER}\r\n\r\n",
    f"GET /api/assets\x01 HTTP/1.1\r\nAuthorization: Bearer {BEARER}\r\n\r\n",
]
SECRET_PIECES = [
    CLAIM_TOKEN,
    CLAIM_TOKEN[:16],
    CLAIM_TOKEN[-16:],
    BEARER,
    *BEARER.split("."),
    "Bearer",
    "Authorization",
]


async def _raw_reply(client, payload: bytes) -> bytes:
    """Every byte the server sends back until it closes the connection."""
    reader, writer = await _open(client)
    writer.write(payload)
    await writer.drain()
    received = b""
    while chunk := await asyncio.wait_for(reader.read(65536), 15):
        received += chunk
    writer.close()
    return received


async def test_protocol_errors_are_the_services_json_and_echo_nothing(client):
    for payload in MALFORMED_WITH_SECRETS:
        raw = await _raw_reply(client, payload.encode("latin-1"))
        head, _, body = raw.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        status = int(lines[0].split(" ")[1])
        headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
        assert status == 400, (payload[:60], raw[:200])
        for piece in SECRET_PIECES:
            assert piece.encode() not in raw, (payload[:60], piece)
        assert headers["content-type"].startswith("application/json"), payload[:60]
        decoded = json.loads(body)
        assert_error(decoded, 400)
        assert set(decoded) == {"statusCode", "error", "message"}
        assert headers["x-content-type-options"] == "nosniff"
        assert headers["cache-control"] == "no-store"
        assert headers["referrer-policy"] == "no-referrer"
        assert headers["x-robots-tag"] == "noindex, nofollow"
        assert headers["server"] == "legacy-planning"
        # and the connection ended (_raw_reply read to the end): nothing more is parsed on it


async def test_a_protocol_error_after_a_good_request_on_the_same_connection(client):
    """On a kept-alive connection: the first request is answered as usual, the malformed one
    after it with the service's 400, and the token in it appears nowhere."""
    reader, writer = await _open(client)
    writer.write(HEALTH_HEAD + b"\r\n")
    await writer.drain()
    status, _, _ = await _response(reader)
    assert status in (200, 503)
    writer.write(
        f"GET /api/claim/{CLAIM_TOKEN}\x01 HTTP/1.1\r\nAuthorization: Bearer {BEARER}\r\n\r\n".encode()
    )
    await writer.drain()
    raw = b""
    while chunk := await asyncio.wait_for(reader.read(65536), 15):
        raw += chunk
    writer.close()
    assert raw.startswith(b"HTTP/1.0 400 Bad Request") and b'"statusCode": 400' in raw
    for piece in SECRET_PIECES:
        assert piece.encode() not in raw, piece
