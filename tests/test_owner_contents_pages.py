"""The plan's contents from a browser (/plan/assets, /plan/messages, /plan/archive), through the
app: signed in through the real door, each change the JSON route's own with the same timeline
entry, each refused form back beside its fields with the values kept, another owner's id a 404,
a GET changing nothing, an upload streamed by the page's plain multipart form."""

from __future__ import annotations

import re
from typing import Any

import aiohttp
from aiohttp.test_utils import TestClient

from tests.helpers import Session, sign_in
from tests.plan_helpers import activity_rows, create
from tests.support.owner import form_token, sign_in_page


class Owner:
    """One owner, in a browser (the client's cookie jar) and in the API (a bearer token)."""

    def __init__(self, client: TestClient, api: Session) -> None:
        self.client, self.api = client, api

    async def page(self, path: str, status: int = 200) -> str:
        resp = await self.client.get(path, allow_redirects=False)
        text = await resp.text()
        assert resp.status == status, text
        return text

    async def post(self, path: str, fields: list[tuple[str, str]], *, status: int = 303) -> Any:
        token = form_token(await self.page("/plan"))
        resp = await self.client.post(path, data=[("formToken", token), *fields], allow_redirects=False)
        text = await resp.text()
        assert resp.status == status, text
        return resp, text

    async def upload(
        self,
        fields: list[tuple[str, str]],
        data: bytes,
        *,
        content_type: str = "application/pdf",
        status: int = 303,
    ) -> Any:
        form = aiohttp.FormData(quote_fields=False)
        form.add_field("formToken", form_token(await self.page("/plan")))
        for name, value in fields:
            form.add_field(name, value)
        form.add_field("file", data, filename="will.pdf", content_type=content_type)
        resp = await self.client.post("/plan/archive", data=form, allow_redirects=False)
        text = await resp.text()
        assert resp.status == status, text
        return resp, text

    async def listed(self, collection: str) -> list[dict[str, Any]]:
        resp = await self.client.get(f"/api/{collection}", headers=self.api.headers)
        assert resp.status == 200
        rows: list[dict[str, Any]] = await resp.json()
        return rows


async def owner_in(client: TestClient) -> Owner:
    from stellar_sdk import Keypair

    keypair = Keypair.random()
    api = await sign_in(client, keypair)
    await sign_in_page(client, keypair)
    return Owner(client, api)


async def two_heirs(client: TestClient, owner: Owner) -> tuple[dict[str, Any], dict[str, Any]]:
    ana = await create(
        client, owner.api, "beneficiaries", name="Ana", email="ana@example.org", allocationPercentage=60
    )
    ben = await create(
        client, owner.api, "beneficiaries", name="Ben", email="ben@example.org", allocationPercentage=40
    )
    return ana, ben


def kinds(settings: Any, user_id: str) -> list[str]:
    return [row["kind"] for row in activity_rows(settings, user_id)]


# ---------------------------------------------------------------------------------------------
# /plan/assets
# ---------------------------------------------------------------------------------------------


async def test_an_asset_added_from_the_page_is_the_apis_and_each_heir_reads_their_share(client, settings):
    owner = await owner_in(client)
    ana, ben = await two_heirs(client, owner)
    resp, _ = await owner.post(
        "/plan/assets",
        [
            ("label", "Savings"),
            ("amount", "25000"),
            ("assetCode", "XLM"),
            ("description", ""),
            ("audience.all", "true"),
        ],
    )
    assert resp.headers["Location"] == "/plan/assets?done=asset-added#done"
    await owner.post(
        "/plan/assets",
        [
            ("label", "The piano"),
            ("amount", ""),
            ("assetCode", ""),
            ("audience.all", "false"),
            ("audience.beneficiaryIds", ana["id"]),
            ("audience.beneficiaryIds", ben["id"]),
        ],
    )
    rows = {row["label"]: row for row in await owner.listed("assets")}
    assert rows["Savings"]["amount"] == "25000" and rows["Savings"]["audience"] == {"all": True}
    assert rows["The piano"]["amount"] is None
    assert sorted(rows["The piano"]["audience"]["beneficiaryIds"]) == sorted([ana["id"], ben["id"]])
    page = await owner.page("/plan/assets?done=asset-added")
    assert "It was added to what you leave." in page
    assert "Your share: 15000 XLM, which is 60\u00a0% of the whole 25000 XLM." in page
    assert "Your share: 10000 XLM, which is 40\u00a0% of the whole 25000 XLM." in page
    assert (
        "It goes to you, together with <bdi>Ben</bdi>." in page
        or "It goes to you, together with Ben." in page
    )
    assert kinds(settings, owner.api.user["id"]).count("asset.created") == 2


async def test_a_refused_asset_comes_back_beside_its_fields_with_the_values_kept(client):
    owner = await owner_in(client)
    _, page = await owner.post(
        "/plan/assets", [("label", ""), ("amount", "12.5x"), ("audience.all", "true")], status=422
    )
    assert "Nothing was saved yet" in page and "Please fill this in." in page
    assert 'value="12.5x"' in page
    _, page = await owner.post(
        "/plan/assets",
        [("label", "Ring"), ("amount", ""), ("assetCode", "XLM"), ("audience.all", "true")],
        status=422,
    )
    assert 'value="Ring"' in page
    _, page = await owner.post("/plan/assets", [("label", "Ring"), ("audience.all", "false")], status=422)
    assert 'id="error-audience"' in page
    assert await owner.listed("assets") == []


async def test_an_asset_is_changed_and_removed_behind_a_confirmation(client, settings):
    owner = await owner_in(client)
    asset = await create(client, owner.api, "assets", label="Car", amount="100")
    page = await owner.page(f"/plan/assets/{asset['id']}")
    assert 'value="Car"' in page and 'value="100"' in page
    await owner.post(
        f"/plan/assets/{asset['id']}", [("label", "The car"), ("amount", "100.50"), ("audience.all", "true")]
    )
    assert [(row["label"], row["amount"]) for row in await owner.listed("assets")] == [("The car", "100.50")]
    page = await owner.page(f"/plan/assets/{asset['id']}/remove")
    assert "This cannot be undone" in page
    assert len(await owner.listed("assets")) == 1  # the GET changed nothing
    await owner.post(f"/plan/assets/{asset['id']}/remove", [])
    assert await owner.listed("assets") == []
    assert {"asset.updated", "asset.deleted"} <= set(kinds(settings, owner.api.user["id"]))


async def test_another_owners_asset_letter_or_file_is_a_404(client):
    other = await owner_in(client)
    asset = await create(client, other.api, "assets", label="Theirs", amount="1")
    letter = await create(
        client,
        other.api,
        "messages",
        content="Hi",
        releaseRule={"kind": "on_release"},
        audience={"all": True},
    )
    client.session.cookie_jar.clear()
    owner = await owner_in(client)
    for path in (f"/plan/assets/{asset['id']}", f"/plan/messages/{letter['id']}"):
        await owner.page(path, status=404)
        await owner.page(path + "/remove", status=404)
        await owner.post(path + "/remove", [], status=404)
    await owner.page("/plan/archive/00000000-0000-0000-0000-000000000000/remove", status=404)
    assert len(await other.listed("assets")) == 1 and len(await other.listed("messages")) == 1


# ---------------------------------------------------------------------------------------------
# /plan/messages
# ---------------------------------------------------------------------------------------------


async def test_letters_are_written_with_each_release_rule_and_say_who_reads_them_when(client, settings):
    owner = await owner_in(client)
    ana, _ = await two_heirs(client, owner)
    base = [("content", "Dear all"), ("audience.all", "true")]
    await owner.post(
        "/plan/messages",
        [
            ("title", "First"),
            ("releaseRule.kind", "on_release"),
            ("releaseRule.value", ""),
            ("releaseRule.value", ""),
            *base,
        ],
    )
    await owner.post(
        "/plan/messages",
        [
            ("title", "Dated"),
            ("releaseRule.kind", "on_date"),
            ("releaseRule.value", "2031-05-04"),
            ("releaseRule.value", "9"),
            *base,
        ],
    )
    await owner.post(
        "/plan/messages",
        [
            ("title", "Later"),
            ("releaseRule.kind", "after_release"),
            ("releaseRule.value", ""),
            ("releaseRule.value", "30"),
            ("content", "For Ana"),
            ("audience.all", "false"),
            ("audience.beneficiaryIds", ana["id"]),
        ],
    )
    rows = {row["title"]: row for row in await owner.listed("messages")}
    assert rows["First"]["releaseRule"] == {"kind": "on_release", "value": None}
    assert rows["Dated"]["releaseRule"] == {"kind": "on_date", "value": "2031-05-04"}
    assert rows["Later"]["releaseRule"] == {"kind": "after_release", "value": 30}
    assert rows["Later"]["audience"] == {"beneficiaryIds": [ana["id"]]}
    page = await owner.page("/plan/messages")
    assert "They can read it as soon as your plan is released." in page
    assert "They can read it from 4 May 2031, or from the release if that comes later." in page
    assert "They can read it 30 days after your plan is released" in page
    assert "For <bdi>Ana</bdi>." in page or "For Ana." in page
    assert kinds(settings, owner.api.user["id"]).count("message.created") == 3


async def test_a_refused_letter_says_why_beside_its_fields(client):
    owner = await owner_in(client)
    _, page = await owner.post(
        "/plan/messages",
        [
            ("title", "Kept"),
            ("content", " "),
            ("releaseRule.kind", "after_release"),
            ("releaseRule.value", ""),
            ("releaseRule.value", "0"),
            ("audience.all", "true"),
        ],
        status=422,
    )
    assert "Nothing was saved yet" in page and 'value="Kept"' in page
    assert 'id="error-releaseRule"' in page
    assert await owner.listed("messages") == []


async def test_a_letter_is_changed_and_deleted_behind_a_confirmation(client, settings):
    owner = await owner_in(client)
    letter = await create(
        client,
        owner.api,
        "messages",
        title="Old",
        content="Text",
        releaseRule={"kind": "after_release", "value": 3},
        audience={"all": True},
    )
    page = await owner.page(f"/plan/messages/{letter['id']}")
    assert 'value="Old"' in page and 'value="3"' in page
    await owner.post(
        f"/plan/messages/{letter['id']}",
        [("title", "New"), ("content", "Text"), ("releaseRule.kind", "on_release"), ("audience.all", "true")],
    )
    rows = await owner.listed("messages")
    assert [(r["title"], r["releaseRule"]["kind"]) for r in rows] == [("New", "on_release")]
    await owner.page(f"/plan/messages/{letter['id']}/remove")
    assert len(await owner.listed("messages")) == 1
    await owner.post(f"/plan/messages/{letter['id']}/remove", [])
    assert await owner.listed("messages") == []
    assert {"message.updated", "message.deleted"} <= set(kinds(settings, owner.api.user["id"]))


# ---------------------------------------------------------------------------------------------
# /plan/archive
# ---------------------------------------------------------------------------------------------


async def test_a_file_and_a_title_are_enough_and_the_page_says_its_state(
    make_client, file_backend, run_worker, settings
):
    client = await make_client(**file_backend)
    owner = await owner_in(client)
    page = await owner.page("/plan/archive")
    assert "Files up to" in page and 'enctype="multipart/form-data"' in page
    assert page.index('name="title"') < page.index('name="file"')
    resp, _ = await owner.upload([("title", "My will")], b"%PDF-1.4 will")
    assert resp.headers["Location"] == "/plan/archive?done=uploaded#done"
    [item] = await owner.listed("archive")
    assert (item["title"], item["type"], item["category"], item["audience"]) == (
        "My will",
        "document",
        "other",
        {"all": True},
    )
    page = await owner.page("/plan/archive")
    assert "Being sealed and stored" in page and 'http-equiv="refresh"' in page
    await run_worker(settings=file_backend)
    page = await owner.page("/plan/archive")
    assert "Sealed and stored" in page and 'http-equiv="refresh"' not in page
    resp = await client.get(f"/plan/archive/{item['id']}/download")
    assert resp.status == 200 and await resp.read() == b"%PDF-1.4 will"
    await owner.page(f"/plan/archive/{item['id']}/remove")
    assert len(await owner.listed("archive")) == 1
    await owner.post(f"/plan/archive/{item['id']}/remove", [])
    assert await owner.listed("archive") == []
    assert {"archive_item.created", "archive_item.deleted"} <= set(kinds(settings, owner.api.user["id"]))


async def test_an_upload_refused_before_the_file_says_why_and_stores_nothing(make_client, file_backend):
    client = await make_client(**file_backend)
    owner = await owner_in(client)
    _, page = await owner.upload([("title", "Me"), ("type", "photo")], b"not an image", status=422)
    assert "Nothing was saved yet" in page and 'value="Me"' in page
    form = aiohttp.FormData()
    form.add_field("formToken", "wrong")
    form.add_field("file", b"x", filename="x.pdf", content_type="application/pdf")
    resp = await client.post("/plan/archive", data=form, allow_redirects=False)
    assert resp.status == 403
    assert await owner.listed("archive") == []


async def test_a_letter_carries_a_photo_uploaded_from_its_page(make_client, file_backend, settings):
    client = await make_client(**file_backend)
    owner = await owner_in(client)
    page = await owner.page("/plan/messages")
    assert 'name="back" value="messages"' in page
    resp, _ = await owner.upload(
        [("back", "messages"), ("title", "Us at the sea"), ("type", "photo"), ("audience.all", "true")],
        b"\x89PNG photo",
        content_type="image/png",
    )
    assert resp.headers["Location"] == "/plan/messages?done=uploaded#done"
    [photo] = await owner.listed("archive")
    page = await owner.page("/plan/messages")
    assert f'value="{photo["id"]}"' in page
    await owner.post(
        "/plan/messages",
        [
            ("content", "Look"),
            ("releaseRule.kind", "on_release"),
            ("audience.all", "true"),
            ("mediaId", photo["id"]),
        ],
    )
    [letter] = await owner.listed("messages")
    assert letter["mediaId"] == photo["id"]
    assert "With a photo: Us at the sea." in await owner.page("/plan/messages")


async def test_without_storage_the_page_says_so_in_words(make_client):
    client = await make_client(storage_url="")
    owner = await owner_in(client)
    page = await owner.page("/plan/archive")
    assert "no file storage set up" in page and 'name="file"' not in page


def test_the_upload_script_is_allowed_by_its_hash_only() -> None:
    from api.owner.contents.archive import PROGRESS_HASH

    assert re.fullmatch(r"sha256-[A-Za-z0-9+/]+=*", PROGRESS_HASH)


async def test_a_file_past_the_limit_or_without_storage_is_said_in_words(make_client, file_backend):
    client = await make_client(archive_max_bytes=1000, **file_backend)
    owner = await owner_in(client)
    _, page = await owner.upload([("title", "Big")], b"x" * 5000, status=413)
    assert "This file is larger than the limit of" in page and 'id="error-file"' in page
    assert await owner.listed("archive") == []
    bare = await make_client(storage_url="")
    owner = await owner_in(bare)
    _, page = await owner.upload([("title", "Mine")], b"x", status=503)
    assert "no file storage set up" in page  # the page as it is without storage, said in words
    assert "STORAGE_URL" not in page


async def test_an_on_date_letter_needs_a_real_date(client):
    owner = await owner_in(client)
    _, page = await owner.post(
        "/plan/messages",
        [
            ("content", "Hi"),
            ("releaseRule.kind", "on_date"),
            ("releaseRule.value", "2031-02-30"),
            ("releaseRule.value", ""),
            ("audience.all", "true"),
        ],
        status=422,
    )
    assert 'id="error-releaseRule"' in page
    assert await owner.listed("messages") == []


async def test_once_released_the_contents_pages_say_so_and_offer_no_change(
    make_client, file_backend, clock, run_worker
):
    from tests.lifecycle_helpers import release_plan

    client = await make_client(**file_backend)
    owner = await owner_in(client)
    await create(client, owner.api, "assets", label="Car", amount="10")
    letter = await create(
        client,
        owner.api,
        "messages",
        title="Later",
        content="Sealed text",
        releaseRule={"kind": "after_release", "value": 30},
        audience={"all": True},
    )
    await release_plan(client, owner.api, clock, run_worker)
    assets = await owner.page("/plan/assets")
    assert "what you leave can no longer be changed" in assets and 'action="/plan/assets#add"' not in assets
    assert "/remove" not in assets
    letters = await owner.page("/plan/messages")
    assert "your letters can no longer be changed" in letters and "Sealed text" not in letters
    assert "They can read it 30 days after your plan is released" in letters
    archive = await owner.page("/plan/archive")
    assert "your documents can no longer be changed" in archive and 'name="file"' not in archive
    _, page = await owner.post(
        f"/plan/messages/{letter['id']}",
        [
            ("title", "Changed"),
            ("content", "New"),
            ("releaseRule.kind", "on_release"),
            ("audience.all", "true"),
        ],
        status=422,
    )
    assert "Nothing was saved yet" in page
    assert [row["title"] for row in await owner.listed("messages")] == ["Later"]
