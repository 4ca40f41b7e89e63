"""Object storage for archive files: S3 (or any S3-compatible server) and a local directory.

Both backends stream in bounded memory and publish an object only once it is complete, so a
reader never sees half an upload and a failed upload leaves nothing behind to clean up.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import logging
import os
import re
import tempfile
import time
from collections.abc import AsyncIterable, AsyncIterator, Callable, Iterator
from contextlib import AsyncExitStack
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Protocol, TypeVar
from urllib.parse import unquote, urlsplit

import aiohttp
from aiobotocore.config import AioConfig
from aiobotocore.session import get_session
from botocore.exceptions import BotoCoreError, ClientError

__all__ = [
    "FileStorage",
    "ObjectNotFound",
    "S3Storage",
    "Storage",
    "StorageError",
    "open_storage",
    "validate_key",
]

log = logging.getLogger(__name__)

_T = TypeVar("_T")

DEFAULT_PART_SIZE = 8 * 1024 * 1024
# S3 rejects multipart parts below 5 MiB (except the last one).
MIN_PART_SIZE = 5 * 1024 * 1024
# One thread hop per MiB keeps a 1 GiB file at ~1000 hops while memory stays flat.
_FILE_IO_BLOCK = 1024 * 1024
# Keys start with an alphanumeric, so this directory can never collide with a key.
_TMP_DIR_NAME = ".tmp"
# Temp files older than this are left over from a crashed process, not a running upload.
_STALE_TMP_SECONDS = 24 * 3600
_NOT_FOUND_CODES = frozenset({"NoSuchKey", "404", "NotFound"})
_KEY_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9/_.-]{0,500}")
_BUCKET_RE = re.compile(r"[a-z0-9][a-z0-9.\-_]{1,254}")
# Network failures that escape botocore's own exception hierarchy.
_NETWORK_ERRORS: tuple[type[BaseException], ...] = (aiohttp.ClientError, TimeoutError, OSError)

if TYPE_CHECKING:
    from core.settings import Settings


class StorageError(Exception):
    """Storage is unreachable or refused the operation; the API turns this into a 503."""


class ObjectNotFound(StorageError):
    """The key does not exist (a 404 for the caller, not an outage)."""


class Storage(Protocol):
    """What the API and the workers need from a blob store, whatever the backend."""

    backend: str

    async def put_stream(self, key: str, chunks: AsyncIterable[bytes]) -> int: ...

    def get_stream(
        self, key: str, chunk_size: int = 256 * 1024, *, start: int = 0, length: int | None = None
    ) -> AsyncIterator[bytes]:
        """The object's bytes from `start` (`length` of them, or to the end), in chunks of at
        most `chunk_size`; fewer only past the end. ObjectNotFound if missing."""
        ...

    async def delete(self, key: str) -> None: ...

    async def size(self, key: str) -> int:
        """The stored object's length in bytes; ObjectNotFound if there is none."""
        ...

    async def read_range(self, key: str, start: int, length: int) -> bytes:
        """`length` bytes from `start` (fewer only past the end); ObjectNotFound if missing."""
        ...

    def list_keys(self, prefix: str = "") -> AsyncIterator[tuple[str, datetime]]: ...

    async def sweep_partial(self, older_than: datetime) -> int:
        """Remove writes a crashed process left unfinished, idle since before `older_than`
        (temp files; S3 multipart uploads begun before it). Returns how many."""
        ...

    async def close(self) -> None: ...


def validate_key(key: str) -> None:
    """Reject anything but a plain relative key, so the file backend cannot be steered outside its root.

    Stricter than S3 needs on purpose: a trailing "/" or a "." segment would name a directory on disk.
    """
    if not isinstance(key, str) or not _KEY_RE.fullmatch(key):
        raise ValueError("invalid storage key: use letters, digits and / _ . - (max 501 characters)")
    if ".." in key or "//" in key or key.endswith("/"):
        raise ValueError("invalid storage key: '..', '//' and a trailing '/' are not allowed")
    if "." in key.split("/"):
        raise ValueError("invalid storage key: '.' path segments are not allowed")


def _check_span(chunk_size: int, start: int, length: int | None) -> None:
    if chunk_size <= 0:
        raise ValueError("chunk_size must be positive")
    if start < 0 or (length is not None and length < 0):
        raise ValueError("start and length must be >= 0")


def _validate_prefix(prefix: str) -> None:
    """Prefixes may end with "/" (a directory), otherwise they follow the key rules."""
    if prefix:
        validate_key(prefix.removesuffix("/"))


# --------------------------------------------------------------------------------------------
# Local directory backend
# --------------------------------------------------------------------------------------------


def _fsync_dir(path: Path) -> None:
    """Make a rename durable; without it a power cut can forget the new directory entry."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


class FileStorage:
    """A directory on local disk, for development and single-host deployments."""

    backend: str = "file"

    def __init__(self, root: Path) -> None:
        self._root = root
        self._tmp = root / _TMP_DIR_NAME

    @property
    def root(self) -> Path:
        return self._root

    def _path(self, key: str) -> Path:
        validate_key(key)
        return self._root / key

    async def _run(self, what: str, fn: Callable[..., _T], *args: Any) -> _T:
        """Run blocking I/O in a thread; an OSError becomes a StorageError the API can answer with 503."""
        try:
            return await asyncio.to_thread(fn, *args)
        except OSError as exc:
            reason = exc.strerror or errno.errorcode.get(exc.errno or 0, type(exc).__name__)
            raise StorageError(f"file storage {what} failed: {reason}") from exc

    def prepare(self) -> None:
        """Create the root and drop temp files a crashed process left behind (blocking)."""
        self._tmp.mkdir(parents=True, exist_ok=True)
        cutoff = time.time() - _STALE_TMP_SECONDS
        with os.scandir(self._tmp) as entries:
            for entry in entries:
                with contextlib.suppress(OSError):
                    if entry.is_file(follow_symlinks=False) and entry.stat().st_mtime < cutoff:
                        os.unlink(entry.path)

    def _open_temp(self) -> tuple[IO[bytes], Path]:
        self._tmp.mkdir(parents=True, exist_ok=True)
        fd, name = tempfile.mkstemp(dir=self._tmp, prefix="put-", suffix=".part")
        return os.fdopen(fd, "wb"), Path(name)

    @staticmethod
    def _commit(fh: IO[bytes], tmp: Path, tail: bytearray, target: Path) -> None:
        fh.write(tail)
        fh.flush()
        os.fsync(fh.fileno())
        fh.close()
        # A concurrent delete may prune the parent directory between makedirs and replace.
        for attempt in range(3):
            target.parent.mkdir(parents=True, exist_ok=True)
            try:
                os.replace(tmp, target)
                break
            except FileNotFoundError:
                if attempt == 2:
                    raise
        _fsync_dir(target.parent)

    @staticmethod
    def _discard(fh: IO[bytes], tmp: Path) -> None:
        with contextlib.suppress(OSError):
            fh.close()
        with contextlib.suppress(OSError):
            tmp.unlink()

    async def put_stream(self, key: str, chunks: AsyncIterable[bytes]) -> int:
        target = self._path(key)
        fh, tmp = await self._run("open", self._open_temp)
        total = 0
        buf = bytearray()
        try:
            async for chunk in chunks:
                total += len(chunk)
                if not buf and len(chunk) >= _FILE_IO_BLOCK:
                    await self._run("write", fh.write, chunk)  # big enough: no copy
                    continue
                buf += chunk
                if len(buf) >= _FILE_IO_BLOCK:
                    data, buf = buf, bytearray()
                    await self._run("write", fh.write, data)
            await self._run("write", self._commit, fh, tmp, buf, target)
        except BaseException:
            # Shielded so a second cancellation cannot leave the temp file open.
            await asyncio.shield(asyncio.to_thread(self._discard, fh, tmp))
            raise
        return total

    async def get_stream(
        self, key: str, chunk_size: int = 256 * 1024, *, start: int = 0, length: int | None = None
    ) -> AsyncIterator[bytes]:
        _check_span(chunk_size, start, length)
        path = self._path(key)
        try:
            fh = await asyncio.to_thread(path.open, "rb")
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
            raise ObjectNotFound(key) from None
        except OSError as exc:
            raise StorageError(f"file storage open failed: {exc.strerror}") from exc
        try:
            if start:
                fh.seek(start)  # no I/O: the next read starts there
            left = length
            block = max(chunk_size, _FILE_IO_BLOCK)
            while left is None or left > 0:
                data = await self._run("read", fh.read, block if left is None else min(block, left))
                if not data:
                    break
                if left is not None:
                    left -= len(data)
                if len(data) <= chunk_size:
                    yield data
                    continue
                for at in range(0, len(data), chunk_size):
                    yield data[at : at + chunk_size]
        finally:
            fh.close()

    def _delete_and_prune(self, path: Path) -> None:
        try:
            path.unlink()
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
            return
        # Every archive gets its own directory; drop the empty ones so they do not pile up.
        for parent in path.parents:
            if parent == self._root or self._root not in parent.parents:
                break
            try:
                parent.rmdir()
            except OSError:
                break

    async def delete(self, key: str) -> None:
        await self._run("delete", self._delete_and_prune, self._path(key))

    @staticmethod
    def _open_existing(path: Path, key: str) -> IO[bytes]:
        try:
            return path.open("rb")
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
            raise ObjectNotFound(key) from None

    def _size(self, key: str) -> int:
        with self._open_existing(self._path(key), key) as fh:
            return os.fstat(fh.fileno()).st_size

    def _read_range(self, key: str, start: int, length: int) -> bytes:
        with self._open_existing(self._path(key), key) as fh:
            fh.seek(start)
            return fh.read(length)

    async def size(self, key: str) -> int:
        return await self._run("stat", self._size, key)

    async def read_range(self, key: str, start: int, length: int) -> bytes:
        if start < 0 or length < 0:
            raise ValueError("start and length must be >= 0")
        return await self._run("read", self._read_range, key, start, length)

    def _next_dir(
        self, walker: Iterator[tuple[str, list[str], list[str]]], prefix: str
    ) -> list[tuple[str, datetime]] | None:
        """Advance the walk by one directory, so a huge tree costs one thread hop per directory."""
        try:
            dirpath, dirnames, filenames = next(walker)
        except StopIteration:
            return None
        rel_dir = os.path.relpath(dirpath, self._root).replace(os.sep, "/")
        rel_dir = "" if rel_dir == "." else rel_dir + "/"
        keep = [
            d
            for d in dirnames
            if not (rel_dir == "" and d == _TMP_DIR_NAME)
            and ((rel_dir + d + "/").startswith(prefix) or prefix.startswith(rel_dir + d + "/"))
        ]
        dirnames[:] = sorted(keep)
        found: list[tuple[str, datetime]] = []
        for name in sorted(filenames):
            key = rel_dir + name
            if not key.startswith(prefix):
                continue
            try:
                st = os.stat(os.path.join(dirpath, name), follow_symlinks=False)
            except FileNotFoundError:
                continue  # deleted while listing
            found.append((key, datetime.fromtimestamp(st.st_mtime, tz=UTC)))
        return found

    async def list_keys(self, prefix: str = "") -> AsyncIterator[tuple[str, datetime]]:
        _validate_prefix(prefix)
        start = self._root / prefix[: prefix.rfind("/") + 1] if "/" in prefix else self._root
        walker = os.walk(start)
        while True:
            batch = await self._run("list", self._next_dir, walker, prefix)
            if batch is None:
                return
            for item in batch:
                yield item

    async def sweep_partial(self, older_than: datetime) -> int:
        cutoff = older_than.timestamp()

        def sweep() -> int:
            removed = 0
            if not self._tmp.is_dir():
                return 0
            with os.scandir(self._tmp) as entries:
                for entry in entries:
                    with contextlib.suppress(OSError):
                        if entry.is_file(follow_symlinks=False) and entry.stat().st_mtime < cutoff:
                            os.unlink(entry.path)
                            removed += 1
            return removed

        return await self._run("sweep", sweep)

    async def close(self) -> None:
        """Nothing to release; present for the Storage protocol."""


# --------------------------------------------------------------------------------------------
# S3 backend
# --------------------------------------------------------------------------------------------


def _client_error_code(exc: ClientError) -> str:
    error = exc.response.get("Error", {}) if isinstance(exc.response, dict) else {}
    return str(error.get("Code") or exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode", "?"))


class S3Storage:
    """An S3 bucket (optionally under a key prefix) through one long-lived aiobotocore client."""

    backend: str = "s3"

    def __init__(
        self, client: Any, exit_stack: AsyncExitStack, bucket: str, prefix: str, part_size: int
    ) -> None:
        self._client = client
        self._exit_stack = exit_stack
        self._bucket = bucket
        self._prefix = prefix
        self._part_size = part_size

    @property
    def bucket(self) -> str:
        return self._bucket

    @property
    def prefix(self) -> str:
        return self._prefix

    def _full_key(self, key: str) -> str:
        validate_key(key)
        return self._prefix + key

    async def _call(self, op: str, key: str | None = None, **kwargs: Any) -> Any:
        """Call the client, turning botocore/aiohttp failures into our two exception types."""
        try:
            return await getattr(self._client, op)(Bucket=self._bucket, **kwargs)
        except ClientError as exc:
            code = _client_error_code(exc)
            if key is not None and code in _NOT_FOUND_CODES:
                raise ObjectNotFound(key) from exc
            raise StorageError(f"S3 {op} on bucket {self._bucket!r} failed: {code}") from exc
        except (BotoCoreError, *_NETWORK_ERRORS) as exc:
            raise StorageError(f"S3 {op} on bucket {self._bucket!r} failed: {exc}") from exc

    async def _abort(self, full_key: str, upload_id: str) -> None:
        try:
            await self._call("abort_multipart_upload", Key=full_key, UploadId=upload_id)
        except StorageError:
            # A bucket lifecycle rule (AbortIncompleteMultipartUpload) is the backstop for this.
            log.warning("could not abort multipart upload for %s", full_key, exc_info=True)

    async def put_stream(self, key: str, chunks: AsyncIterable[bytes]) -> int:
        full_key = self._full_key(key)
        part_size = self._part_size
        buf = bytearray()
        total = 0
        upload_id: str | None = None
        parts: list[dict[str, Any]] = []

        async def upload_part(data: bytes | bytearray) -> None:
            assert upload_id is not None
            number = len(parts) + 1
            resp = await self._call(
                "upload_part", Key=full_key, UploadId=upload_id, PartNumber=number, Body=bytes(data)
            )
            parts.append({"PartNumber": number, "ETag": resp["ETag"]})

        try:
            async for chunk in chunks:
                buf += chunk
                total += len(chunk)
                while len(buf) >= part_size:
                    if upload_id is None:
                        resp = await self._call("create_multipart_upload", Key=full_key)
                        upload_id = resp["UploadId"]
                    part = buf[:part_size]
                    del buf[:part_size]
                    await upload_part(part)
            if upload_id is None:
                # Small object: a single PUT is already atomic.
                await self._call("put_object", Key=full_key, Body=bytes(buf))
                return total
            if buf:
                await upload_part(buf)
            await self._call(
                "complete_multipart_upload",
                Key=full_key,
                UploadId=upload_id,
                MultipartUpload={"Parts": parts},
            )
        except BaseException:
            if upload_id is not None:
                # Shielded so a second cancellation does not leave billed, invisible parts behind.
                await asyncio.shield(self._abort(full_key, upload_id))
            raise
        return total

    async def get_stream(
        self, key: str, chunk_size: int = 256 * 1024, *, start: int = 0, length: int | None = None
    ) -> AsyncIterator[bytes]:
        _check_span(chunk_size, start, length)
        if length == 0:
            await self._call("head_object", key, Key=self._full_key(key))  # still: does it exist?
            return
        kwargs: dict[str, Any] = {}
        if start or length is not None:
            # One ranged GET: the store sends only these bytes, wherever they are in the object.
            end = "" if length is None else str(start + length - 1)
            kwargs["Range"] = f"bytes={start}-{end}"
        try:
            resp = await self._call("get_object", key, Key=self._full_key(key), **kwargs)
        except StorageError as exc:
            cause = exc.__cause__
            if not (isinstance(cause, ClientError) and _client_error_code(cause) == "InvalidRange"):
                raise
            return  # `start` at or past the end: nothing to read, as with the file backend
        body = resp["Body"]
        try:
            while True:
                try:
                    chunk = await body.read(chunk_size)
                except (BotoCoreError, *_NETWORK_ERRORS) as exc:
                    raise StorageError(f"S3 read of an object in {self._bucket!r} failed: {exc}") from exc
                if not chunk:
                    break
                yield chunk
        finally:
            body.close()

    async def delete(self, key: str) -> None:
        with contextlib.suppress(ObjectNotFound):
            await self._call("delete_object", key, Key=self._full_key(key))

    async def size(self, key: str) -> int:
        resp = await self._call("head_object", key, Key=self._full_key(key))
        return int(resp["ContentLength"])

    async def read_range(self, key: str, start: int, length: int) -> bytes:
        if start < 0 or length < 0:
            raise ValueError("start and length must be >= 0")
        if length == 0:
            return b""
        resp = await self._call(
            "get_object", key, Key=self._full_key(key), Range=f"bytes={start}-{start + length - 1}"
        )
        body = resp["Body"]
        try:
            data: bytes = await body.read()
        except (BotoCoreError, *_NETWORK_ERRORS) as exc:
            raise StorageError(f"S3 read of an object in {self._bucket!r} failed: {exc}") from exc
        finally:
            body.close()
        return data

    async def list_keys(self, prefix: str = "") -> AsyncIterator[tuple[str, datetime]]:
        _validate_prefix(prefix)
        kwargs: dict[str, Any] = {"Prefix": self._prefix + prefix}
        while True:
            page = await self._call("list_objects_v2", **kwargs)
            for obj in page.get("Contents", []):
                yield obj["Key"][len(self._prefix) :], obj["LastModified"].astimezone(UTC)
            if not page.get("IsTruncated"):
                return
            kwargs["ContinuationToken"] = page["NextContinuationToken"]

    async def sweep_partial(self, older_than: datetime) -> int:
        """Abort multipart uploads under our prefix begun before `older_than` (S3 keeps their
        parts, and bills for them, until someone does)."""
        kwargs: dict[str, Any] = {"Prefix": self._prefix}
        removed = 0
        while True:
            page = await self._call("list_multipart_uploads", **kwargs)
            for upload in page.get("Uploads", []):
                if upload["Initiated"].astimezone(UTC) < older_than:
                    await self._abort(upload["Key"], upload["UploadId"])
                    removed += 1
            if not page.get("IsTruncated"):
                return removed
            kwargs["KeyMarker"] = page.get("NextKeyMarker", "")
            kwargs["UploadIdMarker"] = page.get("NextUploadIdMarker", "")

    async def close(self) -> None:
        await self._exit_stack.aclose()


# --------------------------------------------------------------------------------------------
# Factory
# --------------------------------------------------------------------------------------------


async def open_storage(
    url: str | None,
    *,
    s3_endpoint_url: str | None = None,
    region: str | None = None,
    access_key_id: str | None = None,
    secret_access_key: str | None = None,
    part_size: int = DEFAULT_PART_SIZE,
) -> Storage | None:
    """Build the backend named by STORAGE_URL; None means "not configured" so the API can answer 503.

    Nothing is contacted here: an S3 outage at start-up must not stop the API from serving the
    rest of its routes. Errors never echo the URL, which could carry credentials.
    """
    if not url:
        return None
    parts = urlsplit(url.strip())
    scheme = parts.scheme.lower()
    if scheme == "file":
        if parts.netloc not in ("", "localhost") or not parts.path.startswith("/"):
            raise ValueError("STORAGE_URL: file storage needs an absolute path, e.g. file:///var/lib/lps")
        storage = FileStorage(Path(unquote(parts.path)))
        try:
            await asyncio.to_thread(storage.prepare)
        except OSError as exc:
            raise StorageError(f"STORAGE_URL: cannot create the storage directory: {exc.strerror}") from exc
        return storage
    if scheme == "s3":
        return await _open_s3(
            parts.netloc,
            parts.path,
            s3_endpoint_url=s3_endpoint_url,
            region=region,
            access_key_id=access_key_id,
            secret_access_key=secret_access_key,
            part_size=part_size,
        )
    raise ValueError(f"STORAGE_URL must start with s3:// or file:// (got scheme {scheme!r})")


async def _open_s3(
    bucket: str,
    path: str,
    *,
    s3_endpoint_url: str | None,
    region: str | None,
    access_key_id: str | None,
    secret_access_key: str | None,
    part_size: int,
) -> S3Storage:
    if not _BUCKET_RE.fullmatch(bucket):
        raise ValueError("STORAGE_URL: s3:// needs a valid bucket name, e.g. s3://my-bucket/prefix")
    prefix = path.strip("/")
    if prefix:
        try:
            validate_key(prefix)
        except ValueError:
            raise ValueError("STORAGE_URL: invalid key prefix after the bucket name") from None
        prefix += "/"
    if part_size < MIN_PART_SIZE:
        raise ValueError("S3 part size must be at least 5 MiB")
    if bool(access_key_id) != bool(secret_access_key):
        raise ValueError("AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY must be set together")
    config = AioConfig(
        connect_timeout=10,
        read_timeout=60,
        # Standard mode retries connection errors with jittered backoff (3 attempts unless
        # AWS_MAX_ATTEMPTS says otherwise); legacy mode's 5 attempts make an outage slow to report.
        retries={"mode": "standard"},
        # Checksums only where S3 demands them: the aws-chunked CRC trailers botocore sends by
        # default are rejected by several S3-compatible servers, and content is AEAD-sealed anyway.
        request_checksum_calculation="when_required",
        response_checksum_validation="when_required",
        # MinIO/moto on a plain host:port cannot serve virtual-hosted bucket names.
        s3={"addressing_style": "path"} if s3_endpoint_url else None,
    )
    stack = AsyncExitStack()
    try:
        client = await stack.enter_async_context(
            get_session().create_client(
                "s3",
                region_name=region or None,
                endpoint_url=s3_endpoint_url or None,
                aws_access_key_id=access_key_id or None,
                aws_secret_access_key=secret_access_key or None,
                config=config,
            )
        )
    except (BotoCoreError, ValueError) as exc:
        await stack.aclose()
        raise ValueError(
            f"S3 client configuration is invalid (check S3_ENDPOINT_URL, AWS_REGION): {exc}"
        ) from exc
    return S3Storage(client, stack, bucket, prefix, part_size)


async def open_configured_storage(settings: Settings) -> Storage | None:
    """The storage STORAGE_URL names, as both the API and the worker open it."""
    return await open_storage(
        settings.storage_url, s3_endpoint_url=settings.s3_endpoint_url or None, region=settings.aws_region
    )
