"""A claim link is never lost (#16): an heir asks again by address (public, the same answer
whatever the address), a guardian asks for them, and a link that cannot be delivered alerts
the guardians. HTTP, the real worker and the email capture server."""

from __future__ import annotations

import logging
import re
from typing import Any

import redis as redis_sync

from tests.helpers import sign_in
from tests.lifecycle_helpers import PlanSetup, activate_plan, approve_plan, get_overview, guardian_session
from tests.plan_helpers import query

RESEND = "/api/claim/resend"
ACCEPTED = {
    "status": "accepted",
    "message": "If this address belongs to someone named in a plan that has been released to them, a new "
    "link is on its way to it. Check your inbox (and spam folder) in a few minutes.",
}
LINK_RE = re.compile(r"/claim/([0-9a-f]{64})")


async def released(client, clock, run_worker, email_provider, **options: Any) -> PlanSetup:
    owner = await sign_in(client)
    setup = await activate_plan(client, owner, **options)
    await approve_plan(client, setup)
    clock.advance(seconds=setup.overview["settings"]["cancelWindowSeconds"] + 1)
    await run_worker(settings=email_provider.settings)
    setup.overview = await get_overview(client, owner)
    assert setup.overview["status"] == "Released"
    return setup


def tokens_sent_to(email_provider, address: str) -> list[str]:
    return [m.group(1) for r in email_provider.to(address) if (m := LINK_RE.search(r.body["text"]))]


async def test_resend_matched_goes_to_the_registered_address_only(
    client, clock, run_worker, email_provider, settings, caplog
):
    setup = await released(client, clock, run_worker, email_provider)
    heir = setup.beneficiaries[0]
    before = len(email_provider.requests)
    with caplog.at_level(logging.INFO):
        resp = await client.post(RESEND, json={"email": "  HEIR0@Example.ORG "})
        assert resp.status == 202 and await resp.json() == ACCEPTED
        assert resp.headers["Cache-Control"] == "no-store"
        await run_worker(settings=email_provider.settings)
    new = email_provider.requests[before:]
    assert [r.to for r in new] == ["heir0@example.org"]
    assert "as asked" in new[0].body["text"]
    assert tokens_sent_to(email_provider, "heir0@example.org")[-1] == heir["claimToken"]  # the same link
    assert not query(settings, "SELECT id FROM claim_link_requests")  # nothing remembers the request
    assert "heir0@example.org" not in caplog.text.lower()
    entries = query(settings, "SELECT metadata FROM activity WHERE kind = 'beneficiary.claim_link_resent'")
    assert [e["metadata"] for e in entries] == [{"by": "beneficiary"}]


async def test_resend_unmatched_answers_the_same_and_sends_nothing(
    client, clock, run_worker, email_provider, settings, caplog
):
    setup = await released(client, clock, run_worker, email_provider)
    before = len(email_provider.requests)
    with caplog.at_level(logging.DEBUG):
        for address in ("nobody@example.org", "owner@example.org", "guardian0@example.org"):
            resp = await client.post(RESEND, json={"email": address})
            assert resp.status == 202 and await resp.json() == ACCEPTED
        await run_worker(settings=email_provider.settings)
    sent = [(r.to, r.body["subject"]) for r in email_provider.requests[before:]]
    assert not sent
    assert not query(settings, "SELECT id FROM claim_link_requests")
    assert "nobody@example.org" not in caplog.text
    # Nor for an heir whose plan is not released: their link must not arrive early.
    owner = await sign_in(client)
    await activate_plan(client, owner, email="other-owner@example.org")
    resp = await client.post(RESEND, json={"email": "heir1@example.org"})
    assert resp.status == 202 and await resp.json() == ACCEPTED
    await run_worker(settings=email_provider.settings)
    # heir1 of the released plan got one; the Active plan's heir1 (same address) nothing more.
    assert len(email_provider.to("heir1@example.org")) == 2  # the release, and this resend
    assert setup.overview["status"] == "Released"


async def test_resend_limits_per_beneficiary_and_per_address(client, clock, run_worker, email_provider):
    setup = await released(client, clock, run_worker, email_provider)
    for _ in range(5):
        resp = await client.post(RESEND, json={"email": "heir0@example.org"})
        assert resp.status == 202 and await resp.json() == ACCEPTED
    await run_worker(settings=email_provider.settings)
    assert len(email_provider.to("heir0@example.org")) == 1 + 3  # the release, then 3 a day
    # A stranger who knows the address used up the public allowance: the guardians' is whole
    # (#28 F1): 3 a day of its own, then 429, saying so.
    session = await guardian_session(client, setup.guardians[0])
    path = (
        f"/api/legacy/guardianships/{setup.plan_id}/beneficiaries/{setup.beneficiaries[0]['id']}/resend-link"
    )
    for _ in range(3):
        resp = await client.post(path, headers=session.headers)
        assert resp.status == 202 and (await resp.json())["status"] == "pending"
    resp = await client.post(path, headers=session.headers)
    assert resp.status == 429 and int(resp.headers["Retry-After"]) > 23 * 3600
    assert "guardians already" in (await resp.json())["message"]
    await run_worker(settings=email_provider.settings)
    assert len(email_provider.to("heir0@example.org")) == 1 + 3 + 3
    # The public route still answers the same 202 (and sends nothing more today).
    resp = await client.post(RESEND, json={"email": "heir0@example.org"})
    assert resp.status == 202 and await resp.json() == ACCEPTED
    # Per client address: 10 an hour, then 429 whatever the address.
    for _ in range(4):
        assert (await client.post(RESEND, json={"email": "x@example.org"})).status == 202
    resp = await client.post(RESEND, json={"email": "heir1@example.org"})
    assert resp.status == 429 and 0 < int(resp.headers["Retry-After"]) <= 3600
    # A day later the heir can ask again.
    clock.advance(hours=24, seconds=1)
    resp = await client.post(path, headers=session.headers)
    assert resp.status == 202 and (await resp.json())["status"] == "pending"


async def test_resend_bad_input_is_400(client):
    for body in ({}, {"email": ""}, {"email": "not-an-address"}, {"email": 12}, {"email": None}):
        resp = await client.post(RESEND, json=body)
        assert resp.status == 400 and "email" in (await resp.json())["details"], body
    resp = await client.post(RESEND, data="{", headers={"Content-Type": "application/json"})
    assert resp.status == 400


async def test_a_lost_request_job_is_swept(client, clock, run_worker, email_provider, settings):
    await released(client, clock, run_worker, email_provider)
    conn = redis_sync.Redis.from_url(settings.redis_url)
    resp = await client.post(RESEND, json={"email": "heir0@example.org"})
    assert resp.status == 202
    conn.delete(settings.arq_queue_name, *conn.scan_iter("arq:job:resend_claim_link:*"))
    conn.close()
    clock.advance(seconds=31)
    await run_worker(settings=email_provider.settings)
    assert len(email_provider.to("heir0@example.org")) == 2


async def test_guardians_see_each_link_and_can_ask_again(client, clock, run_worker, email_provider, settings):
    owner = await sign_in(client)
    setup = await activate_plan(client, owner)
    session = await guardian_session(client, setup.guardians[0])
    heir = setup.beneficiaries[0]
    path = f"/api/legacy/guardianships/{setup.plan_id}/beneficiaries/{heir['id']}/resend-link"
    await approve_plan(client, setup)
    listed = await (await client.get("/api/legacy/guardianships", headers=session.headers)).json()
    assert listed[0]["beneficiaries"] == []  # nothing of the contents before the release
    resp = await client.post(path, headers=session.headers)
    assert resp.status == 409  # no link goes out before the release

    clock.advance(seconds=setup.overview["settings"]["cancelWindowSeconds"] + 1)
    email_provider.script_to["heir1@example.org"] = [(400, {})]  # one address bounces
    await run_worker(settings=email_provider.settings)
    listed = await (await client.get("/api/legacy/guardianships", headers=session.headers)).json()
    links = {b["name"]: b for b in listed[0]["beneficiaries"]}
    assert {name: b["status"] for name, b in links.items()} == {"Heir 0": "sent", "Heir 1": "failed"}
    assert set(links["Heir 0"]) == {"beneficiaryId", "name", "status", "at"}  # no address, no token
    assert "heir0@example.org" not in str(listed) and heir["claimToken"] not in str(listed)

    # The failed link emailed every guardian: which heir (by name) and what to do.
    await run_worker(settings=email_provider.settings)
    for guardian in ("guardian0@example.org", "guardian1@example.org"):
        alert = [r.body for r in email_provider.to(guardian) if "has not received" in r.body["subject"]]
        assert len(alert) == 1 and "Heir 1" in alert[0]["subject"]
        assert "guardian page" in alert[0]["text"] and "heir1@example.org" not in alert[0]["text"]
    # Delivered links alert nobody.
    assert len(query(settings, "SELECT id FROM outbox WHERE kind = 'claim_link_undelivered'")) == 2

    resp = await client.post(path, headers=session.headers)
    assert resp.status == 202
    body = await resp.json()
    assert body["beneficiaryId"] == heir["id"] and body["status"] == "pending"
    await run_worker(settings=email_provider.settings)
    assert tokens_sent_to(email_provider, "heir0@example.org") == [heir["claimToken"]] * 2
    entries = query(settings, "SELECT metadata FROM activity WHERE kind = 'beneficiary.claim_link_resent'")
    assert entries[0]["metadata"] == {"by": "guardian", "guardianId": setup.guardians[0].row["id"]}

    # Not a beneficiary of this plan, a malformed id, or a plan this account does not guard: 404.
    other_owner = await sign_in(client)
    other = await activate_plan(client, other_owner, email="other@example.org")
    foreign = (
        f"/api/legacy/guardianships/{setup.plan_id}/beneficiaries/{other.beneficiaries[0]['id']}/resend-link"
    )
    assert (await client.post(foreign, headers=session.headers)).status == 404
    bad = f"/api/legacy/guardianships/{setup.plan_id}/beneficiaries/not-an-id/resend-link"
    assert (await client.post(bad, headers=session.headers)).status == 404
    stranger = await sign_in(client)
    assert (await client.post(path, headers=stranger.headers)).status == 404


async def test_a_skipped_link_alerts_the_guardians_too(client, clock, run_worker, settings):
    owner = await sign_in(client)
    # The second guardian never accepted: told nothing of the plan's heirs (#28 F4).
    setup = await activate_plan(client, owner, guardians=2, threshold=1, accepting=1)
    await approve_plan(client, setup)
    clock.advance(seconds=setup.overview["settings"]["cancelWindowSeconds"] + 1)
    await run_worker()  # no email provider configured: every email is skipped
    rows = query(
        settings,
        "SELECT recipient_id::text AS who, context FROM outbox WHERE kind = 'claim_link_undelivered'",
    )
    assert sorted(r["context"]["outcome"] for r in rows) == ["skipped", "skipped"]
    assert {r["context"]["beneficiaryId"] for r in rows} == {b["id"] for b in setup.beneficiaries}
    assert {r["who"] for r in rows} == {setup.guardians[0].row["id"]}
