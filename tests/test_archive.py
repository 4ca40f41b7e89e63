"""Archive routes: upload -> real worker -> download on both backends, limits, validation, access.

Everything is real: the app over HTTP sealing uploads into a storage directory or a moto S3
server, PostgreSQL, and the arq worker in burst mode on Redis.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os

import aiohttp
import psycopg2
import pytest
from aiobotocore.session import get_session

from core.files.crypto import ciphertext_size
from models.archive.upload_rules import sanitize_file_name
from testing.s3server import s3_client_kwargs
from tests.archive_helpers import MIB, SEGMENT, Archive, harness
from tests.helpers import assert_error, sign_in, until
from tests.plan_helpers import activity_rows, blocked_by, body_for, create, query

ROUND_TRIP_SIZES = [1, SEGMENT - 1, SEGMENT, SEGMENT + 1, 20 * MIB]


async def test_round_trips_are_byte_identical(backend, make_client, run_worker, settings):
    """1 B, 64 KiB - 1, 64 KiB, 64 KiB + 1 and 20 MiB: sealed on upload, verified, decrypted."""
    vault = await harness(make_client, run_worker, settings, backend)
    files = {size: os.urandom(size) for size in ROUND_TRIP_SIZES}
    items = {size: await vault.upload_ok(data) for size, data in files.items()}
    for size, item in items.items():  # stored before the 202, not yet verified
        row = vault.row(item["id"])
        assert row["status"] == "pending" and row["key_id"] == "k1"
        assert row["size_bytes"] == size and row["stored_bytes"] == ciphertext_size(size)
        assert item["sha256"] == hashlib.sha256(files[size]).hexdigest()
        resp = await vault.download(item["id"])
        assert resp.status == 409

    await vault.work()

    for size, item in items.items():
        assert vault.row(item["id"])["status"] == "available"
        assert await vault.download_bytes(item["id"]) == files[size]


async def test_upload_response_download_headers_and_list(vault: Archive, settings):
    data = b"%PDF-1.7 will and testament"
    form = {"title": "  Last will ", "type": "document", "category": "legal", "description": "Signed 2024"}
    item = await vault.upload_ok(
        data, filename="Ünïcode wïll %22final%22.pdf", content_type="application/pdf", **form
    )
    assert item["title"] == "Last will" and item["category"] == "legal" and item["type"] == "document"
    assert item["fileName"] == "Ünïcode wïll _final_.pdf" and item["contentType"] == "application/pdf"
    assert item["size"] == len(data) and item["failureReason"] is None
    assert item["sha256"] == hashlib.sha256(data).hexdigest()
    assert item["audience"] == {"all": True} and item["userId"] == vault.session.user["id"]

    await vault.work()
    resp = await vault.get(item["id"])
    stored = await resp.json()
    assert stored["status"] == "available"
    assert stored["sha256"] == hashlib.sha256(data).hexdigest()

    resp = await vault.download(item["id"])
    assert resp.status == 200
    assert await resp.read() == data
    assert resp.headers["Content-Type"] == "application/pdf"
    assert resp.headers["Content-Length"] == str(len(data))
    assert resp.headers["X-Content-Type-Options"] == "nosniff"
    assert resp.headers["Cache-Control"] == "no-store"
    assert resp.headers["Content-Disposition"] == (
        'attachment; filename="Unicode will _final_.pdf"; '
        "filename*=UTF-8''%C3%9Cn%C3%AFcode%20w%C3%AFll%20_final_.pdf"
    )

    resp = await vault.client.head(f"/api/archive/{item['id']}/download", headers=vault.session.headers)
    assert resp.status == 200 and resp.headers["Content-Length"] == str(len(data))

    second = await vault.upload_ok(b"x", filename="b.txt", content_type="text/plain; charset=UTF-8; x=1")
    assert second["contentType"] == "text/plain; charset=utf-8"
    resp = await vault.client.get("/api/archive?limit=1", headers=vault.session.headers)
    assert [i["id"] for i in await resp.json()] == [second["id"]]
    assert 'rel="next"' in resp.headers["Link"]
    kinds = [e["kind"] for e in activity_rows(settings, vault.session.user["id"])]
    assert kinds.count("archive_item.created") == 2


def test_file_names_are_sanitised():
    assert sanitize_file_name(raw="a%22b%0D%0A.txt") == "a_b__.txt"
    assert sanitize_file_name(raw='../../etc/pa"ss\x01wd.txt') == "pa_ss_wd.txt"
    assert sanitize_file_name(raw="C:\\Users\\me\\report.pdf") == "report.pdf"
    assert sanitize_file_name(raw="invoice\u202efdp.exe") == "invoice_fdp.exe"
    assert sanitize_file_name(raw="  ..  ") == "file"
    assert sanitize_file_name(raw=None) == "file"
    long = sanitize_file_name(raw="a" * 500 + ".jpeg")
    assert len(long) == 200 and long.endswith(".jpeg")


async def test_multipart_streaming_is_not_limited_by_client_max_size(vault: Archive):
    """The app refuses JSON bodies over 1 MiB, but uploads stream past it (up to ARCHIVE_MAX_BYTES)."""
    item = await vault.upload_ok(os.urandom(3 * MIB))
    assert item["size"] == 3 * MIB


async def test_content_length_over_the_limit_is_413_before_reading(make_client, file_backend, settings):
    vault = await harness(make_client, None, settings, file_backend, archive_max_bytes=1000)
    resp = await vault.upload(os.urandom(200 * 1024))
    assert resp.status == 413
    assert_error(await resp.json(), 413)
    assert vault.stored_files() == [] and query(settings, "SELECT id FROM archive_items") == []


async def test_streamed_body_over_the_limit_is_413_and_leaves_nothing(make_client, file_backend, settings):
    vault = await harness(make_client, None, settings, file_backend, archive_max_bytes=3 * MIB)
    # Within Content-Length slack but over the file limit: caught while streaming.
    resp = await vault.upload(os.urandom(3 * MIB + 1))
    assert resp.status == 413

    boundary = "lpsboundary"
    head = (
        f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="big.bin"\r\n'
        "Content-Type: application/octet-stream\r\n\r\n"
    ).encode()

    async def chunked_body():  # no Content-Length at all: only the streaming count can stop it
        yield head
        for _ in range(8):
            yield os.urandom(MIB)
        yield f"\r\n--{boundary}--\r\n".encode()

    resp = await vault.client.post(
        "/api/archive",
        data=chunked_body(),
        headers={**vault.session.headers, "Content-Type": f"multipart/form-data; boundary={boundary}"},
    )
    assert resp.status == 413
    assert_error(await resp.json(), 413)
    assert vault.stored_files() == [] and query(settings, "SELECT id FROM archive_items") == []


async def test_interrupted_upload_leaves_nothing(vault: Archive, settings):
    """A client that promises 8 MiB and hangs up after 3 gets nothing committed or stored."""
    boundary = "cut"
    head = (f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="a.bin"\r\n\r\n').encode()
    request = (
        "POST /api/archive HTTP/1.1\r\nHost: test\r\n"
        f"Authorization: Bearer {vault.session.token}\r\n"
        f"Content-Type: multipart/form-data; boundary={boundary}\r\nContent-Length: {8 * MIB}\r\n\r\n"
    ).encode()
    _, writer = await asyncio.open_connection(vault.client.host, vault.client.port)
    writer.write(request + head)
    for _ in range(3):
        writer.write(os.urandom(MIB))
        await writer.drain()

    def partial_written() -> bool:
        files = vault.stored_files()
        return len(files) == 1 and (vault.storage_root / files[0]).stat().st_size >= MIB

    await until(partial_written, "a MiB of ciphertext in storage")
    [partial] = vault.stored_files()  # ciphertext being written, not yet in place
    assert partial.startswith(".tmp/") and (vault.storage_root / partial).stat().st_size >= MIB
    writer.close()
    await writer.wait_closed()
    # The handler notices the hang-up, then discards what it wrote.
    await until(lambda: not vault.stored_files(), "the partial file discarded")
    assert vault.stored_files() == []
    assert query(settings, "SELECT id FROM archive_items") == []


@pytest.mark.parametrize(
    ("fields", "file", "message"),
    [
        ({}, (b"", "a.txt", "text/plain"), "file: The file is empty."),
        (
            {"type": "photo"},
            (b"%PDF", "a.pdf", "application/pdf"),
            "type: A photo must be uploaded with a image/*",
        ),
        ({"type": "voice"}, (b"x", "a.mp4", "video/mp4"), "type: A voice must be uploaded with a audio/*"),
        ({"type": "selfie"}, (b"x", "a.png", "image/png"), "type: Must be one of: document, photo"),
        ({"category": "misc"}, (b"x", "a.txt", "text/plain"), "category: Must be one of: legal"),
        ({"audience": "everyone"}, (b"x", "a.txt", "text/plain"), "audience: Not valid JSON."),
        (
            {"audience": "[" * 5_000 + "]" * 5_000},
            (b"x", "a.txt", "text/plain"),
            "audience: Not valid JSON.",
        ),
        ({"audience": '{"all": false}'}, (b"x", "a.txt", "text/plain"), "audience: Give either"),
        (
            {"audience": '{"beneficiaryIds": ["nope"]}'},
            (b"x", "a.txt", "text/plain"),
            "audience.beneficiaryIds",
        ),
        ({"title": "t" * 201}, (b"x", "a.txt", "text/plain"), "title: Length must be between 1 and 200."),
        ({"description": "d" * 2001}, (b"x", "a.txt", "text/plain"), "description: Longer than maximum"),
    ],
)
async def test_invalid_uploads_are_400(vault: Archive, settings, fields, file, message):
    data, filename, content_type = file
    resp = await vault.upload(data, filename=filename, content_type=content_type, **fields)
    body = await resp.json()
    assert resp.status == 400, body
    assert_error(body, 400)
    assert any(line.startswith(message) for line in body["message"]), body["message"]
    assert vault.stored_files() == [] and query(settings, "SELECT id FROM archive_items") == []


async def test_missing_file_wrong_content_type_and_unknown_fields(vault: Archive):
    form = aiohttp.FormData()
    form.add_field("title", "no file")
    form.add_field("dummy", "x", filename="not-the-file.txt")
    resp = await vault.client.post("/api/archive", data=form, headers=vault.session.headers)
    assert resp.status == 400
    assert (await resp.json())["message"] == ["file: Missing data for required field."]

    resp = await vault.client.post("/api/archive", json={"file": "x"}, headers=vault.session.headers)
    assert resp.status == 400
    assert (await resp.json())["message"] == "Content-Type must be multipart/form-data"

    item = await vault.upload_ok(b"x", owner="someone-else", status="available")  # stripped
    assert item["status"] == "pending"
    # Blank fields, as HTML forms send them, mean "not given".
    item = await vault.upload_ok(b"x", filename="scan.pdf", title=" ", type="", description="")
    assert (item["title"], item["type"], item["description"]) == ("scan.pdf", "document", None)


async def test_photo_with_image_type_and_audience_of_own_beneficiaries(vault: Archive, settings):
    mine = await create(vault.client, vault.session, "beneficiaries")
    other = await sign_in(vault.client)
    theirs = await create(vault.client, other, "beneficiaries")

    resp = await vault.upload(
        b"\x89PNG",
        filename="p.png",
        content_type="image/png",
        type="photo",
        audience=json.dumps({"beneficiaryIds": [mine["id"], theirs["id"]]}),
    )
    assert resp.status == 400
    assert (await resp.json())["message"] == [
        f"audience.beneficiaryIds: Not one of your beneficiaries: {theirs['id']}."
    ]
    assert vault.stored_files() == []  # stored, then removed when the commit was refused

    item = await vault.upload_ok(
        b"\x89PNG",
        filename="p.png",
        content_type="image/png",
        type="photo",
        audience=json.dumps({"beneficiaryIds": [mine["id"]]}),
    )
    assert item["type"] == "photo" and item["audience"] == {"beneficiaryIds": [mine["id"]]}
    resp = await vault.client.delete(f"/api/beneficiaries/{mine['id']}", headers=vault.session.headers)
    assert resp.status == 204
    assert (await (await vault.get(item["id"])).json())["audience"] == {"beneficiaryIds": []}


async def test_storage_unset_is_503_before_reading_the_body(make_client, vault: Archive):
    item = await vault.upload_ok(b"kept")
    await vault.work()
    bare = await make_client(storage_url="")
    session = await sign_in(bare)
    resp = await bare.post(
        "/api/archive",
        data=b"x" * 10,
        headers={**session.headers, "Content-Type": "multipart/form-data; boundary=z"},
    )
    assert resp.status == 503
    body = await resp.json()
    assert_error(body, 503)
    assert "STORAGE_URL" in body["message"]
    resp = await bare.get(f"/api/archive/{item['id']}/download", headers=vault.session.headers)
    assert resp.status == 503
    resp = await bare.get("/api/archive", headers=vault.session.headers)
    assert resp.status == 200 and [i["id"] for i in await resp.json()] == [item["id"]]


async def test_other_owners_and_malformed_ids_are_404_and_anonymous_401(vault: Archive):
    item = await vault.upload_ok(b"private")
    await vault.work()
    other = await sign_in(vault.client)
    for path in (f"/api/archive/{item['id']}", f"/api/archive/{item['id']}/download", "/api/archive/nope"):
        resp = await vault.client.get(path, headers=other.headers)
        assert resp.status == 404
        assert_error(await resp.json(), 404)
    resp = await vault.client.delete(f"/api/archive/{item['id']}", headers=other.headers)
    assert resp.status == 404
    resp = await vault.client.get("/api/archive", headers=other.headers)
    assert await resp.json() == []
    for method, path in (
        ("GET", "/api/archive"),
        ("POST", "/api/archive"),
        ("DELETE", f"/api/archive/{item['id']}"),
    ):
        resp = await vault.client.request(method, path)
        assert resp.status == 401
    assert await vault.download_bytes(item["id"]) == b"private"


async def test_download_while_pending_is_409(vault: Archive):
    item = await vault.upload_ok(b"soon")
    resp = await vault.download(item["id"])
    assert resp.status == 409
    body = await resp.json()
    assert_error(body, 409)
    assert body["itemStatus"] == "pending" and "pending" in body["message"]


async def test_delete_removes_row_and_object_and_records_it(vault: Archive, settings):
    stored = await vault.upload_ok(b"stored")
    await vault.work()
    pending = await vault.upload_ok(b"never verified")
    assert vault.object_path(stored["id"]).exists() and vault.object_path(pending["id"]).exists()

    for item in (stored, pending):
        resp = await vault.client.delete(f"/api/archive/{item['id']}", headers=vault.session.headers)
        assert resp.status == 204
        assert (await vault.get(item["id"])).status == 404
    assert vault.stored_files() == []
    assert query(settings, "SELECT * FROM archive_deletions") == []
    kinds = [e["kind"] for e in activity_rows(settings, vault.session.user["id"])]
    assert kinds.count("archive_item.deleted") == 2

    await vault.work()  # the pending item's job finds nothing to do
    assert vault.stored_files() == [] and query(settings, "SELECT id FROM archive_items") == []


@pytest.mark.fault
async def test_delete_while_storage_is_down_is_finished_by_the_sweeper(
    make_client, run_worker, settings, s3_backend, monkeypatch
):
    vault = await harness(make_client, run_worker, settings, s3_backend)
    item = await vault.upload_ok(b"to be removed")
    await vault.work()
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "1")
    down = await make_client(**{**s3_backend, "s3_endpoint_url": "http://127.0.0.1:9"})
    resp = await down.delete(f"/api/archive/{item['id']}", headers=vault.session.headers)
    assert resp.status == 204
    key = f"archive/{vault.session.user['id']}/{item['id']}"
    [pending] = query(settings, "SELECT storage_key, attempts FROM archive_deletions")
    assert pending == {"storage_key": key, "attempts": 1}

    await vault.work()  # the sweeper runs at worker start-up
    assert query(settings, "SELECT * FROM archive_deletions") == []
    async with get_session().create_client("s3", **s3_client_kwargs(s3_backend["s3_endpoint_url"])) as s3:
        listing = await s3.list_objects_v2(Bucket=s3_backend["storage_url"][5:])
    assert listing.get("KeyCount", 0) == 0


async def test_message_media_must_be_the_owners_photo_video_or_voice(vault: Archive, settings):
    voice = await vault.upload_ok(b"OggS", filename="v.ogg", content_type="audio/ogg", type="voice")
    document = await vault.upload_ok(b"doc", filename="d.txt", content_type="text/plain")
    other = await sign_in(vault.client)
    foreign = await vault.upload_ok(b"OggS", content_type="audio/ogg", type="voice", session=other)

    for media, expected in (
        (document["id"], "Must be an archive item of type photo, video, voice, not document."),
        (foreign["id"], "Not one of your archive items."),
    ):
        resp = await vault.client.post(
            "/api/messages", json=body_for("messages", mediaId=media), headers=vault.session.headers
        )
        assert resp.status == 400
        assert (await resp.json())["message"] == [f"mediaId: {expected}"]

    message = await create(vault.client, vault.session, "messages", mediaId=voice["id"])
    assert message["mediaId"] == voice["id"]
    resp = await vault.client.delete(f"/api/archive/{voice['id']}", headers=vault.session.headers)
    assert resp.status == 409
    assert (await resp.json())["messageIds"] == [message["id"]]

    resp = await vault.client.patch(
        f"/api/messages/{message['id']}", json={"mediaId": None}, headers=vault.session.headers
    )
    assert resp.status == 200
    resp = await vault.client.delete(f"/api/archive/{voice['id']}", headers=vault.session.headers)
    assert resp.status == 204

    # Deleting the whole account still cascades through messages and their media.
    await create(
        vault.client,
        vault.session,
        "messages",
        mediaId=(await vault.upload_ok(b"OggS", content_type="audio/ogg", type="voice"))["id"],
    )
    query(settings, "DELETE FROM users WHERE id = %s", (vault.session.user["id"],))
    assert (
        query(settings, "SELECT id FROM archive_items WHERE user_id = %s", (vault.session.user["id"],)) == []
    )


async def test_openapi_documents_the_multipart_upload(client):
    spec = await (await client.get("/api/docs/openapi.json")).json()
    body = spec["paths"]["/api/archive"]["post"]["requestBody"]["content"]["multipart/form-data"]["schema"]
    assert body["required"] == ["file"]
    assert body["properties"]["type"]["enum"] == ["document", "photo", "video", "voice", "other"]
    assert "digital_accounts" in body["properties"]["category"]["enum"]
    assert {"202", "413", "503"} <= set(spec["paths"]["/api/archive"]["post"]["responses"])
    assert "409" in spec["paths"]["/api/archive/{id}/download"]["get"]["responses"]


async def test_delete_racing_a_message_that_attaches_the_item_is_409(vault: Archive, settings):
    item = await vault.upload_ok(b"OggS", content_type="audio/ogg", type="voice")
    conn = psycopg2.connect(settings.database_url)
    try:
        with conn.cursor() as cur:  # a message attaching the item, committed only after DELETE started
            cur.execute(
                "INSERT INTO messages (user_id, content_sealed, release_rule_kind, audience_all, media_id)"
                " VALUES (%s, 'k1.unread', 'on_release', true, %s)",
                (vault.session.user["id"], item["id"]),
            )
            deleting = asyncio.create_task(
                vault.client.delete(f"/api/archive/{item['id']}", headers=vault.session.headers)
            )
            # The DELETE reached PostgreSQL and waits on the row lock the message's foreign key holds.
            blocker = conn.get_backend_pid()
            await until(lambda: blocked_by(settings, blocker), "the DELETE waiting on the message's lock")
            assert not deleting.done()
            conn.commit()
        resp = await deleting
        assert resp.status == 409
        assert (await resp.json())[
            "message"
        ] == "The file is the media of a message; remove it from the message first."
    finally:
        conn.close()
    assert (await vault.get(item["id"])).status == 200


@pytest.mark.parametrize(
    "part_header",
    [
        b'Content-Disposition: form-data; name="e\x11x"',  # a control character (found by schemathesis)
        b"Content-Disposition form-data",  # no colon
        b"\x00: x",
    ],
)
async def test_malformed_multipart_headers_are_400_not_500(vault: Archive, settings, part_header):
    body = b"--b0undary\r\n" + part_header + b"\r\n\r\nvalue\r\n--b0undary--\r\n"
    resp = await vault.client.post(
        "/api/archive",
        data=body,
        headers={**vault.session.headers, "Content-Type": "multipart/form-data; boundary=b0undary"},
    )
    assert resp.status == 400
    payload = await resp.json()
    assert payload["statusCode"] == 400 and payload["message"]
    assert vault.stored_files() == [] and query(settings, "SELECT id FROM archive_items") == []


async def test_an_invalid_field_after_the_file_removes_the_stored_file(vault: Archive, settings):
    form = aiohttp.FormData()
    form.add_field("file", os.urandom(3 * MIB), filename="a.bin", content_type="application/octet-stream")
    form.add_field("category", "misc")
    resp = await vault.client.post("/api/archive", data=form, headers=vault.session.headers)
    assert resp.status == 400
    assert (await resp.json())["message"][0].startswith("category: Must be one of")
    assert vault.stored_files() == [] and query(settings, "SELECT id FROM archive_items") == []


@pytest.mark.fault
async def test_unreachable_storage_during_upload_is_503_and_commits_nothing(
    make_client, settings, s3_backend, monkeypatch, caplog
):
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "1")
    vault = await harness(
        make_client, None, settings, {**s3_backend, "s3_endpoint_url": "http://127.0.0.1:9"}
    )
    secret = b"the combination is 12-34-56"
    resp = await vault.upload(secret * 1000)
    body = await resp.json()
    assert resp.status == 503, body
    assert_error(body, 503)
    assert body["message"] == "Object storage is unavailable; try again later."
    assert resp.headers["Retry-After"] == "5"  # down, not unconfigured: ask again soon
    assert query(settings, "SELECT id FROM archive_items") == []
    assert b"combination" not in caplog.text.encode()


async def test_the_stored_object_is_ciphertext_only(vault: Archive):
    data = b"my seed phrase is abandon abandon ability " * 5000
    item = await vault.upload_ok(data)
    blob = vault.object_path(item["id"]).read_bytes()
    assert len(blob) == ciphertext_size(len(data)) and b"seed phrase" not in blob
    assert [f for f in vault.stored_files() if not f.startswith("archive/")] == []
