"""An objection asks the owner to check in, and lapses if they don't (docs/lifecycle.md
"Objections"): the window runs from the guardian's first objection in the round, the owner is
told its end and reminded halfway, a check-in is the false alarm as always, and a lapse tells
everyone and lets the deadline apply again as after a withdrawal, its notices first."""

from __future__ import annotations

import re
from datetime import timedelta

from tests.helpers import sign_in
from tests.lifecycle_helpers import activate_plan, get_overview, guardian_session, report
from tests.plan_helpers import activity_rows, query
from tests.support.mail import CHECK_IN_LINK, mails
from tests.support.plans import objecting, parse, withdrawing

DAY = 24 * 3600
PAGE = re.compile(r"https://legacy\.example\.test(/guardian/[A-Za-z0-9_-]+)")


async def test_the_window_runs_from_the_first_objection_and_the_owner_is_reminded_once(
    client, clock, run_worker, settings, email_provider
):
    owner = await sign_in(client)
    # The default deadline: 30 days, then release; a check-in lasts past the objection's window.
    setup = await activate_plan(client, owner, guardians=2, settings={"checkInIntervalSeconds": 90 * DAY})
    first, second = setup.guardians
    work = email_provider.settings
    assert settings.plan_objection_check_in_seconds == 14 * DAY  # the default
    assert (await report(client, setup, first)).status == 200
    objected_at = clock.now()
    resp = await objecting(client, setup, second)
    assert resp.status == 200, await resp.text()
    lapses_at = parse((await resp.json())["objectionLapsesAt"])
    assert abs(lapses_at - objected_at - timedelta(days=14)) < timedelta(minutes=1)
    overview = await get_overview(client, owner)
    by_name = {g["name"]: g for g in overview["approvals"]["guardians"]}
    assert parse(by_name["Guardian 1"]["objectionLapsesAt"]) == lapses_at
    assert by_name["Guardian 0"]["objectionLapsesAt"] is None
    assert "when the objection lapses unless you have checked in" in overview["verificationNotice"]
    await run_worker(settings=work)
    [told] = mails(email_provider, "owner@example.org", "Guardian 1 says the verification")
    assert (
        "It holds the deadline back only until" in told["text"]
        and "if you have not checked in" in told["text"]
    )
    [others] = mails(email_provider, "guardian0@example.org", "A guardian says Olive Owner is alive")
    assert "if Olive Owner has not checked in by then, the objection lapses" in others["text"]
    # The guardian's page gives the date too.
    [link] = PAGE.findall(mails(email_provider, "guardian1@example.org", "")[-1]["text"])
    page = await client.get(link)
    assert page.status == 200
    assert "It holds the deadline back until" in await page.text()

    # Withdrawn and made again: the window does not restart.
    clock.advance(days=3)
    assert (await withdrawing(client, setup, second)).status == 200
    assert (await objecting(client, setup, second)).status == 200
    session = await guardian_session(client, second)
    [mine] = await (await client.get("/api/legacy/guardianships", headers=session.headers)).json()
    assert parse(mine["objectionLapsesAt"]) == lapses_at

    clock.advance(days=4, seconds=60)  # halfway: the owner is reminded, with a check-in link
    await run_worker(settings=work)
    clock.advance(days=1)
    await run_worker(settings=work)
    [reminded] = mails(
        email_provider, "owner@example.org", "Please check in: the objection from Guardian 1 lapses"
    )
    assert "Guardian 1 told us" in reminded["text"] and CHECK_IN_LINK.search(reminded["text"])
    kinds = [e["kind"] for e in activity_rows(settings, owner.user["id"])]
    assert kinds.count("plan.objection_reminder_sent") == 1

    # The owner checks in with the link: the false alarm, as after any check-in; nothing lapses.
    token = CHECK_IN_LINK.search(reminded["text"]).group(1)
    resp = await client.post("/api/legacy/check-in/link", json={"token": token})
    assert resp.status == 200, await resp.text()
    clock.advance(days=10)
    await run_worker(settings=work)
    assert (await get_overview(client, owner))["status"] == "Active"
    assert not query(settings, "SELECT id FROM outbox WHERE kind LIKE 'objection_lapsed%%'")
    assert mails(email_provider, "guardian1@example.org", "Good news: it was a false alarm")


async def test_a_lapse_is_told_and_lets_the_deadline_release_only_after_its_notices(
    client, clock, run_worker, settings, email_provider
):
    owner = await sign_in(client)
    deadline = {"verificationTimeoutSeconds": 3 * DAY, "onVerificationTimeout": "release"}
    setup = await activate_plan(client, owner, guardians=2, settings=deadline)
    first, second = setup.guardians
    work = email_provider.settings
    assert (await report(client, setup, first)).status == 200
    assert (await objecting(client, setup, second)).status == 200
    clock.advance(days=4)  # past the deadline: it waits while the objection stands
    await run_worker(settings=work)
    assert (await get_overview(client, owner))["status"] == "PendingVerification"
    [waiting] = mails(email_provider, "owner@example.org", "Your plan is still waiting")
    assert "It holds the deadline back only until" in waiting["text"]

    clock.advance(days=10, seconds=60)  # the window is over: it lapses
    await run_worker(settings=work)
    overview = await get_overview(client, owner)
    assert overview["status"] == "PendingVerification"  # not released at the lapse
    assert overview["approvals"]["objections"] == 0
    [lapsed] = mails(email_provider, "owner@example.org", "The objection from Guardian 1 has lapsed")
    assert "Guardian 1 told us you are alive" in lapsed["text"] and CHECK_IN_LINK.search(lapsed["text"])
    assert (
        "The deadline applies again" in lapsed["text"] and "your plan will be released then" in lapsed["text"]
    )
    [final] = mails(email_provider, "owner@example.org", "Last warning")
    assert CHECK_IN_LINK.search(final["text"])
    [objector] = mails(email_provider, "guardian1@example.org", "Your objection about Olive Owner's plan")
    assert "you cannot object again in this verification" in objector["text"]
    [other] = mails(email_provider, "guardian0@example.org", "An objection about Olive Owner's plan")
    assert "Guardian 1 told us Olive Owner is alive" in other["text"]
    entries = activity_rows(settings, owner.user["id"])
    assert [e for e in entries if e["kind"] == "guardian.objection_lapsed"]
    # That guardian cannot object again in this round: their page no longer offers it, and a
    # direct answer is refused.
    link = [
        found for m in mails(email_provider, "guardian1@example.org", "") for found in PAGE.findall(m["text"])
    ][-1]
    shown = await (await client.get(link)).text()
    assert 'value="object"' not in shown and 'value="approve"' in shown
    assert "you cannot object again in it" in shown
    resp = await objecting(client, setup, second)
    assert resp.status == 409 and "lapsed" in (await resp.json())["message"]

    # The deadline falls again the warning interval after the lapse, not sooner.
    journey = await (await client.get("/api/legacy/journey", headers=owner.headers)).json()
    interval = timedelta(seconds=settings.plan_deadline_warning_seconds)
    assert (
        interval - timedelta(minutes=1)
        < parse(journey["verification"]["deadlineAt"]) - clock.now()
        <= interval
    )
    clock.advance(seconds=settings.plan_deadline_warning_seconds - 300)
    await run_worker(settings=work)
    assert (await get_overview(client, owner))["status"] == "PendingVerification"
    clock.advance(seconds=301)
    await run_worker(settings=work)
    assert (await get_overview(client, owner))["status"] == "Approved"


async def test_a_lapse_before_the_deadline_leaves_it_as_it_was(
    make_client, clock, run_worker, settings, email_provider
):
    client = await make_client(plan_objection_check_in_seconds=2 * DAY)
    owner = await sign_in(client)
    setup = await activate_plan(client, owner, guardians=3, threshold=2)
    first, second, third = setup.guardians
    work = email_provider.settings
    assert (await report(client, setup, first)).status == 200
    assert (await objecting(client, setup, second)).status == 200
    clock.advance(days=1)
    assert (await objecting(client, setup, third)).status == 200
    clock.advance(days=1, seconds=60)  # the first lapses; the other still stands
    await run_worker(settings=work)
    [lapsed] = mails(email_provider, "owner@example.org", "The objection from Guardian 1 has lapsed")
    assert "Another guardian still objects" in lapsed["text"]
    assert (await get_overview(client, owner))["approvals"]["objections"] == 1
    clock.advance(days=1)  # the second lapses: the default deadline (30 days) applies, unchanged
    await run_worker(settings=work)
    [_, last] = mails(email_provider, "owner@example.org", "The objection from")
    assert "The deadline applies again" in last["text"]
    journey = await (await client.get("/api/legacy/journey", headers=owner.headers)).json()
    started = parse(journey["verification"]["startedAt"])
    assert parse(journey["verification"]["deadlineAt"]) == started + timedelta(days=30)
    # Approvals that reach the threshold still release.
    assert (await get_overview(client, owner))["status"] == "PendingVerification"


async def test_readiness_warns_when_one_silent_guardian_holds_a_waiting_plan(client):
    owner = await sign_in(client)
    waits = {"onVerificationTimeout": "wait"}
    setup = await activate_plan(client, owner, guardians=2, threshold=2, settings=waits)
    sentence = "one of them who stays silent holds it back for ever"
    assert any(sentence in w for w in setup.overview["readiness"]["warnings"])
    resp = await client.patch("/api/legacy", json={"guardianThreshold": 1}, headers=owner.headers)
    assert resp.status == 200
    assert not any(sentence in w for w in (await get_overview(client, owner))["readiness"]["warnings"])
    resp = await client.patch(
        "/api/legacy",
        json={"guardianThreshold": 2, "onVerificationTimeout": "release"},
        headers=owner.headers,
    )
    assert resp.status == 200
    assert not any(sentence in w for w in (await get_overview(client, owner))["readiness"]["warnings"])
