"""The heir's page in a real browser (headless Chromium, tests/browser.py): each state, media
that plays and seeks through Range, a document downloaded byte for byte, axe-core's WCAG 2.2
AA rules, no request leaving the service's origin, readable at 360 px with no sideways scroll.
Screenshots of the released capsule land in .data/screenshots for a person to look at."""

from __future__ import annotations

import asyncio
import hashlib
from pathlib import Path
from typing import Any

import pytest

from tests.capsule_helpers import Family
from tests.lifecycle_helpers import get_overview
from tests.support.browser_pages import (
    DESKTOP,
    SMALL_PHONE,
    Released,
    assert_accessible,
    assert_fits,
    record_requests,
)
from tests.support.mail import reminder_link
from tests.support.onchain import ready

# A media element's duration once its metadata is in (or its error).
DURATION = """el => el.readyState >= 1 ? el.duration : new Promise((ok, fail) => {
    el.addEventListener('loadedmetadata', () => ok(el.duration));
    el.addEventListener('error', () => fail(new Error('media error ' + el.error.code)));
})"""


async def test_the_released_capsule_reads_plays_and_passes_axe(
    released: Released, browser: Any, axe_source: str, screenshots: Path
) -> None:
    for name, viewport in (("phone", SMALL_PHONE), ("desktop", DESKTOP)):
        context = await browser.new_context(viewport=viewport)
        page = await context.new_page()
        urls = record_requests(page)
        response = await page.goto(released.url, wait_until="load")
        assert response.status == 200
        assert await page.title() == "From Olive Owner"
        assert await page.locator("h1").inner_text() == "Olive Owner left this for you, Ada"
        # The letters in order, the sealed one announced, the document listed.
        titles = await page.locator("article h3").all_inner_texts()
        assert titles == ["To my daughter", "Summer", "A voice message", "The river"]
        assert "For your wedding day opens on" in await page.locator("#later + p + ul").inner_text()
        assert await page.get_by_role("link", name="My will").count() == 1
        # Media: the photo decoded, the recording and the video ready to play.
        assert await page.locator("img").evaluate("img => img.complete && img.naturalWidth") == 96
        for selector in ("audio", "video"):
            duration = await page.locator(selector).evaluate(DURATION)
            assert duration > 1, (selector, duration)
        await assert_fits(page)
        await assert_accessible(page, axe_source)
        await page.screenshot(
            path=str(screenshots / f"capsule-released-{viewport['width']}.png"), full_page=True
        )
        # Nothing left the service's origin: no fonts, scripts, images or analytics elsewhere.
        outside = [url for url in urls if not url.startswith(released.origin + "/")]
        assert outside == [], outside
        assert any("/media" in url for url in urls), (name, urls)
        await context.close()


async def test_a_video_message_seeks_near_its_end_through_range(released: Released, context: Any) -> None:
    page = await context.new_page()
    media: list[tuple[int, str | None]] = []
    video_url = f"/messages/{released.video_id}/media"
    page.on(
        "response",
        lambda r: (
            media.append((r.status, r.headers.get("content-range"))) if r.url.endswith(video_url) else None
        ),
    )
    await page.goto(released.url)
    video = page.locator("video")
    duration = await video.evaluate(DURATION)
    assert duration >= 10
    landed = await video.evaluate(
        """(v, at) => new Promise((ok, fail) => {
            v.addEventListener('seeked', () => ok(v.currentTime), {once: true});
            v.addEventListener('error', () => fail(new Error('media error ' + v.error.code)));
            v.currentTime = at;
        })""",
        duration - 1,
    )
    assert landed == pytest.approx(duration - 1, abs=0.5)
    assert media, "the video was never requested"
    # Every answer for the video was a byte range (Chromium always asks for one).
    assert all(status == 206 and (rng or "").startswith("bytes ") for status, rng in media), media


async def test_a_document_downloads_through_the_page_byte_for_byte(released: Released, browser: Any) -> None:
    context = await browser.new_context(accept_downloads=True)
    page = await context.new_page()
    await page.goto(released.url)
    async with page.expect_download() as waiting:
        await page.get_by_role("link", name="My will").click()
    download = await waiting.value
    assert download.suggested_filename == "will.pdf"
    saved = await asyncio.to_thread(Path(await download.path()).read_bytes)
    assert hashlib.sha256(saved).hexdigest() == hashlib.sha256(released.document).hexdigest()
    await context.close()
    kinds = [row["kind"] for row in released.fam.timeline()]
    assert kinds == ["capsule.opened", "capsule.document_downloaded"], kinds


@pytest.mark.parametrize("state", ["locked", "unknown"])
async def test_every_other_state_is_a_calm_page_that_passes_axe(
    fam: Family, browser: Any, axe_source: str, screenshots: Path, state: str
) -> None:
    ada = await fam.add_heir("Ada", 100)
    token = ada["claimToken"] if state == "locked" else "0" * 64
    origin = str(fam.client.make_url("")).rstrip("/")
    context = await browser.new_context(viewport=SMALL_PHONE)
    page = await context.new_page()
    urls = record_requests(page)
    response = await page.goto(f"{origin}/claim/{token}")
    expected = {"locked": (200, "Nothing here yet"), "unknown": (404, "This link does not open anything")}
    assert (response.status, await page.locator("h1").inner_text()) == expected[state]
    await assert_fits(page)
    await assert_accessible(page, axe_source)
    await page.screenshot(path=str(screenshots / f"capsule-{state}-360.png"), full_page=True)
    assert [url for url in urls if not url.startswith(origin + "/")] == []
    await context.close()


async def test_the_check_in_link_works_with_javascript_off_and_its_get_changes_nothing(
    client: Any,
    clock: Any,
    run_worker: Any,
    email_provider: Any,
    browser: Any,
    axe_source: str,
    screenshots: Path,
) -> None:
    owner, token = await reminder_link(client, clock, run_worker, email_provider)
    before = await get_overview(client, owner)
    origin = str(client.make_url("")).rstrip("/")
    link = f"{origin}/check-in/{token}"
    # axe needs script: the button page in a context where scripts run (a GET changes nothing).
    checker = await browser.new_context(viewport=SMALL_PHONE)
    page = await checker.new_page()
    assert (await page.goto(link)).status == 200
    await assert_accessible(page, axe_source)
    # The owner, with JavaScript off.
    context = await browser.new_context(java_script_enabled=False, viewport=SMALL_PHONE)
    page = await context.new_page()
    urls = record_requests(page)
    assert (await page.goto(link)).status == 200
    await assert_fits(page)
    await page.screenshot(path=str(screenshots / "check-in-360.png"), full_page=True)
    assert await get_overview(client, owner) == before  # two opens of the link checked nothing in
    async with page.expect_navigation():
        await page.get_by_role("button", name="I am here: check in").click()
    assert await page.locator("h1").inner_text() == "Thank you, you are checked in"
    assert "Your plan is active again" in await page.locator("main").inner_text()
    overview = await get_overview(client, owner)
    assert overview["status"] == "Active" and overview["nextCheckInDueAt"] > before["nextCheckInDueAt"]
    await assert_fits(page)
    await page.screenshot(path=str(screenshots / "check-in-done-360.png"), full_page=True)
    assert [url for url in urls if not url.startswith(origin + "/")] == []
    answer = await page.content()
    await context.close()
    # The answer page through axe: the same markup, served at this origin to the checking context.
    page = await checker.new_page()
    await page.route(f"{origin}/answer", lambda route: route.fulfill(body=answer, content_type="text/html"))
    await page.goto(f"{origin}/answer")
    assert await page.locator("h1").inner_text() == "Thank you, you are checked in"
    await assert_accessible(page, axe_source)
    await checker.close()


async def test_the_ready_capsule_is_a_calm_page_that_passes_axe(
    onchain: Any,
    soroban_rpc: Any,
    clock: Any,
    run_worker: Any,
    email_provider: Any,
    browser: Any,
    axe_source: str,
    screenshots: Path,
) -> None:
    setup = await ready(onchain, soroban_rpc, clock, run_worker, email_provider)
    origin = str(onchain.make_url("")).rstrip("/")
    context = await browser.new_context(viewport=SMALL_PHONE)
    page = await context.new_page()
    urls = record_requests(page)
    response = await page.goto(f"{origin}/claim/{setup.beneficiaries[0]['claimToken']}")
    assert response.status == 200
    assert await page.get_by_role("heading", name="What happens next").count() == 1
    await assert_fits(page)
    await assert_accessible(page, axe_source)
    await page.screenshot(path=str(screenshots / "capsule-ready-360.png"), full_page=True)
    assert [url for url in urls if not url.startswith(origin + "/")] == []
    await context.close()
