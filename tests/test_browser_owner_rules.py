"""The pages of the plan's rules in a real browser (headless Chromium, tests/browser.py): the
owner's rehearsal of an heir's page, taken before the release, matches the heir's own page after
the release (the same letters, sealed letters and shares), the lifecycle run to Released through
the lifecycle helpers and the real worker; and /plan (active), /plan/settings, /plan/timeline, the
rehearsal and the account deletion page in every shipped language at a phone's 390 px through axe
at AA, nothing past the screen's edges, with the pseudo-language check, and screenshots."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from stellar_sdk import Keypair

from api.html import LANGUAGE_NAMES
from tests.helpers import sign_in
from tests.i18n_helpers import PSEUDO, ascii_words, pseudo
from tests.lifecycle_helpers import activate_plan, approve_plan, get_overview
from tests.plan_helpers import create
from tests.support.browser_pages import check_in_every_language, open_at_phone
from tests.support.owner_browser import sign_in_in_the_browser

SECTIONS = ("letters", "later", "assets", "share")


async def _sections(page: Any) -> dict[str, str]:
    return {name: await page.locator(f'section[aria-labelledby="{name}"]').inner_text() for name in SECTIONS}


async def test_the_rehearsal_before_the_release_is_the_heirs_page_after_it_and_every_page_passes_axe(
    served: Any, browser: Any, axe_source: str, screenshots: Path, clock: Any, run_worker: Any
) -> None:
    keypair = Keypair.random()
    api = await sign_in(served, keypair)
    setup = await activate_plan(served, api)
    heir = setup.beneficiaries[0]
    await create(served, api, "messages", title="The key", content="Dear Heir 0, it is under the blue pot.")
    await create(
        served,
        api,
        "messages",
        title="For your wedding day",
        content="Not yet.",
        releaseRule={"kind": "on_date", "value": "2040-06-01"},
    )
    await create(served, api, "assets", label="Savings", amount="1250.50", assetCode="XLM")
    context, page = await open_at_phone(browser)
    await sign_in_in_the_browser(page, served, keypair)
    origin = str(served.make_url("")).rstrip("/")

    # The rehearsal, reached from the heirs page.
    await page.goto(f"{origin}/plan/heirs", wait_until="load")
    await page.get_by_role("link", name="See Heir 0\u2019s page as they will see it").click()
    assert page.url.endswith(f"/plan/heirs/{heir['id']}/preview")
    assert await page.locator(".preview-mark").count() == 2
    assert "Preview: this is not the real page." in await page.locator("#preview-top").inner_text()
    await page.screenshot(path=str(screenshots / "owner-preview-en-390.png"), full_page=True)
    rehearsed = await _sections(page)
    assert "The key" in rehearsed["letters"] and "For your wedding day" in rehearsed["later"]
    assert heir["claimToken"] not in await page.content()

    # Each page of this part, in every shipped language, then in the pseudo-language.
    pages = {
        "owner-home-active": "/plan",
        "owner-settings": "/plan/settings",
        "owner-timeline": "/plan/timeline",
        "owner-preview": f"/plan/heirs/{heir['id']}/preview",
        "owner-delete": "/plan/account/delete",
    }
    for name, path in pages.items():
        await check_in_every_language(page, origin + path, axe_source, screenshots, name)
        await page.goto(origin + path, wait_until="load")
        await page.screenshot(path=str(screenshots / f"{name}-en-390.png"), full_page=True)
    names = [
        "Olive Owner",
        "Heir 0",
        "Heir 1",
        "Guardian 0",
        "Guardian 1",
        "The key",
        "For your wedding day",
        "Dear Heir 0, it is under the blue pot.",
        "Savings",
        "daughter",
        "XLM",
        "Stellar",
        "ZIP",
        keypair.public_key,
        *LANGUAGE_NAMES.values(),
    ]
    with pseudo():
        for path in pages.values():
            await page.goto(f"{origin}{path}?lang={PSEUDO}", wait_until="load")
            shown = await page.evaluate("document.body.innerText")
            # The timeline's entries are the owner's data: written in their language when recorded.
            recorded = await page.locator("ol.timeline span").all_inner_texts()
            left = [word for word in ascii_words(shown, allowed=[*names, *recorded]) if word != "UTC"]
            assert not left, (path, sorted(set(left)))

    # The release, through the guardians' approvals and the worker; then the heir's own page.
    await approve_plan(served, setup)
    clock.advance(seconds=setup.overview["settings"]["cancelWindowSeconds"] + 1)
    await run_worker()
    assert (await get_overview(served, api))["status"] == "Released"
    heir_context, heir_page = await open_at_phone(browser)
    await heir_page.goto(f"{origin}/claim/{heir['claimToken']}", wait_until="load")
    assert await heir_page.locator(".preview-mark").count() == 0
    shot = screenshots / "owner-preview-compared-heir-en-390.png"
    await heir_page.screenshot(path=str(shot), full_page=True)
    assert await _sections(heir_page) == rehearsed
    await heir_context.close()
    await context.close()
