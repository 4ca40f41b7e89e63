"""Bounded work for the pages of the plan's rules: /plan/settings, /plan/timeline, the account
deletion page and an heir's rehearsal read as many SQL statements for 50 heirs and 20 guardians
(and their timeline entries) as for 1 and 1, counted on the aiopg cursor every model call uses."""

from __future__ import annotations

from typing import Any

import aiopg
from aiohttp.test_utils import TestClient
from stellar_sdk import Keypair

from tests.helpers import sign_in
from tests.plan_helpers import create
from tests.support.owner import owner_with, sign_in_page


async def _statements(client: TestClient, monkeypatch: Any, keypair: Keypair, heir_id: str) -> dict[str, int]:
    client.session.cookie_jar.clear()
    await sign_in_page(client, keypair)
    pages = ("/plan/settings", "/plan/timeline", "/plan/account/delete", f"/plan/heirs/{heir_id}/preview")
    counts: dict[str, int] = {}
    original = aiopg.Cursor.execute
    seen: list[str] = []

    async def counting(self: Any, sql: str, *args: Any, **kwargs: Any) -> Any:
        seen.append(sql)
        return await original(self, sql, *args, **kwargs)

    for path in pages:
        assert (await client.get(path, allow_redirects=False)).status == 200
        monkeypatch.setattr(aiopg.Cursor, "execute", counting)
        seen.clear()
        resp = await client.get(path, allow_redirects=False)
        monkeypatch.undo()
        assert resp.status == 200, await resp.text()
        counts[path.replace(heir_id, "<id>")] = len(seen)
    return counts


async def _first_heir(client: TestClient, keypair: Keypair) -> str:
    api = await sign_in(client, keypair)
    await create(client, api, "messages", content="For everyone.", title="A letter")
    resp = await client.get("/api/beneficiaries", headers=api.headers)
    return str((await resp.json())[-1]["id"])


async def test_the_rules_pages_read_the_same_statements_for_a_family_of_seventy_as_for_two(
    client, monkeypatch
):
    small = await owner_with(client, heirs=1, guardians=1)
    large = await owner_with(client, heirs=50, guardians=20)
    few = await _statements(client, monkeypatch, small, await _first_heir(client, small))
    many = await _statements(client, monkeypatch, large, await _first_heir(client, large))
    assert few == many, (few, many)
    assert all(count > 0 for count in few.values())
