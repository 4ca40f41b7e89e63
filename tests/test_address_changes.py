"""A corrected heir address, over HTTP with the real worker, the test clock and the email
capture: before the release a guardian's proposal goes to the owner, who edits the address;
after it the plan's threshold of guardians agrees, the hold passes, the new address confirms and
the claim link follows; any guardian can stop a proposal, and the timeline keeps who did what."""

from __future__ import annotations

import re
from typing import Any

from tests.helpers import sign_in
from tests.lifecycle_helpers import activate_plan, get_overview, release_plan
from tests.plan_helpers import activity_rows, query
from tests.support.guardian_page import page_link
from tests.support.plans import CONFIRM, NEW, decide, listed, propose
from tests.support.words import assert_marked

CLAIM = re.compile(r"https://legacy\.example\.test/claim/([0-9a-f]{64})")


def subjects(email_provider: Any, address: str) -> list[str]:
    return [m.body["subject"] for m in email_provider.to(address)]


async def test_before_the_release_the_owner_is_told_and_decides(client, run_worker, email_provider, settings):
    owner = await sign_in(client)
    setup = await activate_plan(client, owner)
    heir = setup.beneficiaries[0]
    resp = await propose(client, setup, setup.guardians[0], heir)
    assert resp.status == 202, await resp.text()
    body = await resp.json()
    assert body["status"] == "to_owner" and body["holdUntil"] is None
    await run_worker(settings=email_provider.settings)
    [mail] = [
        m.body
        for m in email_provider.to("owner@example.org")
        if "suggests a new address" in m.body["subject"]
    ]
    assert mail["subject"] == "Guardian 0 suggests a new address for Heir 0"
    assert NEW in mail["text"] and "Nothing changes unless you change it" in mail["text"]
    assert not email_provider.to(NEW)  # nothing to the proposed address before the owner decides
    # The address sits sealed at rest and never in the outbox in clear, nor on the timeline.
    assert not query(settings, "SELECT 1 FROM outbox WHERE context::text LIKE %s", (f"%{NEW}%",))
    [row] = query(settings, "SELECT email_sealed, status FROM address_changes")
    assert row["status"] == "to_owner" and NEW not in row["email_sealed"]
    timeline = activity_rows(settings, owner.user["id"])
    assert "beneficiary.address_proposed" in [r["kind"] for r in timeline]
    assert not any(NEW in str(r) for r in timeline)
    # The owner edits the address themselves; the heir's record is unchanged until then.
    assert (await client.get(f"/api/beneficiaries/{heir['id']}", headers=owner.headers)).status == 200
    # The same address again is 409; a guardian who has not accepted is 403; a stranger 404.
    resp = await propose(client, setup, setup.guardians[0], heir, "heir0@example.org")
    assert resp.status == 409
    stranger = await sign_in(client)
    resp = await client.post(
        f"/api/legacy/guardianships/{setup.plan_id}/beneficiaries/{heir['id']}/address",
        json={"email": NEW},
        headers=stranger.headers,
    )
    assert resp.status == 404
    resp = await propose(client, setup, setup.guardians[0], heir, "not an address")
    assert resp.status == 400


async def test_after_the_release_threshold_hold_confirmation_and_the_link(
    client, clock, run_worker, email_provider, settings
):
    owner = await sign_in(client)
    setup = await release_plan(
        client, owner, clock, lambda: run_worker(settings=email_provider.settings), guardians=3
    )
    threshold = setup.overview["approvals"]["threshold"]
    assert threshold == 2
    heir, other = setup.beneficiaries
    resp = await propose(client, setup, setup.guardians[0], heir)
    assert resp.status == 202, await resp.text()
    change = await resp.json()
    assert (change["status"], change["approvals"], change["threshold"]) == ("pending", 1, 2)
    await run_worker(settings=email_provider.settings)
    assert any(
        s == "A new address is proposed for Heir 0" for s in subjects(email_provider, "guardian1@example.org")
    )
    assert not [s for s in subjects(email_provider, "guardian0@example.org") if "proposed" in s]
    # A second proposal for the same heir waits for this one.
    assert (await propose(client, setup, setup.guardians[1], heir, "other@example.org")).status == 409

    resp = await decide(client, setup, setup.guardians[1], change["id"], "agree")
    assert resp.status == 200, await resp.text()
    holding = await resp.json()
    assert holding["status"] == "holding" and holding["holdUntil"]
    assert (await decide(client, setup, setup.guardians[2], change["id"], "agree")).status == 409
    await run_worker(settings=email_provider.settings)
    # During the hold: the old address, the other heirs and every accepted guardian are told.
    assert "Your address for a legacy plan is about to change" in subjects(
        email_provider, "heir0@example.org"
    )
    assert "Heir 0's address is about to change" in subjects(email_provider, "heir1@example.org")
    # The guardians' page with the change holding, and the confirmation page, every word marked.
    await assert_marked(client, page_link(email_provider, "guardian0@example.org"))
    for index in range(3):
        assert any(
            "unless a guardian stops it" in s
            for s in subjects(email_provider, f"guardian{index}@example.org")
        )
    assert not email_provider.to(NEW)

    # Six days on, nothing yet; past the hold, the new address is asked to confirm.
    clock.advance(days=6)
    await run_worker(settings=email_provider.settings)
    assert not email_provider.to(NEW)
    clock.advance(days=1, seconds=1)
    await run_worker(settings=email_provider.settings)
    [ask] = email_provider.to(NEW)
    path = CONFIRM.search(ask.body["text"])[1]
    assert query(settings, "SELECT budget_at FROM outbox WHERE kind = 'address_confirmation'")[0]["budget_at"]
    # Opening the link changes nothing; the button confirms and the claim link follows.
    await assert_marked(client, path)
    page = await client.get(path)
    assert page.status == 200 and "Yes, this address is mine" in await page.text()
    assert query(settings, "SELECT status FROM address_changes")[0]["status"] == "confirming"
    done = await client.post(path, data={})
    assert done.status == 200 and "your address is confirmed" in await done.text()
    assert (await client.post(path, data={})).status == 404  # single use
    await run_worker(settings=email_provider.settings)
    [link] = [m.body for m in email_provider.to(NEW) if "left something for you" in m.body["subject"]]
    assert CLAIM.search(link["text"])[1] == heir["claimToken"]
    [row] = query(settings, "SELECT email_confirmed_at FROM beneficiaries WHERE id = %s", (heir["id"],))
    assert row["email_confirmed_at"] is not None
    kinds = [r["kind"] for r in activity_rows(settings, owner.user["id"])]
    for kind in (
        "beneficiary.address_change_proposed",
        "beneficiary.address_change_agreed",
        "beneficiary.address_change_holding",
        "beneficiary.address_change_confirming",
        "beneficiary.address_corrected",
    ):
        assert kind in kinds, kind
    del other


async def test_a_guardian_stops_another_guardians_proposal(
    client, clock, run_worker, email_provider, settings
):
    owner = await sign_in(client)
    setup = await release_plan(
        client, owner, clock, lambda: run_worker(settings=email_provider.settings), guardians=3
    )
    heir = setup.beneficiaries[0]
    change = await (await propose(client, setup, setup.guardians[0], heir)).json()
    assert (await decide(client, setup, setup.guardians[1], change["id"], "agree")).status == 200
    resp = await decide(client, setup, setup.guardians[2], change["id"], "stop")
    assert resp.status == 200 and (await resp.json())["status"] == "stopped"
    assert (await decide(client, setup, setup.guardians[0], change["id"], "stop")).status == 409
    clock.advance(days=8)
    await run_worker(settings=email_provider.settings)
    assert not email_provider.to(NEW)  # stopped during the hold: no confirmation link, ever
    assert any(
        s == "The new address for Heir 0 was stopped"
        for s in subjects(email_provider, "guardian0@example.org")
    )
    [row] = query(settings, "SELECT status, stopped_by::text AS by FROM address_changes")
    assert row == {"status": "stopped", "by": setup.guardians[2].row["id"]}
    stopped = [
        r
        for r in activity_rows(settings, owner.user["id"])
        if r["kind"] == "beneficiary.address_change_stopped"
    ]
    assert stopped and stopped[0]["metadata"]["guardianId"] == setup.guardians[2].row["id"]
    # A new proposal is possible once it is decided.
    assert (await propose(client, setup, setup.guardians[2], heir, "ada.right@example.org")).status == 202


async def test_the_guardian_page_shows_a_bounced_link_and_proposes_from_it(
    make_client, clock, run_worker, email_provider, settings
):
    """A bounced claim link reads as bounced on the guardian page, with the form beside it; the
    address proposed there is proved by the guardian's wallet (SEP-7), kept sealed until signed,
    and runs what the JSON route runs. The bounce alert says how, not "reply to this email"."""
    from tests.support.guardian_page import PAGE_RE, words
    from tests.support.mail import SECRET, event, post, provider_id
    from tests.wallet_app import WalletApp, request_uri

    client = await make_client(email_webhook_secret=SECRET)
    owner = await sign_in(client)
    setup = await release_plan(
        client, owner, clock, lambda: run_worker(settings=email_provider.settings), guardians=3
    )
    heir = setup.beneficiaries[0]
    email_id = provider_id(settings, "claim_link", "beneficiary", recipient_id=heir["id"])
    assert (await post(client, event("email.bounced", email_id))).status == 200
    await run_worker(settings=email_provider.settings)
    [alert] = [
        m.body for m in email_provider.to("guardian0@example.org") if "has not received" in m.body["subject"]
    ]
    assert "propose it beside their name on your guardian page" in alert["text"]
    assert "reply" not in alert["text"]
    path = PAGE_RE.findall(alert["text"])[-1][0]
    shown = words(await (await client.get(path)).text())
    assert "Heir 0: bounced: the address Olive Owner recorded does not reach them" in shown
    assert "Heir 1: sent" in shown
    assert "If you know the address that reaches Heir 0, propose it" in shown

    resp = await client.post(
        f"{path}/ask", data={"action": "propose_address", "beneficiaryId": heir["id"], "email": "nope"}
    )
    assert resp.status == 400 and "does not look like an email address" in await resp.text()
    resp = await client.post(
        f"{path}/ask", data={"action": "propose_address", "beneficiaryId": heir["id"], "email": NEW}
    )
    assert resp.status == 200, await resp.text()
    uri = request_uri(await resp.text())
    assert NEW not in uri  # the address is not in the signing request
    wallet = WalletApp(client, setup.guardians[0].keypair)
    assert (await wallet.open(uri)).msg == "Propose a new email address for Heir 0, in Olive Owner's plan"
    resp = await wallet.approve(uri)
    assert resp.status == 200 and await resp.json() == {"status": "pending"}
    [row] = query(settings, "SELECT status, proposed_by::text AS by FROM address_changes")
    assert row == {"status": "pending", "by": setup.guardians[0].row["id"]}
    await run_worker(settings=email_provider.settings)
    assert any(
        s == "A new address is proposed for Heir 0" for s in subjects(email_provider, "guardian1@example.org")
    )
    # Guardian 1 agrees from their page (the email's link), with their wallet: it holds.
    [asked] = [
        m.body for m in email_provider.to("guardian1@example.org") if "is proposed" in m.body["subject"]
    ]
    path1 = PAGE_RE.findall(asked["text"])[-1][0]
    shown = words(await (await client.get(path1)).text())
    assert "A guardian proposed a new email address for Heir 0: 1 of 2 guardians agree so far" in shown
    change_id = query(settings, "SELECT id::text AS id FROM address_changes")[0]["id"]
    resp = await client.post(f"{path1}/ask", data={"action": "agree_address", "changeId": change_id})
    assert resp.status == 200, await resp.text()
    uri = request_uri(await resp.text())
    wallet1 = WalletApp(client, setup.guardians[1].keypair)
    assert (await wallet1.open(uri)).msg == "Agree to the new email address for Heir 0, in Olive Owner's plan"
    resp = await wallet1.approve(uri)
    assert resp.status == 200 and await resp.json() == {"status": "holding"}
    shown = words(await (await client.get(path1)).text())
    assert "Enough guardians agreed to a new email address for Heir 0. It waits until" in shown
    assert 'value="agree_address"' not in shown
    # Guardian 2 stops it from their page.
    await run_worker(settings=email_provider.settings)
    [told] = [
        m.body for m in email_provider.to("guardian2@example.org") if "unless a guardian" in m.body["subject"]
    ]
    path2 = PAGE_RE.findall(told["text"])[-1][0]
    resp = await client.post(f"{path2}/ask", data={"action": "stop_address", "changeId": change_id})
    uri = request_uri(await resp.text())
    wallet2 = WalletApp(client, setup.guardians[2].keypair)
    assert (await wallet2.open(uri)).msg == "Stop the new email address for Heir 0, in Olive Owner's plan"
    resp = await wallet2.approve(uri)
    assert resp.status == 200 and await resp.json() == {"status": "stopped"}
    assert "Stop this new address" not in await (await client.get(path2)).text()
    resp = await client.post(f"{path2}/ask", data={"action": "stop_address", "changeId": change_id})
    assert resp.status == 409  # nothing to stop any more: not asked now


async def test_an_heir_nobody_can_correct_is_named_with_the_same_words_everywhere(
    make_client, clock, run_worker, email_provider, settings
):
    """Two approvals needed, one guardian left who accepted (the other declined), and the default
    deadline releases: once Heir 0's link bounces, readiness, the guardian page and the guardians'
    bounce alert say the one sentence."""
    from tests.lifecycle_helpers import answer, report
    from tests.support.guardian_page import PAGE_RE, words
    from tests.support.mail import SECRET, event, post, provider_id

    client = await make_client(email_webhook_secret=SECRET)
    owner = await sign_in(client)
    setup = await activate_plan(client, owner, guardians=2, threshold=2)
    assert (
        await answer(client, setup.guardians[1], owner_plan_id=setup.plan_id, verb="decline")
    ).status == 200
    work = email_provider.settings
    sentence = (
        "Nobody can correct Heir 0's email address: it does not reach them, and too few guardians have "
        "accepted to agree on a new one once the plan is released."
    )
    # Before the release, readiness says it of an heir whose address already bounced.
    heir = setup.beneficiaries[0]
    resp = await client.post(f"/api/beneficiaries/{heir['id']}/confirm-email", headers=owner.headers)
    assert resp.status == 202
    await run_worker(settings=work)
    confirmation = provider_id(settings, "email_confirmation", "beneficiary", recipient_id=heir["id"])
    assert (await post(client, event("email.bounced", confirmation))).status == 200
    assert sentence in (await get_overview(client, owner))["readiness"]["warnings"]
    assert (await report(client, setup, setup.guardians[0])).status == 200
    for days in (15, 14, 1):
        clock.advance(days=days, seconds=1)
        await run_worker(settings=work)
    clock.advance(seconds=setup.overview["settings"]["cancelWindowSeconds"] + 1)
    await run_worker(settings=work)
    assert (await get_overview(client, owner))["status"] == "Released"
    email_id = provider_id(settings, "claim_link", "beneficiary", recipient_id=heir["id"])
    assert (await post(client, event("email.bounced", email_id))).status == 200
    await run_worker(settings=work)
    [alert] = [
        m.body for m in email_provider.to("guardian0@example.org") if "has not received" in m.body["subject"]
    ]
    assert sentence in alert["text"]
    path = PAGE_RE.findall(alert["text"])[-1][0]
    page = await (await client.get(path)).text()
    assert sentence in words(page).replace("&#39;", "'")
    # The heir's name isolated like every other name on the page (a right-to-left name cannot
    # reorder the sentence around it).
    assert "Nobody can correct <bdi>Heir 0</bdi>&#39;s email address" in page
    assert "Nobody can correct Heir 1" not in words(await (await client.get(path)).text())
    await assert_marked(client, path)  # the sentence, the bounced link and its form, in the page's words


async def test_the_new_address_answers_for_itself_not_the_heirs_old_one(
    client, clock, run_worker, email_provider, settings
):
    """Someone at the heir's old address said "I don't know this person": that refuses nothing at
    the new address. The confirmation sent there carries its own working "I don't know this
    person" link, which suppresses the NEW address (its blind index), never the old one again."""
    from models import sealed_text
    from tests.lifecycle_helpers import approve_plan
    from tests.support.mail import stop_link

    work = email_provider.settings
    owner = await sign_in(client)
    setup = await activate_plan(client, owner, guardians=3)
    heir = setup.beneficiaries[0]
    resp = await client.post(f"/api/beneficiaries/{heir['id']}/confirm-email", headers=owner.headers)
    assert resp.status == 202
    await run_worker(settings=work)
    [asked] = [m for m in email_provider.to("heir0@example.org") if "/stop-emails/" in m.body["text"]]
    assert (await client.post(stop_link(asked), data={})).status == 200
    await approve_plan(client, setup)
    clock.advance(seconds=setup.overview["settings"]["cancelWindowSeconds"] + 1)
    await run_worker(settings=work)
    assert (await get_overview(client, owner))["status"] == "Released"

    change = await (await propose(client, setup, setup.guardians[0], heir)).json()
    assert (await decide(client, setup, setup.guardians[1], change["id"], "agree")).status == 200
    clock.advance(days=7, seconds=1)
    await run_worker(settings=work)
    [ask] = email_provider.to(NEW)  # not refused for the old address's answer
    assert CONFIRM.search(ask.body["text"])
    [row] = query(settings, "SELECT status FROM outbox WHERE kind = 'address_confirmation'")
    assert row["status"] == "sent"
    # Its own stop link works (the row knows the address it went to) and names the new address.
    link = stop_link(ask)
    page = await client.get(link)
    assert page.status == 200 and "Do you know this person" in await page.text()
    assert (await client.post(link, data={})).status == 200
    ring = settings.key_ring
    new_bidx = sealed_text.blind_index(ring, table="beneficiaries", column="email", value=NEW)
    old_bidx = sealed_text.blind_index(ring, table="beneficiaries", column="email", value="heir0@example.org")
    found = {bytes(r["email_bidx"]) for r in query(settings, "SELECT email_bidx FROM email_suppressions")}
    assert found == {old_bidx, new_bidx}
    # That ends the change at the next scan (nobody can confirm it: tests/test_address_unreachable.py);
    # proposed again, the new address is refused at once (it said so itself) and that change ends too.
    await run_worker(settings=work)
    assert (await decide(client, setup, setup.guardians[0], change["id"], "stop")).status == 409
    again = await (await propose(client, setup, setup.guardians[1], heir)).json()
    assert (await decide(client, setup, setup.guardians[2], again["id"], "agree")).status == 200
    clock.advance(days=7, seconds=1)
    await run_worker(settings=work)
    statuses = [
        r["status"]
        for r in query(
            settings, "SELECT status FROM outbox WHERE kind = 'address_confirmation' ORDER BY created_at"
        )
    ]
    assert statuses == ["sent", "skipped"]
    assert len(email_provider.to(NEW)) == 1
    changes = query(settings, "SELECT status FROM address_changes ORDER BY created_at")
    assert [r["status"] for r in changes] == ["undeliverable", "undeliverable"]
    kinds = [r["kind"] for r in activity_rows(settings, owner.user["id"])]
    assert kinds.count("beneficiary.address_change_undeliverable") == 2
    assert kinds.count("beneficiary.address_change_confirming") == 1  # the refused one was never sent
    told = [
        m for m in email_provider.to("guardian0@example.org") if "could not be reached" in m.body["subject"]
    ]
    assert len(told) == 2


async def test_an_heir_told_early_gets_their_link_again_at_the_address_the_owner_changes(
    client, run_worker, email_provider, settings
):
    """The owner corrects an heir's address after their early link went out: the link goes again,
    to the new address (the same link: the old email's keeps working). Twice before the worker
    runs is one email, to the latest address; a change of name sends nothing; with the setting
    off, nothing either."""
    owner = await sign_in(client)
    setup = await activate_plan(client, owner, settings={"notifyBeneficiariesOnActivation": True})
    work = email_provider.settings
    await run_worker(settings=work)
    heir, other = setup.beneficiaries
    assert len(email_provider.to("heir0@example.org")) == 1

    async def patch(beneficiary: dict[str, Any], **body: Any) -> Any:
        return await client.patch(f"/api/beneficiaries/{beneficiary['id']}", json=body, headers=owner.headers)

    assert (await patch(heir, email="not an address")).status == 400
    assert (await patch(heir, email="ada.first@example.org")).status == 200
    assert (await patch(heir, email="ada.owner@example.org")).status == 200
    await run_worker(settings=work)
    assert not email_provider.to("ada.first@example.org")
    [mail] = email_provider.to("ada.owner@example.org")
    assert mail.body["subject"] == "Olive Owner has named you in their legacy plan"
    assert CLAIM.search(mail.body["text"])[1] == heir["claimToken"]
    assert "/stop-emails/" in mail.body["text"]  # a new address the owner typed: budgeted, with the link
    assert len(email_provider.to("heir0@example.org")) == 1
    resp = await client.get(f"/api/claim/{heir['claimToken']}")
    assert resp.status == 200 and (await resp.json())["status"] == "locked"  # the old email's link works
    told = [r for r in activity_rows(settings, owner.user["id"]) if r["kind"] == "plan.heirs_told"]
    assert told[-1]["metadata"]["readdressed"] is True
    assert "again, at the address you changed" in told[-1]["summary"]

    assert (await patch(heir, name="Ada")).status == 200
    resp = await client.patch(
        "/api/legacy", json={"notifyBeneficiariesOnActivation": False}, headers=owner.headers
    )
    assert resp.status == 200
    assert (await patch(other, email="heir1.new@example.org")).status == 200
    await run_worker(settings=work)
    assert not email_provider.to("heir1.new@example.org")
    assert len(email_provider.to("ada.owner@example.org")) == 1
    assert query(settings, "SELECT count(*) AS n FROM outbox WHERE kind = 'early_heir_link'")[0]["n"] == 3


async def test_the_guardians_list_shows_the_changes_running_and_nothing_before_the_release(
    client, clock, run_worker, email_provider, settings
):
    owner = await sign_in(client)
    before = await activate_plan(client, owner, guardians=2)
    heir = before.beneficiaries[0]
    assert (await propose(client, before, before.guardians[0], heir)).status == 202  # to the owner
    assert await listed(client, before, before.guardians[0]) == []  # the heirs are not listed yet

    owner = await sign_in(client)
    setup = await release_plan(
        client, owner, clock, lambda: run_worker(settings=email_provider.settings), guardians=3
    )
    heir = setup.beneficiaries[0]
    change = await (await propose(client, setup, setup.guardians[0], heir)).json()
    [mine] = await listed(client, setup, setup.guardians[0])
    assert mine["id"] == change["id"] and mine["proposedByMe"] and mine["agreedByMe"]
    [theirs] = await listed(client, setup, setup.guardians[1])
    assert NEW not in str(theirs)  # never the address
    assert {k: theirs[k] for k in ("beneficiaryId", "name", "status", "approvals", "holdUntil")} == {
        "beneficiaryId": heir["id"],
        "name": "Heir 0",
        "status": "pending",
        "approvals": 1,
        "holdUntil": None,
    }
    assert theirs["proposedByMe"] is False and theirs["agreedByMe"] is False and theirs["proposedAt"]
    assert (await decide(client, setup, setup.guardians[1], change["id"], "agree")).status == 200
    [held] = await listed(client, setup, setup.guardians[2])
    assert held["status"] == "holding" and held["approvals"] == 2 and held["holdUntil"]
    assert (await decide(client, setup, setup.guardians[2], change["id"], "stop")).status == 200
    assert await listed(client, setup, setup.guardians[1]) == []


async def test_an_early_link_a_delivery_job_has_taken_goes_again_to_the_new_address(
    client, run_worker, email_provider, settings
):
    """A delivery job that has claimed the heir's early email read their address then, and sends
    to it with no connection held: the owner's change landing in between must send the link again,
    or the only email goes to the address the owner just corrected."""
    owner = await sign_in(client)
    setup = await activate_plan(client, owner, settings={"notifyBeneficiariesOnActivation": True})
    heir = setup.beneficiaries[0]
    early = "SELECT count(*) AS n FROM outbox WHERE kind = 'early_heir_link' AND recipient_id = %s"
    assert query(settings, early, (heir["id"],))[0]["n"] == 1
    # As outbox.claim leaves it: pending, held by a job that has read the old address.
    query(
        settings,
        "UPDATE outbox SET claimed_by = 'a-job', claimed_until = now() + interval '5 minutes'"
        " WHERE kind = 'early_heir_link' AND recipient_id = %s RETURNING id",
        (heir["id"],),
    )
    resp = await client.patch(
        f"/api/beneficiaries/{heir['id']}", json={"email": "ada.owner@example.org"}, headers=owner.headers
    )
    assert resp.status == 200, await resp.text()
    assert query(settings, early, (heir["id"],))[0]["n"] == 2
