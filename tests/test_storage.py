"""Object storage: both backends against the same contract, S3 through a real moto HTTP server.

Needs the ``s3_endpoint`` fixture from ``testing.s3server`` (conftest, or ``-p testing.s3server``).
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import random
from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from uuid import uuid4

import pytest
from aiobotocore.session import get_session

from core.files.storage import (
    FileStorage,
    ObjectNotFound,
    S3Storage,
    Storage,
    StorageError,
    open_storage,
    validate_key,
)
from testing.s3server import (
    TEST_ACCESS_KEY_ID,
    TEST_REGION,
    TEST_SECRET_ACCESS_KEY,
    create_bucket,
    free_port,
    s3_client_kwargs,
)

MIB = 1024 * 1024
PART = 5 * MIB


def key() -> str:
    return f"archive/{uuid4()}/{uuid4()}"


async def chunked(data: bytes, sizes: Iterable[int] | None = None) -> AsyncIterator[bytes]:
    """Feed ``data`` in the given chunk sizes (cycled), or as one chunk."""
    if sizes is None:
        if data:
            yield data
        return
    pos = 0
    size_list = list(sizes)
    i = 0
    while pos < len(data):
        step = size_list[i % len(size_list)]
        yield data[pos : pos + step]
        pos += step
        i += 1


async def failing(data: bytes, fail_after: int) -> AsyncIterator[bytes]:
    """Yield ``fail_after`` bytes of ``data`` in 1 MiB chunks, then break like a dropped client."""
    for start in range(0, fail_after, MIB):
        yield data[start : min(start + MIB, fail_after)]
    raise ConnectionResetError("client went away")


async def read_all(storage: Storage, k: str, chunk_size: int = 256 * 1024) -> bytes:
    return b"".join([c async for c in storage.get_stream(k, chunk_size)])


async def stored(storage: Storage, k: str) -> bool:
    """Whether an object is there, through the public `size()` (the service never asks)."""
    try:
        await storage.size(k)
    except ObjectNotFound:
        return False
    return True


async def all_keys(storage: Storage, prefix: str = "") -> list[str]:
    return sorted([k async for k, _ in storage.list_keys(prefix)])


async def open_s3(endpoint: str, url: str) -> Storage:
    storage = await open_storage(
        url,
        s3_endpoint_url=endpoint,
        region=TEST_REGION,
        access_key_id=TEST_ACCESS_KEY_ID,
        secret_access_key=TEST_SECRET_ACCESS_KEY,
        part_size=PART,
    )
    assert storage is not None
    return storage


@asynccontextmanager
async def raw_s3(endpoint: str) -> AsyncIterator[Any]:
    async with get_session().create_client("s3", **s3_client_kwargs(endpoint)) as client:
        yield client


@pytest.fixture(params=["file", "s3"])
async def storage(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Storage]:
    if request.param == "file":
        opened = await open_storage(tmp_path.joinpath("store").as_uri())
        assert opened is not None
    else:
        endpoint: str = request.getfixturevalue("s3_endpoint")
        bucket = f"t-{uuid4().hex}"
        await create_bucket(endpoint, bucket)
        opened = await open_s3(endpoint, f"s3://{bucket}")
    assert opened.backend == request.param
    yield opened
    await opened.close()


async def leftovers(storage: Storage) -> list[str]:
    """Half-written state a failed put could leave: temp files, or open multipart uploads."""
    if isinstance(storage, FileStorage):
        return sorted(p.name for p in (storage.root / ".tmp").iterdir())
    assert isinstance(storage, S3Storage)
    async with raw_s3(storage._client.meta.endpoint_url) as client:
        resp = await client.list_multipart_uploads(Bucket=storage.bucket)
    return [u["Key"] for u in resp.get("Uploads", [])]


# ---- round trips ----------------------------------------------------------------------------


@pytest.mark.parametrize("size", [0, 1, PART + 1], ids=["empty", "1B", "5MiB+1"])
async def test_round_trip(storage: Storage, size: int) -> None:
    data = os.urandom(size)
    k = key()
    assert await storage.put_stream(k, chunked(data, [64 * 1024])) == size
    assert await read_all(storage, k) == data
    assert await stored(storage, k)
    assert await leftovers(storage) == []


async def test_round_trip_20mib_odd_chunks(storage: Storage) -> None:
    data = os.urandom(20 * MIB)
    rng = random.Random(7)
    sizes = [rng.choice([1, 3, 4093, 65_537, 1_000_003, 2_500_001, 5_300_000]) for _ in range(64)]
    k = key()
    assert await storage.put_stream(k, chunked(data, sizes)) == len(data)
    digest = hashlib.sha256()
    total = 0
    async for chunk in storage.get_stream(k, chunk_size=100_003):
        assert 0 < len(chunk) <= 100_003
        digest.update(chunk)
        total += len(chunk)
    assert total == len(data)
    assert digest.hexdigest() == hashlib.sha256(data).hexdigest()


async def test_s3_multipart_only_above_part_size(s3_endpoint: str) -> None:
    """5 MiB + 1 goes as two parts (multipart ETag "-2"); one byte goes as a single PUT."""
    bucket = f"t-{uuid4().hex}"
    await create_bucket(s3_endpoint, bucket)
    storage = await open_s3(s3_endpoint, f"s3://{bucket}")
    try:
        await storage.put_stream("big", chunked(os.urandom(PART + 1), [MIB]))
        await storage.put_stream("small", chunked(b"x"))
        async with raw_s3(s3_endpoint) as client:
            big = await client.head_object(Bucket=bucket, Key="big")
            small = await client.head_object(Bucket=bucket, Key="small")
        assert big["ETag"].strip('"').endswith("-2")
        assert big["ContentLength"] == PART + 1
        assert "-" not in small["ETag"]
    finally:
        await storage.close()


async def test_overwrite_replaces_content(storage: Storage) -> None:
    k = key()
    await storage.put_stream(k, chunked(b"first version"))
    await storage.put_stream(k, chunked(b"second"))
    assert await read_all(storage, k) == b"second"
    assert await all_keys(storage) == [k]


# ---- missing keys, delete, listing ---------------------------------------------------


async def test_get_missing_raises_before_yielding(storage: Storage) -> None:
    stream = storage.get_stream(key())
    with pytest.raises(ObjectNotFound):
        await anext(stream)


async def test_delete_is_idempotent(storage: Storage) -> None:
    k = key()
    await storage.put_stream(k, chunked(b"data"))
    assert await stored(storage, k)
    await storage.delete(k)
    assert not await stored(storage, k)
    with pytest.raises(ObjectNotFound):
        await read_all(storage, k)
    await storage.delete(k)
    await storage.delete(key())
    assert await all_keys(storage) == []


async def test_a_key_prefix_is_not_an_object(storage: Storage) -> None:
    k = key()
    assert not await stored(storage, k)
    await storage.put_stream(k, chunked(b""))
    assert await stored(storage, k)
    # A "directory" of keys is not itself an object.
    assert not await stored(storage, k.rsplit("/", 1)[0])


async def test_size_and_read_range(storage: Storage) -> None:
    k = key()
    data = os.urandom(PART + 1234)
    await storage.put_stream(k, chunked(data, [MIB]))
    assert await storage.size(k) == len(data)
    assert await storage.read_range(k, 0, 8) == data[:8]
    assert await storage.read_range(k, PART - 10, 30) == data[PART - 10 : PART + 20]
    assert await storage.read_range(k, len(data) - 16, 16) == data[-16:]
    assert await storage.read_range(k, 5, 0) == b""
    missing = key()
    with pytest.raises(ObjectNotFound):
        await storage.size(missing)
    with pytest.raises(ObjectNotFound):
        await storage.read_range(missing, 0, 8)
    with pytest.raises(ValueError):
        await storage.read_range(k, -1, 8)


async def test_get_stream_of_a_span(storage: Storage) -> None:
    """A span is streamed from where it starts (random access), in chunks of at most chunk_size."""
    k = key()
    data = os.urandom(3 * MIB + 777)
    await storage.put_stream(k, chunked(data, [MIB]))

    async def span(start: int, length: int | None, chunk_size: int = 100_003) -> bytes:
        out = bytearray()
        async for chunk in storage.get_stream(k, chunk_size, start=start, length=length):
            assert 0 < len(chunk) <= chunk_size
            out += chunk
        return bytes(out)

    assert await span(0, 10) == data[:10]
    assert await span(2 * MIB + 5, MIB) == data[2 * MIB + 5 : 3 * MIB + 5]
    assert await span(len(data) - 1, 1) == data[-1:]
    assert await span(MIB, None) == data[MIB:]
    assert await span(len(data) - 10, 100) == data[-10:]  # fewer only past the end
    assert await span(len(data), None) == b""
    assert await span(5, 0) == b""
    with pytest.raises(ObjectNotFound):
        await anext(storage.get_stream(key(), start=10, length=5))
    with pytest.raises(ValueError):
        await anext(storage.get_stream(k, start=-1))


async def test_list_keys_with_prefix(storage: Storage) -> None:
    keys = ["archive/a/1", "archive/a/2", "archive/ab/1", "archive/b/1", "other/x"]
    for k in keys:
        await storage.put_stream(k, chunked(k.encode()))
    listed = [item async for item in storage.list_keys()]
    assert sorted(k for k, _ in listed) == keys
    now = datetime.now(UTC)
    for _, modified in listed:
        assert modified.utcoffset() == timedelta(0)
        assert abs(now - modified) < timedelta(minutes=5)
    assert await all_keys(storage, "archive/a/") == ["archive/a/1", "archive/a/2"]
    assert await all_keys(storage, "archive/a") == ["archive/a/1", "archive/a/2", "archive/ab/1"]
    assert await all_keys(storage, "archive/") == keys[:4]
    assert await all_keys(storage, "archive/b/1") == ["archive/b/1"]
    assert await all_keys(storage, "missing/") == []


# ---- atomicity -------------------------------------------------------------------------------


@pytest.mark.parametrize("fail_after", [100, 7 * MIB], ids=["before-first-part", "after-first-part"])
async def test_failed_put_leaves_no_object(storage: Storage, fail_after: int) -> None:
    data = os.urandom(fail_after)
    fresh, existing = key(), key()
    await storage.put_stream(existing, chunked(b"old content"))
    for k in (fresh, existing):
        with pytest.raises(ConnectionResetError):
            await storage.put_stream(k, failing(data, fail_after))
    assert not await stored(storage, fresh)
    assert await read_all(storage, existing) == b"old content"
    assert await all_keys(storage) == [existing]
    assert await leftovers(storage) == []


async def test_cancelled_put_leaves_no_object(storage: Storage) -> None:
    sent = asyncio.Event()

    async def stalls() -> AsyncIterator[bytes]:
        yield os.urandom(6 * MIB)  # past one S3 part, so a multipart upload is open
        yield b"x"
        sent.set()
        await asyncio.Event().wait()
        yield b"never"

    k = key()
    task = asyncio.create_task(storage.put_stream(k, stalls()))
    await asyncio.wait_for(sent.wait(), 10)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert not await stored(storage, k)
    assert await leftovers(storage) == []


# ---- keys ------------------------------------------------------------------------------------

BAD_KEYS = [
    "",
    "/etc/passwd",
    "../outside",
    "archive/../../outside",
    "archive/..",
    "a..b",
    "archive//x",
    "archive/x/",
    "archive/./x",
    ".hidden",
    "-dash-first",
    "with space",
    "tab\tkey",
    "new\nline",
    "back\\slash",
    "nul\x00byte",
    "ümlaut",
    "colon:key",
    "a" * 502,
]


@pytest.mark.parametrize("bad", BAD_KEYS)
def test_validate_key_rejects(bad: str) -> None:
    with pytest.raises(ValueError):
        validate_key(bad)


@pytest.mark.parametrize(
    "good",
    [f"archive/{uuid4()}/{uuid4()}", "a", "A-b_c.d/e", "a" * 501],
    ids=["archive-path", "one-letter", "punctuation", "long"],  # the path is random
)
def test_validate_key_accepts(good: str) -> None:
    validate_key(good)


async def test_storage_refuses_traversal(storage: Storage, tmp_path: Path) -> None:
    for bad in ("../escape", "/abs", "x/../../escape"):
        with pytest.raises(ValueError):
            await storage.put_stream(bad, chunked(b"evil"))
        with pytest.raises(ValueError):
            await storage.size(bad)
        with pytest.raises(ValueError):
            await anext(storage.get_stream(bad))
    with pytest.raises(ValueError):
        await all_keys(storage, "../")
    assert not (tmp_path / "escape").exists()
    assert await all_keys(storage) == []


# ---- open_storage ----------------------------------------------------------------------------


async def test_open_storage_unset_is_none() -> None:
    assert await open_storage(None) is None
    assert await open_storage("") is None


@pytest.mark.parametrize(
    "url",
    [
        "ftp://host/x",
        "http://bucket",
        "/plain/path",
        "gs://bucket",
        "file://relative/path",
        "s3://",
        "s3:///x",
    ],
)
async def test_open_storage_rejects_bad_urls(url: str) -> None:
    with pytest.raises(ValueError, match="STORAGE_URL"):
        await open_storage(url)


async def test_open_storage_error_does_not_echo_credentials() -> None:
    with pytest.raises(ValueError) as info:
        await open_storage("ftp://user:hunter2@host/x")
    assert "hunter2" not in str(info.value)


async def test_open_storage_rejects_small_part_size() -> None:
    with pytest.raises(ValueError, match="5 MiB"):
        await open_storage("s3://bucket", part_size=MIB)


async def test_open_storage_file_creates_directory(tmp_path: Path) -> None:
    root = tmp_path / "deep" / "store"
    storage = await open_storage(root.as_uri())
    assert storage is not None and storage.backend == "file"
    assert root.is_dir()
    await storage.put_stream("archive/x/y", chunked(b"on disk"))
    assert (root / "archive" / "x" / "y").read_bytes() == b"on disk"
    await storage.delete("archive/x/y")
    assert list(root.iterdir()) == [root / ".tmp"]  # emptied directories are pruned
    await storage.close()


async def test_open_storage_s3_prefix(s3_endpoint: str) -> None:
    bucket = f"t-{uuid4().hex}"
    await create_bucket(s3_endpoint, bucket)
    storage = await open_s3(s3_endpoint, f"s3://{bucket}/tenant/files/")
    try:
        assert storage.backend == "s3"
        await storage.put_stream("archive/1/2", chunked(b"prefixed"))
        async with raw_s3(s3_endpoint) as client:
            await client.put_object(Bucket=bucket, Key="outside-prefix", Body=b"not ours")
            resp = await client.list_objects_v2(Bucket=bucket)
        assert sorted(o["Key"] for o in resp["Contents"]) == ["outside-prefix", "tenant/files/archive/1/2"]
        assert await all_keys(storage) == ["archive/1/2"]
        assert await read_all(storage, "archive/1/2") == b"prefixed"
        assert not await stored(storage, "outside-prefix")
    finally:
        await storage.close()


async def test_s3_unreachable_is_storage_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "1")  # standard AWS setting; skips the retry backoff
    secret = "s3cr3t-never-in-messages"
    storage = await open_storage(
        "s3://bucket",
        s3_endpoint_url=f"http://127.0.0.1:{free_port()}",  # nothing listens there
        region=TEST_REGION,
        access_key_id="AKIDNOTINMESSAGES",
        secret_access_key=secret,
    )
    assert storage is not None
    try:
        for attempt in (
            storage.size("archive/a/b"),
            storage.put_stream("archive/a/b", chunked(b"data")),
            read_all(storage, "archive/a/b"),
            storage.delete("archive/a/b"),
            all_keys(storage),
        ):
            with pytest.raises(StorageError) as info:
                await attempt
            assert not isinstance(info.value, ObjectNotFound)
            assert secret not in str(info.value)
            assert "AKIDNOTINMESSAGES" not in str(info.value)
    finally:
        await storage.close()


async def test_s3_missing_bucket_is_storage_error(s3_endpoint: str) -> None:
    storage = await open_s3(s3_endpoint, f"s3://t-{uuid4().hex}")
    try:
        with pytest.raises(StorageError):
            await storage.put_stream("archive/a/b", chunked(b"data"))
        with pytest.raises(StorageError) as info:
            await read_all(storage, "archive/a/b")
        assert not isinstance(info.value, ObjectNotFound)  # misconfiguration, not a missing file
    finally:
        await storage.close()
