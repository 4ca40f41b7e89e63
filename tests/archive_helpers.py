"""Archive test harness: storage backends (a fresh directory, a fresh moto bucket), uploads,
downloads that tolerate a cut connection, and direct looks at rows and stored objects.

Loaded as a pytest plugin from conftest, so its fixtures are available to every test module.
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

import aiohttp
import pytest
import pytest_asyncio
from aiohttp.test_utils import TestClient

from core.settings import Settings
from testing.s3server import TEST_ACCESS_KEY_ID, TEST_SECRET_ACCESS_KEY, create_bucket
from tests.helpers import Session, sign_in
from tests.plan_helpers import query

KIB = 1024
MIB = 1024 * KIB
SEGMENT = 64 * KIB
CT_SEGMENT = SEGMENT + 16
HEADER = 8


@pytest.fixture
def file_backend(tmp_path: Path) -> dict[str, Any]:
    """A storage directory of this test's own, so objects never leak between tests."""
    return {"storage_url": (tmp_path / "objects").as_uri()}


@pytest_asyncio.fixture
async def s3_backend(s3_endpoint: str, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """A fresh bucket on the moto server; credentials through the standard AWS variables."""
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", TEST_ACCESS_KEY_ID)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", TEST_SECRET_ACCESS_KEY)
    bucket = f"archive-{uuid.uuid4().hex[:12]}"
    await create_bucket(s3_endpoint, bucket)
    return {"storage_url": f"s3://{bucket}", "s3_endpoint_url": s3_endpoint}


@pytest.fixture(params=["file", "s3"])
def backend(request: pytest.FixtureRequest) -> dict[str, Any]:
    backend: dict[str, Any] = request.getfixturevalue(f"{request.param}_backend")
    return backend


@dataclass
class Archive:
    """One owner, an API client and the worker, all on the same storage backend."""

    client: TestClient
    session: Session
    backend: dict[str, Any]
    settings: Settings
    run_worker: Callable[..., Awaitable[Any]]

    async def upload(
        self,
        data: bytes,
        *,
        filename: str = "file.bin",
        content_type: str = "application/octet-stream",
        session: Session | None = None,
        **fields: str,
    ) -> aiohttp.ClientResponse:
        form = aiohttp.FormData(quote_fields=False)  # raw UTF-8 file names, as browsers send
        for name, value in fields.items():
            form.add_field(name, value)
        form.add_field("file", data, filename=filename, content_type=content_type)
        return await self.client.post("/api/archive", data=form, headers=(session or self.session).headers)

    async def upload_ok(self, data: bytes, **kwargs: Any) -> dict[str, Any]:
        resp = await self.upload(data, **kwargs)
        body: dict[str, Any] = await resp.json()
        assert resp.status == 202, body
        assert body["status"] == "pending"
        return body

    async def work(self, **overrides: Any) -> Any:
        """Run the real worker in burst mode on this backend (settings overrides merged in)."""
        settings = {**self.backend, **overrides.pop("settings", {})}
        return await self.run_worker(settings=settings, **overrides)

    async def get(self, item_id: str, session: Session | None = None) -> aiohttp.ClientResponse:
        return await self.client.get(f"/api/archive/{item_id}", headers=(session or self.session).headers)

    async def download(self, item_id: str, session: Session | None = None) -> aiohttp.ClientResponse:
        return await self.client.get(
            f"/api/archive/{item_id}/download", headers=(session or self.session).headers
        )

    async def download_bytes(self, item_id: str) -> bytes:
        resp = await self.download(item_id)
        assert resp.status == 200, await resp.text()
        return await resp.read()

    def row(self, item_id: str) -> dict[str, Any]:
        rows = query(self.settings, "SELECT * FROM archive_items WHERE id = %s", (item_id,))
        assert rows, f"no archive_items row {item_id}"
        return rows[0]

    @property
    def storage_root(self) -> Path:
        return Path(unquote(urlparse(self.backend["storage_url"]).path))

    def stored_files(self) -> list[str]:
        """Every file under the file backend's root, temp files of writes in progress included."""
        root = self.storage_root
        if not root.exists():
            return []
        return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())

    def object_path(self, item_id: str) -> Path:
        """Where the file backend keeps an item's ciphertext."""
        return self.storage_root / "archive" / self.session.user["id"] / item_id


@pytest_asyncio.fixture
async def vault(
    make_client: Any, run_worker: Any, settings: Settings, file_backend: dict[str, Any]
) -> Archive:
    """The usual harness: filesystem storage (tests needing S3 build theirs with `harness`)."""
    return await harness(make_client, run_worker, settings, file_backend)


async def harness(
    make_client: Any, run_worker: Any, settings: Settings, backend: dict[str, Any], **overrides: Any
) -> Archive:
    client = await make_client(**backend, **overrides)
    return Archive(client, await sign_in(client), backend, settings, run_worker)


async def read_until_cut(resp: aiohttp.ClientResponse) -> tuple[bytes, bool]:
    """Read a streamed body; (bytes received, True if the server cut it short)."""
    received = bytearray()
    try:
        async for chunk in resp.content.iter_chunked(64 * KIB):
            received += chunk
    except aiohttp.ClientPayloadError:
        return bytes(received), True
    return bytes(received), False
