"""Bounded work per contents page: /plan/assets, /plan/messages and /plan/archive each read in a
number of SQL statements that does not grow with the plan. A plan of 30 heirs, 40 assets, 40
letters and 20 files costs the same statements as one of 1 of each (counted on the aiopg cursor
every model call goes through, as tests/test_owner_pages_statements.py does)."""

from __future__ import annotations

from typing import Any

import aiopg
from aiohttp.test_utils import TestClient
from stellar_sdk import Keypair

from tests.helpers import sign_in
from tests.plan_helpers import create
from tests.support.owner import sign_in_page

PAGES = ("/plan/assets", "/plan/messages", "/plan/archive")


async def _owner_with(client: TestClient, *, heirs: int, things: int, files: int) -> Keypair:
    keypair = Keypair.random()
    owner = await sign_in(client, keypair)
    ids = []
    for index in range(heirs):
        heir = await create(
            client,
            owner,
            "beneficiaries",
            name=f"Heir {index}",
            email=f"h{index}@example.org",
            allocationPercentage=100 // heirs,
        )
        ids.append(heir["id"])
    for index in range(things):
        audience = {"all": True} if index % 2 else {"beneficiaryIds": ids[: 1 + index % len(ids)]}
        await create(
            client, owner, "assets", label=f"Asset {index}", amount=f"{index + 1}.5", audience=audience
        )
        if index % 3 == 0:
            await create(
                client,
                owner,
                "assets",
                label=f"Thing {index}",
                amount=None,
                assetCode=None,
                audience=audience,
            )
        await create(
            client,
            owner,
            "messages",
            title=f"Letter {index}",
            content="Text",
            releaseRule={"kind": "after_release", "value": index + 1},
            audience=audience,
        )
    for index in range(files):
        resp = await client.post(
            "/api/archive",
            data={"title": f"File {index}", "file": b"content"},
            headers=owner.headers,
        )
        assert resp.status == 202, await resp.text()
    return keypair


async def _statements(client: TestClient, monkeypatch: Any, keypair: Keypair) -> dict[str, int]:
    client.session.cookie_jar.clear()
    await sign_in_page(client, keypair)
    counts: dict[str, int] = {}
    original = aiopg.Cursor.execute
    seen: list[str] = []

    async def counting(self: Any, sql: str, *args: Any, **kwargs: Any) -> Any:
        seen.append(sql)
        return await original(self, sql, *args, **kwargs)

    for path in PAGES:
        assert (await client.get(path, allow_redirects=False)).status == 200
        monkeypatch.setattr(aiopg.Cursor, "execute", counting)
        seen.clear()
        resp = await client.get(path, allow_redirects=False)
        monkeypatch.undo()
        assert resp.status == 200, await resp.text()
        counts[path] = len(seen)
    return counts


async def test_each_contents_page_reads_the_same_statements_for_a_large_plan_as_a_small_one(
    make_client, file_backend, monkeypatch
):
    client = await make_client(**file_backend)
    small = await _owner_with(client, heirs=1, things=1, files=1)
    large = await _owner_with(client, heirs=30, things=40, files=20)
    few = await _statements(client, monkeypatch, small)
    many = await _statements(client, monkeypatch, large)
    assert few == many, (few, many)
    assert all(count > 0 for count in few.values())
