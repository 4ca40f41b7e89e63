"""The owner's plan pages in a real browser (headless Chromium, tests/browser.py): the whole
journey of a first visit (sign in with a wallet answering the SEP-7 request from another client,
add two heirs and two guardians from the pages, find them through the JSON API for the same
wallet), then /plan, /plan/heirs and /plan/guardians in each shipped language at a phone's 390 px
(and the door's account page) through axe at AA, nothing past the screen's edges, and
screenshots for a person to look at.

The service runs with PUBLIC_BASE_URL at its own test address: the owner's pages keep the
browser on that origin (another host is sent there, and a form from anywhere else is refused)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from stellar_sdk import Keypair

from api.html import LANGUAGE_NAMES
from api.owner.plan_pages import zone_choices
from tests.helpers import sign_in
from tests.i18n_helpers import PSEUDO, ascii_words, pseudo
from tests.support.browser_pages import check_in_every_language, open_at_phone
from tests.support.owner_browser import add, sign_in_in_the_browser

PAGES = ("/plan", "/plan/heirs", "/plan/guardians", "/plan/account")


async def test_an_owner_signs_in_with_a_wallet_and_names_their_people_from_the_pages(
    served: Any, browser: Any, axe_source: str, screenshots: Path
) -> None:
    keypair = Keypair.random()
    context, page = await open_at_phone(browser)
    await sign_in_in_the_browser(page, served, keypair)
    await page.screenshot(path=str(screenshots / "owner-home-new-en-390.png"), full_page=True)

    await page.get_by_role("link", name="Add an heir").first.click()
    heirs = [("Ana Souza", "ana@example.org", "60", "pt-BR"), ("Rui Souza", "rui@example.org", "40", "es")]
    # A first try with the share left out: the form comes back saying so, with what was typed.
    await add(page, {"Their name": "Ana Souza", "Who they are to you": "daughter"}, "Add this heir")
    assert await page.locator("#error-allocationPercentage").count() == 1
    assert await page.get_by_label("Their name", exact=True).input_value() == "Ana Souza"
    await page.screenshot(path=str(screenshots / "owner-heirs-refused-en-390.png"), full_page=True)
    for name, email, share, language in heirs:
        await add(
            page,
            {
                "Their name": name,
                "Who they are to you": "daughter" if name.startswith("Ana") else "son",
                "Their email address": email,
                "Their share of the plan, in percent": share,
                "The language of the emails they receive": language,
            },
            "Add this heir",
        )
        assert await page.get_by_role("status").inner_text() == "The heir was added."
    await page.screenshot(path=str(screenshots / "owner-heirs-en-390.png"), full_page=True)

    await page.goto(str(served.make_url("/plan/guardians")), wait_until="load")
    wallet = Keypair.random().public_key
    for name, email, address in (("Bo Lind", "bo@example.org", wallet), ("Cy Park", "cy@example.org", "")):
        await add(
            page,
            {
                "Their name": name,
                "Their email address": email,
                "Their Stellar wallet address (optional)": address,
            },
            "Add this guardian and invite them",
        )
        assert "Their invitation goes as soon as your name" in await page.get_by_role("status").inner_text()
    await page.screenshot(path=str(screenshots / "owner-guardians-en-390.png"), full_page=True)
    await page.goto(str(served.make_url("/plan")), wait_until="load")
    await page.screenshot(path=str(screenshots / "owner-home-en-390.png"), full_page=True)

    # The same wallet through the JSON API sees the same people.
    api = await sign_in(served, keypair)
    resp = await served.get("/api/beneficiaries", headers=api.headers)
    assert sorted((b["name"], b["allocationPercentage"], b["locale"]) for b in await resp.json()) == [
        ("Ana Souza", 60, "pt-BR"),
        ("Rui Souza", 40, "es"),
    ]
    resp = await served.get("/api/guardians", headers=api.headers)
    assert sorted((g["name"], g["walletAddress"]) for g in await resp.json()) == [
        ("Bo Lind", wallet),
        ("Cy Park", None),
    ]

    origin = str(served.make_url("")).rstrip("/")
    for path in PAGES:
        name = "owner-" + (path.rsplit("/", 1)[-1] if path != "/plan" else "home")
        await check_in_every_language(page, origin + path, axe_source, screenshots, name)
    # The pseudo-language: any plain word the browser shows was never marked for translation.
    names = ["Ana Souza", "Rui Souza", "Bo Lind", "Cy Park", "daughter", "son", *LANGUAGE_NAMES.values()]
    zones = [zone.replace("_", " ") for zone, _ in zone_choices() if zone]
    with pseudo():
        for path in PAGES:
            await page.goto(f"{origin}{path}?lang={PSEUDO}", wait_until="load")
            shown = await page.evaluate("document.body.innerText")
            left = [word for word in ascii_words(shown, allowed=[*names, *zones]) if word != "UTC"]
            assert not left, (path, sorted(set(left)))
    await context.close()
