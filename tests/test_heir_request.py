"""An heir can ask (#24 section 4): through their claim link an heir starts a verification; the
owner is emailed with a check-in link naming them, the accepted guardians get their name and
note; refused in plain words when it cannot apply, and after a veto within the cooldown."""

from __future__ import annotations

import re

from tests.helpers import assert_error, sign_in
from tests.lifecycle_helpers import activate_plan, get_overview, report
from tests.plan_helpers import activity_rows, query

LINK = re.compile(r"https://legacy\.example\.test/check-in/([0-9a-f]{64})")
NOTE = "Mum passed away on Tuesday; the hospital can confirm."


async def ask(client, token, note=None):
    return await client.post(f"/api/claim/{token}/request", json={"note": note} if note is not None else {})


async def test_an_heir_starts_a_verification(client, clock, run_worker, settings, email_provider):
    owner = await sign_in(client)
    setup = await activate_plan(client, owner, guardians=2)
    heir = setup.beneficiaries[0]
    resp = await ask(client, heir["claimToken"], NOTE)
    assert resp.status == 202, await resp.text()
    assert await resp.json() == {"status": "requested"}
    assert resp.headers["Cache-Control"] == "no-store"  # the claim gate's privacy headers
    overview = await get_overview(client, owner)
    assert overview["status"] == "PendingVerification"
    transitions = query(
        settings, "SELECT actor, reason FROM plan_transitions WHERE to_status = 'PendingVerification'"
    )
    assert transitions == [{"actor": "beneficiary", "reason": "beneficiary_request"}]
    # The note is sealed at rest and never on the timeline.
    [row] = query(settings, "SELECT note_sealed FROM heir_requests")
    assert row["note_sealed"] and NOTE not in row["note_sealed"]
    timeline = activity_rows(settings, owner.user["id"])
    assert "beneficiary.requested_verification" in [r["kind"] for r in timeline]
    assert not any(NOTE in str(r) for r in timeline)

    await run_worker(settings=email_provider.settings)
    # (Each run delivers its batch concurrently: pick the emails by subject, not by order.)
    [mail] = [m.body for m in email_provider.to("owner@example.org") if "verify" in m.body["subject"]]
    assert "Heir 0" in mail["text"] and LINK.search(mail["text"]) and NOTE not in mail["text"]
    for index in range(2):
        [mail] = [
            m.body
            for m in email_provider.to(f"guardian{index}@example.org")
            if "help is needed" in m.body["subject"]
        ]
        assert "Heir 0" in mail["text"] and NOTE in mail["text"] and "approve" in mail["text"]
    assert not email_provider.to("heir1@example.org")

    # A verification runs now: asking again is refused, in plain words.
    resp = await ask(client, setup.beneficiaries[1]["claimToken"])
    assert resp.status == 409
    body = await resp.json()
    assert_error(body, 409)
    assert "already verifying" in body["message"]
    # The deadline applies as to a guardian's report (30 days by default; warnings first).
    journey = await (await client.get("/api/legacy/journey", headers=owner.headers)).json()
    assert (
        journey["verification"]["reason"] == "beneficiary_request" and journey["verification"]["deadlineAt"]
    )


async def test_refusals_and_the_cooldown(make_client, clock, settings):
    client = await make_client(plan_report_cooldown_seconds=24 * 3600)
    owner = await sign_in(client)
    # Not active yet (Draft): 409.
    setup = await activate_plan(client, owner, guardians=1)
    token = setup.beneficiaries[0]["claimToken"]
    assert (await client.post("/api/legacy/deactivate", headers=owner.headers)).status == 200
    resp = await ask(client, token)
    assert resp.status == 409 and "not active" in (await resp.json())["message"]
    assert (await client.post("/api/legacy/activate", headers=owner.headers)).status == 200
    # The owner turned requests off: 409, and readiness says so.
    resp = await client.patch("/api/legacy", json={"allowBeneficiaryRequests": False}, headers=owner.headers)
    assert resp.status == 200
    body = await resp.json()
    assert body["settings"]["allowBeneficiaryRequests"] is False
    assert any("cannot ask for a verification" in w for w in body["readiness"]["warnings"])
    resp = await ask(client, token)
    assert resp.status == 409 and "chosen not to take requests" in (await resp.json())["message"]
    resp = await client.patch("/api/legacy", json={"allowBeneficiaryRequests": "yes"}, headers=owner.headers)
    assert resp.status == 400
    assert (
        await client.patch("/api/legacy", json={"allowBeneficiaryRequests": True}, headers=owner.headers)
    ).status == 200
    # Too long a note: 400; an unknown token: the gate's 404.
    resp = await ask(client, token, "x" * 1001)
    assert resp.status == 400 and "note" in (await resp.json())["details"]
    resp = await ask(client, "0" * 64)
    assert resp.status == 404
    assert_error(await resp.json(), 404)
    # After the owner's veto, within the cooldown: 429 with Retry-After.
    assert (await report(client, setup, setup.guardians[0])).status == 200
    assert (await client.post("/api/legacy/check-in", headers=owner.headers)).status == 200
    clock.advance(hours=1)
    resp = await ask(client, token)
    assert resp.status == 429
    body = await resp.json()
    assert_error(body, 429)
    assert "checked in" in body["message"]
    assert 22 * 3600 < int(resp.headers["Retry-After"]) <= 23 * 3600
    clock.advance(hours=23, seconds=1)
    assert (await ask(client, token)).status == 202
    assert (await get_overview(client, owner))["status"] == "PendingVerification"
    assert query(settings, "SELECT count(*) AS n FROM heir_requests")[0]["n"] == 1


async def test_an_heirs_request_releases_by_the_default_deadline(
    client, clock, run_worker, settings, email_provider
):
    """Bitwarden's model end to end: the heir asks, nobody answers, the owner is warned halfway
    and a last time, the default deadline releases, and the heir's link opens the capsule; asking
    again while Approved or once Released is refused in plain words."""
    owner = await sign_in(client)
    setup = await activate_plan(client, owner, guardians=2)
    assert setup.overview["settings"]["onVerificationTimeout"] == "release"
    heir, other = setup.beneficiaries
    assert await (await client.get(f"/api/claim/{heir['claimToken']}")).json() == {"status": "locked"}
    assert (await ask(client, heir["claimToken"], NOTE)).status == 202
    work = email_provider.settings
    await run_worker(settings=work)
    [started] = [m.body for m in email_provider.to("owner@example.org") if "verify" in m.body["subject"]]
    assert "Heir 0" in started["text"] and LINK.search(started["text"])

    clock.advance(days=15, seconds=1)  # halfway through the 30 days
    await run_worker(settings=work)
    clock.advance(days=14)  # a day before the deadline: the last warning
    await run_worker(settings=work)
    assert (await get_overview(client, owner))["status"] == "PendingVerification"
    clock.advance(days=1)  # the deadline
    await run_worker(settings=work)
    overview = await get_overview(client, owner)
    assert overview["status"] == "Approved", overview
    resp = await ask(client, other["claimToken"])
    assert resp.status == 409
    body = await resp.json()
    assert_error(body, 409)
    assert body["message"].startswith("The guardians have already approved this plan's release")
    assert body["details"] == {"status": "Approved"}

    clock.advance(seconds=setup.overview["settings"]["cancelWindowSeconds"] + 1)
    await run_worker(settings=work)
    assert (await get_overview(client, owner))["status"] == "Released"
    # The owner was warned before it, each warning once, in order; then the release.
    rows = query(
        settings,
        "SELECT kind, context->>'stage' AS stage FROM outbox WHERE recipient_type = 'owner'"
        " AND kind IN ('verification_started', 'deadline_warning', 'verification_timeout')"
        " ORDER BY created_at",
    )
    assert [(r["kind"], r["stage"]) for r in rows] == [
        ("verification_started", None),
        ("deadline_warning", "halfway"),
        ("deadline_warning", "final"),
        ("verification_timeout", None),
    ]
    transitions = query(settings, "SELECT to_status, actor, reason FROM plan_transitions ORDER BY seq")
    assert [(t["to_status"], t["actor"], t["reason"]) for t in transitions][-3:] == [
        ("PendingVerification", "beneficiary", "beneficiary_request"),
        ("Approved", "scheduler", "verification_timeout"),
        ("Released", "scheduler", "released"),
    ]
    assert email_provider.to("heir0@example.org")
    capsule = await (await client.get(f"/api/claim/{heir['claimToken']}")).json()
    assert capsule["status"] == "released"

    resp = await ask(client, heir["claimToken"])
    assert resp.status == 409
    body = await resp.json()
    assert_error(body, 409)
    assert body["message"] == (
        "This plan is not active, so there is nothing to ask: it has already been released."
    )
    assert body["details"] == {"status": "Released"}
    assert query(settings, "SELECT count(*) AS n FROM heir_requests")[0]["n"] == 1
