"""The pages in other languages in a real browser (headless Chromium, tests/browser.py): the
heir's page and the guardian's page in Arabic, right to left, at a phone's 390 px with nothing
past the viewport's edges (no sideways scroll, no element's box outside it); the heir's page in
each shipped language through axe-core's WCAG 2.2 AA rules (its `lang`, the switcher's links
each marked in their own language). Screenshots land in .data/screenshots for a person to look at."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from core.text import i18n
from tests.helpers import sign_in
from tests.lifecycle_helpers import activate_plan, report
from tests.test_browser_pages import Released, assert_accessible, released
from tests.test_guardian_page import page_link

__all__ = ["released"]  # the fixture

PHONE = {"width": 390, "height": 844}
# Every element whose box reaches past the viewport's left or right edge (hidden ones have none).
OUTSIDE = """() => {
    const width = window.innerWidth;
    return [...document.body.querySelectorAll('*')]
        .map(el => [el, el.getBoundingClientRect()])
        .filter(([el, r]) => r.width > 0 && r.height > 0 && (r.left < -0.5 || r.right > width + 0.5))
        .map(([el, r]) => `${el.tagName}.${el.className} ${Math.round(r.left)}..${Math.round(r.right)}`);
}"""


async def assert_within(page: Any) -> None:
    """Nothing scrolls sideways and no element's box leaves the viewport, in either direction."""
    sizes = await page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
    assert sizes[0] <= sizes[1], f"the page is {sizes[0]} px wide in a {sizes[1]} px viewport"
    assert await page.evaluate(OUTSIDE) == []


async def open_in_arabic(browser: Any, url: str) -> tuple[Any, Any]:
    context = await browser.new_context(viewport=PHONE)
    page = await context.new_page()
    response = await page.goto(f"{url}?lang=ar", wait_until="load")
    assert response.status == 200
    assert await page.evaluate("[document.documentElement.lang, document.documentElement.dir]") == [
        "ar",
        "rtl",
    ]
    return context, page


async def test_the_heirs_page_in_arabic_fits_a_phone(
    released: Released, browser: Any, screenshots: Path
) -> None:
    context, page = await open_in_arabic(browser, released.url)
    # Right to left: the main column's text starts at its right edge.
    assert await page.locator("main p").first.evaluate("p => getComputedStyle(p).direction") == "rtl"
    await assert_within(page)
    await page.screenshot(path=str(screenshots / "capsule-released-ar-390.png"), full_page=True)
    await context.close()


async def test_the_guardian_page_in_arabic_fits_a_phone(
    make_client: Any, run_worker: Any, email_provider: Any, browser: Any, screenshots: Path
) -> None:
    client = await make_client()
    owner = await sign_in(client)
    setup = await activate_plan(client, owner, guardians=3, threshold=2)
    await run_worker(settings=email_provider.settings)
    assert (await report(client, setup, setup.guardians[0])).status == 200
    await run_worker(settings=email_provider.settings)
    origin = str(client.make_url("")).rstrip("/")
    url = origin + page_link(email_provider, "guardian1@example.org")
    context, page = await open_in_arabic(browser, url)
    assert await page.locator("#verification").count() == 1  # the verification, with its report
    await assert_within(page)
    await page.screenshot(path=str(screenshots / "guardian-ar-390.png"), full_page=True)
    await context.close()


async def test_the_heirs_page_passes_axe_in_every_language(
    released: Released, browser: Any, axe_source: str, screenshots: Path
) -> None:
    context = await browser.new_context(viewport=PHONE)
    page = await context.new_page()
    for language in i18n.SHIPPED:
        response = await page.goto(f"{released.url}?lang={language}", wait_until="load")
        assert response.status == 200
        assert await page.evaluate("document.documentElement.lang") == language
        await assert_accessible(page, axe_source)
        await assert_within(page)
    await context.close()
