"""The beneficiary's capsule through HTTP: locked, released, release rules at their edges,
audiences, what sealed messages hide, tokens, privacy headers, miss limits, the owner's
rehearsal and timeline."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest

from api.keys import DB, SETTINGS
from core.files.sealed_files import ServedFile
from models.claim import capsules, downloads
from tests.capsule_helpers import Family, assert_private, family
from tests.helpers import assert_error
from tests.plan_helpers import query
from tests.records import assert_record

SECRET = "the-key-is-under-the-blue-pot"


def iso(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def midnight_after(moment: datetime, days: int) -> datetime:
    day = (moment.astimezone(UTC) + timedelta(days=days)).date()
    return datetime(day.year, day.month, day.day, tzinfo=UTC)


@pytest.fixture
async def fam_on(make_client, run_worker, settings, backend, clock) -> Family:
    """A family on each storage backend in turn."""
    return await family(make_client, run_worker, settings, backend, clock)


async def test_locked_until_released_then_the_contents(fam_on: Family):
    fam = fam_on
    ada = await fam.add_heir("Ada", 60)
    await fam.add_heir("Ben", 40)
    letter = await fam.message(f"Dear Ada, {SECRET}", title="A letter")
    doc = await fam.document(
        b"%PDF-1.7 will",
        filename="will.pdf",
        content_type="application/pdf",
        title="My will",
        category="legal",
    )
    await fam.vault.work()

    resp = await fam.open(ada["claimToken"])
    assert resp.status == 200
    text = await resp.text()
    assert json.loads(text) == {"status": "locked"}  # nothing else, not even the owner's name

    await fam.release()
    body = await fam.capsule(ada)
    released = datetime.fromisoformat(body["releasedAt"].replace("Z", "+00:00"))
    assert abs(released - fam.clock.now()) < timedelta(minutes=1)
    assert body["status"] == "released"
    assert body["owner"] == {"name": "Olive Owner"}  # the profile name (release_plan sets it)
    assert body["beneficiary"] == {"name": "Ada", "relationship": "daughter", "allocationPercentage": 60}
    assert body["messages"] == [
        {
            "id": letter["id"],
            "title": "A letter",
            "content": f"Dear Ada, {SECRET}",
            "createdAt": letter["createdAt"],
            "media": None,
        }
    ]
    assert body["sealedMessages"] == []
    assert body["documents"] == [
        {
            "id": doc["id"],
            "title": "My will",
            "type": "document",
            "category": "legal",
            "fileName": "will.pdf",
            "contentType": "application/pdf",
            "size": 13,
            "sha256": fam.vault.row(doc["id"])["sha256"].hex(),
            "status": "available",
        }
    ]
    resp = await fam.open(ada["claimToken"], f"/documents/{doc['id']}/download")
    assert resp.status == 200 and await resp.read() == b"%PDF-1.7 will"
    assert resp.headers["Content-Disposition"].startswith("attachment;")


async def test_release_rules_open_at_their_edges(fam: Family):
    ada = await fam.add_heir("Ada", 100)
    now = fam.clock.now()
    on_release = await fam.message("at release")
    past_date = await fam.message(
        "dated before the release", rule=("on_date", (now - timedelta(days=30)).date().isoformat())
    )
    tomorrow = midnight_after(now, 1) if now.hour < 23 else midnight_after(now, 2)
    dated = await fam.message("dated", rule=("on_date", tomorrow.date().isoformat()))
    later = await fam.message("two days on", rule=("after_release", 2))
    await fam.release()
    released = datetime.fromisoformat((await fam.capsule(ada))["releasedAt"].replace("Z", "+00:00"))

    def ids(body: dict, key: str) -> list[str]:
        return [m["id"] for m in body[key]]

    body = await fam.capsule(ada)
    assert ids(body, "messages") == [on_release["id"], past_date["id"]]  # an old date opens with the release
    assert body["sealedMessages"] == [
        {"id": dated["id"], "title": "For you", "opensAt": iso(tomorrow)},
        {"id": later["id"], "title": "For you", "opensAt": iso(released + timedelta(days=2))},
    ]

    fam.clock.advance(tomorrow - fam.clock.now() - timedelta(minutes=1))  # the day before, 23:59
    assert dated["id"] in ids(await fam.capsule(ada), "sealedMessages")
    fam.clock.advance(minutes=2)  # the day of, 00:01 UTC
    body = await fam.capsule(ada)
    assert ids(body, "messages") == [on_release["id"], past_date["id"], dated["id"]]
    assert ids(body, "sealedMessages") == [later["id"]]

    fam.clock.advance(released + timedelta(days=2) - fam.clock.now() - timedelta(minutes=1))
    assert ids(await fam.capsule(ada), "sealedMessages") == [later["id"]]
    fam.clock.advance(minutes=2)
    body = await fam.capsule(ada)
    assert ids(body, "messages") == [on_release["id"], past_date["id"], dated["id"], later["id"]]
    assert body["sealedMessages"] == []
    assert [m["content"] for m in body["messages"]][-1] == "two days on"


async def test_a_dated_message_never_opens_before_the_release(fam: Family):
    ada = await fam.add_heir("Ada", 100)
    today = fam.clock.now().date().isoformat()
    dated = await fam.message("dated today", rule=("on_date", today))
    preview = await fam.preview(ada)  # a rehearsal releases "now": today's message is open
    assert [m["id"] for m in preview["messages"]] == [dated["id"]]
    resp = await fam.open(ada["claimToken"])
    assert await resp.json() == {"status": "locked"}  # but nothing opens while the plan is locked


async def test_audiences_all_explicit_and_nobody(fam: Family):
    everyone = await fam.message("to everyone")  # written before any heir exists
    ada = await fam.add_heir("Ada", 50)
    ben = await fam.add_heir("Ben", 30)
    cy = await fam.add_heir("Cy", 20)
    to_ada = await fam.message(f"only Ada {SECRET}", to=[ada])
    to_both = await fam.message("Ada and Ben", to=[ada, ben])
    doc_all = await fam.document(b"for all", filename="all.txt", content_type="text/plain")
    doc_ada = await fam.document(b"for ada", filename="ada.txt", content_type="text/plain", to=[ada])
    doc_ben = await fam.document(b"for ben", filename="ben.txt", content_type="text/plain", to=[ben])
    await fam.release()

    def seen(body: dict) -> tuple[list[str], list[str]]:
        return [m["id"] for m in body["messages"]], [d["id"] for d in body["documents"]]

    assert seen(await fam.capsule(ada)) == (
        [everyone["id"], to_ada["id"], to_both["id"]],
        [doc_all["id"], doc_ada["id"]],
    )
    assert seen(await fam.capsule(ben)) == ([everyone["id"], to_both["id"]], [doc_all["id"], doc_ben["id"]])
    cy_resp = await fam.open(cy["claimToken"])
    cy_text = await cy_resp.text()
    assert seen(json.loads(cy_text)) == ([everyone["id"]], [doc_all["id"]])
    assert SECRET not in cy_text and "ada.txt" not in cy_text


async def test_a_beneficiary_in_no_audience_gets_nothing(fam: Family):
    ada = await fam.add_heir("Ada", 50)
    dee = await fam.add_heir("Dee", 50)
    await fam.message(f"only Ada {SECRET}", to=[ada])
    await fam.message("Ada, later", to=[ada], rule=("after_release", 3))
    await fam.document(b"for ada", filename="ada.txt", content_type="text/plain", to=[ada])
    await fam.vault.work()
    rehearsal = await fam.preview(dee)
    assert (rehearsal["messages"], rehearsal["sealedMessages"], rehearsal["documents"]) == ([], [], [])
    await fam.release()
    resp = await fam.open(dee["claimToken"])
    text = await resp.text()
    body = json.loads(text)
    assert (body["messages"], body["sealedMessages"], body["documents"]) == ([], [], [])
    assert SECRET not in text and "ada.txt" not in text


async def test_sealed_messages_leak_nothing(fam: Family):
    ada = await fam.add_heir("Ada", 100)
    voice = await fam.vault.upload_ok(
        b"RIFF-secret-voice",
        filename="v.ogg",
        content_type="audio/ogg",
        type="voice",
        title="Voice title secret",
    )
    await fam.vault.work()
    sealed = await fam.message(
        SECRET, title="Open on your birthday", rule=("after_release", 30), mediaId=voice["id"]
    )
    await fam.release()
    resp = await fam.open(ada["claimToken"])
    text = await resp.text()
    body = json.loads(text)
    assert body["messages"] == []
    assert body["sealedMessages"] == [
        {
            "id": sealed["id"],
            "title": "Open on your birthday",
            "opensAt": body["sealedMessages"][0]["opensAt"],
        }
    ]
    for leak in (SECRET, "audio/ogg", "v.ogg", voice["id"], "Voice title", "content", "media", "size"):
        assert leak not in text
    # Its media cannot be fetched either, until it opens.
    resp = await fam.open(ada["claimToken"], f"/messages/{sealed['id']}/media")
    assert resp.status == 404
    assert_error(await resp.json(), 404)
    fam.clock.advance(days=30, minutes=1)
    body = await fam.capsule(ada)
    assert body["messages"][0]["media"] == {
        "type": "voice",
        "contentType": "audio/ogg",
        "size": 17,
        "status": "available",
    }
    resp = await fam.open(ada["claimToken"], f"/messages/{sealed['id']}/media")
    assert resp.status == 200 and await resp.read() == b"RIFF-secret-voice"


async def test_another_heirs_document_or_media_is_404(fam: Family):
    ada = await fam.add_heir("Ada", 50)
    ben = await fam.add_heir("Ben", 50)
    doc_ben = await fam.document(b"for ben", filename="ben.txt", content_type="text/plain", to=[ben])
    photo = await fam.vault.upload_ok(
        b"\x89PNG-photo",
        filename="p.png",
        content_type="image/png",
        type="photo",
        audience=json.dumps({"beneficiaryIds": [ben["id"]]}),
    )
    await fam.vault.work()
    to_ben = await fam.message("for ben", to=[ben], mediaId=photo["id"])
    broken = await fam.vault.upload_ok(b"damaged in storage", filename="b.txt", content_type="text/plain")
    fam.vault.object_path(broken["id"]).write_bytes(b"\x01" + b"\x00" * 40)
    await fam.release()  # the worker finds it damaged: `failed`, never listed nor served
    assert fam.vault.row(broken["id"])["status"] == "failed"
    for path in (
        f"/documents/{broken['id']}/download",
        f"/documents/{doc_ben['id']}/download",
        f"/documents/{photo['id']}/download",
        f"/messages/{to_ben['id']}/media",
        "/documents/not-a-uuid/download",
        f"/messages/{doc_ben['id']}/media",
        f"/documents/{to_ben['id']}/download",
    ):
        resp = await fam.open(ada["claimToken"], path)
        assert resp.status == 404, path
        assert_error(await resp.json(), 404)
    resp = await fam.open(ben["claimToken"], f"/documents/{doc_ben['id']}/download")
    assert resp.status == 200 and await resp.read() == b"for ben"
    resp = await fam.open(ben["claimToken"], f"/messages/{to_ben['id']}/media")
    assert resp.status == 200 and await resp.read() == b"\x89PNG-photo"
    assert resp.headers["Content-Type"] == "image/png"
    assert resp.headers["Content-Disposition"].startswith("inline;")
    assert [d["id"] for d in (await fam.capsule(ada))["documents"]] == []


async def test_documents_are_404_while_locked(fam: Family):
    ada = await fam.add_heir("Ada", 100)
    doc = await fam.document(b"for all", filename="all.txt", content_type="text/plain")
    await fam.vault.work()
    resp = await fam.open(ada["claimToken"], f"/documents/{doc['id']}/download")
    assert resp.status == 404


async def test_a_rotated_token_stops_working_at_once(fam: Family):
    ada = await fam.add_heir("Ada", 100)
    old = ada["claimToken"]
    resp = await fam.client.post(
        f"/api/beneficiaries/{ada['id']}/claim-token/rotate", headers=fam.owner.headers
    )
    assert resp.status == 200, await resp.text()
    new = (await resp.json())["claimToken"]
    assert new != old
    assert (await fam.open(old)).status == 404
    assert (await fam.open(new)).status == 200
    await fam.release()
    assert (await fam.open(old)).status == 404
    assert (await fam.capsule({**ada, "claimToken": new}))["status"] == "released"


@pytest.mark.parametrize(
    "token",
    [
        "0" * 64,
        "A" * 64,
        "abc",
        "g" * 64,
        "0" * 63,
        "0" * 65,
        "%E2%80%AE" + "0" * 60,
        "..%2F..%2Fetc",
        "%00",
        "%FF%FE",
        "%ED%A0%80",
        "x" * 4000,
    ],
)
async def test_unknown_or_malformed_tokens_are_404_with_the_headers(fam: Family, token: str):
    resp = await fam.open(token)
    assert resp.status == 404
    assert_error(await resp.json(), 404)
    resp = await fam.open(token, "/documents/00000000-0000-0000-0000-000000000000/download")
    assert resp.status == 404


async def test_headers_on_every_capsule_response(fam: Family):
    ada = await fam.add_heir("Ada", 100)
    token = ada["claimToken"]
    for path in ("", "/nowhere", "/documents/x/download", "/messages/x/media"):
        resp = await fam.open(token, path)  # asserts the headers
        assert resp.status in (200, 404)
    resp = await fam.client.post(f"/api/claim/{token}")  # 405, from the router
    assert_private(resp)
    resp = await fam.client.get("/api/claim/")
    assert_private(resp)
    resp = await fam.client.get("/api/beneficiaries", headers=fam.owner.headers)
    assert "X-Robots-Tag" not in resp.headers  # only the capsule


async def test_misses_are_limited_per_ip_and_never_a_valid_token(
    make_client, run_worker, settings, file_backend, clock
):
    fam = await family(
        make_client, run_worker, settings, file_backend, clock, rate_limit_claim_misses_per_ip=3
    )
    ada = await fam.add_heir("Ada", 100)
    for i in range(3):
        resp = await fam.open(
            f"{i:064x}", "/documents/00000000-0000-0000-0000-000000000000/download" if i else ""
        )
        assert resp.status == 404
    resp = await fam.open("f" * 64)
    assert resp.status == 429
    body = await resp.json()
    assert_error(body, 429)
    assert 1 <= int(resp.headers["Retry-After"]) <= 60
    resp = await fam.open("not-even-hex")
    assert resp.status == 429
    # The beneficiary, from the very same address, is served as if nothing happened.
    assert (await fam.open(ada["claimToken"])).status == 200
    assert (
        await fam.open(ada["claimToken"], "/documents/00000000-0000-0000-0000-000000000000/download")
    ).status == 404
    # Another address has its own count (TRUSTED_PROXY_HOPS=1: the proxy names the client).
    other = await family(
        make_client,
        run_worker,
        settings,
        file_backend,
        clock,
        rate_limit_claim_misses_per_ip=3,
        trusted_proxy_hops=1,
    )
    resp = await other.open("e" * 64, headers={"X-Forwarded-For": "203.0.113.9"})
    assert resp.status == 404


async def test_preview_is_what_the_heir_gets_once_released(fam: Family):
    ada = await fam.add_heir("Ada", 70)
    ben = await fam.add_heir("Ben", 30)
    await fam.message("hello all")
    await fam.message("for ada", to=[ada], rule=("on_date", fam.clock.now().date().isoformat()))
    await fam.message("later", rule=("on_date", (fam.clock.now() + timedelta(days=400)).date().isoformat()))
    await fam.message("ben only", to=[ben])
    await fam.document(b"doc", filename="d.txt", content_type="text/plain", to=[ada])
    await fam.vault.work()
    rehearsal = await fam.preview(ada)
    assert fam.heirs[0]["claimToken"] not in json.dumps(rehearsal)
    await fam.release()
    real = await fam.capsule(ada)
    assert {**rehearsal, "releasedAt": None} == {**real, "releasedAt": None}
    assert [m["content"] for m in real["messages"]] == ["hello all", "for ada"]
    # Owner-only, and only for the owner's own heirs.
    resp = await fam.client.get(f"/api/legacy/preview/{ada['id']}")
    assert resp.status == 401
    resp = await fam.client.get(
        "/api/legacy/preview/00000000-0000-0000-0000-000000000000", headers=fam.owner.headers
    )
    assert resp.status == 404


async def test_opens_and_downloads_on_the_owners_timeline(fam: Family):
    ada = await fam.add_heir("Ada", 100)
    doc = await fam.document(b"x" * 200_000, filename="secret-name.bin", title="Secret title")
    await fam.release()
    resp = await fam.client.head(f"/api/claim/{ada['claimToken']}")  # a link checker: receives nothing
    assert resp.status == 200 and fam.timeline() == []
    for _ in range(3):
        await fam.capsule(ada)
    assert [(e["kind"], e["entity_type"], e["entity_id"]) for e in fam.timeline()] == [
        ("capsule.opened", "capsule", ada["id"])
    ]
    fam.clock.advance(days=1)
    await fam.capsule(ada)
    assert [e["kind"] for e in fam.timeline()] == ["capsule.opened", "capsule.opened"]

    path = f"/documents/{doc['id']}/download"
    resp = await fam.open(ada["claimToken"], path)
    assert resp.status == 200 and len(await resp.read()) == 200_000
    resp = await fam.open(ada["claimToken"], path, headers={"Range": "bytes=100000-"})  # a resume: not new
    assert resp.status == 206
    await resp.read()
    resp = await fam.client.head(f"/api/claim/{ada['claimToken']}{path}")
    assert resp.status == 200
    downloads = [e for e in fam.timeline() if e["kind"] == "capsule.document_downloaded"]
    assert [(e["entity_id"], e["metadata"]) for e in downloads] == [(ada["id"], {"documentId": doc["id"]})]
    text = json.dumps(query(fam.settings, "SELECT * FROM activity WHERE kind LIKE 'capsule.%%'"), default=str)
    for secret in (ada["claimToken"], "Ada", "Secret title", "secret-name"):
        assert secret not in text


async def test_records_match_their_types(fam: Family):
    """The TypedDicts of models/claim/capsules.py hold what the SQL really returns."""
    ada = await fam.add_heir("Ada", 100)
    voice = await fam.vault.upload_ok(b"RIFF", filename="v.ogg", content_type="audio/ogg", type="voice")
    await fam.vault.work()
    message = await fam.message("hello", mediaId=voice["id"])
    await fam.message("later", rule=("after_release", 2))
    doc = await fam.document(b"doc", filename="d.txt", content_type="text/plain")
    await fam.release()
    pool, ring, now = fam.client.app[DB], fam.client.app[SETTINGS].key_ring, fam.clock.now()
    found = await capsules.open_by_token(pool, ring, token=ada["claimToken"])
    assert found is not None
    assert_record(found, capsules.Capsule)
    contents = await capsules.contents(pool, ring, capsule=found, now=now)
    assert_record(contents, capsules.Contents)
    assert (
        contents["messages"][0]["media"] is not None and contents["sealed_messages"] and contents["documents"]
    )
    assert_record(
        await downloads.document_for_download(pool, ring, capsule=found, raw_id=doc["id"]), ServedFile
    )
    assert_record(
        await downloads.media_for_message(pool, ring, capsule=found, raw_id=message["id"], now=now),
        ServedFile,
    )
    assert_record(
        await capsules.preview(
            pool, ring, owner_id=fam.owner.user["id"], raw_beneficiary_id=ada["id"], now=now
        ),
        capsules.Contents,
    )
