"""Bounded work per owner page: each of /plan, /plan/heirs and /plan/guardians reads in a number of
SQL statements that does not grow with the plan. A plan of 50 heirs and 20 guardians costs the
same statements as one of 1 and 1 (bench/ab.py --count-queries counts the same in a running
service; this counts them in the app, on the aiopg cursor every model call goes through)."""

from __future__ import annotations

from typing import Any

import aiopg
from aiohttp.test_utils import TestClient
from stellar_sdk import Keypair

from tests.support.owner import owner_with, sign_in_page

PAGES = ("/plan", "/plan/heirs", "/plan/guardians")


async def _statements(client: TestClient, monkeypatch: Any, keypair: Keypair) -> dict[str, int]:
    """Statements per page for this owner, each page read once before (a first visit creates
    the plan, as GET /api/legacy does) and counted on the second read."""
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


async def test_each_owner_page_reads_the_same_statements_for_a_family_of_seventy_as_for_two(
    client, monkeypatch
):
    small = await owner_with(client, heirs=1, guardians=1)
    large = await owner_with(client, heirs=50, guardians=20)
    few = await _statements(client, monkeypatch, small)
    many = await _statements(client, monkeypatch, large)
    assert few == many, (few, many)
    assert all(count > 0 for count in few.values())
