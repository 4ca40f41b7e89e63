"""A declined guardian never counts (#24 section 2): a majority is of the guardians who have not
declined, frozen when a verification round starts; the lost-wallet approvals use the same rule;
the owner hears when declines leave fewer accepted guardians than the approvals asked for."""

from __future__ import annotations

from stellar_sdk import Keypair

from tests.helpers import sign_in
from tests.lifecycle_helpers import (
    Guardian,
    activate_plan,
    answer,
    approve,
    get_overview,
    guardian_session,
    past_setup,
    report,
)
from tests.plan_helpers import create, query


async def test_four_guardians_two_declined_need_two_approvals(client, settings):
    owner = await sign_in(client)
    setup = await activate_plan(client, owner, guardians=4, threshold=1, accepting=4)
    # Back to a majority (the owner's choice); then two step down while the plan is Active.
    resp = await client.patch("/api/legacy", json={"guardianThreshold": None}, headers=owner.headers)
    assert resp.status == 200, await resp.text()
    assert (await get_overview(client, owner))["approvals"]["threshold"] == 3  # 4 standing
    first, second, third, fourth = setup.guardians
    for guardian in (third, fourth):
        resp = await answer(client, guardian, owner_plan_id=setup.plan_id, verb="decline")
        assert resp.status == 200
    overview = await get_overview(client, owner)
    assert overview["approvals"]["threshold"] == 2  # a majority of the two who have not declined
    assert overview["readiness"]["problems"] == []
    session = await guardian_session(client, first)
    [item] = await (await client.get("/api/legacy/guardianships", headers=session.headers)).json()
    assert item["threshold"] == 2

    assert (await report(client, setup, first)).status == 200
    assert query(settings, "SELECT round_threshold FROM plans") == [{"round_threshold": 2}]
    assert (await approve(client, setup, first)).status == 200
    assert (await get_overview(client, owner))["status"] == "PendingVerification"
    assert (await approve(client, setup, second)).status == 200
    overview = await get_overview(client, owner)
    assert overview["status"] == "Approved" and overview["approvals"]["threshold"] == 2
    assert overview["approvals"]["count"] == 2

    # The veto ends the round: the number needed now is read live again.
    assert (await client.post("/api/legacy/check-in", headers=owner.headers)).status == 200
    assert query(settings, "SELECT round_threshold FROM plans") == [{"round_threshold": None}]
    assert (await get_overview(client, owner))["approvals"]["threshold"] == 2


async def test_an_unanswered_guardian_still_counts(client):
    """A plan cannot activate on one guardian of four: those who have not answered count."""
    owner = await sign_in(client)
    resp = await client.patch(
        "/api/users/me", json={"email": "owner@example.org", "name": "Olive Owner"}, headers=owner.headers
    )
    assert resp.status == 200
    await create(client, owner, "beneficiaries", allocationPercentage=100)
    guardians = []
    for index in range(4):
        keypair = Keypair.random()
        row = await create(
            client,
            owner,
            "guardians",
            name=f"G{index}",
            email=f"g{index}@example.org",
            walletAddress=keypair.public_key,
        )
        guardians.append(Guardian(keypair, row))
    plan_id = (await get_overview(client, owner))["id"]
    assert (await answer(client, guardians[0], owner_plan_id=plan_id)).status == 200
    overview = await get_overview(client, owner)
    assert overview["approvals"]["threshold"] == 3
    assert (await client.post("/api/legacy/activate", headers=owner.headers)).status == 409


async def test_a_decline_that_leaves_too_few_accepted_emails_the_owner(
    client, run_worker, email_provider, settings
):
    owner = await sign_in(client)
    setup = await activate_plan(client, owner, guardians=3, threshold=2)
    resp = await answer(client, setup.guardians[2], owner_plan_id=setup.plan_id, verb="decline")
    assert resp.status == 200
    await run_worker(settings=email_provider.settings)
    mail = past_setup(email_provider, settings)[-1]
    assert "Guardian 2" in mail.body["text"] and "declined" in mail.body["subject"].lower()
    assert "can still be released" in mail.body["text"]  # 2 accepted, 2 needed: still enough
    resp = await answer(client, setup.guardians[1], owner_plan_id=setup.plan_id, verb="decline")
    assert resp.status == 200
    await run_worker(settings=email_provider.settings)
    mail = past_setup(email_provider, settings)[-1]
    assert "Guardian 1" in mail.body["text"]
    assert "only 1 of your guardians has accepted" in mail.body["text"]
    assert "needs 2" in mail.body["text"]
    problems = (await get_overview(client, owner))["readiness"]["problems"]
    assert len(problems) == 1 and "Guardian 1" in problems[0] and "Guardian 2" in problems[0]


async def test_removing_a_guardian_that_leaves_too_few_accepted_emails_the_owner(
    client, run_worker, email_provider, settings
):
    owner = await sign_in(client)
    setup = await activate_plan(client, owner, guardians=3, threshold=2, accepting=2)
    resp = await client.delete(f"/api/guardians/{setup.guardians[0].row['id']}", headers=owner.headers)
    assert resp.status == 204, await resp.text()
    await run_worker(settings=email_provider.settings)
    mail = past_setup(email_provider, settings)[-1]
    assert "only 1 of your guardians has accepted" in mail.body["text"] and "needs 2" in mail.body["text"]
    problems = (await get_overview(client, owner))["readiness"]["problems"]
    assert len(problems) == 1 and "Guardian 2" in problems[0]
