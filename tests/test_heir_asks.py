"""An heir can ask from the page, and hears back: the locked page's form posts to
`/claim/<token>/request` (a page saying what happens next; refusals are pages in words); the heir
is emailed a receipt, then the outcome (the owner is well, the plan was released, or it waits and
why). With `notifyBeneficiariesOnActivation`, each heir is emailed their link once while the plan
is Active: at activation, when added to an Active plan, and when the setting is turned on."""

from __future__ import annotations

import re
from typing import Any

from tests.helpers import sign_in
from tests.lifecycle_helpers import activate_plan, get_overview, report
from tests.plan_helpers import create, query
from tests.support.words import assert_plain, page_words

NOTE = "Mum has not answered her phone for a week and the neighbours are worried."
CLAIM = re.compile(r"https://legacy\.example\.test/claim/([0-9a-f]{64})")


def mails(email_provider: Any, address: str, words: str) -> list[dict[str, Any]]:
    return [m.body for m in email_provider.to(address) if words in m.body["subject"]]


async def ask_page(client: Any, token: str, note: str | None = None) -> Any:
    resp = await client.post(
        f"/claim/{token}/request", data={"note": note} if note is not None else {}, allow_redirects=False
    )
    assert_plain(page_words(await resp.text()), f"the heir's asked page ({resp.status})")
    return resp


async def test_heirs_are_told_early_at_each_of_the_three_moments(
    client, run_worker, email_provider, settings
):
    owner = await sign_in(client)
    # 1. At activation, with the setting on: each heir once, in neutral words, with their link.
    setup = await activate_plan(client, owner, settings={"notifyBeneficiariesOnActivation": True})
    assert setup.overview["settings"]["notifyBeneficiariesOnActivation"] is True
    assert any(
        "emailed their link while your plan is active" in w for w in setup.overview["readiness"]["warnings"]
    )
    await run_worker(settings=email_provider.settings)
    for index, heir in enumerate(setup.beneficiaries):
        [mail] = email_provider.to(f"heir{index}@example.org")
        body = mail.body
        assert body["subject"] == "Olive Owner has named you in their legacy plan"
        assert CLAIM.search(body["text"])[1] == heir["claimToken"]
        assert "opens nothing until the plan is released" in body["text"]
        assert "does not mean that anything has happened" in body["text"]
        assert "ask the people Olive Owner chose to confirm it, their guardians, to check" in body["text"]
        # An address the owner typed: budgeted, with "I don't know this person".
        assert body["headers"]["List-Unsubscribe-Post"] == "List-Unsubscribe=One-Click"
        assert "/stop-emails/" in body["text"]
    rows = query(settings, "SELECT budget_at FROM outbox WHERE kind = 'early_heir_link'")
    assert len(rows) == 2 and all(r["budget_at"] is not None for r in rows)

    # 2. An heir added to the Active plan is told at once; the others are not told again.
    resp = await client.patch(
        f"/api/beneficiaries/{setup.beneficiaries[1]['id']}",
        json={"allocationPercentage": 30},
        headers=owner.headers,
    )
    assert resp.status == 200, await resp.text()
    late = await create(
        client, owner, "beneficiaries", name="Heir 2", email="heir2@example.org", allocationPercentage=10
    )
    await run_worker(settings=email_provider.settings)
    [mail] = email_provider.to("heir2@example.org")
    assert CLAIM.search(mail.body["text"])[1] == late["claimToken"]
    assert len(email_provider.to("heir0@example.org")) == 1

    # Turning it off and on again tells nobody twice.
    for value in (False, True):
        resp = await client.patch(
            "/api/legacy", json={"notifyBeneficiariesOnActivation": value}, headers=owner.headers
        )
        assert resp.status == 200
    await run_worker(settings=email_provider.settings)
    assert query(settings, "SELECT count(*) AS n FROM outbox WHERE kind = 'early_heir_link'")[0]["n"] == 3
    assert (
        await client.patch(
            "/api/legacy", json={"notifyBeneficiariesOnActivation": "yes"}, headers=owner.headers
        )
    ).status == 400


async def test_turning_it_on_in_active_tells_each_heir(client, run_worker, email_provider, settings):
    owner = await sign_in(client)
    setup = await activate_plan(client, owner)
    assert setup.overview["settings"]["notifyBeneficiariesOnActivation"] is False
    await run_worker(settings=email_provider.settings)
    assert not email_provider.to("heir0@example.org")  # off by default: nobody is told
    # Off, requests off too: the email does not offer to ask.
    resp = await client.patch(
        "/api/legacy",
        json={"notifyBeneficiariesOnActivation": True, "allowBeneficiaryRequests": False},
        headers=owner.headers,
    )
    assert resp.status == 200
    warnings = (await resp.json())["readiness"]["warnings"]
    told = "As you chose, each beneficiary is emailed their link while your plan is active: it opens nothing"
    assert told + " until the release." in warnings
    await run_worker(settings=email_provider.settings)
    for index in range(2):
        [mail] = email_provider.to(f"heir{index}@example.org")
        assert "opens nothing until the plan is released" in mail.body["text"]
        assert "to check" not in mail.body["text"]
    kinds = [r["kind"] for r in query(settings, "SELECT kind FROM activity ORDER BY created_at")]
    assert "plan.heirs_told" in kinds
    del setup


async def test_an_heir_asks_from_the_page_and_hears_the_owner_is_well(
    make_client, clock, run_worker, email_provider, settings
):
    client = await make_client(plan_report_cooldown_seconds=24 * 3600)
    owner = await sign_in(client)
    setup = await activate_plan(client, owner)
    heir = setup.beneficiaries[0]
    readiness = setup.overview["readiness"]["warnings"]
    assert any(
        w.startswith("A beneficiary's request can lead to a release if nobody answers") for w in readiness
    )
    page = await client.get(f"/claim/{heir['claimToken']}")
    text = await page.text()
    assert page.status == 200 and "Ask the guardians to check" in text
    assert f'action="/claim/{heir["claimToken"]}/request"' in text and 'name="note"' in text

    resp = await ask_page(client, heir["claimToken"], NOTE)
    assert resp.status == 200, await resp.text()
    text = await resp.text()
    assert "We have your request" in text and "checking in" in text and "the plan is released" in text
    assert (await get_overview(client, owner))["status"] == "PendingVerification"
    # The note went with the request, sealed, as through the JSON route.
    [row] = query(settings, "SELECT note_sealed, beneficiary_id::text AS b FROM heir_requests")
    assert row["b"] == heir["id"] and row["note_sealed"] and NOTE not in row["note_sealed"]
    # While the guardians check, the page says so and offers nothing more.
    text = await (await client.get(f"/claim/{heir['claimToken']}")).text()
    assert "checking now" in text and "Ask the guardians" not in text

    await run_worker(settings=email_provider.settings)
    [receipt] = mails(email_provider, "heir0@example.org", "We have your request")
    assert "Olive Owner can answer at any time by checking in" in receipt["text"]
    assert NOTE not in receipt["text"]
    assert any(NOTE in m["text"] for m in mails(email_provider, "guardian0@example.org", "help is needed"))

    # The owner checks in: the heir hears they are well, once.
    assert (await client.post("/api/legacy/check-in", headers=owner.headers)).status == 200
    await run_worker(settings=email_provider.settings)
    [well] = mails(email_provider, "heir0@example.org", "has checked in")
    assert "they are well" in well["text"] and "nothing was released" in well["text"]
    assert not mails(email_provider, "heir1@example.org", "checked in")

    # Within the cooldown, a new request is a 429 page in words (no machine time).
    clock.advance(hours=1)
    resp = await ask_page(client, heir["claimToken"])
    assert resp.status == 429
    text = await resp.text()
    assert "Olive Owner checked in on" in text and "said they are well" in text and "UTC" in text
    assert not re.search(r"\d{4}-\d\d-\d\dT", text)
    # Nothing more is emailed to the heir for that round.
    clock.advance(days=2)
    assert (await report(client, setup, setup.guardians[0])).status == 200
    assert (await client.post("/api/legacy/check-in", headers=owner.headers)).status == 200
    await run_worker(settings=email_provider.settings)
    assert len(mails(email_provider, "heir0@example.org", "has checked in")) == 1


async def test_refusals_are_pages_in_words(client, settings):
    owner = await sign_in(client)
    setup = await activate_plan(client, owner, settings={"allowBeneficiaryRequests": False})
    token = setup.beneficiaries[0]["claimToken"]
    text = await (await client.get(f"/claim/{token}")).text()
    assert "Ask the guardians" not in text and "You do not need to do anything" in text
    resp = await ask_page(client, token, "x")
    assert resp.status == 409 and resp.content_type == "text/html"
    assert "chosen not to take requests" in await resp.text()
    resp = await client.patch("/api/legacy", json={"allowBeneficiaryRequests": True}, headers=owner.headers)
    assert resp.status == 200
    resp = await ask_page(client, token, "x" * 1001)
    assert resp.status == 400 and "at most 1,000" in await resp.text()
    resp = await client.post(f"/claim/{token}/request", json={"note": "x"})
    assert resp.status == 400 and resp.content_type == "text/html"
    assert query(settings, "SELECT count(*) AS n FROM heir_requests")[0]["n"] == 0
    assert (await ask_page(client, token)).status == 200
    resp = await ask_page(client, setup.beneficiaries[1]["claimToken"])
    assert resp.status == 409 and "already verifying" in await resp.text()
    resp = await ask_page(client, "0" * 64)
    assert resp.status == 404


async def test_the_heir_who_asked_hears_of_the_release(client, clock, run_worker, email_provider, settings):
    owner = await sign_in(client)
    setup = await activate_plan(client, owner)
    heir = setup.beneficiaries[0]
    assert (await ask_page(client, heir["claimToken"], NOTE)).status == 200
    work = email_provider.settings
    for days in (15, 14, 1):  # the owner's warnings, then the default deadline
        clock.advance(days=days, seconds=1)
        await run_worker(settings=work)
    assert (await get_overview(client, owner))["status"] == "Approved"
    clock.advance(seconds=setup.overview["settings"]["cancelWindowSeconds"] + 1)
    await run_worker(settings=work)
    assert (await get_overview(client, owner))["status"] == "Released"
    [released] = mails(email_provider, "heir0@example.org", "has been released")
    assert CLAIM.search(released["text"])[1] == heir["claimToken"]
    assert "Your link now opens what Olive Owner left for you" in released["text"]
    assert not mails(email_provider, "heir1@example.org", "has been released")  # they did not ask
    assert [r["outcome"] for r in query(settings, "SELECT outcome FROM heir_requests")] == ["released"]


async def test_a_deadline_that_waits_tells_the_heir_why(client, clock, run_worker, email_provider, settings):
    owner = await sign_in(client)
    setup = await activate_plan(
        client, owner, settings={"onVerificationTimeout": "wait", "verificationTimeoutSeconds": 7 * 86400}
    )
    heir = setup.beneficiaries[1]
    resp = await ask_page(client, heir["claimToken"])
    assert resp.status == 200 and "the plan goes on waiting" in await resp.text()
    clock.advance(days=7, seconds=1)
    await run_worker(settings=email_provider.settings)
    [waiting] = mails(email_provider, "heir1@example.org", "could not go ahead")
    assert "nothing was released" in waiting["text"]
    assert "Olive Owner chose that, in that case, the plan goes on waiting" in waiting["text"]
    assert "We will write to you if either happens" in waiting["text"]
    # The owner checks in later: the heir hears the final answer.
    assert (await client.post("/api/legacy/check-in", headers=owner.headers)).status == 200
    await run_worker(settings=email_provider.settings)
    assert mails(email_provider, "heir1@example.org", "has checked in")
