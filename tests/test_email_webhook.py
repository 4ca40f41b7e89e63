"""The service hears what happened to each email (#28): the provider's signed delivery webhook
(Resend's event shapes, Standard Webhooks / Svix signatures made with the library's own signer),
over HTTP, with the real worker and the email capture server."""

from __future__ import annotations

import asyncio
import base64
import logging
import secrets
from datetime import UTC, datetime, timedelta
from typing import Any

import orjson
import psycopg2

from tests.helpers import assert_error, sign_in, until
from tests.lifecycle_helpers import activate_plan, answer, approve_plan, get_overview
from tests.plan_helpers import blocked_by, query
from tests.support.mail import HOOK, SECRET, event, post, provider_id, signed


async def released(client, clock, run_worker, email_provider, **options: Any):
    owner = await sign_in(client)
    setup = await activate_plan(client, owner, **options)
    await approve_plan(client, setup)
    clock.advance(seconds=setup.overview["settings"]["cancelWindowSeconds"] + 1)
    await run_worker(settings=email_provider.settings)
    assert (await get_overview(client, owner))["status"] == "Released"
    return setup


async def test_unconfigured_is_503(client):
    resp = await post(client, event("email.delivered", "x"))
    assert resp.status == 503
    assert_error(await resp.json(), 503)


async def test_signed_forged_stale_and_replayed_events(
    make_client, clock, run_worker, email_provider, settings, caplog
):
    client = await make_client(email_webhook_secret=SECRET)
    setup = await released(client, clock, run_worker, email_provider)
    email_id = provider_id(settings, "claim_link", "beneficiary", recipient_id=setup.beneficiaries[0]["id"])
    delivered = event("email.delivered", email_id)

    # Forged: another secret; a body changed after signing; no headers; garbage signature.
    other = "whsec_" + base64.b64encode(secrets.token_bytes(32)).decode()
    assert (await post(client, delivered, secret=other)).status == 401
    body, headers = signed(delivered)
    assert (
        await client.post(HOOK, data=body.replace(b"delivered", b"bounced"), headers=headers)
    ).status == 401
    assert (await client.post(HOOK, data=body)).status == 401
    for garbage in ("v1,not-base64!", "nonsense", "v1", ""):
        resp = await client.post(HOOK, data=body, headers={**headers, "svix-signature": garbage})
        assert resp.status == 401, garbage
        assert_error(await resp.json(), 401)
    # Stale or from the future: more than 5 minutes off.
    now = datetime.now(UTC)
    assert (await post(client, delivered, at=now - timedelta(minutes=6))).status == 401
    assert (await post(client, delivered, at=now + timedelta(minutes=6))).status == 401
    assert not query(settings, "SELECT id FROM outbox WHERE delivery IS NOT NULL")

    # Signed and fresh (the Standard Webhooks header names work too): recorded once.
    resp = await post(client, delivered, msg_id="msg_first", prefix="webhook")
    assert resp.status == 200 and await resp.json() == {"result": "applied"}
    notices = (await get_overview(client, setup.owner))["notifications"]
    links = [n for n in notices if n["kind"] == "claim_link" and n["delivery"] == "delivered"]
    assert len(links) == 1 and links[0]["deliveryAt"] and links[0]["status"] == "sent"
    # Replayed: a no-op, even with a fresh signature.
    resp = await post(client, event("email.bounced", email_id), msg_id="msg_first")
    assert resp.status == 200 and await resp.json() == {"result": "replayed"}
    assert query(settings, "SELECT delivery FROM outbox WHERE provider_id = %s", (email_id,)) == [
        {"delivery": "delivered"}
    ]
    # A late "delayed" does not undo "delivered".
    resp = await post(client, event("email.delivery_delayed", email_id))
    assert resp.status == 200 and await resp.json() == {"result": "applied"}
    assert query(settings, "SELECT delivery FROM outbox WHERE provider_id = %s", (email_id,))[0][
        "delivery"
    ] == ("delivered")
    # Unknown email id: 200, logged, nothing changes; an event type we do not read: 200.
    with caplog.at_level(logging.INFO):
        resp = await post(client, event("email.bounced", "not-ours"))
    assert resp.status == 200 and await resp.json() == {"result": "unknown"}
    assert [r.emailId for r in caplog.records if "never sent" in r.getMessage()] == ["not-ours"]
    resp = await post(client, {"type": "email.opened", "data": {"email_id": email_id}})
    assert resp.status == 200 and await resp.json() == {"result": "ignored"}
    # Signed but not an event: 400.
    for bad in (b"{", b"[]", orjson.dumps({"type": "email.bounced"}), orjson.dumps({"data": {}})):
        resp = await post(client, bad)
        assert resp.status == 400, bad
        assert_error(await resp.json(), 400)
    assert SECRET not in caplog.text


async def test_a_bounced_claim_link_alerts_accepted_guardians_once_a_day(
    make_client, clock, run_worker, email_provider, settings
):
    client = await make_client(email_webhook_secret=SECRET)
    setup = await released(client, clock, run_worker, email_provider, guardians=3, accepting=2, threshold=2)
    heir = setup.beneficiaries[0]
    email_id = provider_id(settings, "claim_link", "beneficiary", recipient_id=heir["id"])
    before = len(email_provider.requests)
    resp = await post(client, event("email.bounced", email_id))
    assert resp.status == 200 and await resp.json() == {"result": "applied"}
    await run_worker(settings=email_provider.settings)
    alerted = sorted(r.to for r in email_provider.requests[before:])
    assert alerted == ["guardian0@example.org", "guardian1@example.org"]  # accepted ones only
    assert "Heir 0 has not received their link" in email_provider.requests[-1].body["subject"]
    notices = (await get_overview(client, setup.owner))["notifications"]
    assert any(n["kind"] == "claim_link" and n["delivery"] == "bounced" for n in notices)
    # The same link bouncing again (a second event id) alerts no one again.
    await post(client, event("email.complained", email_id))
    # The link sent again bounces too, the same day: no second alert (once a day per heir).
    resp = await client.post("/api/claim/resend", json={"email": "heir0@example.org"})
    assert resp.status == 202
    await run_worker(settings=email_provider.settings)
    resend_id = provider_id(settings, "claim_link", "beneficiary", recipient_id=heir["id"])
    assert resend_id != email_id
    before = len(email_provider.requests)
    assert (await post(client, event("email.bounced", resend_id))).status == 200
    await run_worker(settings=email_provider.settings)
    assert email_provider.requests[before:] == []
    # A day later a new bounce alerts again.
    clock.advance(hours=24, seconds=1)
    resp = await client.post("/api/claim/resend", json={"email": "heir0@example.org"})
    await run_worker(settings=email_provider.settings)
    third = provider_id(settings, "claim_link", "beneficiary", recipient_id=heir["id"])
    before = len(email_provider.requests)
    assert (await post(client, event("email.bounced", third))).status == 200
    await run_worker(settings=email_provider.settings)
    assert sorted(r.to for r in email_provider.requests[before:]) == [
        "guardian0@example.org",
        "guardian1@example.org",
    ]


async def test_a_bounced_owner_address_is_a_readiness_problem_until_changed(
    make_client, run_worker, email_provider, settings
):
    client = await make_client(email_webhook_secret=SECRET)
    owner = await sign_in(client)
    setup = await activate_plan(client, owner, guardians=3, accepting=2, threshold=2)
    resp = await answer(client, setup.guardians[2], owner_plan_id=setup.plan_id, verb="decline")
    assert resp.status == 200
    await run_worker(settings=email_provider.settings)
    assert (await get_overview(client, owner))["readiness"]["problems"] == []
    # The owner's email (the decline) bounced: their plan says so, as a problem.
    assert (
        await post(client, event("email.bounced", provider_id(settings, "guardian_declined", "owner")))
    ).status == 200
    problems = (await get_overview(client, owner))["readiness"]["problems"]
    assert len(problems) == 1 and problems[0].startswith("Your email address bounced")
    # A new address clears it (the bounce was the old address's).
    resp = await client.patch("/api/users/me", json={"email": "olive@example.net"}, headers=owner.headers)
    assert resp.status == 200
    assert (await get_overview(client, owner))["readiness"]["problems"] == []


async def test_a_bounced_guardian_invitation_emails_the_owner(
    make_client, run_worker, email_provider, settings
):
    client = await make_client(email_webhook_secret=SECRET)
    owner = await sign_in(client)
    setup = await activate_plan(client, owner)
    await run_worker(settings=email_provider.settings)
    invitation = provider_id(
        settings, "guardian_invitation", "guardian", recipient_id=setup.guardians[0].row["id"]
    )
    before = len(email_provider.requests)
    for _ in range(2):  # two bounce events (two message ids): one email to the owner
        assert (await post(client, event("email.bounced", invitation))).status == 200
    await run_worker(settings=email_provider.settings)
    sent = email_provider.requests[before:]
    assert [r.to for r in sent] == ["owner@example.org"]
    assert sent[0].body["subject"] == "Your invitation to Guardian 0 did not reach them"
    assert "guardian0@example.org" not in sent[0].body["text"]


def test_the_secret_setting_must_look_like_one():
    from core.settings import ConfigError, load_settings

    for bad in ("secret", "whsec_", "whsec_c2hvcnQ=", "abc" + SECRET):
        try:
            load_settings({"APP_ENV": "test", "EMAIL_WEBHOOK_SECRET": bad})
        except ConfigError as exc:
            assert "EMAIL_WEBHOOK_SECRET" in str(exc) and (len(bad) < 10 or bad not in str(exc))
        else:
            raise AssertionError(f"accepted {bad!r}")
    assert load_settings({"APP_ENV": "test", "EMAIL_WEBHOOK_SECRET": SECRET}).email_webhook_secret == SECRET


def waiting(settings) -> list[dict[str, Any]]:
    """Backends of the test database waiting on a lock another holds."""
    return query(
        settings,
        "SELECT pid FROM pg_stat_activity WHERE datname = current_database()"
        " AND cardinality(pg_blocking_pids(pid)) > 0",
    )


async def test_bounces_of_one_heir_arriving_together_alert_each_guardian_once(
    make_client, clock, run_worker, email_provider, settings
):
    # Two links of the same heir bounce at the same moment: each event's transaction checks for
    # today's alert before the other has committed one. The test holds the plan's row so both
    # events are applied side by side (their alert rows wait on its foreign key), then lets go.
    client = await make_client(email_webhook_secret=SECRET)
    setup = await released(client, clock, run_worker, email_provider, guardians=3, accepting=3, threshold=2)
    heir = setup.beneficiaries[0]
    ids = [provider_id(settings, "claim_link", "beneficiary", recipient_id=heir["id"])]
    resp = await client.post("/api/claim/resend", json={"email": "heir0@example.org"})
    assert resp.status == 202
    await run_worker(settings=email_provider.settings)
    ids.append(provider_id(settings, "claim_link", "beneficiary", recipient_id=heir["id"]))
    assert ids[0] != ids[1]
    before = len(email_provider.requests)
    holder = psycopg2.connect(settings.database_url)
    try:
        with holder.cursor() as cur:
            cur.execute("SELECT id FROM plans WHERE id = %s FOR UPDATE", (setup.plan_id,))
            cur.execute("SELECT pg_backend_pid()")
            pid = cur.fetchone()[0]
        posts = [asyncio.create_task(post(client, event("email.bounced", i))) for i in ids]
        # The first waits on the plan row; the second on it too, or (with the unique once_key) on
        # the first's alert.
        await until(lambda: len(waiting(settings)) == 2, "both events applied and waiting")
        assert blocked_by(settings, pid)
    finally:
        holder.rollback()
        holder.close()
    assert [r.status for r in await asyncio.gather(*posts)] == [200, 200]
    await run_worker(settings=email_provider.settings)
    alerted = sorted(r.to for r in email_provider.requests[before:])
    assert alerted == ["guardian0@example.org", "guardian1@example.org", "guardian2@example.org"]


async def test_unusable_ids_are_400_and_ids_are_compared_whole(
    make_client, clock, run_worker, email_provider, settings
):
    client = await make_client(email_webhook_secret=SECRET)
    setup = await released(client, clock, run_worker, email_provider)
    email_id = provider_id(settings, "claim_link", "beneficiary", recipient_id=setup.beneficiaries[0]["id"])
    # Signed, but the email id is nothing a provider could have returned: 400, never a 500.
    for bad in ("re_\x00abc", "\x00", "a\x07b", "line\nbreak", "x" * 201, "", 42, None, ["re_1"]):
        resp = await post(client, event("email.bounced", bad))  # type: ignore[arg-type]
        assert resp.status == 400, (bad, await resp.text())
        assert_error(await resp.json(), 400)
    assert query(settings, "SELECT delivery FROM outbox WHERE provider_id = %s", (email_id,)) == [
        {"delivery": None}
    ]
    # Two message ids sharing their first 200 characters are two messages, not a replay.
    prefix = "msg_" + "a" * 196
    first = await post(client, event("email.delivered", email_id), msg_id=prefix + "-first")
    assert first.status == 200 and await first.json() == {"result": "applied"}
    second = await post(client, event("email.bounced", email_id), msg_id=prefix + "-second")
    assert second.status == 200 and await second.json() == {"result": "applied"}
    assert query(settings, "SELECT delivery FROM outbox WHERE provider_id = %s", (email_id,)) == [
        {"delivery": "bounced"}
    ]
    # The same long id again is the replay it is.
    again = await post(client, event("email.complained", email_id), msg_id=prefix + "-second")
    assert again.status == 200 and await again.json() == {"result": "replayed"}
    # What is kept of a message id is its digest, whatever its length.
    kept = query(settings, "SELECT * FROM email_events")
    assert len(kept) == 2 and all(prefix not in str(row) for row in kept)
