"""The plan lifecycle end to end through HTTP, with the real worker, a local email provider
and a test clock moved forward instead of sleeping."""

from __future__ import annotations

import re
from datetime import datetime, timedelta

import redis as redis_sync

from tests.helpers import assert_error, sign, sign_in, until
from tests.lifecycle_helpers import (
    SETTING_UP_NOTICES,
    activate_plan,
    approve,
    approve_plan,
    get_overview,
    guardian_session,
    past_setup,
    release_plan,
    report,
)
from tests.plan_helpers import activity_rows, create, query

DAY = 86400


async def test_a_new_plan_is_a_draft_that_says_what_blocks_activation(client):
    owner = await sign_in(client)
    body = await get_overview(client, owner)
    assert body["status"] == "Draft"
    assert body["settings"] == {
        "checkInIntervalSeconds": 90 * DAY,
        "gracePeriodSeconds": 14 * DAY,
        "cancelWindowSeconds": 72 * 3600,
        "guardianThreshold": None,
        "verificationTimeoutSeconds": 30 * DAY,  # #24: no release waits for ever
        "onVerificationTimeout": "release",
        "allowBeneficiaryRequests": True,
        "notifyBeneficiariesOnActivation": False,
    }
    assert body["readiness"]["ready"] is False
    assert len(body["readiness"]["problems"]) == 4  # beneficiaries, guardians, name (#25), email
    resp = await client.post("/api/legacy/activate", headers=owner.headers)
    assert resp.status == 409
    error = await resp.json()
    assert_error(error, 409)
    assert error["details"]["readiness"]["problems"] == body["readiness"]["problems"]


async def test_activation_needs_allocations_of_exactly_100(client):
    owner = await sign_in(client)
    resp = await client.patch(
        "/api/users/me", json={"email": "o@example.org", "name": "Olive"}, headers=owner.headers
    )
    assert resp.status == 200
    await create(client, owner, "beneficiaries", allocationPercentage=90)
    await create(client, owner, "guardians")
    resp = await client.post("/api/legacy/activate", headers=owner.headers)
    assert resp.status == 409
    problems = (await resp.json())["details"]["readiness"]["problems"]
    assert problems[0] == "Your beneficiaries' shares add up to 90%; they must add up to exactly 100%."
    assert len(problems) == 2 and "accept" in problems[1]  # the guardian has not answered yet


async def test_settings_are_bounded_and_change_only_in_draft_and_active(client, settings):
    owner = await sign_in(client)
    resp = await client.patch(
        "/api/legacy",
        json={"checkInIntervalSeconds": 59, "cancelWindowSeconds": 1, "gracePeriodSeconds": 0},
        headers=owner.headers,
    )
    assert resp.status == 400
    body = await resp.json()
    assert_error(body, 400)
    assert set(body["details"]) == {"checkInIntervalSeconds", "cancelWindowSeconds"}  # below PLAN_MIN_*
    resp = await client.patch("/api/legacy", json={"gracePeriodSeconds": -1}, headers=owner.headers)
    assert resp.status == 400 and "gracePeriodSeconds" in (await resp.json())["details"]
    resp = await client.patch("/api/legacy", json={"guardianThreshold": 2}, headers=owner.headers)
    assert resp.status == 400  # no guardians yet
    resp = await client.patch("/api/legacy", json={"checkInIntervalSeconds": "60"}, headers=owner.headers)
    assert resp.status == 400  # seconds are integers, not strings
    resp = await client.patch("/api/legacy", json={"gracePeriodSeconds": 0}, headers=owner.headers)
    assert resp.status == 200 and (await resp.json())["settings"]["gracePeriodSeconds"] == 0


async def test_the_whole_story_by_inactivity(client, clock, run_worker, email_provider, settings):
    """Activate, stay silent: reminder, grace notice, verification, approvals, release, claim links."""
    owner = await sign_in(client)
    setup = await activate_plan(
        client, owner, settings={"checkInIntervalSeconds": 2 * DAY, "gracePeriodSeconds": DAY}
    )
    work = email_provider.settings
    due = setup.overview["nextCheckInDueAt"]
    assert due is not None

    await run_worker(settings=work)  # nothing due yet (the guardians' invitations went out)
    # The owner heard of each acceptance and of the activation, once each, and of nothing else.
    assert len(email_provider.to("owner@example.org")) == 3
    assert past_setup(email_provider, settings) == []

    clock.advance(days=1, seconds=1)  # one day before due: the only reminder that fits a 2-day cycle
    await run_worker(settings=work)
    await run_worker(settings=work)  # a second scan sends nothing more
    [reminder] = past_setup(email_provider, settings)
    assert reminder.to == "owner@example.org" and "check in" in reminder.body["subject"].lower()

    clock.advance(days=1)  # due: the grace period starts
    await run_worker(settings=work)
    assert len(past_setup(email_provider, settings)) == 2
    assert (await get_overview(client, owner))["status"] == "Active"

    clock.advance(days=1)  # grace over: guardians are asked
    await run_worker(settings=work)
    overview = await get_overview(client, owner)
    assert overview["status"] == "PendingVerification" and overview["verificationStartedAt"]
    for index in range(2):
        invitation, asked = email_provider.to(f"guardian{index}@example.org")
        assert "accept" in invitation.body["text"]
        assert "approve the release" in asked.body["text"]

    for guardian in setup.guardians:
        resp = await approve(client, setup, guardian)
        assert resp.status == 200, await resp.text()
    overview = await get_overview(client, owner)
    assert overview["status"] == "Approved" and overview["approvals"]["count"] == 2
    assert overview["releaseAt"] is not None

    # The cancel window (60 s) is not over: nothing is released early. (The test clock also
    # runs in real time, so leave a margin for a slow machine.)
    clock.advance(seconds=30)
    await run_worker(settings=work)
    assert (await get_overview(client, owner))["status"] == "Approved"

    clock.advance(seconds=31)
    await run_worker(settings=work)
    overview = await get_overview(client, owner)
    assert overview["status"] == "Released" and overview["releasedAt"]
    for heir in setup.beneficiaries:
        [mail] = email_provider.to(heir["email"])
        link = f"https://legacy.example.test/claim/{heir['claimToken']}"
        assert link in mail.body["text"] and f'href="{link}"' in mail.body["html"]

    resp = await client.get("/api/legacy/journey", headers=owner.headers)
    story = await resp.json()
    assert [(t["fromStatus"], t["toStatus"], t["actor"]) for t in story["transitions"]] == [
        ("Draft", "Active", "owner"),
        ("Active", "PendingVerification", "scheduler"),
        ("PendingVerification", "Approved", "guardian"),
        ("Approved", "Released", "scheduler"),
    ]
    assert [s["state"] for s in story["steps"]] == ["done", "done", "done", "done", "current"]
    sent = [n for n in overview["notifications"] if n["status"] == "sent"]
    assert len(sent) == len(email_provider.requests)
    kinds = [
        r["kind"]
        for r in activity_rows(settings, owner.user["id"])
        if r["entity_type"] == "plan" or r["kind"] in ("guardian.reported", "guardian.approved")
    ]
    assert kinds[:2] == ["plan.updated", "plan.activated"]
    assert kinds.count("guardian.approved") == 2 and "plan.verification_started" in kinds
    assert kinds.count("plan.reminder_sent") == 2 and kinds[-1] == "plan.released"
    # No secrets or addresses on the timeline.
    timeline = str(activity_rows(settings, owner.user["id"]))
    assert "@example.org" not in timeline and setup.beneficiaries[0]["claimToken"] not in timeline


async def test_release_plan_helper_reaches_released(client, clock, run_worker, settings):
    owner = await sign_in(client)
    setup = await release_plan(client, owner, clock, run_worker)
    assert setup.overview["releasedAt"] is not None
    claim_rows = query(settings, "SELECT status FROM outbox WHERE kind = 'claim_link'")
    assert [r["status"] for r in claim_rows] == ["skipped", "skipped"]  # no provider configured


async def test_refused_transitions_in_each_state(client, clock, run_worker):
    owner = await sign_in(client)
    # Draft: nothing to deactivate or check in for; guardians cannot see the plan.
    for path in ("/api/legacy/deactivate", "/api/legacy/check-in"):
        resp = await client.post(path, headers=owner.headers)
        assert resp.status == 409, path
    setup = await activate_plan(client, owner, threshold=1)
    plan = setup.plan_id
    # Active: no second activation; approvals wait for verification.
    resp = await client.post("/api/legacy/activate", headers=owner.headers)
    assert resp.status == 409
    guardian = setup.guardians[0]
    resp = await approve_attempt(client, setup, guardian)
    assert resp.status == 409
    # PendingVerification: settings, activation and deactivation refused; another report is recorded.
    assert (await report(client, setup, guardian)).status == 200
    for method, path, body in (
        ("patch", "/api/legacy", {"gracePeriodSeconds": 0}),
        ("post", "/api/legacy/activate", None),
        ("post", "/api/legacy/deactivate", None),
    ):
        resp = await getattr(client, method)(path, json=body, headers=owner.headers)
        assert resp.status == 409, path
    assert (await report(client, setup, setup.guardians[1])).status == 200
    # Approved: no more approvals.
    assert (await approve(client, setup, guardian)).status == 200
    assert (await get_overview(client, owner))["status"] == "Approved"
    resp = await approve_attempt(client, setup, setup.guardians[1])
    assert resp.status == 409
    # Released: no check-in, report or settings change can undo it.
    clock.advance(seconds=61)
    await run_worker()
    assert (await get_overview(client, owner))["status"] == "Released"
    resp = await client.post("/api/legacy/check-in", headers=owner.headers)
    assert resp.status == 409
    assert (await report(client, setup, guardian)).status == 409
    resp = await client.patch("/api/legacy", json={"gracePeriodSeconds": 0}, headers=owner.headers)
    assert resp.status == 409
    assert plan == (await get_overview(client, owner))["id"]


async def approve_attempt(client, setup, guardian):
    """The attestation request itself is refused outside verification."""
    session = await guardian_session(client, guardian)
    return await client.get(f"/api/legacy/guardianships/{setup.plan_id}/attestation", headers=session.headers)


async def test_deactivate_returns_to_draft_and_stops_the_schedule(client, clock, run_worker, settings):
    owner = await sign_in(client)
    await activate_plan(client, owner)
    resp = await client.post("/api/legacy/deactivate", headers=owner.headers)
    assert resp.status == 200
    body = await resp.json()
    assert body["status"] == "Draft" and body["nextCheckInDueAt"] is None
    clock.advance(days=30)
    await run_worker()
    assert (await get_overview(client, owner))["status"] == "Draft"
    assert (
        query(
            settings,
            "SELECT kind FROM outbox WHERE kind <> ALL(%s)",
            (["guardian_invitation", *SETTING_UP_NOTICES],),
        )
        == []
    )


async def test_veto_in_verification_and_after_approval(client, clock, run_worker, settings):
    owner = await sign_in(client)
    setup = await activate_plan(client, owner)
    # Veto during verification.
    assert (await report(client, setup, setup.guardians[0])).status == 200
    assert (await approve(client, setup, setup.guardians[0])).status == 200
    resp = await client.post("/api/legacy/check-in", headers=owner.headers)
    assert resp.status == 200
    body = await resp.json()
    assert body["status"] == "Active" and body["approvals"]["count"] == 0
    voided = query(settings, "SELECT voided_at FROM plan_approvals")
    assert len(voided) == 1 and voided[0]["voided_at"] is not None  # kept as history
    # A new round: the old approval does not count.
    await approve_plan(client, setup)
    # Veto after approval: signing in is not one (tests/test_owner_key.py), checking in is.
    await sign_in(client, owner.keypair)
    assert (await get_overview(client, owner))["status"] == "Approved"
    assert (await client.post("/api/legacy/check-in", headers=owner.headers)).status == 200
    body = await get_overview(client, owner)
    assert body["status"] == "Active" and body["releaseAt"] is None
    clock.advance(seconds=120)  # past the old release time: nothing is released
    await run_worker()
    assert (await get_overview(client, owner))["status"] == "Active"
    kinds = [r["kind"] for r in activity_rows(settings, owner.user["id"])]
    assert kinds.count("plan.vetoed") == 2
    false_alarms = query(settings, "SELECT count(*) AS n FROM outbox WHERE kind = 'false_alarm'")
    assert false_alarms[0]["n"] == 4  # two vetoes, two guardians each


async def test_check_in_starts_a_new_cycle(client, clock):
    owner = await sign_in(client)
    setup = await activate_plan(client, owner)
    before = setup.overview["nextCheckInDueAt"]
    clock.advance(minutes=10)
    resp = await client.post("/api/legacy/check-in", headers=owner.headers)
    body = await resp.json()
    assert body["nextCheckInDueAt"] > before
    assert body["lastCheckInAt"] > setup.overview["lastCheckInAt"]


async def test_guardianships_show_progress_and_what_i_did(client):
    owner = await sign_in(client)
    setup = await activate_plan(client, owner, guardians=2)
    first, second = [await guardian_session(client, g) for g in setup.guardians]
    resp = await client.post(f"/api/legacy/guardianships/{setup.plan_id}/report", headers=first.headers)
    assert resp.status == 200 and (await resp.json())["status"] == "PendingVerification"  # no body at all
    assert (await approve(client, setup, setup.guardians[0])).status == 200
    views = []
    for session in (first, second):
        resp = await client.get("/api/legacy/guardianships", headers=session.headers)
        [item] = await resp.json()
        views.append((item["approvals"], item["threshold"], item["approvedByMe"], item["reportedByMe"]))
    assert views == [(1, 2, True, True), (1, 2, False, False)]
    assert (await get_overview(client, owner))["approvals"]["guardians"][0]["approvedAt"] is not None


async def test_attestations_are_single_use_and_bound_to_the_guardian_wallet(client, settings):
    owner = await sign_in(client)
    setup = await activate_plan(client, owner, guardians=3)  # majority: 2
    assert (await report(client, setup, setup.guardians[0])).status == 200
    first, second = setup.guardians[0], setup.guardians[1]
    session = await guardian_session(client, first)
    url = f"/api/legacy/guardianships/{setup.plan_id}"
    message = (await (await client.get(f"{url}/attestation", headers=session.headers)).json())["message"]
    for words in ("approve the release", setup.plan_id, owner.keypair.public_key, first.keypair.public_key):
        assert words in message
    wrong = await client.post(
        f"{url}/approve", json={"signature": sign(second.keypair, message)}, headers=session.headers
    )
    assert wrong.status == 401  # signed by another wallet than the guardian's
    signature = sign(first.keypair, message, encoding="hex", sep53=True)  # as newer Freighter signs
    resp = await client.post(f"{url}/approve", json={"signature": signature}, headers=session.headers)
    assert resp.status == 200
    replay = await client.post(f"{url}/approve", json={"signature": signature}, headers=session.headers)
    assert replay.status == 401  # the attestation is burnt
    assert (await approve(client, setup, first)).status == 409  # one approval per guardian
    bad = await client.post(f"{url}/approve", json={"signature": "not a signature"}, headers=session.headers)
    assert bad.status == 400
    evidence = query(settings, "SELECT message, signature FROM plan_approvals")
    assert evidence == [{"message": message, "signature": signature}]


async def test_an_attestation_expires_after_ten_minutes(client, settings):
    """The attestation lives in Redis with a 10-minute TTL (Redis keeps real time, which the test
    clock cannot move): the TTL is checked, then Redis is made to expire the key for real, and a
    signature over the expired text is refused."""
    owner = await sign_in(client)
    setup = await activate_plan(client, owner, guardians=3)
    assert (await report(client, setup, setup.guardians[0])).status == 200
    guardian = setup.guardians[0]
    session = await guardian_session(client, guardian)
    url = f"/api/legacy/guardianships/{setup.plan_id}"
    message = (await (await client.get(f"{url}/attestation", headers=session.headers)).json())["message"]
    issued = re.search(r"Issued At: (\S+)", message)
    expires = re.search(r"Expiration Time: (\S+)", message)
    assert issued and expires
    lifetime = datetime.fromisoformat(expires[1]) - datetime.fromisoformat(issued[1])
    assert lifetime == timedelta(minutes=10)
    redis = redis_sync.Redis.from_url(settings.redis_url)
    try:
        keys = redis.keys("legacy:attestation:*")
        assert len(keys) == 1
        assert 590 <= redis.ttl(keys[0]) <= 600
        redis.pexpire(keys[0], 1)
        await until(lambda: redis.exists(keys[0]) == 0, "the attestation expired")
        assert redis.exists(keys[0]) == 0
    finally:
        redis.close()
    resp = await client.post(
        f"{url}/approve", json={"signature": sign(guardian.keypair, message)}, headers=session.headers
    )
    assert resp.status == 401
    assert "expired" in (await resp.json())["message"]
    assert query(settings, "SELECT id FROM plan_approvals") == []
