"""A guardian who knows the owner is alive can say so (docs/lifecycle.md "Objections"): an
objection stops the deadline from releasing (the plan waits at it), is told to the owner and
the other guardians with the name and note, can be withdrawn (before or after the deadline:
after it, the owner gets a final warning and a new deadline), and never stops approvals that
reach the threshold. One answer per guardian and round."""

from __future__ import annotations

from datetime import timedelta

from tests.helpers import sign_in
from tests.lifecycle_helpers import activate_plan, approve, get_overview, guardian_session, report
from tests.plan_helpers import activity_rows, query
from tests.support.mail import CHECK_IN_LINK, mails
from tests.support.onchain import approving, build_sign_submit, run
from tests.support.plans import NOTE, objecting, parse, withdrawing

# Longer than the deadline: these tests are about an objection that stands (test_objection_lapses.py
# is about its window).
STANDS = {"plan_objection_check_in_seconds": 60 * 24 * 3600}


async def test_an_objection_stops_a_default_deadline_release_until_withdrawn(
    make_client, clock, run_worker, settings, email_provider
):
    client = await make_client(**STANDS)
    owner = await sign_in(client)
    setup = await activate_plan(client, owner, guardians=2)  # the default: 30 days, then release
    first, second = setup.guardians
    work = email_provider.settings
    assert (await report(client, setup, first)).status == 200
    await run_worker(settings=work)
    # Every verification email to guardians says what the deadline does, whose it is, how to object.
    [asked] = mails(email_provider, "guardian1@example.org", "Your help is needed")
    assert "will be released then all the same" in asked["text"]
    assert "the service's usual deadline, which Olive Owner has not changed" in asked["text"]
    assert '"This is a mistake"' in asked["text"]

    resp = await objecting(client, setup, second)
    assert resp.status == 200, await resp.text()
    assert (await objecting(client, setup, second)).status == 409  # one answer per round
    await run_worker(settings=work)
    [told] = mails(email_provider, "owner@example.org", "Guardian 1 says the verification")
    assert "Guardian 1" in told["text"] and NOTE in told["text"] and CHECK_IN_LINK.search(told["text"])
    [others] = mails(email_provider, "guardian0@example.org", "A guardian says Olive Owner is alive")
    assert "Guardian 1" in others["text"] and NOTE in others["text"]
    assert not mails(email_provider, "guardian1@example.org", "A guardian says")  # not to themselves
    overview = await get_overview(client, owner)
    assert overview["approvals"]["objections"] == 1
    assert "a guardian objects" in overview["verificationNotice"]
    by_name = {g["name"]: g for g in overview["approvals"]["guardians"]}
    assert by_name["Guardian 1"]["objectedAt"] and by_name["Guardian 0"]["objectedAt"] is None
    session = await guardian_session(client, second)
    [mine] = await (await client.get("/api/legacy/guardianships", headers=session.headers)).json()
    assert mine["objectedAt"] is not None
    # The note is never in the timeline.
    entries = activity_rows(settings, owner.user["id"])
    assert any(e["kind"] == "guardian.objected" for e in entries) and NOTE not in str(entries)

    clock.advance(days=31)  # past the deadline: no warning of a release, and no release
    await run_worker(settings=work)
    await run_worker(settings=work)
    assert (await get_overview(client, owner))["status"] == "PendingVerification"
    assert not query(settings, "SELECT id FROM outbox WHERE kind = 'deadline_warning'")
    [waiting] = mails(email_provider, "owner@example.org", "Your plan is still waiting")
    assert "A guardian objects" in waiting["text"]
    [waiting] = mails(email_provider, "guardian0@example.org", "Olive Owner's plan is still waiting")
    assert "A guardian objects" in waiting["text"]

    # Withdrawn after the deadline: the owner's final warning, and a deadline a day from now.
    resp = await withdrawing(client, setup, second)
    assert resp.status == 200, await resp.text()
    assert (await withdrawing(client, setup, second)).status == 409
    await run_worker(settings=work)
    assert mails(email_provider, "owner@example.org", "Guardian 1 has withdrawn their objection")
    assert mails(email_provider, "guardian0@example.org", "A guardian of Olive Owner's plan has withdrawn")
    [final] = mails(email_provider, "owner@example.org", "Last warning")
    assert CHECK_IN_LINK.search(final["text"])
    assert (await get_overview(client, owner))["approvals"]["objections"] == 0
    journey = await (await client.get("/api/legacy/journey", headers=owner.headers)).json()
    deadline = parse(journey["verification"]["deadlineAt"])
    interval = timedelta(seconds=settings.plan_deadline_warning_seconds)
    assert interval - timedelta(minutes=1) < deadline - clock.now() <= interval
    clock.advance(seconds=settings.plan_deadline_warning_seconds - 300)
    await run_worker(settings=work)
    assert (await get_overview(client, owner))["status"] == "PendingVerification"
    clock.advance(seconds=301)
    await run_worker(settings=work)
    assert (await get_overview(client, owner))["status"] == "Approved"


async def test_an_objection_withdrawn_before_the_deadline_leaves_it_as_it_was(
    make_client, clock, run_worker, settings, email_provider
):
    client = await make_client(**STANDS)
    owner = await sign_in(client)
    setup = await activate_plan(client, owner, guardians=2)
    first, second = setup.guardians
    work = email_provider.settings
    assert (await report(client, setup, first)).status == 200
    assert (await objecting(client, setup, second, note=None)).status == 200
    clock.advance(days=16)  # past halfway: no warning while the objection stands
    await run_worker(settings=work)
    assert not query(settings, "SELECT id FROM outbox WHERE kind = 'deadline_warning'")
    assert (await withdrawing(client, setup, second)).status == 200
    await run_worker(settings=work)  # the halfway warning, now due
    stages = query(settings, "SELECT context->>'stage' AS stage FROM outbox WHERE kind = 'deadline_warning'")
    assert stages == [{"stage": "halfway"}]
    [halfway] = mails(email_provider, "owner@example.org", "Your plan will be released unless")
    assert "unless its owner chooses otherwise" in halfway["text"]  # the owner never chose it
    [told] = mails(email_provider, "owner@example.org", "Guardian 1 says the verification")
    assert "They wrote" not in told["text"]  # no note given
    clock.advance(days=13)  # day 29: the final warning
    await run_worker(settings=work)
    clock.advance(days=1, seconds=1)  # the deadline, unchanged
    await run_worker(settings=work)
    assert (await get_overview(client, owner))["status"] == "Approved"


async def test_approvals_still_release_after_an_objection_and_one_answer_per_round(
    client, clock, run_worker, settings, email_provider
):
    owner = await sign_in(client)
    setup = await activate_plan(client, owner, guardians=3, threshold=2)
    first, second, third = setup.guardians
    work = email_provider.settings
    assert (await report(client, setup, first)).status == 200
    assert (await approve(client, setup, first)).status == 200
    # Objecting takes the approval back; approving again takes the objection back.
    assert (await objecting(client, setup, first)).status == 200
    overview = await get_overview(client, owner)
    assert overview["approvals"]["count"] == 0 and overview["approvals"]["objections"] == 1
    assert (await approve(client, setup, first)).status == 200
    overview = await get_overview(client, owner)
    assert overview["approvals"]["count"] == 1 and overview["approvals"]["objections"] == 0
    await run_worker(settings=work)
    [told] = mails(email_provider, "owner@example.org", "Guardian 0 has withdrawn their objection")
    assert "Guardian 0 has withdrawn their objection and approved the release" in told["text"]
    [took_back] = mails(email_provider, "owner@example.org", "Guardian 0 says the verification")
    assert "that approval no longer counts" in took_back["text"]

    # Another guardian objects; two approvals still reach the threshold and release.
    assert (await objecting(client, setup, third)).status == 200
    assert (await approve(client, setup, second)).status == 200
    assert (await get_overview(client, owner))["status"] == "Approved"
    assert (await objecting(client, setup, first)).status == 409  # only the owner's check-in now
    clock.advance(seconds=setup.overview["settings"]["cancelWindowSeconds"] + 1)
    await run_worker(settings=work)
    assert (await get_overview(client, owner))["status"] == "Released"


async def test_an_objection_needs_a_verification(client, clock, run_worker, settings):
    owner = await sign_in(client)
    setup = await activate_plan(client, owner, guardians=2)
    resp = await objecting(client, setup, setup.guardians[0])
    assert resp.status == 409 and "no verification running" in (await resp.json())["message"]
    assert (await withdrawing(client, setup, setup.guardians[0])).status == 409
    # A check-in ends the round and its objections.
    assert (await report(client, setup, setup.guardians[0])).status == 200
    assert (await objecting(client, setup, setup.guardians[1])).status == 200
    assert (await client.post("/api/legacy/check-in", headers=owner.headers)).status == 200
    assert (await report(client, setup, setup.guardians[0])).status in (200, 429)
    overview = await get_overview(client, owner)
    assert overview["approvals"]["objections"] == 0


async def test_an_approval_signed_on_chain_cannot_be_taken_back_but_takes_back_an_objection(
    onchain, soroban_rpc, run_worker
):
    setup = await approving(onchain, soroban_rpc, guardians=3, threshold=3)
    first, second = setup.guardians[0], setup.guardians[1]
    plan = setup.plan_id
    assert (await objecting(onchain, setup, first)).status == 200
    for guardian in (first, second):
        session = await guardian_session(onchain, guardian)
        await build_sign_submit(
            onchain,
            f"/api/legacy/guardianships/{plan}/approve/build",
            f"/api/legacy/guardianships/{plan}/submit",
            guardian.keypair,
            soroban_rpc,
            headers=session.headers,
        )
        await run(run_worker, soroban_rpc)
    overview = await get_overview(onchain, setup.owner)
    assert overview["approvals"]["count"] == 2 and overview["approvals"]["objections"] == 0
    resp = await objecting(onchain, setup, second)
    assert resp.status == 409 and "cannot be taken back" in (await resp.json())["message"]
    assert (await get_overview(onchain, setup.owner))["approvals"]["count"] == 2
