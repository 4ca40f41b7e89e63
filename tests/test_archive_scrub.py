"""The archive scrub through the real worker: damage found (a flipped byte deep inside a file,
a missing object), emailed to the owner at most weekly, shown as damaged in words to the owner,
the capsule, the heir's page and export; an intact file read once per interval at the byte
rate; a large file read over several runs; a restored object whole again; the metrics."""

from __future__ import annotations

import re
from typing import Any

import pytest

from api.keys import REDIS
from core import jobstats
from models.archive import scrub as scrub_model
from tests.capsule_helpers import Family, family
from tests.helpers import assert_error
from tests.plan_helpers import query
from workers import scrub as scrub_job

MIB = 1024 * 1024
OWNER_EMAIL = "olive@example.org"
WEEK = 7 * 24 * 3600
TOKEN = "m" * 20 + "etrics-token"
CT_SEGMENT = 65536 + 16


@pytest.fixture
async def fam(make_client, run_worker, settings, file_backend, clock) -> Family:
    """A family whose API also serves /api/metrics."""
    fam = await family(make_client, run_worker, settings, {**file_backend, "metrics_token": TOKEN}, clock)
    resp = await fam.client.patch("/api/users/me", json={"email": OWNER_EMAIL}, headers=fam.owner.headers)
    assert resp.status == 200
    return fam


def flip(fam: Family, item_id: str, offset: int) -> None:
    path = fam.vault.object_path(item_id)
    data = bytearray(path.read_bytes())
    data[offset] ^= 0x40
    path.write_bytes(bytes(data))


def scrub_state(fam: Family, item_id: str) -> dict[str, Any]:
    rows = query(fam.settings, "SELECT * FROM archive_scrub WHERE item_id = %s", (item_id,))
    return rows[0] if rows else {}


async def counters(fam: Family) -> dict[str, float]:
    return await jobstats.read_counts(fam.client.app[REDIS], scrub_model.METRICS)


async def metrics_text(fam: Family) -> str:
    resp = await fam.client.get("/api/metrics", headers={"Authorization": f"Bearer {TOKEN}"})
    assert resp.status == 200
    return await resp.text()


def metric(text: str, name: str) -> float:
    match = re.search(rf"^{name} (\S+)$", text, re.MULTILINE)
    assert match, name
    return float(match.group(1))


async def test_damage_is_found_emailed_weekly_and_shown_in_words(fam: Family, email_provider):
    ada = await fam.add_heir("Ada", 100)
    intact = await fam.document(b"intact " * 1000, filename="intact.txt", content_type="text/plain")
    big = bytes(range(256)) * 1024  # 4 segments: the upload's check reads only the last one
    flipped = await fam.document(big, filename="letters.bin", title="Old letters")
    gone = await fam.document(b"gone " * 100, filename="deed.pdf", content_type="application/pdf")
    photo = await fam.vault.upload_ok(
        b"\x89PNG-photo", filename="us.png", content_type="image/png", type="photo"
    )
    await fam.vault.work()
    await fam.message("Look at us", title="Summer", mediaId=photo["id"])
    flip(fam, flipped["id"], 8 + CT_SEGMENT + 100)  # inside the second segment
    fam.vault.object_path(gone["id"]).unlink()
    fam.vault.object_path(photo["id"]).write_bytes(b"")

    await fam.vault.work(settings=email_provider.settings)  # nothing due yet: nothing read
    assert fam.vault.row(flipped["id"])["status"] == "available"
    assert email_provider.requests == []

    fam.clock.advance(seconds=WEEK + 1)
    await fam.vault.work(settings=email_provider.settings)
    for item in (flipped, gone, photo):
        row = fam.vault.row(item["id"])
        assert row["status"] == "damaged" and row["damaged_at"] is not None, item["fileName"]
    assert fam.vault.row(intact["id"])["status"] == "available"
    assert scrub_state(fam, intact["id"])["checked_at"] is not None

    mails = email_provider.to(OWNER_EMAIL)
    assert len(mails) == 3  # one per damaged item
    for mail in mails:
        assert mail.body["subject"] == "Please upload a file in your plan again"
        assert "re-upload this file" in mail.body["text"] and "delete the damaged item" in mail.body["text"]
    kinds = [e["kind"] for e in fam.timeline("archive_item.")]
    assert kinds.count("archive_item.damaged") == 3
    text = await metrics_text(fam)
    assert metric(text, "lps_archive_scrub_failures_total") == 3
    assert metric(text, "lps_archive_scrub_cycle_seconds") >= 0

    # The owner sees it, in words, and cannot download it (409, not a 500).
    resp = await fam.vault.get(flipped["id"])
    body = await resp.json()
    assert body["status"] == "damaged" and body["damagedAt"]
    resp = await fam.vault.download(flipped["id"])
    assert resp.status == 409
    assert_error(body := await resp.json(), 409)
    assert "damaged" in body["message"] and body["itemStatus"] == "damaged"

    # Read again the next week, still damaged: one reminder each, never more than weekly.
    await fam.vault.work(settings=email_provider.settings)
    assert len(email_provider.to(OWNER_EMAIL)) == 3
    fam.clock.advance(seconds=WEEK + 1)
    await fam.vault.work(settings=email_provider.settings)
    assert len(email_provider.to(OWNER_EMAIL)) == 6
    assert metric(await metrics_text(fam), "lps_archive_scrub_failures_total") == 3  # each found once

    # Released: the heir sees the damaged items listed in words; no email to the owner any more.
    await fam.release()
    capsule = await fam.capsule(ada)
    documents = {d["id"]: d["status"] for d in capsule["documents"]}
    assert documents == {intact["id"]: "available", flipped["id"]: "damaged", gone["id"]: "damaged"}
    assert capsule["messages"][0]["media"]["status"] == "damaged"
    resp = await fam.open(ada["claimToken"], f"/documents/{gone['id']}/download")
    assert resp.status == 409
    assert "damaged" in (await resp.json())["message"]
    resp = await fam.open(ada["claimToken"], f"/messages/{capsule['messages'][0]['id']}/media")
    assert resp.status == 409
    resp = await fam.client.get(f"/claim/{ada['claimToken']}")
    page = await resp.text()
    assert resp.status == 200
    assert page.count("was found damaged and can no longer be") == 3
    assert f"/documents/{gone['id']}/download" not in page
    sent = len(email_provider.requests)
    fam.clock.advance(seconds=WEEK + 1)
    await fam.vault.work(settings=email_provider.settings)
    assert len(email_provider.to(OWNER_EMAIL)) == len(
        [r for r in email_provider.requests[:sent] if r.to == OWNER_EMAIL]
    )


async def test_a_restored_object_is_whole_again(fam: Family):
    await fam.add_heir("Ada", 100)
    doc = await fam.document(b"the deed " * 20000, filename="deed.txt", content_type="text/plain")
    await fam.vault.work()
    original = fam.vault.object_path(doc["id"]).read_bytes()
    fam.vault.object_path(doc["id"]).unlink()
    fam.clock.advance(seconds=WEEK + 1)
    await fam.vault.work()
    assert fam.vault.row(doc["id"])["status"] == "damaged"
    fam.vault.object_path(doc["id"]).write_bytes(original)  # the operator restores it from a backup
    fam.clock.advance(seconds=WEEK + 1)
    await fam.vault.work()
    row = fam.vault.row(doc["id"])
    assert row["status"] == "available" and row["damaged_at"] is None
    assert [e["kind"] for e in fam.timeline("archive_item.")][-1] == "archive_item.restored"
    assert await fam.vault.download_bytes(doc["id"]) == b"the deed " * 20000


async def test_an_intact_file_is_read_once_per_interval_within_the_byte_rate(fam: Family):
    await fam.add_heir("Ada", 100)
    data = bytes(range(256)) * 8 * 1024  # 2 MiB
    doc = await fam.document(data, filename="photo-album.bin")
    await fam.vault.work()
    rate = {"archive_scrub_bytes_per_second": MIB}

    fam.clock.advance(seconds=WEEK + 1)
    # Nothing read since the upload, a week ago: that is how stale the oldest whole read is.
    assert metric(await metrics_text(fam), "lps_archive_scrub_cycle_seconds") >= WEEK
    await fam.vault.work(settings=rate)
    assert metric(await metrics_text(fam), "lps_archive_scrub_cycle_seconds") < WEEK
    read = (await counters(fam)).get("bytes", 0)
    assert read == len(data)  # every byte authenticated once (the pace itself: below)
    checked = scrub_state(fam, doc["id"])["checked_at"]
    assert checked is not None

    await fam.vault.work(settings=rate)  # within the interval: not read again
    assert (await counters(fam)).get("bytes", 0) == read
    assert scrub_state(fam, doc["id"])["checked_at"] == checked

    fam.clock.advance(seconds=WEEK + 1)
    await fam.vault.work(settings=rate)
    assert (await counters(fam)).get("bytes", 0) == 2 * read
    assert scrub_state(fam, doc["id"])["checked_at"] > checked


async def test_a_large_file_is_read_over_several_runs(fam: Family, monkeypatch):
    monkeypatch.setattr(scrub_job, "RUN_SECONDS", 1)  # a run reads about one second's worth
    await fam.add_heir("Ada", 100)
    data = bytes(range(256)) * 12 * 1024  # 3 MiB
    doc = await fam.document(data, filename="video.bin")
    await fam.vault.work()
    flip(fam, doc["id"], 8 + 40 * CT_SEGMENT + 5)  # in the last MiB: found by a later run
    fam.clock.advance(seconds=WEEK + 1)
    rate = {"archive_scrub_bytes_per_second": MIB}
    await fam.vault.work(settings=rate)
    first = scrub_state(fam, doc["id"])
    assert 0 < first["position"] < len(data) and first["checked_at"] is None
    assert fam.vault.row(doc["id"])["status"] == "available"
    for _ in range(5):
        if fam.vault.row(doc["id"])["status"] == "damaged":
            break
        await fam.vault.work(settings=rate)
    assert fam.vault.row(doc["id"])["status"] == "damaged"
    state = scrub_state(fam, doc["id"])
    assert state["position"] == 0 and state["checked_at"] is not None


async def test_the_scrub_setting_bounds(settings):
    from core.settings import ConfigError, load_settings

    base = {"DATABASE_URL": settings.database_url, "APP_ENV": "test"}
    for name in ("ARCHIVE_SCRUB_INTERVAL_SECONDS", "ARCHIVE_SCRUB_BYTES_PER_SECOND"):
        with pytest.raises(ConfigError, match=name):
            load_settings({**base, name: "0"})
    loaded = load_settings({**base, "ARCHIVE_SCRUB_INTERVAL_SECONDS": "1"})
    assert loaded.archive_scrub_interval_seconds == 1
    assert loaded.archive_scrub_bytes_per_second == 20 * MIB


async def test_the_pace_never_reads_faster_than_the_rate():
    """The run's pacing on a clock the test moves: after every read, the time slept and spent
    covers bytes / rate, and a reader slower than the rate is never made to wait."""
    now = [100.0]
    slept: list[float] = []

    async def sleep(seconds: float) -> None:
        slept.append(seconds)
        now[0] += seconds

    pace = scrub_job.Pace(MIB, monotonic=lambda: now[0], sleep=sleep)
    for _ in range(8):
        await pace.spent(MIB // 4)  # reading itself takes no time on this clock
        assert now[0] - 100.0 >= pace.read / MIB
    assert sum(slept) == 2.0  # 2 MiB at 1 MiB/s
    now[0] += 10  # a slow read: 10 s for the next quarter MiB
    before = len(slept)
    await pace.spent(MIB // 4)
    assert len(slept) == before
    assert pace.seconds_left() == scrub_job.RUN_SECONDS - 12.0
