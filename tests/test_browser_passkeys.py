"""Guardians without a Stellar wallet, in headless Chromium with a CDP virtual authenticator
(tests/passkey_helpers.py): each accepts by creating a passkey on their page, then confirms,
reports and approves with it, and two such guardians carry a plan to its release. The
refusals (a replayed answer, another guardian's passkey, a counter gone back, another answer's
challenge, an expired one) record nothing and say so in words; with scripts off the page says
what to do. axe at AA on every new page state; screenshots in .data/screenshots."""

from __future__ import annotations

import logging
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from api.keys import DB
from models.plan.guardianships import reconfirmation
from tests.helpers import sign_in
from tests.lifecycle_helpers import get_overview
from tests.passkey_helpers import (
    AUTHENTICATOR,
    capture_answer,
    guardian_path,
    localhost_client,
    with_authenticator,
)
from tests.plan_helpers import create, query
from tests.soroban_helpers import contract_overrides
from tests.support.browser_pages import (
    DESKTOP,
    SMALL_PHONE,
    assert_accessible,
    assert_fits,
    passkey_plan,
    press,
    with_passkey,
)


async def test_two_passkey_guardians_accept_confirm_report_approve_and_release_the_plan(
    aiohttp_client: Any,
    settings: Any,
    clock: Any,
    run_worker: Any,
    email_provider: Any,
    browser: Any,
    axe_source: str,
    screenshots: Path,
) -> None:
    client, origin = await localhost_client(aiohttp_client, settings, clock)
    owner, paths = await passkey_plan(client, run_worker, email_provider)
    contexts = [await browser.new_context(viewport=SMALL_PHONE) for _ in paths]
    opened = [await with_authenticator(c) for c in contexts]
    pages, devices, authenticators = ([o[i] for o in opened] for i in range(3))

    # Accept: the answer button keeps its word; the next page creates the passkey.
    for index, (page, path) in enumerate(zip(pages, paths, strict=True)):
        assert (await page.goto(origin + path)).status == 200
        text = await page.locator("main").inner_text()
        assert "You answer on this page with a passkey" in text
        if index == 0:
            await assert_accessible(page, axe_source)
            await page.screenshot(path=str(screenshots / "guardian-passkey-invited-360.png"), full_page=True)
        await press(page, "Accept")
        assert await page.locator("h1").inner_text() == "Accept with a passkey"
        if index == 0:
            await assert_fits(page)
            await assert_accessible(page, axe_source)
            await page.screenshot(path=str(screenshots / "guardian-passkey-create-360.png"), full_page=True)
        await with_passkey(page, "Create a passkey and accept")
        assert page.url == origin + path
        text = await page.locator("main").inner_text()
        assert "You answer on this page with the passkey you created for it (1 device)" in text
    # A second device: proved with the first passkey, then the new device creates its own.
    await press(pages[0], "Add another device")
    assert await pages[0].locator("h1").inner_text() == "Add a passkey on another device"
    async with pages[0].expect_navigation():
        await pages[0].get_by_role("button", name="Use my passkey first").click()
    assert await pages[0].locator("h1").inner_text() == "Create your new passkey"
    await assert_accessible(pages[0], axe_source)
    cdp = devices[0]
    await cdp.send("WebAuthn.removeVirtualAuthenticator", {"authenticatorId": authenticators[0]})
    authenticators[0] = (await cdp.send("WebAuthn.addVirtualAuthenticator", {"options": AUTHENTICATOR}))[
        "authenticatorId"
    ]
    await with_passkey(pages[0], "Create a passkey on this device")
    assert "(2 devices)" in await pages[0].locator("main").inner_text()
    rows = await (await client.get("/api/guardians", headers=owner.headers)).json()
    assert sorted((r["proof"], r["acceptedAt"] is not None) for r in rows) == [("passkey", True)] * 2
    [kept] = query(settings, "SELECT count(*) AS n, count(DISTINCT guardian_id) AS g FROM guardian_passkeys")
    assert kept == {"n": 3, "g": 2}
    await assert_accessible(pages[0], axe_source)
    await pages[0].screenshot(path=str(screenshots / "guardian-passkey-accepted-360.png"), full_page=True)
    assert (await client.post("/api/legacy/activate", headers=owner.headers)).status == 200

    # Asked a year later to confirm they can still act: confirmed with the passkey.
    now = clock.now() + timedelta(seconds=settings.guardian_reconfirm_interval_seconds + 1)
    await reconfirmation.sweep(
        client.app[DB],
        now=now,
        interval=timedelta(seconds=settings.guardian_reconfirm_interval_seconds),
        grace=timedelta(seconds=settings.guardian_reconfirm_grace_seconds),
    )
    await pages[0].reload()
    await press(pages[0], "Confirm")
    assert await pages[0].locator("h1").inner_text() == "Confirm with your passkey"
    await assert_accessible(pages[0], axe_source)
    await pages[0].screenshot(path=str(screenshots / "guardian-passkey-get-360.png"), full_page=True)
    await with_passkey(pages[0], "Use my passkey to confirm")
    [row] = query(settings, "SELECT reconfirmed_at FROM guardians WHERE reconfirmed_at IS NOT NULL")
    assert row["reconfirmed_at"] is not None

    # Report with a reason and a note.
    await pages[0].select_option("#reason", "incapacity")
    await pages[0].locator("#report-note").fill("She is in hospital.")
    await press(pages[0], "Report")
    assert await pages[0].locator("h1").inner_text() == "Report with your passkey"
    # The note is shown as it will be sent, not editable: the passkey signs it with the answer.
    assert "She is in hospital." in await pages[0].locator("main").inner_text()
    assert await pages[0].locator("textarea").count() == 0
    await assert_accessible(pages[0], axe_source)
    await pages[0].screenshot(path=str(screenshots / "guardian-passkey-report-360.png"), full_page=True)
    await with_passkey(pages[0], "Use my passkey to report")
    assert (await get_overview(client, owner))["status"] == "PendingVerification"
    [report] = query(settings, "SELECT reason, reporter_user_id, note_sealed FROM plan_reports")
    assert report["reason"] == "incapacity" and report["reporter_user_id"] is None and report["note_sealed"]
    seen = await pages[1].goto(origin + paths[1])
    assert seen.status == 200 and "She is in hospital." in await pages[1].locator("main").inner_text()

    # Both approve: the plan is approved, then released after the cancel window.
    for page in pages:
        await page.reload()
        await press(page, "Approve the release")
        assert await page.locator("h1").inner_text() == "Approve with your passkey"
        await with_passkey(page, "Use my passkey to approve the release")
    approvals = query(
        settings, "SELECT source, wallet_address, message FROM plan_approvals ORDER BY created_at"
    )
    assert [(a["source"], a["wallet_address"]) for a in approvals] == [("passkey", None)] * 2
    assert all("answering with my passkey" in a["message"] for a in approvals)
    overview = await get_overview(client, owner)
    assert overview["status"] == "Approved"
    assert [a["approvedAt"] is not None for a in overview["approvals"]["guardians"]] == [True, True]
    clock.advance(seconds=overview["settings"]["cancelWindowSeconds"] + 1)
    await run_worker(settings=email_provider.settings)
    assert (await get_overview(client, owner))["status"] == "Released"
    await pages[0].reload()
    await assert_accessible(pages[0], axe_source)
    await pages[0].screenshot(path=str(screenshots / "guardian-passkey-released-360.png"), full_page=True)
    for context in contexts:
        await context.close()


async def test_refusals_record_nothing_and_say_so_in_words(
    aiohttp_client: Any,
    settings: Any,
    clock: Any,
    run_worker: Any,
    email_provider: Any,
    browser: Any,
    axe_source: str,
    screenshots: Path,
    caplog: pytest.LogCaptureFixture,
    soroban_rpc: Any,
) -> None:
    client, origin = await localhost_client(aiohttp_client, settings, clock)
    owner, paths = await passkey_plan(client, run_worker, email_provider)
    contexts = [await browser.new_context() for _ in paths]
    pages = [(await with_authenticator(c))[0] for c in contexts]
    for page, path in zip(pages, paths, strict=True):
        await page.goto(origin + path)
        await press(page, "Accept")
        await with_passkey(page, "Create a passkey and accept")
    assert (await client.post("/api/legacy/activate", headers=owner.headers)).status == 200
    page, path = pages[0], paths[0]

    async def answer(form_path: str, fields: dict[str, str]) -> tuple[int, str]:
        resp = await client.post(form_path, data=fields, allow_redirects=False)
        return resp.status, await resp.text()

    def reports() -> int:
        return int(query(settings, "SELECT count(*) AS n FROM plan_reports")[0]["n"])

    # A replayed answer: the first one counts, the same one again records nothing.
    await page.goto(origin + path)
    await press(page, "Report")
    posted_to, fields = await capture_answer(
        page, lambda: page.get_by_role("button", name="Use my passkey to report").click()
    )
    assert await answer(posted_to, fields) == (303, "")
    assert reports() == 1
    status, text = await answer(posted_to, fields)
    assert status == 409 and "already used or has expired, so nothing was recorded" in text
    assert reports() == 1
    [verification] = query(settings, "SELECT verification_round FROM plans")

    # A challenge for another answer: an assertion made for "confirm" posted to "approve".
    await page.goto(origin + path)
    await press(page, "Approve the release")
    approve_action = await page.locator("#passkey-form").get_attribute("action")
    query(settings, "UPDATE guardians SET reconfirm_asked_at = now()")
    await page.goto(origin + path)
    await press(page, "Confirm")
    _, confirm_fields = await capture_answer(
        page, lambda: page.get_by_role("button", name="Use my passkey to confirm").click()
    )
    status, text = await answer(approve_action or "", confirm_fields)
    assert status == 401 and "could not be checked, so nothing was recorded" in text
    assert query(settings, "SELECT count(*) AS n FROM plan_approvals")[0]["n"] == 0

    # Another guardian's passkey, on this guardian's request.
    other = pages[1]
    await other.goto(origin + paths[1])
    await press(other, "Approve the release")
    _, other_fields = await capture_answer(
        other, lambda: other.get_by_role("button", name="Use my passkey to approve the release").click()
    )
    status, text = await answer(approve_action or "", other_fields)
    assert status == 401 and "not one registered for you" in text
    assert query(settings, "SELECT count(*) AS n FROM plan_approvals")[0]["n"] == 0

    # A counter that went back (a copied passkey): refused and logged.
    await page.goto(origin + path)
    await press(page, "Approve the release")
    posted_to, fields = await capture_answer(
        page, lambda: page.get_by_role("button", name="Use my passkey to approve the release").click()
    )
    query(settings, "UPDATE guardian_passkeys SET sign_count = 1000")
    with caplog.at_level(logging.WARNING):
        status, text = await answer(posted_to, fields)
    assert status == 401 and "counter went backwards" in text
    assert any("possible cloned authenticator" in r.getMessage() for r in caplog.records)
    assert query(settings, "SELECT count(*) AS n FROM plan_approvals")[0]["n"] == 0
    query(settings, "UPDATE guardian_passkeys SET sign_count = 0")

    # An expired request: five minutes later, nothing is recorded.
    await page.goto(origin + path)
    await press(page, "Approve the release")
    posted_to, fields = await capture_answer(
        page, lambda: page.get_by_role("button", name="Use my passkey to approve the release").click()
    )
    clock.advance(seconds=301)
    status, text = await answer(posted_to, fields)
    assert status == 409 and "already used or has expired" in text
    assert query(settings, "SELECT count(*) AS n FROM plan_approvals")[0]["n"] == 0
    assert query(settings, "SELECT verification_round FROM plans") == [verification]

    # The refusal is a page a person can read.
    refused = await contexts[0].new_page()
    await refused.goto(origin + path)
    await refused.set_content(text)
    await assert_accessible(refused, axe_source)
    await refused.screenshot(path=str(screenshots / "guardian-passkey-refused-1280.png"), full_page=True)

    # A contract configured since: a passkey cannot sign approve_guardian, and the page says so.
    onchain_client, _origin = await localhost_client(
        aiohttp_client, settings, clock, **contract_overrides(soroban_rpc)
    )
    text = await (await onchain_client.get(path)).text()
    assert (
        "which needs a Stellar wallet: a passkey cannot sign them" in text and 'value="approve"' not in text
    )
    resp = await onchain_client.post(f"{path}/ask", data={"action": "approve"})
    assert resp.status == 409 and "ask the owner to record one for you" in await resp.text()

    # Re-invitation is refused during the verification, with the page saying so.
    [guardian] = [
        g
        for g in await (await client.get("/api/guardians", headers=owner.headers)).json()
        if g["name"] == "Guardian 0"
    ]
    resp = await client.post(f"/api/guardians/{guardian['id']}/reinvite", headers=owner.headers)
    assert resp.status == 409 and "during a verification" in (await resp.json())["message"]
    await page.goto(origin + path)
    assert (
        "A lost passkey cannot be replaced during this verification"
        in await page.locator("main").inner_text()
    )
    for context in contexts:
        await context.close()


async def test_without_scripts_the_page_says_what_to_do_and_records_nothing(
    aiohttp_client: Any,
    settings: Any,
    clock: Any,
    run_worker: Any,
    email_provider: Any,
    browser: Any,
    axe_source: str,
    screenshots: Path,
) -> None:
    client, origin = await localhost_client(aiohttp_client, settings, clock)
    owner, paths = await passkey_plan(client, run_worker, email_provider)
    context = await browser.new_context(java_script_enabled=False, viewport=SMALL_PHONE)
    page = await context.new_page()
    assert (await page.goto(origin + paths[0])).status == 200
    assert "Answering with a passkey needs scripts" in await page.locator("main").inner_text()
    await press(page, "Accept")
    text = await page.locator("main").inner_text()
    assert "This page needs scripts to use a passkey" in text and "record a Stellar wallet for you" in text
    await page.screenshot(path=str(screenshots / "guardian-passkey-noscript-360.png"), full_page=True)
    await press(page, "Create a passkey and accept")
    assert "did not send a passkey, so nothing was recorded" in await page.locator("main").inner_text()
    rows = await (await client.get("/api/guardians", headers=owner.headers)).json()
    assert [r["acceptedAt"] for r in rows] == [None, None]
    await context.close()
    # A browser with scripts but without WebAuthn: the script says the same, the button is off.
    checker = await browser.new_context(viewport=SMALL_PHONE)
    await checker.add_init_script("delete window.PublicKeyCredential")
    page = await checker.new_page()
    await page.goto(origin + paths[0])
    await press(page, "Accept")
    missing = page.locator("#passkey-missing")
    assert await missing.is_visible() and "This browser cannot use passkeys" in await missing.inner_text()
    assert await page.get_by_role("button", name="Create a passkey and accept").is_disabled()
    await assert_accessible(page, axe_source)
    await page.screenshot(path=str(screenshots / "guardian-passkey-no-webauthn-360.png"), full_page=True)
    await checker.close()


async def test_a_wallet_guardians_page_says_what_a_wallet_is_and_the_qr_words_fit_a_phone(
    client: Any, run_worker: Any, email_provider: Any, browser: Any, axe_source: str, screenshots: Path
) -> None:
    owner = await sign_in(client)
    resp = await client.patch(
        "/api/users/me", json={"email": "owner@example.org", "name": "Olive Owner"}, headers=owner.headers
    )
    assert resp.status == 200
    await create(client, owner, "guardians", name="Guardian 0", email="guardian0@example.org")
    await run_worker(settings=email_provider.settings)
    url = str(client.make_url(guardian_path(email_provider, "guardian0@example.org")))
    for name, viewport, shown, hidden in (
        ("360", SMALL_PHONE, ".on-phone", ".on-computer"),
        ("1280", DESKTOP, ".on-computer", ".on-phone"),
    ):
        context = await browser.new_context(viewport=viewport)
        page = await context.new_page()
        assert (await page.goto(url)).status == 200
        await page.get_by_text("What is a Stellar wallet?").click()
        explained = await page.locator("details").inner_text()
        assert all(w in explained for w in ("LOBSTR", "Freighter", "xBull", "switch you to a passkey"))
        await assert_accessible(page, axe_source)
        await press(page, "Accept")
        assert await page.locator(shown).is_visible() and not await page.locator(hidden).is_visible()
        await assert_fits(page)
        await assert_accessible(page, axe_source)
        await page.screenshot(path=str(screenshots / f"guardian-wallet-ask-{name}.png"), full_page=True)
        await context.close()
