"""Check-in without a wallet: every lifecycle email to the owner carries a one-time link
(`$PUBLIC_BASE_URL/check-in/<token>`), and POST /api/legacy/check-in/link counts exactly as a
check-in. Real worker, the email capture server, the test clock."""

from __future__ import annotations

import asyncio
import hashlib
import logging

from core.logging import JsonFormatter, redact, redact_path
from tests.helpers import assert_error, sign_in
from tests.lifecycle_helpers import activate_plan, approve, get_overview, past_setup, report
from tests.plan_helpers import activity_rows, query
from tests.support.mail import links_in, owner_links

DAY = 86400
URL = "/api/legacy/check-in/link"


async def test_the_link_in_the_verification_email_vetoes_and_starts_a_cycle(
    client, clock, run_worker, email_provider, settings
):
    owner = await sign_in(client)
    setup = await activate_plan(client, owner)
    assert (await report(client, setup, setup.guardians[0])).status == 200
    assert (await approve(client, setup, setup.guardians[0])).status == 200
    await run_worker(settings=email_provider.settings)
    [mail] = past_setup(email_provider, settings)  # "your guardians have been asked…"
    [token] = links_in(mail)
    # Only a digest is stored, never the token.
    stored = query(settings, "SELECT digest FROM check_in_links")
    assert [bytes(r["digest"]) for r in stored] == [hashlib.sha256(token.encode()).digest()]
    assert token not in str(query(settings, "SELECT * FROM outbox"))

    clock.advance(minutes=5)
    resp = await client.post(URL, json={"token": token})  # no session at all
    assert resp.status == 200, await resp.text()
    body = await resp.json()
    assert body["status"] == "Active" and body["nextCheckInDueAt"]
    assert resp.headers["Referrer-Policy"] == "no-referrer" and resp.headers["Cache-Control"] == "no-store"
    overview = await get_overview(client, owner)
    assert overview["status"] == "Active" and overview["approvals"]["count"] == 0
    assert overview["nextCheckInDueAt"] == body["nextCheckInDueAt"]
    assert (
        query(settings, "SELECT count(*) AS n FROM plan_approvals WHERE voided_at IS NOT NULL")[0]["n"] == 1
    )
    kinds = [(r["kind"], r["metadata"].get("via")) for r in activity_rows(settings, owner.user["id"])]
    assert ("plan.vetoed", "link") in kinds and ("plan.check_in", "link") in kinds
    # Guardians are told it was a false alarm, exactly as after a wallet check-in.
    assert query(settings, "SELECT count(*) AS n FROM outbox WHERE kind = 'false_alarm'")[0]["n"] == 2

    # Single use: the same link again is the 404 of an unknown one.
    again = await client.post(URL, json={"token": token})
    assert again.status == 404
    unknown = await client.post(URL, json={"token": "ab" * 32})
    assert unknown.status == 404
    assert (await again.json())["message"] == (await unknown.json())["message"]


async def test_a_reminder_link_starts_a_new_cycle_in_active(client, clock, run_worker, email_provider):
    owner = await sign_in(client)
    await activate_plan(
        client, owner, settings={"checkInIntervalSeconds": 2 * DAY, "gracePeriodSeconds": DAY}
    )
    clock.advance(days=1, seconds=1)  # the one-day reminder
    await run_worker(settings=email_provider.settings)
    [token] = await owner_links(email_provider)
    before = (await get_overview(client, owner))["nextCheckInDueAt"]
    resp = await client.post(URL, json={"token": token})
    assert resp.status == 200
    body = await resp.json()
    assert body["status"] == "Active" and body["nextCheckInDueAt"] > before


async def test_every_lifecycle_email_to_the_owner_carries_its_own_link(
    client, clock, run_worker, email_provider, settings
):
    owner = await sign_in(client)
    setup = await activate_plan(
        client, owner, settings={"checkInIntervalSeconds": 20 * DAY, "gracePeriodSeconds": DAY}, threshold=1
    )
    work = email_provider.settings
    for days in (6, 11, 2, 1, 1):  # reminders 14d, 3d, 1d, the grace notice, verification
        clock.advance(days=days, seconds=1)
        await run_worker(settings=work)
    assert (await get_overview(client, owner))["status"] == "PendingVerification"
    assert (await approve(client, setup, setup.guardians[0])).status == 200  # "will be released unless…"
    await run_worker(settings=work)
    mails = past_setup(email_provider, settings)
    assert len(mails) == 6
    tokens = [links_in(m) for m in mails]
    assert all(len(t) == 1 for t in tokens)
    assert len({t[0] for t in tokens}) == 6  # one link per email
    # Any one of them works once; that check-in ends all the others.
    resp = await client.post(URL, json={"token": tokens[2][0]})
    assert resp.status == 200 and (await resp.json())["status"] == "Active"
    for other in tokens:
        assert (await client.post(URL, json={"token": other[0]})).status == 404


async def test_two_uses_of_one_link_at_once_check_in_once(client, run_worker, email_provider, settings):
    owner = await sign_in(client)
    setup = await activate_plan(client, owner)
    assert (await report(client, setup, setup.guardians[0])).status == 200
    await run_worker(settings=email_provider.settings)
    [token] = await owner_links(email_provider)
    results = await asyncio.gather(*(client.post(URL, json={"token": token}) for _ in range(3)))
    assert sorted(r.status for r in results) == [200, 404, 404]
    vetoes = query(settings, "SELECT count(*) AS n FROM plan_transitions WHERE reason = 'vetoed'")
    assert vetoes[0]["n"] == 1


async def test_a_sign_in_during_verification_leaves_the_link_and_a_check_in_ends_it(
    client, clock, run_worker, email_provider
):
    owner = await sign_in(client)
    setup = await activate_plan(client, owner)
    assert (await report(client, setup, setup.guardians[0])).status == 200
    await run_worker(settings=email_provider.settings)
    [token] = await owner_links(email_provider)
    await sign_in(client, owner.keypair)  # not a check-in during verification (#25)
    resp = await client.post(URL, json={"token": token})
    assert resp.status == 200 and (await resp.json())["status"] == "Active"
    assert (await client.post(URL, json={"token": token})).status == 404  # used up


async def test_a_link_expires_after_30_days(client, clock, run_worker, email_provider):
    owner = await sign_in(client)
    await activate_plan(
        client, owner, settings={"checkInIntervalSeconds": 60 * DAY, "gracePeriodSeconds": DAY}
    )
    clock.advance(days=46, seconds=1)  # the 14-day reminder
    await run_worker(settings=email_provider.settings)
    [token] = await owner_links(email_provider)
    clock.advance(days=30, seconds=1)
    resp = await client.post(URL, json={"token": token})
    assert resp.status == 404
    assert_error(await resp.json(), 404)


async def test_a_link_is_refused_in_draft_and_released_and_not_used_up(
    client, clock, run_worker, email_provider, settings
):
    owner = await sign_in(client)
    setup = await activate_plan(client, owner, threshold=1)
    assert (await report(client, setup, setup.guardians[0])).status == 200
    await run_worker(settings=email_provider.settings)
    [token] = await owner_links(email_provider)
    assert (await approve(client, setup, setup.guardians[0])).status == 200
    clock.advance(seconds=61)
    await run_worker(settings=email_provider.settings)
    assert (await get_overview(client, owner))["status"] == "Released"
    resp = await client.post(URL, json={"token": token})
    assert resp.status == 409 and "released" in (await resp.json())["message"]

    other = await sign_in(client)
    await activate_plan(client, other, email="other@example.org")
    clock.advance(minutes=60, seconds=1)  # the other plan's grace notice (1-hour interval)
    await run_worker(settings=email_provider.settings)
    [token] = await owner_links(email_provider, "other@example.org")
    assert (await client.post("/api/legacy/deactivate", headers=other.headers)).status == 200
    resp = await client.post(URL, json={"token": token})
    assert resp.status == 409 and "draft" in (await resp.json())["message"].lower()
    # A refused link is not used up.
    digest = hashlib.sha256(token.encode()).digest()
    assert (
        query(settings, "SELECT count(*) AS n FROM check_in_links WHERE digest = %s", (digest,))[0]["n"] == 1
    )


async def test_one_owners_link_never_touches_another_plan(client, clock, run_worker, email_provider):
    first, second = await sign_in(client), await sign_in(client)
    setup_a = await activate_plan(client, first, email="a@example.org")
    setup_b = await activate_plan(client, second, email="b@example.org")
    for setup in (setup_a, setup_b):
        assert (await report(client, setup, setup.guardians[0])).status == 200
    await run_worker(settings=email_provider.settings)
    [token_a] = await owner_links(email_provider, "a@example.org")
    resp = await client.post(URL, json={"token": token_a})
    assert resp.status == 200
    assert (await get_overview(client, first))["status"] == "Active"
    assert (await get_overview(client, second))["status"] == "PendingVerification"


async def test_malformed_tokens_and_bodies_are_clear_4xx(client):
    for body in ({}, {"token": None}, {"token": 12}, {"token": ["x"]}):
        resp = await client.post(URL, json=body)
        assert resp.status == 400, body
        assert_error(await resp.json(), 400)
    resp = await client.post(URL, data="{not json", headers={"Content-Type": "application/json"})
    assert resp.status == 400
    for token in ("short", "AB" * 32, "ab" * 33, "zz" * 32, "ab" * 31 + "\u00e9a"):
        resp = await client.post(URL, json={"token": token})
        assert resp.status == 404, token


async def test_misses_are_limited_per_client_ip(make_client, email_provider):
    client = await make_client(rate_limit_check_in_misses_per_ip=3)
    statuses = [(await client.post(URL, json={"token": f"{i:064x}"})).status for i in range(5)]
    assert statuses == [404, 404, 404, 429, 429]
    resp = await client.post(URL, json={"token": "0" * 64})
    assert resp.status == 429 and int(resp.headers["Retry-After"]) > 0
    assert_error(await resp.json(), 429)


async def test_tokens_never_reach_a_log(client, clock, run_worker, email_provider, caplog):
    owner = await sign_in(client)
    setup = await activate_plan(client, owner)
    assert (await report(client, setup, setup.guardians[0])).status == 200
    with caplog.at_level(logging.DEBUG):
        await run_worker(settings=email_provider.settings)
        [token] = await owner_links(email_provider)
        await client.post(URL, json={"token": token})
        await client.post(URL, data=f'{{"token": "{token}"', headers={"Content-Type": "application/json"})
        await client.get(f"/check-in/{token}")
        await client.post(f"/api/legacy/check-in/{token}")
    formatter = JsonFormatter()
    text = "\n".join(formatter.format(r) for r in caplog.records)
    assert URL in text  # the requests were logged…
    assert token not in text  # …never the token
    assert "/check-in/<redacted>" in text


def test_check_in_paths_are_redacted():
    token = "cd" * 32
    assert redact_path(f"/check-in/{token}") == "/check-in/<redacted>"
    assert redact_path(f"/api/legacy/check-in/{token}/x") == "/api/legacy/check-in/<redacted>/x"
    assert redact_path(URL) == URL  # the route's own name is not a token
    assert redact_path("/api/legacy/check-in") == "/api/legacy/check-in"
    assert token not in redact(f'GET /check-in/{token}?x=1 HTTP/1.1 {{"token": "{token}"}}')
