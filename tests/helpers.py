"""Test helpers: wallet keypairs that sign like real wallets, and a signed-in session."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import uuid
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg2
import psycopg2.extensions
from aiohttp.test_utils import TestClient
from stellar_sdk import Keypair

SEP53_PREFIX = b"Stellar Signed Message:\n"


def sign(keypair: Keypair, message: str, encoding: str = "base64", sep53: bool = False) -> str:
    payload = message.encode()
    if sep53:
        payload = hashlib.sha256(SEP53_PREFIX + payload).digest()
    signature = keypair.sign(payload)
    return signature.hex() if encoding == "hex" else base64.b64encode(signature).decode()


@dataclass
class Session:
    keypair: Keypair
    token: str
    user: dict[str, Any]

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"}


async def challenge(client: TestClient, address: str, **kwargs: Any) -> str:
    resp = await client.post("/api/auth/wallet/challenge", json={"walletAddress": address}, **kwargs)
    assert resp.status == 200, await resp.text()
    message: str = (await resp.json())["message"]
    return message


async def sign_in(client: TestClient, keypair: Keypair | None = None) -> Session:
    keypair = keypair or Keypair.random()
    message = await challenge(client, keypair.public_key)
    resp = await client.post(
        "/api/auth/wallet/verify",
        json={"walletAddress": keypair.public_key, "signature": sign(keypair, message)},
    )
    assert resp.status == 200, await resp.text()
    body = await resp.json()
    return Session(keypair, body["token"], body["user"])


@contextmanager
def scratch_database(base_url: str, prefix: str = "lps_scratch") -> Iterator[tuple[str, str]]:
    """An empty database of its own (name, url) on the server of base_url, dropped afterwards."""
    name = f"{prefix}_{uuid.uuid4().hex[:12]}"
    admin = psycopg2.connect(base_url)
    admin.autocommit = True
    try:
        with admin.cursor() as cur:
            cur.execute(f'CREATE DATABASE "{name}"')
        yield name, psycopg2.extensions.make_dsn(base_url, dbname=name)
    finally:
        with admin.cursor() as cur:
            cur.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.close()


def assert_error(body: dict[str, Any], status: int) -> None:
    """Every error uses the standard body."""
    assert body["statusCode"] == status
    assert isinstance(body["error"], str) and body["error"]
    assert isinstance(body["message"], (str, list)) and body["message"]


def migrations_before(dest: Path, name_prefix: str) -> Path:
    """A copy of the migrations whose names sort before `name_prefix` (e.g. "0012_"), in `dest`,
    to build a database as an older release left it."""
    from service.migrate import migration_files

    dest.mkdir(parents=True, exist_ok=True)
    for path in migration_files():
        if path.name < name_prefix:
            (dest / path.name).write_text(path.read_text())
    return dest


def migrations_before_drop(dest: Path) -> Path:
    """The migrations before the first that needs every private text sealed (it drops the
    plaintext columns: service.migrate.RESEAL_FIRST)."""
    from service.migrate import RESEAL_FIRST, migration_files

    first = next(p.name for p in migration_files() if p.read_text().startswith(RESEAL_FIRST))
    return migrations_before(dest, first)


DEADLINE = 30.0  # a bound on waiting for a loaded machine, not a timing assertion


async def until(check: Callable[[], Awaitable[Any]] | Callable[[], Any], what: str) -> Any:
    """Poll state until check() is truthy and return its value; fail naming `what` after
    DEADLINE. Tests wait on state this way (or on an event), never on a fixed sleep."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + DEADLINE
    while True:
        value = check()
        if asyncio.iscoroutine(value):
            value = await value
        if value:
            return value
        assert loop.time() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.02)
