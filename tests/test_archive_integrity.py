"""Tampered ciphertext never reaches the client as plaintext: the download fails, and is logged.

Damage found before the first byte is a 500 in the standard error body; damage found later cuts
the connection short of Content-Length. Either way every byte received is authentic plaintext
from before the damaged segment.
"""

from __future__ import annotations

import logging

from tests.archive_helpers import CT_SEGMENT, HEADER, MIB, SEGMENT, Archive, read_until_cut
from tests.helpers import assert_error
from tests.plan_helpers import query

MARKER = b"TOP-SECRET-PLAINTEXT"
SIZE = 3 * MIB + 100  # 48 full segments and a 100-byte final one


def plaintext() -> bytes:
    return (MARKER * (SIZE // len(MARKER) + 1))[:SIZE]


async def stored_item(vault: Archive) -> tuple[dict, bytes]:
    data = plaintext()
    item = await vault.upload_ok(data, filename="secret.bin")
    await vault.work()
    assert vault.row(item["id"])["status"] == "available"
    return item, data


def segment_offset(index: int) -> int:
    return HEADER + index * CT_SEGMENT


def edit_object(vault: Archive, item_id: str, edit) -> None:
    path = vault.object_path(item_id)
    path.write_bytes(edit(bytearray(path.read_bytes())))


def flip(offset: int):
    def edit(blob: bytearray) -> bytes:
        blob[offset] ^= 0x01
        return bytes(blob)

    return edit


def logged(caplog, message: str) -> logging.LogRecord:
    """The log record with this message; no record (message or extras) carries plaintext."""
    assert all(MARKER.decode() not in str(vars(r)) for r in caplog.records)
    matches = [r for r in caplog.records if r.getMessage() == message]
    assert matches, f"nothing logged as {message!r}"
    return matches[-1]


async def expect_500(vault: Archive, item_id: str, caplog) -> None:
    resp = await vault.download(item_id)
    assert resp.status == 500
    body = await resp.json()
    assert_error(body, 500)
    assert "integrity" in body["message"]
    record = logged(caplog, "archive integrity check failed; nothing sent")
    assert record.levelno == logging.ERROR and record.itemId == item_id


async def expect_cut(vault: Archive, item_id: str, data: bytes, authentic_segments: int, caplog) -> None:
    resp = await vault.download(item_id)
    assert resp.status == 200
    assert resp.headers["Content-Length"] == str(len(data))
    received, cut = await read_until_cut(resp)
    assert cut, "the connection must be cut, not ended normally"
    assert len(received) <= authentic_segments * SEGMENT < len(data)
    assert received == data[: len(received)]
    record = logged(caplog, "archive download aborted mid-stream")
    assert record.levelno == logging.ERROR and record.itemId == item_id


async def test_flipped_byte_in_the_first_segment_is_a_500(vault: Archive, caplog):
    caplog.set_level(logging.INFO)
    item, _ = await stored_item(vault)
    edit_object(vault, item["id"], flip(segment_offset(0) + 10))
    await expect_500(vault, item["id"], caplog)


async def test_flipped_byte_later_cuts_the_download(vault: Archive, caplog):
    caplog.set_level(logging.INFO)
    item, data = await stored_item(vault)
    edit_object(vault, item["id"], flip(segment_offset(40) + 123))
    await expect_cut(vault, item["id"], data, 40, caplog)


async def test_flipped_header_byte_is_a_500(vault: Archive, caplog):
    item, _ = await stored_item(vault)
    edit_object(vault, item["id"], flip(3))  # inside the nonce prefix
    await expect_500(vault, item["id"], caplog)


async def test_truncation_is_detected(vault: Archive, caplog):
    item, data = await stored_item(vault)
    # Drop the whole final segment: the stream now ends on a full segment, which is never legal.
    edit_object(vault, item["id"], lambda blob: bytes(blob[: segment_offset(48)]))
    await expect_cut(vault, item["id"], data, 48, caplog)

    caplog.clear()
    other, data = await stored_item(vault)
    edit_object(vault, other["id"], lambda blob: bytes(blob[:-5]))  # a few bytes short
    await expect_cut(vault, other["id"], data, 48, caplog)


async def test_reordered_segments_are_detected(vault: Archive, caplog):
    item, data = await stored_item(vault)

    def swap(first: int):
        def edit(blob: bytearray) -> bytes:
            a, b = segment_offset(first), segment_offset(first + 1)
            blob[a:b], blob[b : b + CT_SEGMENT] = blob[b : b + CT_SEGMENT], blob[a:b]
            return bytes(blob)

        return edit

    edit_object(vault, item["id"], swap(30))
    await expect_cut(vault, item["id"], data, 30, caplog)

    caplog.clear()
    other, _ = await stored_item(vault)
    edit_object(vault, other["id"], swap(0))
    await expect_500(vault, other["id"], caplog)


async def test_unknown_key_id_is_a_500_and_logged(vault: Archive, settings, caplog):
    item, _ = await stored_item(vault)
    query(settings, "UPDATE archive_items SET key_id = 'retired' WHERE id = %s", (item["id"],))
    await expect_500(vault, item["id"], caplog)
    assert logged(caplog, "archive integrity check failed; nothing sent").error == (
        "unknown encryption key id 'retired'"
    )


async def test_ciphertext_moved_between_items_does_not_open(vault: Archive, caplog):
    first, _ = await stored_item(vault)
    second, _ = await stored_item(vault)
    vault.object_path(second["id"]).write_bytes(vault.object_path(first["id"]).read_bytes())
    await expect_500(vault, second["id"], caplog)


async def test_missing_object_is_a_500_not_a_404(vault: Archive, caplog):
    item, _ = await stored_item(vault)
    vault.object_path(item["id"]).unlink()
    resp = await vault.download(item["id"])
    assert resp.status == 500
    assert (await resp.json())["message"] == "The stored file is missing."
    logged(caplog, "archive object missing from storage")
