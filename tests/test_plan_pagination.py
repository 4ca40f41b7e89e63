"""Pages are stable: walking every page of a list while rows are being inserted yields no
duplicates and skips nothing that existed when the walk began (keyset, not OFFSET)."""

from __future__ import annotations

import pytest

from tests.helpers import sign_in
from tests.plan_helpers import COLLECTIONS, create


def _next_url(resp) -> str | None:
    link = resp.headers.get("Link")
    return link.split(">")[0].lstrip("<") if link else None


async def _walk(client, session, url, on_page):
    seen = []
    while url:
        resp = await client.get(url, headers=session.headers)
        assert resp.status == 200, await resp.text()
        seen += await resp.json()
        url = _next_url(resp)
        await on_page()
    return seen


@pytest.mark.parametrize("collection", COLLECTIONS)
async def test_walk_while_inserting(client, collection):
    session = await sign_in(client)
    existing = [(await create(client, session, collection, **_small(collection)))["id"] for _ in range(7)]

    async def insert_two():
        for _ in range(2):
            await create(client, session, collection, **_small(collection))

    seen = await _walk(client, session, f"/api/{collection}?limit=3", insert_two)
    ids = [row["id"] for row in seen]
    assert len(ids) == len(set(ids)), "a row was served twice"
    assert ids == existing[::-1], "pages skipped or reordered a row that existed when the walk began"
    stamps = [(row["createdAt"], row["id"]) for row in seen]
    assert stamps == sorted(stamps, reverse=True)


async def test_activity_walk_while_inserting(client):
    session = await sign_in(client)
    for _ in range(5):
        await create(client, session, "assets")
    before = [
        e["id"] for e in await (await client.get("/api/activity?limit=200", headers=session.headers)).json()
    ]

    async def insert_one():
        await create(client, session, "assets")

    seen = [e["id"] for e in await _walk(client, session, "/api/activity?limit=2", insert_one)]
    assert seen == before


async def test_rows_created_in_one_burst_page_cleanly(client):
    session = await sign_in(client)
    ids = {(await create(client, session, "guardians"))["id"] for _ in range(5)}

    async def nothing():
        return None

    for limit in (1, 2, 4, 5, 6):
        seen = [g["id"] for g in await _walk(client, session, f"/api/guardians?limit={limit}", nothing)]
        assert len(seen) == 5 and set(seen) == ids


def _small(collection: str) -> dict:
    # Keep beneficiaries' allocations under the 100% cap however many are created.
    return {"allocationPercentage": 1} if collection == "beneficiaries" else {}
