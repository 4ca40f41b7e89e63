"""Shared fixtures: real PostgreSQL and Redis (the machine's, or embedded ones), a fresh
database per test session, a Redis database of its own, the real app and the real worker.

Each test starts from empty tables and an empty Redis database, so tests never depend on
each other's leftovers.
"""

from __future__ import annotations

import dataclasses
import graphlib
import os
import secrets
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlencode, urlparse, urlunparse

import psycopg2
import psycopg2.extensions
import pytest
import pytest_asyncio
import redis as redis_sync
from aiohttp.test_utils import TestClient, TestServer
from aiohttp.web_runner import BaseRunner

from api.app import create_app
from api.server import ServiceRunner
from core.clock import Clock
from core.files.crypto import KeyRing
from core.settings import Settings, load_settings
from core.stellar.readline import restore_aiohttp_readline
from service.migrate import apply_migrations
from tests.helpers import scratch_database
from workers.main import create_worker

pytest_plugins = [
    "testing.s3server",
    "tests.archive_helpers",
    "tests.capsule_helpers",
    "testing.soroban_rpc",
    "testing.emailserver",
    "tests.browser",
    "tests.support.onchain",
    "tests.support.browser_pages",
]
# The helpers test files share keep pytest's assertion messages, as they had in the test files.
pytest.register_assert_rewrite("tests.support")

ROOT = Path(__file__).resolve().parent.parent
REDIS_LOCK_KEY = "legacy-planning:test-lock"


_EMBEDDED_STOPS = pytest.StashKey[list[Callable[[], None]]]()


def _start_embedded() -> tuple[str, str, list[Callable[[], None]]]:
    """The URLs of PostgreSQL and Redis: the environment's, else embedded ones under
    .data/test, with the functions that stop what was started."""
    from service.embedded import start_postgres, start_redis

    stops = []
    database_url = os.environ.get("DATABASE_URL", "")
    redis_url = os.environ.get("REDIS_URL", "")
    if not database_url:
        database_url, stop = start_postgres(ROOT / ".data" / "test", database="postgres")
        stops.append(stop)
    if not redis_url:
        redis_url, stop = start_redis(ROOT / ".data" / "test")
        stops.append(stop)
    return database_url, redis_url, stops


def pytest_configure(config: pytest.Config) -> None:
    """The test process hosts the API and workers, so it starts as their processes do.

    Under pytest-xdist the controller starts the embedded services once, before its workers,
    which inherit the URLs; each worker then makes its own database and claims its own Redis
    index (`database_url`, `redis_url`), as parallel runs on one machine already do.
    """
    restore_aiohttp_readline()
    if getattr(config.option, "numprocesses", None) and not hasattr(config, "workerinput"):
        database_url, redis_url, config.stash[_EMBEDDED_STOPS] = _start_embedded()
        os.environ["DATABASE_URL"], os.environ["REDIS_URL"] = database_url, redis_url


def pytest_unconfigure(config: pytest.Config) -> None:
    for stop in config.stash.get(_EMBEDDED_STOPS, []):
        stop()


def _with_redis_db(url: str, index: int) -> str:
    parts = urlparse(url)
    if parts.scheme == "unix":
        return f"unix://{parts.path}?{urlencode({'db': index})}"
    return urlunparse(parts._replace(path=f"/{index}"))


@pytest.fixture(scope="session")
def service_urls() -> Iterator[tuple[str, str]]:
    """Base URLs of PostgreSQL and Redis: from the environment, else embedded under .data/test."""
    database_url, redis_url, stops = _start_embedded()
    yield database_url, redis_url
    for stop in stops:
        stop()


@pytest.fixture(scope="session")
def database_url(service_urls: tuple[str, str]) -> Iterator[str]:
    """A database created for this test session, migrated from empty, dropped at the end.

    Its commits do not wait for the WAL to reach the disk (`synchronous_commit = off`, this
    database only): a crash of the server could lose the last of them, which no test makes,
    and every test commits many times (measured in bench/README.md, "The test suite").
    """
    with scratch_database(service_urls[0], "lps_test") as (name, url):
        apply_migrations(url)
        with psycopg2.connect(url) as conn, conn.cursor() as cur:
            cur.execute(f'ALTER DATABASE "{name}" SET synchronous_commit = off')
        conn.close()
        yield url


@pytest.fixture(scope="session")
def redis_url(service_urls: tuple[str, str]) -> Iterator[str]:
    """Claim a Redis database index nobody else is testing in (parallel runs share a server)."""
    base = service_urls[1]
    token = uuid.uuid4().hex
    for index in range(1, 16):
        url = _with_redis_db(base, index)
        client = redis_sync.Redis.from_url(url)
        if client.set(REDIS_LOCK_KEY, token, nx=True, ex=3600):
            client.flushdb()
            client.set(REDIS_LOCK_KEY, token, ex=3600)
            yield url
            client.flushdb()
            client.close()
            return
        client.close()
    raise RuntimeError("no free Redis database index for tests")


@pytest.fixture(scope="session")
def encryption_keys_entry() -> str:
    """The suite's ENCRYPTION_KEYS value, for a process that must open what the API sealed."""
    return KeyRing.generate_entry("k1")


@pytest.fixture(scope="session")
def settings(
    database_url: str, redis_url: str, encryption_keys_entry: str, tmp_path_factory: pytest.TempPathFactory
) -> Settings:
    data_dir = tmp_path_factory.mktemp("data")
    return load_settings(
        {
            "APP_ENV": "test",
            "DATA_DIR": str(data_dir),
            "DATABASE_URL": database_url,
            "REDIS_URL": redis_url,
            "JWT_SECRET": secrets.token_urlsafe(48),
            "ENCRYPTION_KEYS": encryption_keys_entry,
            "STORAGE_URL": (data_dir / "objects").as_uri(),
            "LOG_LEVEL": "INFO",
            "ARQ_QUEUE_NAME": f"test-queue-{uuid.uuid4().hex[:8]}",
            "DB_POOL_MAX": "10",
            # Lowered so tests can use short plan settings (the clock fixture moves time anyway).
            "PLAN_MIN_CHECK_IN_INTERVAL_SECONDS": "60",
            "PLAN_MIN_CANCEL_WINDOW_SECONDS": "60",
            "PLAN_MIN_VERIFICATION_TIMEOUT_SECONDS": "60",
            # No cooldown between a veto and the next report, except where a test sets one.
            "PLAN_REPORT_COOLDOWN_SECONDS": "0",
            "PUBLIC_BASE_URL": "https://legacy.example.test",
            "PUBLIC_APP_URL": "https://app.example.test",
        }
    )


@pytest.fixture(scope="session")
def emptying_statement(database_url: str) -> str:
    """One statement that empties every table, children before parents.

    DELETE rather than TRUNCATE: a test leaves a handful of rows, and TRUNCATE of every table
    makes new files for each of them, which was most of the suite's time (measured in
    bench/README.md, "The test suite"). The order comes from the foreign keys, so a key that
    refuses deletion (not a cascade) never sees its parent go first.
    """
    with psycopg2.connect(database_url) as conn, conn.cursor() as cur:
        cur.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = 'public' AND tablename <> 'schema_migrations'"
        )
        parents: dict[str, set[str]] = {row[0]: set() for row in cur.fetchall()}
        cur.execute(
            "SELECT conrelid::regclass::text, confrelid::regclass::text FROM pg_constraint"
            " WHERE contype = 'f' AND conrelid <> confrelid"
        )
        for child, parent in cur.fetchall():
            parents[child.strip('"')].add(parent.strip('"'))
    conn.close()
    # Parents first from the sorter; reversed, every child is emptied before its parents.
    order = list(graphlib.TopologicalSorter(parents).static_order())[::-1]
    return "; ".join(f'DELETE FROM "{table}"' for table in order)


@pytest.fixture(autouse=True)
def clean_state(request: pytest.FixtureRequest) -> Iterator[None]:
    """Empty every table and the test Redis database before each test that touches them."""
    if "settings" in request.fixturenames or "client" in request.fixturenames:
        settings: Settings = request.getfixturevalue("settings")
        statement: str = request.getfixturevalue("emptying_statement")
        with psycopg2.connect(settings.database_url) as conn, conn.cursor() as cur:
            cur.execute(statement)
        conn.close()
        client = redis_sync.Redis.from_url(settings.redis_url)
        token = client.get(REDIS_LOCK_KEY)
        client.flushdb()
        if token:
            client.set(REDIS_LOCK_KEY, token, ex=3600)
        client.close()
    yield


ClientFactory = Callable[..., Awaitable[TestClient]]


class ServiceTestServer(TestServer):
    """aiohttp's test server running the app as `legacy-planning serve` does (api.server)."""

    async def _make_runner(self, **kwargs: Any) -> BaseRunner:
        return ServiceRunner(self.app, **kwargs)


@pytest.fixture
def clock() -> Clock:
    """The test's clock, shared by its app and worker: real time until the test advances it."""
    return Clock()


@pytest_asyncio.fixture
async def make_client(aiohttp_client: Any, settings: Settings, clock: Clock) -> ClientFactory:
    """Build a client for an app whose settings differ from the defaults (e.g. storage unset)."""

    async def factory(**overrides: Any) -> TestClient:
        app = create_app(dataclasses.replace(settings, **overrides), clock)
        client: TestClient = await aiohttp_client(ServiceTestServer(app))
        return client

    return factory


@pytest_asyncio.fixture
async def client(make_client: ClientFactory) -> TestClient:
    return await make_client()


@pytest_asyncio.fixture
async def run_worker(settings: Settings, clock: Clock) -> AsyncIterator[Callable[..., Awaitable[Any]]]:
    """Run the real arq worker in burst mode (drain the queue, then stop)."""
    workers = []

    async def run(**overrides: Any) -> Any:
        worker_settings = dataclasses.replace(settings, **overrides.pop("settings", {}))
        worker = create_worker(
            worker_settings, clock, burst=True, poll_delay=0.05, handle_signals=False, **overrides
        )
        workers.append(worker)
        await worker.main()
        return worker

    yield run
    for worker in workers:
        await worker.close()
