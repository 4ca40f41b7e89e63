"""`/check-in/<token>` over HTTP: a GET shows one button and changes nothing (mail scanners
fetch every link); the form's POST checks in through the same model function and miss limit
as `POST /api/legacy/check-in/link`, and says so in one sentence. The browser's view (no
JavaScript) is in tests/test_browser_pages.py."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from api.html import spelled
from tests.lifecycle_helpers import get_overview
from tests.support.capsule import assert_page_headers
from tests.support.mail import reminder_link
from tests.support.words import assert_plain, page_words, visible_text

DAY = 86400


async def page(client: Any, method: str, path: str) -> tuple[int, str]:
    resp = await client.request(method, path)
    assert_page_headers(resp)
    text = await resp.text()
    assert resp.content_type == "text/html" and "<script" not in text.lower()
    assert_plain(page_words(text), f"the check-in page ({method} {resp.status})")
    return resp.status, text


async def test_a_get_shows_one_button_and_checks_nothing_in(
    client, clock, run_worker, email_provider
) -> None:
    owner, token = await reminder_link(client, clock, run_worker, email_provider)
    before = await get_overview(client, owner)
    for _ in range(3):  # a scanner, a link preview, the owner
        status, text = await page(client, "GET", f"/check-in/{token}")
        assert status == 200
        assert text.count("<button") == 1 and text.count("<form") == 1
        assert f'<form method="post" action="/check-in/{token}">' in text
    assert await get_overview(client, owner) == before  # nothing moved, the link still works
    resp = await client.post("/api/legacy/check-in/link", json={"token": token})
    assert resp.status == 200


async def test_the_button_checks_in_and_says_when_the_next_is_due(
    client, clock, run_worker, email_provider
) -> None:
    owner, token = await reminder_link(client, clock, run_worker, email_provider)
    status, text = await page(client, "POST", f"/check-in/{token}")
    assert status == 200
    overview = await get_overview(client, owner)
    assert overview["status"] == "Active"
    due = datetime.fromisoformat(overview["nextCheckInDueAt"].replace("Z", "+00:00"))
    words = visible_text(text)
    assert f"Your plan is active again, and your next check-in is due by {spelled(due)}." in words
    # Single use: the POST again, or the GET, is the check-in link's 404 page.
    for method in ("POST", "GET"):
        status, text = await page(client, method, f"/check-in/{token}")
        assert status == 404, method
        assert "This check-in link has been used already" in visible_text(text)


async def test_unknown_links_share_the_miss_limit_with_the_api(make_client) -> None:
    client = await make_client(rate_limit_check_in_misses_per_ip=3)
    assert (await page(client, "GET", "/check-in/" + "1" * 64))[0] == 404
    assert (await page(client, "POST", "/check-in/not-a-token"))[0] == 404
    assert (await client.post("/api/legacy/check-in/link", json={"token": "2" * 64})).status == 404
    status, text = await page(client, "GET", "/check-in/" + "3" * 64)
    assert status == 429 and "Please wait a minute" in visible_text(text)


async def test_every_response_has_the_page_headers(client) -> None:
    for method, path, expected in (
        ("PUT", "/check-in/" + "a" * 64, 405),
        ("GET", "/check-in/" + "a" * 64 + "/more", 404),
        ("GET", "/check-in/", 404),
    ):
        status, _ = await page(client, method, path)
        assert status == expected, (method, path)


async def test_a_plan_that_cannot_check_in_says_why_and_keeps_the_link(
    client, clock, run_worker, email_provider
) -> None:
    owner, token = await reminder_link(client, clock, run_worker, email_provider)
    resp = await client.post("/api/legacy/deactivate", headers=owner.headers)
    assert resp.status == 200, await resp.text()
    status, text = await page(client, "POST", f"/check-in/{token}")
    assert status == 409
    assert "The plan is a draft: activate it first" in visible_text(text)
    assert (await get_overview(client, owner))["status"] == "Draft"
    assert (await page(client, "GET", f"/check-in/{token}"))[0] == 200  # not used up
