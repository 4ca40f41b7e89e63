"""The service is nobody's mail relay: emails to addresses an owner typed have a daily budget
per account and per client address; past it the action still succeeds and its email waits as
`deferred` until the day frees; lifecycle emails and the owner's own never wait."""

from __future__ import annotations

from typing import Any

from stellar_sdk import Keypair

from tests.helpers import sign_in
from tests.lifecycle_helpers import Guardian, answer, get_overview
from tests.plan_helpers import create, query

BUDGET = {"email_to_named_people_per_day": 2, "email_to_named_people_per_client_per_day": 100}


def statuses(settings: Any, kind: str) -> list[str]:
    rows = query(settings, "SELECT status FROM outbox WHERE kind = %s ORDER BY created_at, id", (kind,))
    return [r["status"] for r in rows]


async def named_owner(client: Any, email: str = "owner@example.org") -> Any:
    owner = await sign_in(client)
    resp = await client.patch(
        "/api/users/me", json={"name": "Olive Owner", "email": email}, headers=owner.headers
    )
    assert resp.status == 200
    return owner


async def test_past_the_budget_the_action_succeeds_and_its_email_waits_for_the_day(
    make_client, clock, run_worker, email_provider, settings
):
    client = await make_client(**BUDGET)
    worker = {"settings": {**email_provider.settings, **BUDGET}}
    owner = await named_owner(client)
    guardians = []
    for index in range(3):  # every one is added (201): only the third's invitation waits
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
    heir = await create(client, owner, "beneficiaries", email="heir@example.org", allocationPercentage=100)
    resp = await client.post(f"/api/beneficiaries/{heir['id']}/confirm-email", headers=owner.headers)
    assert resp.status == 202 and (await resp.json())["status"] == "deferred"
    await run_worker(**worker)
    assert {r.to for r in email_provider.requests} == {"g0@example.org", "g1@example.org"}
    assert statuses(settings, "guardian_invitation") == ["sent", "sent", "deferred"]
    assert statuses(settings, "email_confirmation") == ["deferred"]

    # The owner sees them waiting, in words.
    overview = await get_overview(client, owner)
    assert sorted(n["status"] for n in overview["notifications"]) == ["deferred", "deferred", "sent", "sent"]
    [warning] = [w for w in overview["readiness"]["warnings"] if "wait" in w]
    assert warning.startswith("2 emails wait to be sent") and "within 24 hours" in warning

    # Changing a waiting guardian's address again and again: one email waits, to the last one.
    for n in range(3):
        resp = await client.patch(
            f"/api/guardians/{guardians[2].row['id']}",
            json={"email": f"g2.{n}@example.org"},
            headers=owner.headers,
        )
        assert resp.status == 200
    assert statuses(settings, "guardian_invitation") == [
        "sent",
        "sent",
        "skipped",
        "skipped",
        "skipped",
        "deferred",
    ]

    # Lifecycle emails never wait: a guardian declines, the owner is told at once.
    plan_id = overview["id"]
    assert (await answer(client, guardians[0], owner_plan_id=plan_id, verb="decline")).status == 200
    await run_worker(**worker)
    assert statuses(settings, "guardian_declined") == ["sent"]
    assert email_provider.to("owner@example.org")

    # A day after the first two went, the waiting ones go, oldest first, and nothing waits.
    clock.advance(hours=24, seconds=1)
    await run_worker(**worker)
    assert statuses(settings, "email_confirmation") == ["sent"]
    assert statuses(settings, "guardian_invitation")[-1] == "sent"
    assert [r.to for r in email_provider.requests][-2:] in (
        ["g2.2@example.org", "heir@example.org"],
        ["heir@example.org", "g2.2@example.org"],
    )
    assert not email_provider.to("g2.0@example.org") and not email_provider.to("g2@example.org")
    overview = await get_overview(client, owner)
    assert not [w for w in overview["readiness"]["warnings"] if "wait" in w]


async def test_a_client_address_has_its_own_budget_across_new_accounts(
    make_client, run_worker, email_provider, settings
):
    limits = {"email_to_named_people_per_day": 10, "email_to_named_people_per_client_per_day": 3}
    client = await make_client(**limits)
    first, second = await named_owner(client, "a@example.org"), await named_owner(client, "b@example.org")
    for owner, prefix in ((first, "a"), (second, "b")):
        for index in range(2):
            await create(client, owner, "guardians", name=f"G{index}", email=f"{prefix}{index}@example.org")
    await run_worker(settings={**email_provider.settings, **limits})
    # Three went from this address in the day; the second account's second waits.
    assert statuses(settings, "guardian_invitation") == ["sent", "sent", "sent", "deferred"]
    assert not email_provider.to("b1@example.org")
    [row] = query(settings, "SELECT client_digest FROM outbox WHERE status = 'deferred'")
    assert row["client_digest"] is not None and b"127.0.0.1" not in bytes(row["client_digest"])
