"""The heir's page in a real browser (headless Chromium, tests/browser.py): each state, media
that plays and seeks through Range, a document downloaded byte for byte, axe-core's WCAG 2.2
AA rules, no request leaving the service's origin, readable at 360 px with no sideways scroll.
Screenshots of the released capsule land in .data/screenshots for a person to look at."""

from __future__ import annotations

import asyncio
import hashlib
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from tests.capsule_helpers import Family
from tests.lifecycle_helpers import get_overview
from tests.media_samples import png, wav, webm
from tests.plan_helpers import create
from tests.support.mail import reminder_link
from tests.support.onchain import ready

AA_TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "wcag22aa"]
PHONE = {"width": 360, "height": 640}
# A media element's duration once its metadata is in (or its error).
DURATION = """el => el.readyState >= 1 ? el.duration : new Promise((ok, fail) => {
    el.addEventListener('loadedmetadata', () => ok(el.duration));
    el.addEventListener('error', () => fail(new Error('media error ' + el.error.code)));
})"""
DESKTOP = {"width": 1280, "height": 900}


@dataclass
class Released:
    fam: Family
    origin: str
    url: str
    video_id: str
    document_id: str
    document: bytes


@pytest.fixture
async def released(fam: Family) -> Released:
    """A released capsule with every kind of content a page shows."""
    ada = await fam.add_heir("Ada", 60)
    await fam.add_heir("Ben", 40)
    vault = fam.vault
    photo = await vault.upload_ok(png(), filename="garden.png", content_type="image/png", type="photo")
    voice = await vault.upload_ok(wav(), filename="hello.wav", content_type="audio/wav", type="voice")
    film = await vault.upload_ok(webm(), filename="film.webm", content_type="video/webm", type="video")
    await vault.work()
    await fam.message(
        "Dear Ada,\n\nIf you are reading this, the plan did what it was meant to do. The garden is "
        "yours now; the roses by the gate need cutting back in March.\n\nWith all my love,\nMum",
        title="To my daughter",
    )
    await fam.message(
        "The two of us in the garden, the summer you turned six.", title="Summer", mediaId=photo["id"]
    )
    await fam.message(
        "I wanted you to hear my voice once more.", title="A voice message", mediaId=voice["id"]
    )
    video = await fam.message("A walk along the river.", title="The river", mediaId=film["id"])
    opens = (fam.clock.now() + timedelta(days=400)).date()
    await fam.message("Later.", title="For your wedding day", rule=("on_date", opens.isoformat()))
    await create(
        fam.client,
        fam.owner,
        "assets",
        label="The house on Elm Street",
        amount="1",
        description="The deeds are with the notary.",
    )
    await create(fam.client, fam.owner, "assets", label="Savings", amount="1250.50", assetCode="XLM")
    document = b"%PDF-1.7\n" + bytes(range(256)) * 300 + b"\n%%EOF\n"
    will = await fam.document(
        document, filename="will.pdf", content_type="application/pdf", title="My will", category="legal"
    )
    await fam.release()
    origin = str(fam.client.make_url("")).rstrip("/")
    return Released(fam, origin, f"{origin}/claim/{ada['claimToken']}", video["id"], will["id"], document)


def record_requests(page: Any) -> list[str]:
    urls: list[str] = []
    page.on("request", lambda request: urls.append(request.url))
    return urls


async def assert_accessible(page: Any, axe_source: str) -> None:
    await page.evaluate(axe_source)
    result = await page.evaluate(
        "(tags) => axe.run(document, {runOnly: {type: 'tag', values: tags}})", AA_TAGS
    )
    violations = [
        (v["id"], v["impact"], [n["html"][:120] for n in v["nodes"]][:3]) for v in result["violations"]
    ]
    assert violations == [], violations
    assert result["passes"], "axe ran no rule at all"


async def assert_fits(page: Any) -> None:
    """No sideways scrolling at the viewport's width."""
    overflow = await page.evaluate(
        "document.documentElement.scrollWidth - document.documentElement.clientWidth"
    )
    assert overflow <= 0, f"{overflow}px of horizontal scroll"


async def test_the_released_capsule_reads_plays_and_passes_axe(
    released: Released, browser: Any, axe_source: str, screenshots: Path
) -> None:
    for name, viewport in (("phone", PHONE), ("desktop", DESKTOP)):
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
    context = await browser.new_context(viewport=PHONE)
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
    checker = await browser.new_context(viewport=PHONE)
    page = await checker.new_page()
    assert (await page.goto(link)).status == 200
    await assert_accessible(page, axe_source)
    # The owner, with JavaScript off.
    context = await browser.new_context(java_script_enabled=False, viewport=PHONE)
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
    context = await browser.new_context(viewport=PHONE)
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
