"""`GET /claim/<token>` over HTTP: the capsule's states as HTML from the JSON routes' model,
the same miss limit, the privacy headers and the CSP on every response, errors included.
What a browser does with the page is in tests/test_browser_pages.py."""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from typing import Any

import pytest

from api.html import spelled
from tests.capsule_helpers import Family, family
from tests.plan_helpers import create, query
from tests.support.capsule import assert_page_headers, page
from tests.support.onchain import ready
from tests.support.words import visible_text


async def test_locked_says_nothing_is_there_yet_and_nothing_else(fam: Family) -> None:
    ada = await fam.add_heir("Ada", 100)
    await fam.message("Dear Ada, the key is under the blue pot", title="The key")
    status, text = await page(fam, f"/claim/{ada['claimToken']}")
    assert status == 200
    words = visible_text(text)
    assert "Nothing here yet" in words
    for private in ("Olive", "Ada", "blue pot", "The key", "Released", "verification", "plan"):
        assert private not in words, private


async def test_released_shows_letters_sealed_letters_documents_and_media(fam: Family) -> None:
    ada = await fam.add_heir("Ada", 60)
    ben = await fam.add_heir("Ben", 40)
    await create(
        fam.client, fam.owner, "assets", label="The cottage", amount="1", description="Keys with Ben."
    )
    await create(fam.client, fam.owner, "assets", label="Savings", amount="1250.50", assetCode="XLM")
    await create(
        fam.client,
        fam.owner,
        "assets",
        label="Ben's bike",
        amount="1",
        audience={"beneficiaryIds": [ben["id"]]},
    )
    first = await fam.message("Dear Ada,\n\nThe <garden> is yours & Ben's.", title="First")
    second = await fam.message("A second letter.", title=None)
    photo = await fam.vault.upload_ok(
        b"\x89PNG fake", filename="p.png", content_type="image/png", type="photo"
    )
    voice = await fam.vault.upload_ok(b"OggS fake", filename="v.ogg", content_type="audio/ogg", type="voice")
    await fam.vault.work()
    with_photo = await fam.message("Look at us.", title="Summer", mediaId=photo["id"])
    with_voice = await fam.message("Listen.", title="My voice", mediaId=voice["id"])
    opens = (fam.clock.now() + timedelta(days=400)).date()
    await fam.message("Not yet.", title="For your wedding day", rule=("on_date", opens.isoformat()))
    will = await fam.document(
        b"%PDF-1.7 will",
        filename="will.pdf",
        content_type="application/pdf",
        title="My will",
        category="legal",
    )
    await fam.release()
    token = ada["claimToken"]
    status, text = await page(fam, f"/claim/{token}")
    assert status == 200
    words = visible_text(text)
    assert "Olive Owner left this for you, Ada" in words
    # Letters in the order they were written, each with its date spelled out in UTC.
    order = [words.index(t) for t in ("First", "A letter", "Summer", "My voice")]
    assert order == sorted(order), order
    assert re.search(r"Written on \w+day \d{1,2} \w+ \d{4}, \d\d:\d\d UTC", words)
    # Text is escaped, never markup; its line breaks are kept.
    assert "The &lt;garden&gt; is yours &amp; Ben&#39;s." in text and "<garden>" not in text
    assert "Dear Ada,\n\nThe" in text
    # The sealed letter: title and opening date only.
    assert f"For your wedding day opens on {opens:%A} {opens.day} {opens:%B %Y}, 00:00 UTC" in words
    assert "Not yet." not in words
    # Media from the JSON routes' media URL, so the browser streams and seeks with Range.
    base = f"/api/claim/{token}"
    assert f'<img src="{base}/messages/{with_photo["id"]}/media" alt="Summer, from Olive Owner">' in text
    assert f'<audio controls preload="metadata" src="{base}/messages/{with_voice["id"]}/media"' in text
    # The document: title, type, size and its download link.
    assert f'href="{base}/documents/{will["id"]}/download"' in text
    assert "My will Legal document, PDF, 13 bytes. File name: will.pdf" in words
    assert "File name: <bdi>will.pdf</bdi>" in text  # isolated, as the names are: it may be right to left
    # The assets addressed to Ada, as the owner wrote them; not Ben's.
    assert (
        "What you were left The cottage Your share: 0.60 XLM, which is 60 % of the whole 1 XLM."
        " Keys with Ben. Savings Your share: 750.30 XLM, which is 60 % of the whole 1250.50 XLM."
        " Your share" in words
    )
    assert "Ben's bike" not in words and "Ben&#39;s bike" not in text
    assert "with 60\u00a0% of the plan" in text  # the number and its sign never part (a no-break space)
    # The page is the same model as the JSON: nothing it lists is missing from there.
    body = await fam.capsule(ada)
    assert {m["id"] for m in body["messages"]} == {
        first["id"],
        second["id"],
        with_photo["id"],
        with_voice["id"],
    }
    assert [d["id"] for d in body["documents"]] == [will["id"]]
    # Opening the page is opening the capsule: on the owner's timeline, once that day.
    assert [row["kind"] for row in fam.timeline()] == ["capsule.opened"]


async def test_a_head_reads_nothing_and_records_no_open(fam: Family) -> None:
    ada = await fam.add_heir("Ada", 100)
    await fam.release()
    status, text = await page(fam, f"/claim/{ada['claimToken']}", method="HEAD")
    assert status == 200 and text == ""
    assert fam.timeline() == []


@pytest.mark.parametrize("token", ["0" * 64, "f" * 63, "not-a-token", "%E2%80%AE" * 3, "A" * 64])
async def test_unknown_or_malformed_tokens_get_the_same_calm_404(fam: Family, token: str) -> None:
    status, text = await page(fam, f"/claim/{token}")
    assert status == 404
    assert "This link does not open anything" in visible_text(text)


async def test_every_page_response_has_the_headers_errors_included(fam: Family) -> None:
    ada = await fam.add_heir("Ada", 100)
    token = ada["claimToken"]
    for method, path, expected in (
        ("GET", f"/claim/{token}", 200),
        ("GET", f"/claim/{token}/nowhere", 404),
        ("GET", "/claim/", 404),
        ("POST", f"/claim/{token}", 405),
        ("DELETE", f"/claim/{token}", 405),
    ):
        status, _ = await page(fam, path, method=method)
        assert status == expected, (method, path, status)
    css = await fam.client.get("/page.css")
    assert css.status == 200 and css.content_type == "text/css"
    assert "url(" not in await css.text()  # nothing fetched from anywhere: no fonts, no images


async def test_the_favicon_is_served_and_every_page_links_it(fam: Family) -> None:
    """Browsers ask for /favicon.ico on every page: it is the service's own icon, allowed by
    the pages' CSP (img-src 'self'), never the 404 page."""
    ada = await fam.add_heir("Ada", 100)
    resp = await fam.client.get(f"/claim/{ada['claimToken']}")
    assert '<link rel="icon" href="/favicon.ico">' in await resp.text()
    assert "img-src 'self'" in resp.headers["Content-Security-Policy"]
    icon = await fam.client.get("/favicon.ico")
    body = await icon.read()
    assert icon.status == 200 and icon.content_type == "image/x-icon"
    assert body[:4] == b"\0\0\1\0" and b"\x89PNG" in body  # an icon file holding one PNG
    assert "max-age" in icon.headers["Cache-Control"]


async def test_misses_on_the_page_and_the_api_share_one_limit(
    make_client: Any, run_worker: Any, settings: Any, file_backend: Any, clock: Any
) -> None:
    fam = await family(
        make_client, run_worker, settings, file_backend, clock, rate_limit_claim_misses_per_ip=3
    )
    ada = await fam.add_heir("Ada", 100)
    assert (await page(fam, "/claim/" + "1" * 64))[0] == 404
    assert (await fam.open("2" * 64)).status == 404
    assert (await page(fam, "/claim/nope"))[0] == 404
    resp = await fam.client.get("/claim/" + "3" * 64)
    assert_page_headers(resp)
    assert resp.status == 429 and 1 <= int(resp.headers["Retry-After"]) <= 60
    assert "Please wait a minute" in visible_text(await resp.text())
    assert (await fam.open("4" * 64)).status == 429  # the JSON route counts the same misses
    # The heir, from the same address, is served as if nothing happened.
    assert (await page(fam, f"/claim/{ada['claimToken']}"))[0] == 200


async def test_ready_says_what_happens_next_and_nothing_of_the_contents(
    onchain: Any, soroban_rpc: Any, clock: Any, run_worker: Any, email_provider: Any
) -> None:
    setup = await ready(onchain, soroban_rpc, clock, run_worker, email_provider)
    heir = setup.beneficiaries[0]
    resp = await onchain.get(f"/claim/{heir['claimToken']}")
    assert_page_headers(resp)
    text = await resp.text()
    assert resp.status == 200 and "<script" not in text.lower()
    words = visible_text(text)
    body = await (await onchain.get(f"/api/claim/{heir['claimToken']}")).json()
    assert body["status"] == "ready"  # the same model answers the JSON route
    since = datetime.fromisoformat(body["readySince"].replace("Z", "+00:00"))
    assert f"Everything is ready since {spelled(since)}. One last step opens it" in words
    assert "What happens next" in words and "Stellar wallet" in words
    # The page does it itself now (#26): a form naming the wallet, then signing requests.
    assert "You can do it here" in words and "Confirm the release" in words
    assert f'action="/claim/{heir["claimToken"]}/wallet"' in text
    for absent in ("Letters", "Documents", "Your share", "%"):
        assert absent not in words, absent


async def test_an_owner_without_a_name_is_their_wallet_on_the_heirs_page(fam: Family) -> None:
    ada = await fam.add_heir("Ada", 100)
    await fam.message("Dear Ada.", title="First")
    await fam.release()
    # A name cleared after activation (activation needs one); the page names the wallet, as
    # the guardians' page and every email do (models.account.users.known_as).
    query(fam.settings, "UPDATE users SET name_sealed = NULL WHERE id = %s", (fam.owner.user["id"],))
    status, text = await page(fam, f"/claim/{ada['claimToken']}")
    assert status == 200
    words = visible_text(text)
    holder = f"the holder of the Stellar wallet {fam.owner.keypair.public_key}"
    assert "The person who made this plan" not in words and "Olive" not in words
    assert f"The holder of the Stellar wallet {fam.owner.keypair.public_key} left this for you, Ada" in words
    assert f"In the order {holder} wrote them." in words
