"""Guardians say yes before they count: an invitation by email, accept or decline from the
guardian's own session, activation only with threshold-many accepted, and only accepted
guardians report or approve."""

from __future__ import annotations

from stellar_sdk import Keypair

from tests.helpers import assert_error, challenge, sign, sign_in
from tests.lifecycle_helpers import (
    Guardian,
    activate_plan,
    answer,
    approve,
    get_overview,
    guardian_session,
    report,
)
from tests.plan_helpers import activity_rows, query
from tests.support.guardian_page import draft_with_guardians


async def test_invitation_then_accept_then_activation(client, run_worker, email_provider, settings):
    owner = await sign_in(client)
    plan_id, guardians = await draft_with_guardians(client, owner)
    await run_worker(settings=email_provider.settings)
    for index, guardian in enumerate(guardians):
        [mail] = email_provider.to(f"guardian{index}@example.org")
        text = mail.body["text"]
        assert "Olive Owner" in mail.body["subject"] and "Olive Owner" in text
        assert guardian.keypair.public_key in text  # the wallet to sign in with
        assert "accept" in text.lower() and "checking in for about 104 days" in text  # 90 + 14, the defaults
        assert "https://app.example.test" in text
    resp = await client.get("/api/guardians", headers=owner.headers)
    rows = await resp.json()
    assert {(r["acceptedAt"], r["declinedAt"]) for r in rows} == {(None, None)}
    assert all(r["invitedAt"] for r in rows)

    # Nobody has answered: activation names who has not.
    resp = await client.post("/api/legacy/activate", headers=owner.headers)
    assert resp.status == 409
    problems = (await resp.json())["details"]["readiness"]["problems"]
    [problem] = problems
    assert "Guardian 0" in problem and "Guardian 1" in problem and "accept" in problem

    # The guardian sees the Draft plan as an invitation and accepts it.
    session = await guardian_session(client, guardians[0])
    [item] = await (await client.get("/api/legacy/guardianships", headers=session.headers)).json()
    assert item["planId"] == plan_id and item["status"] == "Draft" and item["invitation"] == "pending"
    resp = await answer(client, guardians[0], owner_plan_id=plan_id)
    assert resp.status == 200 and (await resp.json())["invitation"] == "accepted"
    [item] = await (await client.get("/api/legacy/guardianships", headers=session.headers)).json()
    assert item["invitation"] == "accepted" and item["acceptedAt"]
    again = await answer(client, guardians[0], owner_plan_id=plan_id)  # idempotent
    assert again.status == 200

    # One of two accepted; a majority of two needs both.
    problems = (await get_overview(client, owner))["readiness"]["problems"]
    assert len(problems) == 1 and "Guardian 1" in problems[0] and "Guardian 0" not in problems[0]
    assert (await client.post("/api/legacy/activate", headers=owner.headers)).status == 409
    # Ask for one approval only: one accepted guardian is enough.
    assert (
        await client.patch("/api/legacy", json={"guardianThreshold": 1}, headers=owner.headers)
    ).status == 200
    resp = await client.post("/api/legacy/activate", headers=owner.headers)
    assert resp.status == 200, await resp.text()
    rows = {r["name"]: r for r in await (await client.get("/api/guardians", headers=owner.headers)).json()}
    assert rows["Guardian 0"]["acceptedAt"] and rows["Guardian 1"]["acceptedAt"] is None
    kinds = [r["kind"] for r in activity_rows(settings, owner.user["id"])]
    assert "guardian.accepted" in kinds


async def test_decline_tells_the_owner_and_blocks_activation(client, run_worker, email_provider, settings):
    owner = await sign_in(client)
    plan_id, guardians = await draft_with_guardians(client, owner, count=1)
    resp = await answer(client, guardians[0], owner_plan_id=plan_id, verb="decline")
    assert resp.status == 200 and (await resp.json())["invitation"] == "declined"
    await run_worker(settings=email_provider.settings)
    [mail] = email_provider.to("owner@example.org")
    assert "Guardian 0" in mail.body["text"] and "declined" in mail.body["subject"].lower()
    assert "/check-in/" not in mail.body["text"]  # not a question of being alive
    [row] = await (await client.get("/api/guardians", headers=owner.headers)).json()
    assert row["declinedAt"] and row["acceptedAt"] is None
    resp = await client.post("/api/legacy/activate", headers=owner.headers)
    assert resp.status == 409
    [problem] = (await resp.json())["details"]["readiness"]["problems"]
    assert "declined" in problem and "Guardian 0" in problem
    # Changing their mind is allowed: accepting clears the refusal.
    assert (await answer(client, guardians[0], owner_plan_id=plan_id)).status == 200
    [row] = await (await client.get("/api/guardians", headers=owner.headers)).json()
    assert row["acceptedAt"] and row["declinedAt"] is None
    assert (await client.post("/api/legacy/activate", headers=owner.headers)).status == 200
    kinds = [r["kind"] for r in activity_rows(settings, owner.user["id"])]
    assert kinds.count("guardian.declined") == 1 and kinds.count("guardian.accepted") == 1


async def test_a_new_wallet_address_clears_the_answer_and_invites_again(client, run_worker, email_provider):
    owner = await sign_in(client)
    setup = await activate_plan(client, owner, guardians=1)
    await run_worker(settings=email_provider.settings)
    assert len(email_provider.to("guardian0@example.org")) == 1
    guardian = setup.guardians[0]
    # The owner fixes a mistyped name: nothing is asked again.
    resp = await client.patch(
        f"/api/guardians/{guardian.row['id']}", json={"name": "Gina Guardian"}, headers=owner.headers
    )
    assert (await resp.json())["acceptedAt"]
    # A new wallet: the answer belonged to the old one.
    new_keypair = Keypair.random()
    resp = await client.patch(
        f"/api/guardians/{guardian.row['id']}",
        json={"walletAddress": new_keypair.public_key},
        headers=owner.headers,
    )
    body = await resp.json()
    assert resp.status == 200 and body["acceptedAt"] is None and body["declinedAt"] is None
    await run_worker(settings=email_provider.settings)
    invitations = email_provider.to("guardian0@example.org")
    assert len(invitations) == 2 and new_keypair.public_key in invitations[1].body["text"]
    overview = await get_overview(client, owner)
    assert overview["status"] == "Active"
    # Active: a warning (not a refusal) that approvals cannot be reached any more.
    assert any("Gina Guardian" in p for p in overview["readiness"]["problems"])
    # The old wallet's account no longer guards the plan; the new one must accept first.
    old = await guardian_session(client, guardian)
    assert (await report(client, setup, guardian)).status == 404
    assert (await client.get("/api/legacy/guardianships", headers=old.headers)).status == 200
    newcomer = Guardian(new_keypair, guardian.row)
    assert (await report(client, setup, newcomer)).status == 403
    assert (await answer(client, newcomer, owner_plan_id=setup.plan_id)).status == 200
    assert (await report(client, setup, newcomer)).status == 200


async def test_an_unaccepted_guardian_cannot_report_or_approve(client, settings):
    owner = await sign_in(client)
    setup = await activate_plan(client, owner, guardians=3, threshold=1, accepting=1)
    accepted, silent, declining = setup.guardians
    assert (await answer(client, declining, owner_plan_id=setup.plan_id, verb="decline")).status == 200
    for guardian in (silent, declining):
        resp = await report(client, setup, guardian)
        assert resp.status == 403
        body = await resp.json()
        assert_error(body, 403)
        assert "accept" in body["message"]
    assert (await get_overview(client, owner))["status"] == "Active"
    assert query(settings, "SELECT count(*) AS n FROM plan_reports")[0]["n"] == 0
    assert (await report(client, setup, accepted)).status == 200
    for guardian in (silent, declining):
        session = await guardian_session(client, guardian)
        url = f"/api/legacy/guardianships/{setup.plan_id}"
        assert (await client.get(f"{url}/attestation", headers=session.headers)).status == 403
        resp = await client.post(f"{url}/approve", json={"signature": "00" * 64}, headers=session.headers)
        assert resp.status == 403
    # Only accepted guardians are asked to verify.
    asked = query(
        settings,
        "SELECT recipient_id::text AS id FROM outbox WHERE kind = 'verification_requested'",
    )
    assert [r["id"] for r in asked] == [accepted.row["id"]]
    assert query(settings, "SELECT count(*) AS n FROM plan_approvals")[0]["n"] == 0
    assert (await approve(client, setup, accepted)).status == 200
    assert (await get_overview(client, owner))["status"] == "Approved"


async def test_decline_is_refused_during_verification_and_answers_are_for_guardians_only(client):
    owner = await sign_in(client)
    setup = await activate_plan(client, owner, guardians=2)
    assert (await report(client, setup, setup.guardians[0])).status == 200
    resp = await answer(client, setup.guardians[1], owner_plan_id=setup.plan_id, verb="decline")
    assert resp.status == 409 and "verif" in (await resp.json())["message"]
    stranger = await sign_in(client)
    for verb in ("accept", "decline"):
        for plan_id in (setup.plan_id, "not-a-uuid"):
            resp = await client.post(f"/api/legacy/guardianships/{plan_id}/{verb}", headers=stranger.headers)
            assert resp.status == 404


async def test_a_single_wallet_is_warned_about(client):
    owner = await sign_in(client)
    readiness = (await get_overview(client, owner))["readiness"]
    [warning] = readiness["warnings"]
    # In words for a person: a second wallet, with no route named (the API's docs name it).
    assert "second" in warning and "wallet" in warning and "/api/" not in warning
    second = Keypair.random()
    message = await challenge(client, second.public_key)
    resp = await client.post(
        "/api/auth/link-wallet",
        json={"walletAddress": second.public_key, "signature": sign(second, message)},
        headers=owner.headers,
    )
    assert resp.status == 200
    assert (await get_overview(client, owner))["readiness"]["warnings"] == []


async def test_an_unaccepted_guardian_cannot_approve_on_chain_either(make_client, soroban_rpc):
    from tests.soroban_helpers import contract_overrides

    client = await make_client(**contract_overrides(soroban_rpc))
    owner = await sign_in(client)
    setup = await activate_plan(client, owner, guardians=2, threshold=1, accepting=1)
    assert (await report(client, setup, setup.guardians[0])).status == 200
    silent = await guardian_session(client, setup.guardians[1])
    url = f"/api/legacy/guardianships/{setup.plan_id}"
    resp = await client.post(f"{url}/approve/build", headers=silent.headers)
    assert resp.status == 403 and "accept" in (await resp.json())["message"]
    accepted = await guardian_session(client, setup.guardians[0])
    soroban_rpc.fund(setup.guardians[0].keypair.public_key)
    resp = await client.post(f"{url}/approve/build", headers=accepted.headers)
    assert resp.status == 200, await resp.text()  # the accepted guardian gets a transaction to sign


async def test_the_owner_hears_of_each_answer_and_of_the_activation(client, run_worker, email_provider):
    """docs/lifecycle.md "Guardians say yes": an acceptance and a decline each email the owner,
    with what the answer changes for the approvals the plan needs; the activation says what
    happens from now on."""
    owner = await sign_in(client)
    plan_id, guardians = await draft_with_guardians(client, owner, count=2)
    assert (await answer(client, guardians[0], owner_plan_id=plan_id)).status == 200
    await run_worker(settings=email_provider.settings)
    [accepted] = email_provider.to("owner@example.org")
    assert accepted.body["subject"] == "Guardian 0 accepted to be your guardian"
    assert "only 1 of your guardians has accepted, and it needs 2 approvals" in accepted.body["text"]
    assert "/check-in/" not in accepted.body["text"]
    assert (await answer(client, guardians[1], owner_plan_id=plan_id, verb="decline")).status == 200
    await run_worker(settings=email_provider.settings)
    accepted_again, declined = email_provider.to("owner@example.org")  # each answer told once
    assert accepted_again == accepted
    assert "Guardian 1" in declined.body["subject"] and "declined" in declined.body["subject"]
    assert "can still be released: 1 guardian has accepted and it needs 1" in declined.body["text"]
    resp = await client.patch("/api/legacy", json={"guardianThreshold": 1}, headers=owner.headers)
    assert resp.status == 200
    assert (await client.post("/api/legacy/activate", headers=owner.headers)).status == 200
    await run_worker(settings=email_provider.settings)
    *_, active = told = email_provider.to("owner@example.org")
    assert len(told) == 3  # the activation, once
    text = active.body["text"]
    assert active.body["subject"] == "Your plan is active"
    assert "From now on we expect you to check in by" in text and "UTC" in text
    # The usual deadline releases (docs/lifecycle.md): it is said as such.
    assert "your plan is released all the same" in text
