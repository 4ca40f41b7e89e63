"""Exports through HTTP: the owner's zip (round trip, manifest, limits, 409 after release), the
heir's "download everything" (only what their capsule shows), and damaged files named in the
manifest instead of breaking the download."""

from __future__ import annotations

import json

from tests.capsule_helpers import Family, assert_private
from tests.helpers import assert_error
from tests.media_samples import png, wav
from tests.support.capsule import check_manifest, owner_export, read_zip

SECRET_BEN = "only-for-ben-7f3a"
SECRET_SEALED = "sealed-until-later-91c2"


async def test_the_owners_export_round_trips_everything(fam: Family):
    ada = await fam.add_heir("Ada", 60)
    ben = await fam.add_heir("Ben", 40)
    will = b"%PDF-1.7 my will " * 5000  # several segments
    doc = await fam.document(will, filename="will.pdf", content_type="application/pdf", title="My will")
    twin = await fam.document(b"second", filename="WILL.pdf", content_type="application/pdf")
    photo_bytes = png()
    photo = await fam.vault.upload_ok(photo_bytes, filename="us.png", content_type="image/png", type="photo")
    await fam.vault.work()
    letter = await fam.message("Dear all, with love.", title="To everyone", mediaId=photo["id"])
    await fam.message(f"Ben: {SECRET_BEN}", to=[ben], rule=("after_release", 3))
    resp = await fam.client.post(
        "/api/assets",
        json={"label": "Savings", "amount": "12.50", "assetCode": "XLM", "audience": {"all": True}},
        headers=fam.owner.headers,
    )
    assert resp.status == 201, await resp.text()

    resp = await fam.client.get("/api/beneficiaries", headers=fam.owner.headers)  # the list, with tokens,
    assert resp.status == 200  # dumped first in this process: the export must still leave them out

    archive, raw = await read_zip(await owner_export(fam))
    manifest = check_manifest(archive)
    assert manifest["damaged"] == []
    names = archive.namelist()
    assert archive.read("archive/will.pdf") == will
    assert archive.read("archive/WILL (2).pdf") == b"second"  # a clash on a case-insensitive disk
    media = [n for n in names if n.startswith("messages/") and n.endswith("us.png")]
    assert len(media) == 1 and archive.read(media[0]) == photo_bytes
    assert not [n for n in names if n.startswith("archive/") and n.endswith("us.png")]  # not twice
    letters = sorted(n for n in names if n.startswith("messages/") and n.endswith(".txt"))
    assert len(letters) == 2
    first = archive.read(letters[0]).decode()
    assert first.startswith("To everyone\nWritten on ") and "Dear all, with love." in first
    assert media[0] in first  # the letter says where its photo is
    assert SECRET_BEN in archive.read(letters[1]).decode()  # the owner's own letters, all of them

    plan = json.loads(archive.read("plan.json"))
    assert plan["status"] == "Draft"
    assert {b["name"] for b in plan["beneficiaries"]} == {"Ada", "Ben"}
    assert all("claimToken" not in b for b in plan["beneficiaries"])
    for heir in (ada, ben):
        assert heir["claimToken"].encode() not in raw  # no claim link anywhere, even compressed
        for name in names:
            assert heir["claimToken"].encode() not in archive.read(name)
    assert plan["assets"][0]["label"] == "Savings" and plan["assets"][0]["amount"] == "12.50"
    by_id = {m["id"]: m for m in plan["messages"]}
    assert by_id[letter["id"]]["releaseRule"] == {"kind": "on_release", "value": None}
    assert by_id[letter["id"]]["mediaId"] == photo["id"]
    assert {i["id"] for i in plan["archive"]} >= {doc["id"], twin["id"], photo["id"]}
    assert plan["owner"]["name"] == "Olive Owner"

    timeline = json.loads(archive.read("timeline.json"))
    assert timeline[0]["kind"] == "user.created" and timeline[-1]["kind"] == "legacy.exported"  # oldest first
    assert [e["kind"] for e in fam.timeline("legacy.exported")] == ["legacy.exported"]


async def test_plan_json_carries_every_setting_get_legacy_shows(fam: Family):
    """plan.json's settings are GET /api/legacy's, all of them (allowBeneficiaryRequests was once
    left out): a setting added to the plan and not to the export fails here."""
    body = {"allowBeneficiaryRequests": True, "guardianThreshold": 1, "verificationTimeoutSeconds": None}
    resp = await fam.client.patch("/api/legacy", json=body, headers=fam.owner.headers)
    assert resp.status == 200, await resp.text()
    resp = await fam.client.get("/api/legacy", headers=fam.owner.headers)
    assert resp.status == 200
    shown = (await resp.json())["settings"]
    archive, _ = await read_zip(await owner_export(fam))
    settings = json.loads(archive.read("plan.json"))["settings"]
    assert settings == shown
    assert settings["allowBeneficiaryRequests"] is True and settings["guardianThreshold"] == 1


async def test_files_not_available_are_named_not_included(fam: Family):
    await fam.add_heir("Ada", 100)
    late = await fam.document(b"not verified yet", filename="late.txt", content_type="text/plain")
    archive, _ = await read_zip(await owner_export(fam))
    check_manifest(archive)
    plan = json.loads(archive.read("plan.json"))
    assert plan["archiveNotIncluded"] == [{"id": late["id"], "title": "late.txt", "status": "pending"}]
    assert not [n for n in archive.namelist() if n.startswith("archive/")]


async def test_a_missing_or_damaged_object_is_named_and_the_rest_arrives(fam: Family):
    await fam.add_heir("Ada", 100)
    gone = await fam.document(b"lost" * 100, filename="gone.txt", content_type="text/plain")
    flipped_bytes = bytes(range(256)) * 12 * 1024  # 3 MiB: 48 segments
    flipped = await fam.document(flipped_bytes, filename="flipped.bin")
    fine = await fam.document(b"still here", filename="fine.txt", content_type="text/plain")
    await fam.vault.work()
    fam.vault.object_path(gone["id"]).unlink()
    path = fam.vault.object_path(flipped["id"])
    damaged = bytearray(path.read_bytes())
    damaged[40 * 65552] ^= 1  # segment 41: what comes before it goes out, then the damage is found
    path.write_bytes(bytes(damaged))

    archive, _ = await read_zip(await owner_export(fam))
    manifest = check_manifest(archive)
    assert archive.read("archive/fine.txt") == b"still here"
    assert "archive/gone.txt" not in archive.namelist()
    partial = archive.read("archive/flipped.bin")
    assert flipped_bytes.startswith(partial)  # only authenticated bytes, up to the damage
    assert 0 < len(partial) <= 40 * 65536 and len(partial) % 65536 == 0
    assert {(d["path"], d["included"]) for d in manifest["damaged"]} == {
        ("archive/gone.txt", False),
        ("archive/flipped.bin", True),
    }
    assert fine["id"]


async def test_three_exports_an_hour_then_429_with_retry_after(fam: Family):
    for _ in range(3):
        resp = await owner_export(fam)
        assert resp.status == 200
        await resp.read()
    resp = await owner_export(fam)
    assert resp.status == 429
    assert 0 < int(resp.headers["Retry-After"]) <= 3600
    assert_error(await resp.json(), 429)
    assert len(fam.timeline("legacy.exported")) == 3


async def test_export_without_storage_is_503_and_unauthenticated_is_401(fam: Family, make_client):
    resp = await fam.client.get("/api/legacy/export")
    assert resp.status == 401
    client = await make_client(storage_url=None)
    resp = await client.get("/api/legacy/export", headers=fam.owner.headers)
    assert resp.status == 503
    assert_error(await resp.json(), 503)


async def test_after_release_the_owner_gets_409_and_each_heir_their_own(fam: Family):
    ada = await fam.add_heir("Ada", 50)
    ben = await fam.add_heir("Ben", 50)
    voice = wav(0.2)
    recording = await fam.vault.upload_ok(voice, filename="hello.wav", content_type="audio/wav", type="voice")
    for_ben = await fam.document(SECRET_BEN.encode(), filename="ben.txt", content_type="text/plain", to=[ben])
    shared = await fam.document(b"for everyone", filename="deed.txt", content_type="text/plain")
    sealed_voice = await fam.vault.upload_ok(
        SECRET_SEALED.encode(), filename="later.wav", content_type="audio/wav", type="voice"
    )
    await fam.vault.work()
    await fam.message("Hello Ada", title="For Ada", to=[ada], mediaId=recording["id"])
    await fam.message(f"Ben, {SECRET_BEN}", to=[ben])
    await fam.message(
        f"Later: {SECRET_SEALED}", title="Open later", rule=("after_release", 30), mediaId=sealed_voice["id"]
    )

    resp = await fam.open(ada["claimToken"], "/export")  # locked: nothing to download
    assert resp.status == 409
    assert_error(await resp.json(), 409)

    await fam.release()
    resp = await owner_export(fam)
    assert resp.status == 409
    assert "released" in (await resp.json())["message"]

    resp = await fam.open(ada["claimToken"], "/export")
    assert_private(resp)
    archive, raw = await read_zip(resp)
    manifest = check_manifest(archive)
    assert manifest["damaged"] == []
    names = archive.namelist()
    assert archive.read("documents/deed.txt") == b"for everyone"
    media = [n for n in names if n.endswith("hello.wav")]
    assert len(media) == 1 and media[0].startswith("letters/") and archive.read(media[0]) == voice
    letters = [n for n in names if n.startswith("letters/") and n.endswith(".txt")]
    assert len(letters) == 1 and "Hello Ada" in archive.read(letters[0]).decode()
    capsule = json.loads(archive.read("capsule.json"))
    assert capsule["beneficiary"]["name"] == "Ada"
    assert [d["id"] for d in capsule["documents"]] == [shared["id"]]
    assert capsule["sealedMessages"][0]["title"] == "Open later"  # announced, as the capsule does
    everything = b"".join(archive.read(n) for n in names) + raw
    for leak in (SECRET_BEN, SECRET_SEALED, "later.wav", for_ben["id"], ben["claimToken"]):
        assert leak.encode() not in everything, leak
    assert [e["kind"] for e in fam.timeline("capsule.exported")] == ["capsule.exported"]

    resp = await fam.open(ben["claimToken"], "/export")
    archive, _ = await read_zip(resp)
    assert archive.read("documents/ben.txt") == SECRET_BEN.encode()


async def test_the_heirs_page_links_to_download_everything(fam: Family):
    ada = await fam.add_heir("Ada", 100)
    await fam.message("Hello")
    await fam.release()
    resp = await fam.client.get(f"/claim/{ada['claimToken']}")
    page = await resp.text()
    assert resp.status == 200
    assert f'href="/api/claim/{ada["claimToken"]}/export"' in page
    assert "Download everything" in page


async def test_an_unknown_token_is_404(fam: Family):
    resp = await fam.open("0" * 64, "/export")
    assert resp.status == 404
    assert_error(await resp.json(), 404)
