"""The service is nobody's mail relay: emails to addresses an owner typed have a daily budget
per account and per client address; past it the action still succeeds and its email waits as
`deferred` until the day frees; lifecycle emails and the owner's own never wait."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from stellar_sdk import Keypair

from api.keys import CLOCK, DB
from core.db import transaction
from core.files.crypto import KeyRing
from models.delivery import outbox
from models.delivery.budget import client_digest
from tests.helpers import sign_in
from tests.lifecycle_helpers import Guardian, activate_plan, answer, get_overview, report
from tests.plan_helpers import create, query
from tests.support.browser_pages import assert_accessible, assert_fits
from tests.support.mail import named_owner, stop_link

BUDGET = {"email_to_named_people_per_day": 2, "email_to_named_people_per_client_per_day": 100}


def statuses(settings: Any, kind: str) -> list[str]:
    rows = query(settings, "SELECT status FROM outbox WHERE kind = %s ORDER BY created_at, id", (kind,))
    return [r["status"] for r in rows]


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


async def test_invitations_carry_a_one_click_link_that_a_get_does_not_use(
    client, run_worker, email_provider, settings
):
    owner = await named_owner(client)
    await create(client, owner, "guardians", name="Gus", email="gus@example.org")
    heir = await create(
        client, owner, "beneficiaries", name="Ada", email="ada@example.org", allocationPercentage=100
    )
    assert (
        await client.post(f"/api/beneficiaries/{heir['id']}/confirm-email", headers=owner.headers)
    ).status == 202
    await run_worker(settings=email_provider.settings)
    [invitation] = email_provider.to("gus@example.org")
    [confirmation] = email_provider.to("ada@example.org")
    for mail in (invitation, confirmation):
        assert mail.body["headers"]["List-Unsubscribe-Post"] == "List-Unsubscribe=One-Click"
    path = stop_link(invitation)

    # Opening the page (a mail scanner, a preview) changes nothing.
    for _ in range(2):
        page = await client.get(path)
        assert page.status == 200 and "<button" in await page.text()
    assert query(settings, "SELECT * FROM email_suppressions") == []
    assert not [
        r for r in query(settings, "SELECT kind FROM activity") if r["kind"].endswith("email_refused")
    ]
    assert (await client.get(path[:-1] + ("0" if path[-1] != "0" else "1"))).status == 404

    # Once the heir has confirmed their address, a new request carries no such link.
    confirm = "/confirm-email/" + confirmation.body["text"].split("/confirm-email/", 1)[1].split()[0]
    assert (await client.post(confirm)).status == 200
    assert (
        await client.post(f"/api/beneficiaries/{heir['id']}/confirm-email", headers=owner.headers)
    ).status == 202
    await run_worker(settings=email_provider.settings)
    later = email_provider.to("ada@example.org")[-1]
    assert (
        later is not confirmation
        and "List-Unsubscribe" not in later.body["headers"]
        and "/stop-emails/" not in later.body["text"]
    )
    # Nor does any email that is not an invitation or a confirmation request.
    # (Every email carries its Content-Language, and only that.)
    owners = email_provider.to("owner@example.org")
    assert all(m.body["headers"] == {"Content-Language": "en"} for m in owners)


async def test_the_one_click_post_stops_every_email_to_that_address_and_tells_the_owner(
    client, run_worker, email_provider, settings
):
    owner = await named_owner(client)
    guardian = await create(client, owner, "guardians", name="Gus", email="gus@example.org")
    await run_worker(settings=email_provider.settings)
    [invitation] = email_provider.to("gus@example.org")
    # A new wallet invites again: that email is written before the person says no...
    resp = await client.patch(
        f"/api/guardians/{guardian['id']}",
        json={"walletAddress": Keypair.random().public_key},
        headers=owner.headers,
    )
    assert resp.status == 200
    resp = await client.post(
        stop_link(invitation),
        data="List-Unsubscribe=One-Click",
        headers={"Content-Type": "application/x-www-form-urlencoded"},
    )
    assert resp.status == 200 and "no more emails" in (await resp.text()).lower()
    await run_worker(settings=email_provider.settings)
    # ...and is not sent (checked at send), nor is one written afterwards (checked at write).
    resp = await client.patch(
        f"/api/guardians/{guardian['id']}",
        json={"walletAddress": Keypair.random().public_key},
        headers=owner.headers,
    )
    assert resp.status == 200
    await run_worker(settings=email_provider.settings)
    assert email_provider.to("gus@example.org") == [invitation]
    assert statuses(settings, "guardian_invitation") == ["sent", "skipped", "skipped"]
    refused = query(settings, "SELECT last_error FROM outbox WHERE status = 'skipped'")
    assert len(refused) == 2 and all("do not know" in r["last_error"] for r in refused)

    # The owner is told once, by email and in the timeline, with no address in either.
    [told] = [m for m in email_provider.to("owner@example.org") if "refused" in m.body["subject"]]
    assert told.body["subject"] == "An email to Gus was refused"
    assert "gus@example.org" not in told.body["text"] and "do not know you" in told.body["text"]
    [entry] = [r for r in query(settings, "SELECT * FROM activity") if r["kind"] == "guardian.email_refused"]
    assert entry["entity_id"] is not None and "gus@example.org" not in str(entry)
    again = await client.post(stop_link(invitation))
    assert again.status == 200
    await run_worker(settings=email_provider.settings)
    assert len([m for m in email_provider.to("owner@example.org") if "refused" in m.body["subject"]]) == 1

    # A corrected address is a new address: it is asked.
    resp = await client.patch(
        f"/api/guardians/{guardian['id']}", json={"email": "gus.right@example.org"}, headers=owner.headers
    )
    assert resp.status == 200
    await run_worker(settings=email_provider.settings)
    assert len(email_provider.to("gus.right@example.org")) == 1


async def test_the_stop_page_reads_at_390_pixels_and_passes_axe(
    client, run_worker, email_provider, browser, axe_source, screenshots
):
    owner = await named_owner(client)
    await create(client, owner, "guardians", name="Gus", email="gus@example.org")
    await run_worker(settings=email_provider.settings)
    [invitation] = email_provider.to("gus@example.org")
    context = await browser.new_context(viewport={"width": 390, "height": 844})
    page = await context.new_page()
    response = await page.goto(str(client.make_url(stop_link(invitation))), wait_until="load")
    assert response.status == 200
    assert await page.locator("h1").inner_text() == "Don\u2019t know this person?"
    await assert_fits(page)
    await assert_accessible(page, axe_source)
    await page.screenshot(path=str(screenshots / "stop-emails-390.png"), full_page=True)
    await page.get_by_role("button").click()
    await page.wait_for_load_state("load")
    assert await page.locator("h1").inner_text() == "Done: no more emails from them"
    await assert_accessible(page, axe_source)
    await page.screenshot(path=str(screenshots / "stop-emails-done-390.png"), full_page=True)
    await context.close()


async def test_an_accepted_guardian_gets_no_unsubscribe_header(client, run_worker, email_provider):
    owner = await sign_in(client)
    setup = await activate_plan(client, owner, guardians=2)
    await run_worker(settings=email_provider.settings)
    # They accepted before the worker sent their invitation: it carries no such link either.
    assert (await report(client, setup, setup.guardians[0])).status == 200
    await run_worker(settings=email_provider.settings)
    mails = email_provider.to("guardian1@example.org")
    assert mails[0].body["subject"].endswith("asks you to be a guardian of their legacy plan")
    assert len(mails) >= 2  # the invitation, then the verification request
    assert all(
        "List-Unsubscribe" not in m.body["headers"] and "/stop-emails/" not in m.body["text"] for m in mails
    )


async def test_a_budgeted_kind_is_never_written_without_a_budget(client):
    """A new kind added to BUDGETED fails loudly where it is written without the request's budget."""
    async with transaction(client.app[DB]) as cur:
        with pytest.raises(ValueError, match="budget"):
            await outbox.add(
                cur,
                kind="guardian_invitation",
                plan_id=str(uuid.uuid4()),
                recipient_type="guardian",
                recipient_id=str(uuid.uuid4()),
                now=client.app[CLOCK].now(),
            )


def test_an_ipv6_client_is_its_slash_64():
    ring = KeyRing([("k1", bytes(32))])
    same = {client_digest(ring, ip=ip) for ip in ("2001:db8:0:1::1", "2001:db8:0:1:ffff::2")}
    assert len(same) == 1
    assert client_digest(ring, ip="2001:db8:0:2::1") not in same
    assert client_digest(ring, ip="192.0.2.1") != client_digest(ring, ip="192.0.2.2")


async def test_an_old_stop_link_does_nothing_once_the_heir_has_confirmed(
    client, run_worker, email_provider, settings
):
    """A mail client's Unsubscribe on an old confirmation request must not drop an heir the plan
    counts on: the page says nothing changed and why, and later emails to them go."""
    owner = await named_owner(client)
    heir = await create(
        client, owner, "beneficiaries", name="Ada", email="ada@example.org", allocationPercentage=100
    )
    assert (
        await client.post(f"/api/beneficiaries/{heir['id']}/confirm-email", headers=owner.headers)
    ).status == 202
    await run_worker(settings=email_provider.settings)
    [confirmation] = email_provider.to("ada@example.org")
    confirm = "/confirm-email/" + confirmation.body["text"].split("/confirm-email/", 1)[1].split()[0]
    assert (await client.post(confirm)).status == 200

    path = stop_link(confirmation)
    page = await client.get(path)
    text = await page.text()
    assert page.status == 200 and "Nothing changed" in text and "<button" not in text
    resp = await client.post(
        path, data="List-Unsubscribe=One-Click", headers={"Content-Type": "application/x-www-form-urlencoded"}
    )
    text = await resp.text()
    assert resp.status == 200 and "Nothing changed" in text and "ask the person who named you" in text
    assert query(settings, "SELECT * FROM email_suppressions") == []
    assert not [
        r for r in query(settings, "SELECT kind FROM activity") if r["kind"].endswith("email_refused")
    ]

    assert (
        await client.post(f"/api/beneficiaries/{heir['id']}/confirm-email", headers=owner.headers)
    ).status == 202
    await run_worker(settings=email_provider.settings)
    assert len(email_provider.to("ada@example.org")) == 2
    assert statuses(settings, "email_confirmation") == ["sent", "sent"]


async def test_the_nothing_changed_page_reads_at_390_pixels_and_passes_axe(
    client, run_worker, email_provider, browser, axe_source, screenshots
):
    owner = await named_owner(client)
    heir = await create(
        client, owner, "beneficiaries", name="Ada", email="ada@example.org", allocationPercentage=100
    )
    assert (
        await client.post(f"/api/beneficiaries/{heir['id']}/confirm-email", headers=owner.headers)
    ).status == 202
    await run_worker(settings=email_provider.settings)
    [confirmation] = email_provider.to("ada@example.org")
    confirm = "/confirm-email/" + confirmation.body["text"].split("/confirm-email/", 1)[1].split()[0]
    assert (await client.post(confirm)).status == 200
    context = await browser.new_context(viewport={"width": 390, "height": 844})
    page = await context.new_page()
    response = await page.goto(str(client.make_url(stop_link(confirmation))), wait_until="load")
    assert response.status == 200
    assert await page.locator("h1").inner_text() == "Nothing changed: you are part of this plan"
    assert await page.get_by_role("button").count() == 0
    await assert_fits(page)
    await assert_accessible(page, axe_source)
    await page.screenshot(path=str(screenshots / "stop-emails-answered-390.png"), full_page=True)
    await context.close()


async def test_a_guardian_who_accepts_after_a_stop_gets_their_emails_again(
    client, run_worker, email_provider, settings
):
    """The one-click may fire by mistake (a mail client, a scanner that POSTs): a guardian who
    then accepts is part of the plan, and the suppression never stops their emails."""
    owner = await sign_in(client)
    setup = await activate_plan(client, owner, guardians=2, threshold=1, accepting=1)
    await run_worker(settings=email_provider.settings)
    [invitation] = email_provider.to("guardian1@example.org")
    assert (await client.post(stop_link(invitation))).status == 200
    assert len(query(settings, "SELECT * FROM email_suppressions")) == 1
    plan_id = (await get_overview(client, owner))["id"]
    assert (await answer(client, setup.guardians[1], owner_plan_id=plan_id)).status == 200
    assert (await report(client, setup, setup.guardians[0])).status == 200
    await run_worker(settings=email_provider.settings)
    later = email_provider.to("guardian1@example.org")[1:]
    assert later and all("/stop-emails/" not in m.body["text"] for m in later)
    assert not query(
        settings,
        "SELECT kind FROM outbox WHERE recipient_id = %s AND status = 'skipped'",
        (setup.guardians[1].row["id"],),
    )


async def test_deleting_the_account_gives_no_client_address_a_new_budget(
    make_client, run_worker, email_provider, settings
):
    """Create, invite, delete, repeat: a client address's spend outlives the account it went on
    (its outbox rows go with the plan; the ledger keeps the count for the window)."""
    limits = {"email_to_named_people_per_day": 10, "email_to_named_people_per_client_per_day": 3}
    worker = {**email_provider.settings, **limits}
    client = await make_client(**limits)
    first = await named_owner(client, "a@example.org")
    for index in range(3):
        await create(client, first, "guardians", name=f"G{index}", email=f"a{index}@example.org")
    await run_worker(settings=worker)
    assert statuses(settings, "guardian_invitation") == ["sent", "sent", "sent"]
    resp = await client.delete(
        "/api/users/me", json={"confirm": first.keypair.public_key}, headers=first.headers
    )
    assert resp.status == 202, await resp.text()
    await run_worker(settings=worker)
    assert query(settings, "SELECT id FROM users WHERE id = %s", (first.user["id"],)) == []
    assert statuses(settings, "guardian_invitation") == []  # gone with the account

    second = await named_owner(client, "b@example.org")
    await create(client, second, "guardians", name="H", email="b0@example.org")
    await run_worker(settings=worker)
    assert statuses(settings, "guardian_invitation") == ["deferred"]
    assert not email_provider.to("b0@example.org")
