"""Verification never stalls in silence: guardians who have not approved are reminded 3 and 7
days in (once each per round), the owner may set a deadline that waits or releases, and a
guardian cannot report again right after the owner's veto."""

from __future__ import annotations

import asyncio
import re
from datetime import datetime, timedelta

from stellar_sdk import StrKey

from tests.helpers import assert_error, sign_in
from tests.lifecycle_helpers import activate_plan, approve, get_overview, report
from tests.plan_helpers import activity_rows, query

DAY = 86400
LINK = re.compile(r"https://legacy\.example\.test/check-in/([0-9a-f]{64})")
CONTRACT_ID = StrKey.encode_contract(bytes(32))


def guardian_reminders(settings):
    return query(
        settings,
        "SELECT recipient_id::text AS guardian, context->>'days' AS days FROM outbox"
        " WHERE kind = 'verification_reminder' ORDER BY created_at, recipient_id",
    )


async def test_reminders_3_and_7_days_in_once_per_round(client, clock, run_worker, settings, email_provider):
    owner = await sign_in(client)
    # A majority: 2 approvals; no deadline (new plans have one since #24).
    setup = await activate_plan(client, owner, guardians=3, settings={"verificationTimeoutSeconds": None})
    first, second, third = setup.guardians
    assert (await report(client, setup, first)).status == 200
    assert (await approve(client, setup, first)).status == 200
    waiting = sorted([second.row["id"], third.row["id"]])
    work = email_provider.settings

    clock.advance(days=3, seconds=1)
    await asyncio.gather(run_worker(settings=work), run_worker(settings=work))
    await run_worker(settings=work)
    rows = guardian_reminders(settings)
    assert sorted(r["guardian"] for r in rows) == waiting and {r["days"] for r in rows} == {"3"}
    [mail] = email_provider.to("guardian1@example.org")[-1:]
    assert "Olive Owner" in mail.body["text"] and "3 days" in mail.body["text"]
    assert email_provider.to("guardian0@example.org")[-1].body["subject"] != mail.body["subject"]

    clock.advance(days=4)
    await asyncio.gather(run_worker(settings=work), run_worker(settings=work))
    clock.advance(days=30)  # nothing more in this round, however long it waits
    await run_worker(settings=work)
    rows = guardian_reminders(settings)
    assert [r["days"] for r in rows] == ["3", "3", "7", "7"]
    assert (await get_overview(client, owner))["status"] == "PendingVerification"  # no deadline: waits

    # A veto ends the round; the next round reminds again.
    assert (await client.post("/api/legacy/check-in", headers=owner.headers)).status == 200
    assert (await report(client, setup, first)).status == 200
    clock.advance(days=3, seconds=1)
    await run_worker(settings=work)
    assert [r["days"] for r in guardian_reminders(settings)] == ["3", "3", "7", "7", "3", "3", "3"]


async def test_after_an_outage_only_the_current_reminder_goes_out(client, clock, run_worker, settings):
    owner = await sign_in(client)
    setup = await activate_plan(client, owner, guardians=2)
    assert (await report(client, setup, setup.guardians[0])).status == 200
    clock.advance(days=8)  # both reminders fell due while no worker ran
    await run_worker()
    assert [r["days"] for r in guardian_reminders(settings)] == ["7", "7"]


async def test_a_deadline_that_releases(client, clock, run_worker, settings, email_provider):
    owner = await sign_in(client)
    setup = await activate_plan(
        client,
        owner,
        guardians=2,
        settings={"verificationTimeoutSeconds": 5 * DAY, "onVerificationTimeout": "release"},
    )
    assert setup.overview["settings"]["verificationTimeoutSeconds"] == 5 * DAY
    assert setup.overview["settings"]["onVerificationTimeout"] == "release"
    assert (await report(client, setup, setup.guardians[0])).status == 200
    assert (await approve(client, setup, setup.guardians[0])).status == 200  # 1 of 2
    work = email_provider.settings
    clock.advance(days=4, seconds=1)  # the owner's final warning, a day before the deadline (#24)
    await run_worker(settings=work)
    assert email_provider.to("owner@example.org")[-1].body["subject"].startswith("Last warning")
    clock.advance(days=1, seconds=-31)  # (the test clock also runs in real time: a margin)
    await run_worker(settings=work)
    assert (await get_overview(client, owner))["status"] == "PendingVerification"  # not early
    clock.advance(seconds=31)
    await asyncio.gather(run_worker(settings=work), run_worker(settings=work))
    overview = await get_overview(client, owner)
    assert overview["status"] == "Approved" and overview["releaseAt"]
    release_at = datetime.fromisoformat(overview["releaseAt"].replace("Z", "+00:00"))
    assert release_at - clock.now() <= timedelta(seconds=61)  # the cancel window still runs
    transitions = query(settings, "SELECT actor, reason FROM plan_transitions WHERE to_status = 'Approved'")
    assert transitions == [{"actor": "scheduler", "reason": "verification_timeout"}]
    owner_mails = email_provider.to("owner@example.org")
    timeout_mail = owner_mails[-1]
    assert "check in" in timeout_mail.body["text"].lower()
    [token] = LINK.findall(timeout_mail.body["text"])
    # The owner is alive after all: the link stops the release.
    resp = await client.post("/api/legacy/check-in/link", json={"token": token})
    assert resp.status == 200 and (await resp.json())["status"] == "Active"
    kinds = [r["kind"] for r in activity_rows(settings, owner.user["id"])]
    assert "plan.verification_timed_out" in kinds


async def test_a_deadline_that_waits(client, clock, run_worker, settings, email_provider):
    owner = await sign_in(client)
    setup = await activate_plan(
        client,
        owner,
        guardians=2,
        settings={"verificationTimeoutSeconds": 4 * DAY, "onVerificationTimeout": "wait"},
    )
    assert setup.overview["settings"]["onVerificationTimeout"] == "wait"
    assert (await report(client, setup, setup.guardians[0])).status == 200
    work = email_provider.settings
    clock.advance(days=4, seconds=1)
    for _ in range(2):
        await asyncio.gather(run_worker(settings=work), run_worker(settings=work))
    assert (await get_overview(client, owner))["status"] == "PendingVerification"
    notices = query(
        settings, "SELECT kind, recipient_type FROM outbox WHERE kind LIKE 'verification_timeout%%'"
    )
    assert sorted((n["kind"], n["recipient_type"]) for n in notices) == [
        ("verification_timeout", "owner"),
        ("verification_timeout_guardian", "guardian"),
        ("verification_timeout_guardian", "guardian"),
    ]
    mail = email_provider.to("owner@example.org")[-1]
    assert LINK.search(mail.body["text"]) and "wait" in mail.body["text"]
    # The guardians read how to say it is a mistake, still possible while the plan waits.
    to_guardian = email_provider.to("guardian1@example.org")
    [told] = [m.body for m in to_guardian if "still waiting" in m.body["subject"]]
    assert '"This is a mistake"' in told["text"] and "As they chose" in told["text"]
    journey = await (await client.get("/api/legacy/journey", headers=owner.headers)).json()
    verification = journey["verification"]
    assert verification["waiting"] is True and verification["timedOutAt"]
    assert verification["deadlineAt"] and verification["onTimeout"] == "wait"
    # Still waiting: the guardians can still approve, and nothing is released by the deadline.
    clock.advance(days=30)
    await run_worker(settings=work)
    assert (await get_overview(client, owner))["status"] == "PendingVerification"
    assert len(query(settings, "SELECT id FROM outbox WHERE kind LIKE 'verification_timeout%%'")) == 3


async def test_verification_settings_are_validated(make_client, client):
    owner = await sign_in(client)
    for body, field in (
        ({"verificationTimeoutSeconds": 59}, "verificationTimeoutSeconds"),  # below the bound (60 in tests)
        ({"verificationTimeoutSeconds": "86400"}, "verificationTimeoutSeconds"),
        ({"verificationTimeoutSeconds": 0}, "verificationTimeoutSeconds"),
        ({"verificationTimeoutSeconds": 10 * 366 * DAY}, "verificationTimeoutSeconds"),
        ({"onVerificationTimeout": "maybe"}, "onVerificationTimeout"),
        ({"onVerificationTimeout": None}, "onVerificationTimeout"),
    ):
        resp = await client.patch("/api/legacy", json=body, headers=owner.headers)
        assert resp.status == 400, body
        error = await resp.json()
        assert_error(error, 400)
        assert field in error["details"], error
    resp = await client.patch(
        "/api/legacy",
        json={"verificationTimeoutSeconds": 7 * DAY, "onVerificationTimeout": "release"},
        headers=owner.headers,
    )
    assert resp.status == 200
    body = await resp.json()
    assert body["settings"]["verificationTimeoutSeconds"] == 7 * DAY
    resp = await client.patch("/api/legacy", json={"verificationTimeoutSeconds": None}, headers=owner.headers)
    assert resp.status == 200 and (await resp.json())["settings"]["verificationTimeoutSeconds"] is None
    # With an on-chain contract a release needs the guardians' approvals on-chain: no "release".
    chain = await make_client(service_contract_id=CONTRACT_ID)
    other = await sign_in(chain)
    resp = await chain.patch("/api/legacy", json={"onVerificationTimeout": "release"}, headers=other.headers)
    assert resp.status == 400 and "onVerificationTimeout" in (await resp.json())["details"]


async def test_a_report_right_after_a_veto_waits_for_the_cooldown(make_client, clock, settings):
    client = await make_client(plan_report_cooldown_seconds=24 * 3600)
    owner = await sign_in(client)
    setup = await activate_plan(client, owner, guardians=2)
    assert (await report(client, setup, setup.guardians[0])).status == 200
    assert (await client.post("/api/legacy/check-in", headers=owner.headers)).status == 200
    clock.advance(hours=1)
    resp = await report(client, setup, setup.guardians[1])
    assert resp.status == 429
    error = await resp.json()
    assert_error(error, 429)
    assert "checked in" in error["message"]
    assert 22 * 3600 < int(resp.headers["Retry-After"]) <= 23 * 3600
    assert (await get_overview(client, owner))["status"] == "Active"
    assert query(settings, "SELECT count(*) AS n FROM plan_reports")[0]["n"] == 1
    clock.advance(hours=23, seconds=1)
    assert (await report(client, setup, setup.guardians[1])).status == 200
    assert (await get_overview(client, owner))["status"] == "PendingVerification"
