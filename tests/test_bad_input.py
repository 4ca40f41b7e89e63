"""Hostile input is a 4xx in the standard body, never a 500: one test per class of input
(nesting, numbers, strings PostgreSQL cannot hold, header bytes, cursors), each run against
every place that class can reach."""

from __future__ import annotations

import asyncio
import base64
import json
import uuid

import pytest
from aiohttp import FormData

from tests.helpers import assert_error, sign_in

CHALLENGE = "/api/auth/wallet/challenge"
WALLET = "GAAZI4TCR3TY5OJHCTJC2A4QSY6CJWJH5IAJTGKIN2ER7LBNVKOCCWN7"

# Every JSON-body route with a valid body; each string value is a place a bad string can go.
JSON_BODIES = [
    ("POST", "/api/auth/wallet/challenge", {"walletAddress": WALLET}),
    ("POST", "/api/auth/wallet/verify", {"walletAddress": WALLET, "signature": "A" * 88}),
    ("PATCH", "/api/users/me", {"name": "Ada", "email": "ada@example.com"}),
    (
        "POST",
        "/api/beneficiaries",
        {"name": "Bo", "relationship": "son", "email": "bo@example.com", "allocationPercentage": 10},
    ),
    ("POST", "/api/guardians", {"name": "Cy", "email": "cy@example.com"}),
    ("POST", "/api/assets", {"label": "Savings", "amount": "12.5", "assetCode": "XLM", "description": "d"}),
    ("POST", "/api/messages", {"title": "Hello", "content": "Body", "audience": {"all": True}}),
]


async def _raw(client, request: bytes) -> tuple[int, bytes]:
    """Send bytes the aiohttp client refuses to produce; return the status and the body."""
    reader, writer = await asyncio.open_connection(client.server.host, client.server.port)
    writer.write(request)
    await writer.drain()
    data = await asyncio.wait_for(reader.read(65536), 10)
    writer.close()
    head, _, body = data.partition(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1])
    return status, body


def _error_body(raw: bytes) -> dict:
    body: dict = json.loads(raw)
    return body


async def _send(client, method, path, session, **kwargs):
    headers = kwargs.pop("headers", {})
    if session is not None:
        headers = {**session.headers, **headers}
    return await client.request(method, path, headers=headers, **kwargs)


def _variants(body: dict, value):
    """The body with each string field (nested ones included) replaced by `value` in turn."""
    for key, original in body.items():
        if isinstance(original, str):
            yield key, {**body, key: value}


@pytest.mark.parametrize("depth", [100, 5_000, 100_000])
async def test_deeply_nested_json_is_400_everywhere(client, depth):
    session = await sign_in(client)
    nested = "[" * depth + "]" * depth
    for method, path, body in JSON_BODIES:
        first = next(iter(body))
        raw = json.dumps(body).replace(json.dumps(first) + ": ", json.dumps(first) + ": " + nested + ", ", 1)
        for payload in (raw, nested, '{"a": ' * depth + "1" + "}" * depth):
            resp = await _send(
                client, method, path, session, data=payload, headers={"Content-Type": "application/json"}
            )
            assert resp.status == 400, (path, depth, await resp.text())
            assert_error(await resp.json(), 400)


@pytest.mark.parametrize(
    "literal", ["1" + "0" * 5000, "1e999999", "-1e999999", "1" + "0" * 400, "1.5e-400", "NaN", "Infinity"]
)
async def test_absurd_numbers_are_400(client, literal):
    session = await sign_in(client)
    body = (
        '{"name": "Bo", "relationship": "son", "email": "bo@example.com", "allocationPercentage": '
        + literal
        + "}"
    )
    for method, path in (("POST", "/api/beneficiaries"), ("POST", "/api/assets"), ("GET", "/api/messages")):
        resp = await _send(
            client, method, path, session, data=body, headers={"Content-Type": "application/json"}
        )
        assert resp.status in (400, 200), (path, await resp.text())  # GET ignores the body
        if path == "/api/beneficiaries":
            assert resp.status == 400
            assert_error(await resp.json(), 400)
    for query in (f"limit={literal}", f"limit={literal[:30]}"):
        resp = await _send(client, "GET", f"/api/assets?{query}", session)
        assert resp.status == 400, query
        assert_error(await resp.json(), 400)


@pytest.mark.parametrize("bad", ["\ud800", "a\udfffb", "\udc80\ud800", "ok\x00"])
async def test_strings_postgresql_cannot_hold_are_400_in_every_field(client, bad):
    session = await sign_in(client)
    for method, path, body in JSON_BODIES:
        for key, variant in _variants(body, bad):
            resp = await _send(client, method, path, session, json=variant)
            assert resp.status == 400, (path, key, await resp.text())
            assert_error(await resp.json(), 400)
        # in a key, and nested in the audience
        resp = await _send(client, method, path, session, json={**body, bad: "x"})
        assert resp.status < 500, (path, await resp.text())
    resp = await _send(
        client,
        "POST",
        "/api/messages",
        session,
        json={"title": "t", "content": "c", "audience": {"all": bad}},
    )
    assert resp.status == 400


async def test_raw_invalid_utf8_in_json_is_400(client):
    session = await sign_in(client)
    for method, path, _ in JSON_BODIES:
        for raw in (b'{"name": "\xed\xa0\x80"}', b'{"name": "\xff\xfe"}', b"\xef\xbb\xbf{}"):
            resp = await _send(
                client, method, path, session, data=raw, headers={"Content-Type": "application/json"}
            )
            assert resp.status == 400, (path, raw, await resp.text())


@pytest.mark.parametrize(
    "disposition",
    [
        "form-data; name=\"file\"; filename*=UTF-8''%ED%A0%80.txt",
        "form-data; name=\"file\"; filename*=UTF-8''%FF%FE.txt",
        'form-data; name="file"; filename="\\ud800.txt"',
    ],
)
async def test_bad_file_names_never_500(client, disposition):
    session = await sign_in(client)
    boundary = "b0undary"
    body = (
        f'--{boundary}\r\nContent-Disposition: form-data; name="title"\r\n\r\nT\r\n'
        f"--{boundary}\r\nContent-Disposition: {disposition}\r\nContent-Type: text/plain\r\n\r\nhello\r\n"
        f"--{boundary}--\r\n"
    ).encode()
    resp = await _send(
        client,
        "POST",
        "/api/archive",
        session,
        data=body,
        headers={"Content-Type": f"multipart/form-data; boundary={boundary}"},
    )
    assert resp.status in (201, 202, 400), await resp.text()
    if resp.status < 400:
        name = (await resp.json())["fileName"]
        name.encode("utf-8")  # storable and printable


async def test_surrogates_and_raw_bytes_in_multipart_fields_are_400(client):
    session = await sign_in(client)
    for title in ("\ud800", "x\x00"):
        form = FormData()
        form.add_field(
            "title", title.encode("utf-8", "surrogatepass"), content_type="text/plain", filename="title"
        )
        form.add_field("file", b"hello", filename="a.txt", content_type="text/plain")
        resp = await _send(client, "POST", "/api/archive", session, data=form)
        assert resp.status == 400, (title, await resp.text())
        assert_error(await resp.json(), 400)


@pytest.mark.parametrize(
    "value", [b"Bearer \xff\xfe", b"Bearer \xc3\xa9t\xc3\xa9", b"\xff", b"Bearer eyJ\x80.a.b", b"B\xe9arer x"]
)
async def test_non_ascii_authorization_is_401(client, value):
    for path in (b"/api/auth/me", b"/api/assets"):
        request = (
            b"GET "
            + path
            + b" HTTP/1.1\r\nHost: x\r\nAuthorization: "
            + value
            + b"\r\nConnection: close\r\n\r\n"
        )
        status, body = await _raw(client, request)
        assert status == 401, body
        assert_error(_error_body(body), 401)


@pytest.mark.parametrize("header", [b"X-Forwarded-For", b"Range", b"If-Range", b"Content-Type", b"Accept"])
async def test_non_ascii_bytes_in_other_headers_never_500(make_client, header):
    client = await make_client(trusted_proxy_hops=1)
    session = await sign_in(client)
    for method, path, body in (
        (b"POST", CHALLENGE.encode(), json.dumps({"walletAddress": WALLET}).encode()),
        (b"GET", f"/api/archive/{uuid.uuid4()}/download".encode(), b""),
        (b"GET", b"/api/assets", b""),
    ):
        request = (
            method
            + b" "
            + path
            + b" HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "
            + session.token.encode()
            + b"\r\n"
            + header
            + b": \xed\xa0\x80\xff\r\n"
            + (b"" if header == b"Content-Type" else b"Content-Type: application/json\r\n")
            + b"Content-Length: "
            + str(len(body)).encode()
            + b"\r\nConnection: close\r\n\r\n"
            + body
        )
        status, raw = await _raw(client, request)
        assert 200 <= status < 500, (header, path, raw)


def _cursor(stamp: str, row_id: str | None = None) -> str:
    raw = f"{stamp}|{row_id or uuid.uuid4()}".encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


@pytest.mark.parametrize(
    "stamp",
    [
        "2026-01-01T00:00:00+23:59",
        "2026-01-01T00:00:00-23:59",
        "0001-01-01T00:00:00+05:00",
        "9999-12-31T23:59:59-05:00",
        "2026-01-01T00:00:00+00:00:30",
        "2026-01-01T00:00:00.123456+15:59",
    ],
)
async def test_cursors_with_odd_time_offsets_are_400_or_a_page(client, stamp):
    session = await sign_in(client)
    for path in (
        "/api/assets",
        "/api/beneficiaries",
        "/api/guardians",
        "/api/messages",
        "/api/archive",
        "/api/activity",
    ):
        resp = await _send(client, "GET", f"{path}?cursor={_cursor(stamp)}", session)
        assert resp.status in (200, 400), (path, stamp, await resp.text())
        if resp.status == 400:
            assert_error(await resp.json(), 400)


@pytest.mark.parametrize(
    "cursor",
    [
        "%ED%A0%80",
        "%FF",
        _cursor("2026-01-01T00:00:00+00:00", "\udc80".encode("utf-8", "surrogatepass").decode("latin-1")),
    ],
)
async def test_garbage_cursors_are_400(client, cursor):
    session = await sign_in(client)
    resp = await _send(client, "GET", f"/api/assets?cursor={cursor}", session)
    assert resp.status == 400, await resp.text()


@pytest.mark.parametrize(
    "query", ["entityType=%ED%A0%80", "entityType=%00", "since=%ED%A0%80", "kind=\ud800"]
)
async def test_bad_bytes_in_query_strings_never_500(client, query):
    session = await sign_in(client)
    for path in ("/api/activity", "/api/assets", "/api/archive"):
        resp = await client.get(f"{path}?{query}", headers=session.headers)
        assert resp.status in (200, 400), (path, query, await resp.text())


async def test_bad_bytes_in_path_ids_are_404(client):
    session = await sign_in(client)
    for path in ("/api/assets/%ED%A0%80", "/api/messages/%00", "/api/archive/%FF/download"):
        resp = await client.get(path, headers=session.headers)
        assert resp.status == 404, (path, await resp.text())
