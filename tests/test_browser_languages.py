"""The pages in other languages in a real browser (headless Chromium, tests/browser.py): the
heir's page, the guardian's page (an active plan with its report form; a verification with its
approve and object forms; the address suggestion) and the owner's check-in page, in each shipped
language at a phone's 390 px with nothing past the viewport's edges (no sideways scroll, no
element's box outside it; Arabic right to left), through axe-core's WCAG 2.2 AA rules. One plan
per test, every language in a loop on one page. Screenshots in German (long compounds) and Arabic
land in .data/screenshots for a person to look at."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.helpers import sign_in
from tests.lifecycle_helpers import activate_plan, report
from tests.support.browser_pages import (
    Released,
    check_in_every_language,
    open_at_phone,
)
from tests.support.guardian_page import page_link
from tests.support.mail import reminder_link


async def test_the_heirs_page_in_every_language_fits_a_phone_and_passes_axe(
    released: Released, browser: Any, axe_source: str, screenshots: Path
) -> None:
    context, page = await open_at_phone(browser)
    await check_in_every_language(page, released.url, axe_source, screenshots, "capsule-released")
    await context.close()


async def test_the_guardian_page_in_every_language_fits_a_phone_and_passes_axe(
    make_client: Any, run_worker: Any, email_provider: Any, browser: Any, axe_source: str, screenshots: Path
) -> None:
    client = await make_client()
    owner = await sign_in(client)
    setup = await activate_plan(client, owner, guardians=3, threshold=2)
    await run_worker(settings=email_provider.settings)
    origin = str(client.make_url("")).rstrip("/")
    context, page = await open_at_phone(browser)
    # The active plan: the report form and the address suggestion.
    url = origin + page_link(email_provider, "guardian2@example.org")
    await page.goto(url, wait_until="load")
    assert await page.locator('select[name="reason"]').count() == 1
    assert await page.locator("#suggest").count() == 1
    await check_in_every_language(page, url, axe_source)
    # In a verification: its report, the approve and object forms, the address suggestion.
    assert (await report(client, setup, setup.guardians[0])).status == 200
    await run_worker(settings=email_provider.settings)
    url = origin + page_link(email_provider, "guardian2@example.org")
    await page.goto(url, wait_until="load")
    assert await page.locator("#verification").count() == 1
    for action in ("approve", "object"):
        assert await page.locator(f'input[name="action"][value="{action}"]').count() == 1
    assert await page.locator("#suggest").count() == 1
    await check_in_every_language(page, url, axe_source, screenshots, "guardian")
    await context.close()


async def test_the_check_in_page_in_every_language_fits_a_phone_and_passes_axe(
    client: Any, clock: Any, run_worker: Any, email_provider: Any, browser: Any, axe_source: str
) -> None:
    _, token = await reminder_link(client, clock, run_worker, email_provider)
    context, page = await open_at_phone(browser)
    origin = str(client.make_url("")).rstrip("/")
    await check_in_every_language(page, f"{origin}/check-in/{token}", axe_source)
    await context.close()
