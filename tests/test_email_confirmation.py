"""Heirs' addresses confirmed before they are needed (#28): the owner asks, the heir's one-time
link opens a page with one button (and has a JSON twin), `emailConfirmedAt` shows and a new
address clears it, readiness warns (never blocks) for unconfirmed and bounced addresses. The
same rules as check-in links: digest at rest, single use, 30 days, one 404 for every miss,
misses limited per IP, nothing in logs. HTTP, the real worker, the email capture server."""

from __future__ import annotations

import base64
import hashlib
import logging
import secrets
import uuid
from datetime import UTC, datetime

import orjson
from standardwebhooks.webhooks import Webhook

from tests.helpers import sign_in
from tests.lifecycle_helpers import get_overview
from tests.plan_helpers import query
from tests.support.mail import link_in
from tests.support.plans import ask_to_confirm, heir_of

TWIN = "/api/beneficiaries/confirm-email"


async def test_the_link_confirms_once_through_the_page(client, run_worker, email_provider, settings, caplog):
    owner = await sign_in(client)
    await client.patch("/api/users/me", json={"name": "Olive Owner"}, headers=owner.headers)
    heir = await heir_of(client, owner)
    assert heir["emailConfirmedAt"] is None
    warnings = (await get_overview(client, owner))["readiness"]["warnings"]
    assert any("Ada has not confirmed their email address" in w for w in warnings)
    body = await ask_to_confirm(client, owner, heir)
    assert body["status"] == "pending" and body["expiresAt"]
    with caplog.at_level(logging.DEBUG):
        await run_worker(settings=email_provider.settings)
        [mail] = [r.body for r in email_provider.to("ada@example.org")]
        assert mail["subject"] == "Please confirm that this address reaches you"
        assert "Olive Owner has listed this address to receive something" in mail["text"]
        token = link_in(email_provider, "ada@example.org")
        # At rest: the digest only.
        rows = query(settings, "SELECT digest FROM email_confirmations")
        assert [bytes(r["digest"]) for r in rows] == [hashlib.sha256(token.encode()).digest()]
        # A GET shows one button and changes nothing (mail scanners fetch links).
        page = await client.get(f"/confirm-email/{token}")
        assert page.status == 200 and '<form method="post"' in await page.text()
        assert "frame-ancestors 'none'" in page.headers["Content-Security-Policy"]
        assert page.headers["Referrer-Policy"] == "no-referrer"
        assert (await get_overview(client, owner))["readiness"]["warnings"]  # still unconfirmed
        resp = await client.get(f"/api/beneficiaries/{heir['id']}", headers=owner.headers)
        assert (await resp.json())["emailConfirmedAt"] is None
        # The button's POST confirms.
        done = await client.post(f"/confirm-email/{token}")
        assert done.status == 200 and "your address is confirmed" in await done.text()
        # Single use: opened again (a reload, the back button), the page, its POST and the twin say
        # it was already confirmed, and when; nothing is recorded twice.
        confirmed_at = (
            await (await client.get(f"/api/beneficiaries/{heir['id']}", headers=owner.headers)).json()
        )["emailConfirmedAt"]
        for again in (
            await client.post(f"/confirm-email/{token}"),
            await client.get(f"/confirm-email/{token}"),
        ):
            text = await again.text()
            assert again.status == 200 and "Your address is already confirmed" in text, text
            assert f'You confirmed it on <time datetime="{confirmed_at}">' in text
            assert "<form" not in text and "copied only in part" not in text
        resp = await client.post(TWIN, json={"token": token})
        assert resp.status == 200
        assert await resp.json() == {
            "confirmed": True,
            "emailConfirmedAt": confirmed_at,
            "alreadyConfirmed": True,
        }
    assert token not in caplog.text
    resp = await client.get(f"/api/beneficiaries/{heir['id']}", headers=owner.headers)
    assert (await resp.json())["emailConfirmedAt"] is not None
    assert not any("not confirmed" in w for w in (await get_overview(client, owner))["readiness"]["warnings"])
    kinds = [r["kind"] for r in query(settings, "SELECT kind FROM activity ORDER BY created_at, id")]
    assert "beneficiary.email_confirmation_sent" in kinds and "beneficiary.email_confirmed" in kinds

    # A new address clears the confirmation, and an older link cannot confirm the new address.
    resp = await client.patch(
        f"/api/beneficiaries/{heir['id']}", json={"email": "ada@example.net"}, headers=owner.headers
    )
    assert resp.status == 200 and (await resp.json())["emailConfirmedAt"] is None
    await ask_to_confirm(client, owner, heir)
    await run_worker(settings=email_provider.settings)
    new_token = link_in(email_provider, "ada@example.net")
    await ask_to_confirm(client, owner, heir)
    resp = await client.patch(
        f"/api/beneficiaries/{heir['id']}", json={"email": "ada@example.com"}, headers=owner.headers
    )
    assert resp.status == 200
    assert (await client.post(TWIN, json={"token": new_token})).status == 404


async def test_the_json_twin_and_every_miss(client, run_worker, email_provider, settings, clock):
    owner = await sign_in(client)
    heir = await heir_of(client, owner)
    await ask_to_confirm(client, owner, heir)
    await run_worker(settings=email_provider.settings)
    token = link_in(email_provider, "ada@example.org")
    # Misses: malformed, unknown, another length: one 404 each.
    for bad in ("nope", "0" * 64, token[:-1], token.upper()):
        resp = await client.post(TWIN, json={"token": bad})
        assert resp.status == 404, bad
        assert (await resp.json())["message"] == "Confirmation link not found"
    for body in ({}, {"token": ""}, {"token": 5}):
        assert (await client.post(TWIN, json=body)).status == 400
    # Expired after 30 days.
    clock.advance(days=30, seconds=1)
    assert (await client.post(TWIN, json={"token": token})).status == 404
    # A fresh one works through the twin.
    await ask_to_confirm(client, owner, heir)
    await run_worker(settings=email_provider.settings)
    fresh = link_in(email_provider, "ada@example.org")
    resp = await client.post(TWIN, json={"token": fresh})
    assert resp.status == 200 and (await resp.json())["confirmed"] is True


async def test_misses_are_limited_per_ip_and_valid_links_never(client, run_worker, email_provider, settings):
    owner = await sign_in(client)
    heir = await heir_of(client, owner)
    await ask_to_confirm(client, owner, heir)
    await run_worker(settings=email_provider.settings)
    token = link_in(email_provider, "ada@example.org")
    limit = settings.rate_limit_check_in_misses_per_ip
    for _ in range(limit):
        assert (await client.post(TWIN, json={"token": secrets.token_hex(32)})).status == 404
    resp = await client.post(TWIN, json={"token": secrets.token_hex(32)})
    assert resp.status == 429 and int(resp.headers["Retry-After"]) > 0
    page = await client.get(f"/confirm-email/{secrets.token_hex(32)}")
    assert page.status == 429
    assert (await client.post(TWIN, json={"token": token})).status == 200  # a valid link still works


async def test_the_owners_request_rules(client, run_worker, email_provider):
    owner = await sign_in(client)
    heir = await heir_of(client, owner)
    stranger = await sign_in(client)
    for raw in (heir["id"], "not-an-id", str(uuid.uuid4())):
        resp = await client.post(f"/api/beneficiaries/{raw}/confirm-email", headers=stranger.headers)
        assert resp.status == 404
    assert (await client.post(f"/api/beneficiaries/{heir['id']}/confirm-email")).status == 401
    for _ in range(3):
        await ask_to_confirm(client, owner, heir)
    resp = await client.post(f"/api/beneficiaries/{heir['id']}/confirm-email", headers=owner.headers)
    assert resp.status == 429 and int(resp.headers["Retry-After"]) > 23 * 3600


async def test_a_bounced_heir_address_is_a_warning(make_client, run_worker, email_provider, settings):
    secret = "whsec_" + base64.b64encode(secrets.token_bytes(32)).decode()
    client = await make_client(email_webhook_secret=secret)
    owner = await sign_in(client)
    heir = await heir_of(client, owner, name="Bea")
    await ask_to_confirm(client, owner, heir)
    await run_worker(settings=email_provider.settings)
    [row] = query(settings, "SELECT provider_id FROM outbox WHERE kind = 'email_confirmation'")
    body = orjson.dumps({"type": "email.bounced", "data": {"email_id": row["provider_id"]}})
    msg_id, now = f"msg_{uuid.uuid4().hex}", datetime.now(UTC)
    headers = {
        "svix-id": msg_id,
        "svix-timestamp": str(int(now.timestamp())),
        "svix-signature": Webhook(secret).sign(msg_id, now, body.decode()),
    }
    assert (await client.post("/api/webhooks/email", data=body, headers=headers)).status == 200
    readiness = (await get_overview(client, owner))["readiness"]
    assert any(w.startswith("Our email to Bea bounced") for w in readiness["warnings"])
    assert not any("not confirmed" in w for w in readiness["warnings"])  # one warning for her, not two
    assert not any("Bea" in p for p in readiness["problems"])  # never a block
