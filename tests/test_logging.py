"""Logs carry request ids and paths, never signatures, tokens or claim tokens."""

from __future__ import annotations

import asyncio
import json
import logging
import uuid

from aiohttp import web
from stellar_sdk import Keypair

from api.app import create_app
from api.keys import REDIS
from api.public import public
from core.logging import JsonFormatter, redact, redact_path
from tests.helpers import challenge, sign, until


def _formatted(caplog) -> str:
    formatter = JsonFormatter()
    return "\n".join(formatter.format(r) for r in caplog.records)


async def test_sign_in_logs_contain_neither_signature_nor_token(client, caplog):
    kp = Keypair.random()
    with caplog.at_level(logging.DEBUG):
        message = await challenge(client, kp.public_key)
        signature = sign(kp, message)
        resp = await client.post(
            "/api/auth/wallet/verify", json={"walletAddress": kp.public_key, "signature": signature}
        )
        token = (await resp.json())["token"]
        await client.get("/api/auth/me", headers={"Authorization": f"Bearer {token}"})
        # A failed attempt must not leak the attempted signature either.
        bad = sign(Keypair.random(), message, "hex")
        await client.post("/api/auth/wallet/verify", json={"walletAddress": kp.public_key, "signature": bad})
    text = _formatted(caplog)
    assert "/api/auth/wallet/verify" in text  # the requests were logged...
    for secret in (signature, token, bad, token.split(".")[2]):
        assert secret not in text  # ...without their secrets
    lines = [json.loads(line) for line in text.splitlines()]
    access = [entry for entry in lines if entry["logger"] == "api.access"]
    assert len(access) >= 4
    assert all(len(entry["requestId"]) == 32 for entry in access)


async def test_claim_paths_are_redacted_in_access_logs(client, caplog):
    token = "ab" * 32
    with caplog.at_level(logging.INFO):
        await client.get(f"/api/claim/{token}")
        await client.get(f"/api/claim/{token}/documents/x/download")
    text = _formatted(caplog)
    assert token not in text
    assert "/api/claim/<redacted>" in text


def test_redact_path():
    assert redact_path("/api/claim/abc123/submit") == "/api/claim/<redacted>/submit"
    assert redact_path("/api/claim/abc123") == "/api/claim/<redacted>"
    assert redact_path("/api/beneficiaries/1") == "/api/beneficiaries/1"


JWT = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3OCJ9.c2lnbmF0dXJlLXBhcnQtb2YtdGhlLWp3dA"
CLAIM = "c1" * 32
SIGNATURE = "Q" * 86 + "=="


async def _send_raw(client, payload: bytes) -> bytes:
    reader, writer = await asyncio.open_connection(client.server.host, client.server.port)
    writer.write(payload)
    await writer.drain()
    data = await asyncio.wait_for(reader.read(65536), 10)
    writer.close()
    return data


MALFORMED = [
    # an invalid header line after the Authorization header
    f"GET /api/claim/{CLAIM} HTTP/1.1\r\nAuthorization: Bearer {JWT}\r\nBad Header Line\r\n\r\n",
    # a control character in the path
    f"GET /api/claim/{CLAIM}\x01 HTTP/1.1\r\nAuthorization: Bearer {JWT}\r\n\r\n",
    # an invalid method, an invalid version
    f"G(E)T /api/claim/{CLAIM}?s={SIGNATURE} HTTP/1.1\r\nAuthorization: Bearer {JWT}\r\n\r\n",
    f"GET /api/claim/{CLAIM} HTTP/9.9\r\nAuthorization: Bearer {JWT}\r\n\r\n",
    # a bad Content-Length, a header and a request line too long (echoed truncated)
    f"GET /api/claim/{CLAIM} HTTP/1.1\r\nAuthorization: Bearer {JWT}\r\nContent-Length: x{JWT}\r\n\r\n",
    f"GET /api/x HTTP/1.1\r\nAuthorization: Bearer {JWT}" + "x" * 9000 + "\r\n\r\n",
    f"GET /api/claim/{CLAIM}" + "y" * 9000 + " HTTP/1.1\r\n\r\n",
    # a bad chunk carrying a token
    f"POST /api/auth/wallet/verify HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\nzz{JWT}\r\n",
]


async def test_malformed_requests_never_put_secrets_in_any_log(client, caplog):
    with caplog.at_level(logging.DEBUG):
        for payload in MALFORMED:
            reply = await _send_raw(client, payload.encode("latin-1"))
            assert reply.startswith(b"HTTP/1.") and b" 400 " in reply.split(b"\r\n", 1)[0]
        # Every refusal logged and every connection closed by the server: nothing more about
        # these requests can reach a log.
        server = client.server.runner.server
        await until(
            lambda: (
                not server.connections
                and sum(r.getMessage() == "malformed request refused" for r in caplog.records)
                == len(MALFORMED)
            ),
            "the refusals logged and their connections closed",
        )
    text = _formatted(caplog)
    assert "malformed request refused" in text  # the parser errors were logged...
    for secret in (JWT, JWT[:40], JWT.split(".")[1], JWT.split(".")[2], CLAIM, CLAIM[:40], SIGNATURE):
        assert secret not in text, secret  # ...without any secret, even truncated
    # A handler that stays on the formatter's default path sees the redacted text too.
    plain = logging.Formatter("%(message)s %(exc_text)s")
    assert all(JWT not in plain.format(r) and CLAIM not in plain.format(r) for r in caplog.records)


async def test_exception_text_and_extras_are_redacted(aiohttp_client, settings, caplog):
    app = create_app(settings)

    @public
    async def boom(request: web.Request) -> web.Response:
        raise RuntimeError(
            f"upstream said: Authorization: Bearer {JWT} for /api/claim/{CLAIM} sig {SIGNATURE}"
        )

    app.router.add_get("/api/boom", boom)
    client = await aiohttp_client(app)
    with caplog.at_level(logging.INFO):
        assert (await client.get("/api/boom")).status == 500
        logging.getLogger("test").warning("token %s", JWT, extra={"detail": f"Bearer {JWT}"})
    text = _formatted(caplog)
    assert "RuntimeError" in text and "upstream said" in text
    for secret in (JWT, CLAIM, SIGNATURE, JWT.split(".")[2]):
        assert secret not in text


def test_redact_keeps_ordinary_text():
    ordinary = "GET /api/assets/123e4567-e89b-12d3-a456-426614174000 request " + "a" * 32
    assert redact(ordinary) == ordinary
    assert redact(f"Bearer {JWT}") == "Bearer <redacted>"
    assert redact(f"/api/claim/{CLAIM}/documents") == "/api/claim/<redacted>/documents"


def test_redact_shortcut_agrees_with_the_full_pattern():
    """Short texts skip the regex unless a stem it needs is there: the same answer either way,
    including the non-ASCII letters that (?i) matches to i, k and s."""
    from core.logging import _SECRETS, _replace

    samples = [
        "GET",
        "/api/auth/me",
        "a" * 32,
        "Bearer abc",
        "BEARER%20xyz",
        "bearer+t0ken",
        "authorization: secret",
        "AUTHORIZATION=secret",
        "Author\u0131zation: secret",  # dotless i: (?i) matches it to i
        "Author\u0130zation: secret",
        "eyJhbGciOiJIUzI1NiJ9.e30",
        "/api/claim/abc/submit",
        "f" * 63,
        "f" * 64,
        "A" * 86 + "==",
        "x" * 70 + "bearer y",
        "ordinary message with spaces",
    ]
    for text in samples:
        assert redact(text) == _SECRETS.sub(_replace, text), text


def test_log_time_is_utc_iso_with_microseconds():
    import random
    from datetime import UTC, datetime

    from core.logging import utc_time

    rng = random.Random(7)
    for created in [0.0, 1.5, 1_764_000_000.999_999_6, *(rng.uniform(0, 4e9) for _ in range(2000))]:
        stamp = utc_time(created)
        assert stamp.endswith("Z") and len(stamp) == len("2026-11-26T03:22:37.123456Z"), stamp
        parsed = datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC)
        assert abs(parsed.timestamp() - created) <= 1e-6 + abs(created) * 1e-15, (created, stamp)


def test_log_lines_fall_back_to_the_standard_encoder_for_what_orjson_refuses():
    from core.logging import _encode

    assert json.loads(_encode({"n": 2**70})) == {"n": 2**70}
    assert _encode({"s": "\ud800"}) == '{"s": "\\ud800"}'  # a lone surrogate, escaped
    assert _encode({"s": "caf\u00e9"}) == '{"s": "caf\\u00e9"}'  # ASCII lines whatever the stream
    assert json.loads(_encode({"when": object})) == {"when": str(object)}
    assert _encode({"a": 1, "b": "x"}) == '{"a":1,"b":"x"}'


async def test_a_crons_routine_lines_are_debug_lines_and_a_jobs_stay_info(
    client, run_worker, caplog, email_provider
):
    """With a one-second scan arq's two lines per cron run were nine lines in ten of `make run`:
    a cron that runs well writes debug lines, in the same JSON, with its job's name."""
    await client.app[REDIS].enqueue_job("deliver_email", [], _job_id=f"logged-{uuid.uuid4()}")
    with caplog.at_level(logging.INFO):
        await run_worker(settings=email_provider.settings)
    arq_lines = [r for r in caplog.records if r.name == "arq.worker"]
    runs = [r for r in arq_lines if " → " in r.getMessage() or " ← " in r.getMessage()]
    assert not [r for r in runs if "cron:" in r.getMessage()], [r.getMessage() for r in runs]
    assert [r for r in runs if "deliver_email" in r.getMessage() and r.levelno == logging.INFO], runs
    caplog.clear()
    with caplog.at_level(logging.DEBUG):
        await run_worker(settings=email_provider.settings)
    crons = [r for r in caplog.records if r.name == "arq.worker" and "s → cron:heartbeat(" in r.getMessage()]
    assert crons and {r.levelname for r in crons} == {"DEBUG"}
    line = json.loads(JsonFormatter().format(crons[0]))
    assert line["level"] == "DEBUG" and line["job"] == "cron:heartbeat" and line["logger"] == "arq.worker"
