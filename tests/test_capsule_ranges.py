"""HTTP Range on the capsule's documents and media, on both storage backends: byte-identical
slices at every edge, 416, whole-body fallbacks, validators, and tampering inside a range."""

from __future__ import annotations

import os
from typing import Any

import pytest

from tests.archive_helpers import CT_SEGMENT, HEADER, SEGMENT, read_until_cut
from tests.capsule_helpers import Family, family
from tests.helpers import assert_error

SIZE = 40 * SEGMENT + 100  # 40 full segments (2.5 MiB, more than one storage read) and a short one
DAMAGED = 35  # the segment the tampering test flips a byte in


def ranges(size: int) -> list[tuple[str, int, int]]:
    """(Range header, start, stop): at 0, inside one segment, across boundaries, the last byte,
    suffixes, open ends, past the end."""
    return [
        ("bytes=0-0", 0, 1),
        ("bytes=0-99", 0, 100),
        ("bytes=10-20", 10, 21),
        (f"bytes={SEGMENT - 1}-{SEGMENT}", SEGMENT - 1, SEGMENT + 1),
        (f"bytes={SEGMENT}-{2 * SEGMENT - 1}", SEGMENT, 2 * SEGMENT),
        (f"bytes={SEGMENT - 5}-{3 * SEGMENT + 5}", SEGMENT - 5, 3 * SEGMENT + 6),
        (f"bytes={size - 1}-{size - 1}", size - 1, size),
        (f"bytes={size - 1}-", size - 1, size),
        (f"bytes={2 * SEGMENT + 7}-", 2 * SEGMENT + 7, size),
        ("bytes=-1", size - 1, size),
        ("bytes=-150", size - 150, size),
        (f"bytes=-{size + 10}", 0, size),
        (f"bytes=5-{size + 1000}", 5, size),
    ]


@pytest.fixture
async def released(make_client: Any, run_worker: Any, settings: Any, backend: dict[str, Any], clock: Any):
    fam = await family(make_client, run_worker, settings, backend, clock)
    heir = await fam.add_heir("Ada", 100)
    data = os.urandom(SIZE)
    doc = await fam.document(data, filename="film.mp4", content_type="video/mp4", type="video")
    one = await fam.document(b"!", filename="one.txt", content_type="text/plain")
    video = await fam.vault.upload_ok(data, filename="v.webm", content_type="video/webm", type="video")
    await fam.vault.work()
    message = await fam.message("watch this", mediaId=video["id"])
    await fam.release()
    return fam, heir["claimToken"], data, doc, one, message


def getter(fam: Family, token: str, who: str) -> Any:
    """GET an item's bytes as the beneficiary (capsule route) or the owner (archive route)."""

    async def get(item_id: str, headers: dict[str, str] | None = None) -> Any:
        if who == "capsule":
            return await fam.open(token, f"/documents/{item_id}/download", headers=headers or {})
        return await fam.client.get(
            f"/api/archive/{item_id}/download", headers={**fam.owner.headers, **(headers or {})}
        )

    return get


@pytest.mark.parametrize("who", ["capsule", "owner"])
async def test_ranges_are_byte_identical_slices(released, who: str):
    fam, token, data, doc, one, _ = released
    get = getter(fam, token, who)
    whole = await get(doc["id"])
    assert whole.status == 200 and await whole.read() == data
    assert whole.headers["Accept-Ranges"] == "bytes"
    etag = whole.headers["ETag"]
    assert etag.startswith('"') and not etag.startswith("W/")
    for header, start, stop in ranges(SIZE):
        resp = await get(doc["id"], {"Range": header})
        assert resp.status == 206, header
        assert await resp.read() == data[start:stop], header
        assert resp.headers["Content-Range"] == f"bytes {start}-{stop - 1}/{SIZE}", header
        assert int(resp.headers["Content-Length"]) == stop - start
        assert resp.headers["ETag"] == etag and resp.headers["Accept-Ranges"] == "bytes"
    for header in ("bytes=0-0", "bytes=0-", "bytes=-1", "bytes=-5"):
        resp = await get(one["id"], {"Range": header})
        assert (resp.status, await resp.read(), resp.headers["Content-Range"]) == (206, b"!", "bytes 0-0/1")
    resp = await get(one["id"], {"Range": "bytes=1-"})
    assert resp.status == 416 and resp.headers["Content-Range"] == "bytes */1"


async def test_unsatisfiable_multi_and_conditional_ranges(released):
    fam, token, data, doc, one, _ = released
    path = f"/documents/{doc['id']}/download"
    for header, size, item_path in (
        (f"bytes={SIZE}-", SIZE, path),
        (f"bytes={SIZE + 5}-{SIZE + 9}", SIZE, path),
        ("bytes=1-", 1, f"/documents/{one['id']}/download"),
        ("bytes=-0", SIZE, path),
    ):
        resp = await fam.open(token, item_path, headers={"Range": header})
        assert resp.status == 416, header
        assert resp.headers["Content-Range"] == f"bytes */{size}"
        assert_error(await resp.json(), 416)
    for header in ("bytes=0-1,5-9", "bytes=5-1", "items=0-1", "bytes=x-y"):
        resp = await fam.open(token, path, headers={"Range": header})
        assert resp.status == 200, header
        assert await resp.read() == data
    resp = await fam.client.head(f"/api/claim/{token}{path}", headers={"Range": "bytes=10-19"})
    assert resp.status == 206 and resp.headers["Content-Range"] == f"bytes 10-19/{SIZE}"
    assert await resp.read() == b""
    etag = resp.headers["ETag"]
    resp = await fam.open(token, path, headers={"Range": "bytes=10-19", "If-Range": etag})
    assert resp.status == 206 and await resp.read() == data[10:20]
    for stale in ('"0000"', f"W/{etag}", "Wed, 21 Oct 2015 07:28:00 GMT"):
        resp = await fam.open(token, path, headers={"Range": "bytes=10-19", "If-Range": stale})
        assert resp.status == 200 and await resp.read() == data  # not current: the whole file


async def test_media_plays_in_place_and_seeks(released):
    fam, token, data, _, _, message = released
    path = f"/messages/{message['id']}/media"
    resp = await fam.open(token, path)
    assert resp.status == 200 and await resp.read() == data
    assert resp.headers["Content-Type"] == "video/webm"
    assert resp.headers["Content-Disposition"].startswith("inline;")
    assert resp.headers["X-Content-Type-Options"] == "nosniff"
    # What a player does: probe the start, jump to the end (the index), then seek in the middle.
    for header, start, stop in (
        ("bytes=0-", 0, SIZE),
        (f"bytes={SIZE - 100}-", SIZE - 100, SIZE),
        (f"bytes={SEGMENT + 3}-", SEGMENT + 3, SIZE),
    ):
        resp = await fam.open(token, path, headers={"Range": header})
        assert resp.status == 206 and await resp.read() == data[start:stop]


def flip_in_segment(fam: Family, item_id: str, index: int) -> None:
    path = fam.vault.object_path(item_id)
    blob = bytearray(path.read_bytes())
    blob[HEADER + index * CT_SEGMENT + 7] ^= 0x01
    path.write_bytes(bytes(blob))


@pytest.mark.parametrize("backend", ["file"], indirect=True)
async def test_a_tampered_segment_inside_the_range_cuts_the_response(released, caplog):
    fam, token, data, doc, _, _ = released
    path = f"/documents/{doc['id']}/download"
    flip_in_segment(fam, doc["id"], DAMAGED)
    # Damage past the first MiB of a range is found after its headers and first bytes went out:
    # the authentic part arrives, then the connection is cut short of Content-Length.
    start = SEGMENT + 10
    resp = await fam.open(token, path, headers={"Range": f"bytes={start}-"})
    assert resp.status == 206
    received, cut = await read_until_cut(resp)
    assert cut and 0 < len(received) <= DAMAGED * SEGMENT - start
    assert received == data[start : start + len(received)]
    assert any(r.getMessage() == "archive download aborted mid-stream" for r in caplog.records)
    # A range inside the damaged segment: nothing is sent, an error body instead.
    resp = await fam.open(
        token, path, headers={"Range": f"bytes={DAMAGED * SEGMENT + 1}-{DAMAGED * SEGMENT + 9}"}
    )
    assert resp.status == 500
    assert_error(await resp.json(), 500)
    # Random access: ranges that do not touch the damage are served whole and authentic.
    for first, last in ((0, DAMAGED * SEGMENT - 1), ((DAMAGED + 1) * SEGMENT, SIZE - 1)):
        resp = await fam.open(token, path, headers={"Range": f"bytes={first}-{last}"})
        assert resp.status == 206 and await resp.read() == data[first : last + 1]


@pytest.mark.parametrize("who", ["capsule", "owner"])
async def test_positions_are_ascii_digits_and_huge_ends_are_clamped(released, who: str):
    """#18: `\\d` matched Arabic-Indic and fullwidth digits (206 for Arabic-Indic one to 2), and an end past
    19 digits answered 200. ASCII digits only (anything else: a header to ignore, 200 with the
    whole body); an end past the size, however long, is clamped (206); a start past it is 416."""
    fam, token, data, doc, _, _ = released
    get = getter(fam, token, who)
    for header in ("bytes=\u0661-2", "bytes=\uff10-2", "bytes=0-\u0662", "bytes=-\uff15", "bytes=\u00a00-2"):
        resp = await get(doc["id"], {"Range": header})
        assert resp.status == 200, header
        assert await resp.read() == data
        assert "Content-Range" not in resp.headers
    for header, start in (
        ("bytes=0-99999999999999999999", 0),
        (f"bytes={SIZE - 3}-18446744073709551616", SIZE - 3),
        ("bytes=7-" + "9" * 400, 7),
        ("bytes=-99999999999999999999", 0),
    ):
        resp = await get(doc["id"], {"Range": header})
        assert resp.status == 206, header
        assert resp.headers["Content-Range"] == f"bytes {start}-{SIZE - 1}/{SIZE}"
        assert await resp.read() == data[start:]
    for header in ("bytes=99999999999999999999-", "bytes=18446744073709551616-18446744073709551620"):
        resp = await get(doc["id"], {"Range": header})
        assert resp.status == 416, header
        assert resp.headers["Content-Range"] == f"bytes */{SIZE}"
        assert_error(await resp.json(), 416)
