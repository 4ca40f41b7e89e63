"""What the browser suites share (headless Chromium, tests/browser.py): axe at WCAG 2.2 AA, no
sideways scroll and nothing past the viewport's edges, every request the page makes, a page read
in every shipped language at a phone's width, a released capsule with every kind of content
(`released`), the service on a port known before it starts (`served`, so PUBLIC_BASE_URL is its
own address), and a passkey guardian's plan and buttons.

A pytest plugin (tests/conftest.py), so the fixtures reach every browser suite and each reads
its pages by the same rules without importing another test file.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from api.app import create_app
from core.text import i18n
from tests.capsule_helpers import Family
from tests.conftest import ServiceTestServer
from tests.helpers import sign_in
from tests.media_samples import png, wav, webm
from tests.passkey_helpers import guardian_path
from tests.plan_helpers import create
from tests.support.owner_browser import PHONE, free_port

# axe-core's rules for WCAG 2.2 AA, and the viewports the pages are read at (a small phone, a
# desktop; tests/support/owner_browser.py's PHONE is a larger phone).
AA_TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "wcag22aa"]
SMALL_PHONE = {"width": 360, "height": 640}
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
    outside = await page.evaluate(OUTSIDE)
    assert sizes[0] <= sizes[1] and outside == [], (
        f"{page.url}: {sizes[0]} px wide in a {sizes[1]} px viewport; past its edges: {outside}"
    )


async def open_at_phone(browser: Any) -> tuple[Any, Any]:
    context = await browser.new_context(viewport=PHONE)
    return context, await context.new_page()


async def check_in_every_language(
    page: Any, url: str, axe_source: str, shots: Path | None = None, name: str = ""
) -> None:
    """The page in each shipped language: its `lang` and direction, axe at AA, nothing past the
    phone's edges; a screenshot in German (long compounds) and Arabic (right to left) when asked."""
    for language in i18n.SHIPPED:
        response = await page.goto(f"{url}?lang={language}", wait_until="load")
        assert response.status == 200
        direction = "rtl" if language == "ar" else "ltr"
        assert await page.evaluate("[document.documentElement.lang, document.documentElement.dir]") == [
            language,
            direction,
        ]
        assert await page.locator("main p").first.evaluate("p => getComputedStyle(p).direction") == direction
        await assert_within(page)
        await assert_accessible(page, axe_source)
        if shots is not None and language in ("de", "ar"):
            await page.screenshot(path=str(shots / f"{name}-{language}-390.png"), full_page=True)


@pytest_asyncio.fixture
async def served(aiohttp_client: Any, settings: Any, clock: Any) -> Any:
    """The service on a port chosen first, its PUBLIC_BASE_URL that very address."""
    port = free_port()
    origin = f"http://127.0.0.1:{port}"
    app = create_app(dataclasses.replace(settings, public_base_url=origin), clock)
    client = await aiohttp_client(ServiceTestServer(app, port=port))
    assert str(client.make_url("")).rstrip("/") == origin
    return client


async def passkey_plan(client: Any, run_worker: Any, email_provider: Any) -> tuple[Any, list[str]]:
    """A Draft plan whose two guardians have a name and an email, no wallet; their page paths."""
    owner = await sign_in(client)
    resp = await client.patch(
        "/api/users/me", json={"email": "owner@example.org", "name": "Olive Owner"}, headers=owner.headers
    )
    assert resp.status == 200
    await create(client, owner, "beneficiaries", allocationPercentage=100)
    for index in range(2):
        resp = await client.post(
            "/api/guardians",
            json={"name": f"Guardian {index}", "email": f"guardian{index}@example.org"},
            headers=owner.headers,
        )
        assert resp.status == 201, await resp.text()
        assert (await resp.json())["walletAddress"] is None and (await resp.json())["proof"] is None
    await run_worker(settings=email_provider.settings)
    invitation = email_provider.to("guardian0@example.org")[-1].body["text"]
    assert "creating a passkey" in invitation and "Stellar wallet" not in invitation
    return owner, [guardian_path(email_provider, f"guardian{i}@example.org") for i in range(2)]


async def press(page: Any, name: str) -> None:
    async with page.expect_navigation():
        await page.get_by_role("button", name=name, exact=True).click()


async def with_passkey(page: Any, name: str) -> None:
    """Press the passkey page's button: the ceremony runs, the answer is posted, back to the page."""
    async with page.expect_navigation(url="**/guardian/*"):
        await page.get_by_role("button", name=name).click()
    await page.wait_for_load_state()
