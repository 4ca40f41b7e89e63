"""The Family Timeline says who (models.activity.name_entries): each entry names its guardian
and heir as the owner wrote them, read from their sealed rows when the timeline is shown and
never stored in clear in `activity`; someone since removed reads as "a former guardian" or
"a former heir"."""

from __future__ import annotations

from typing import Any

from core import db
from core.db import autocommit
from models import activity
from tests.helpers import sign_in
from tests.lifecycle_helpers import activate_plan
from tests.plan_helpers import query


async def _timeline(client: Any, session: Any) -> list[dict[str, Any]]:
    resp = await client.get("/api/activity?limit=100", headers=session.headers)
    assert resp.status == 200, await resp.text()
    return list(await resp.json())


async def _named_plan(client: Any) -> tuple[Any, Any]:
    """An Active plan whose third guardian and third heir, each on the timeline, are removed."""
    owner = await sign_in(client)
    setup = await activate_plan(client, owner, allocations=(50, 30, 20), guardians=3, threshold=2)
    for heir in setup.beneficiaries:
        resp = await client.post(f"/api/beneficiaries/{heir['id']}/confirm-email", headers=owner.headers)
        assert resp.status in (200, 202), await resp.text()
    resp = await client.delete(f"/api/guardians/{setup.guardians[2].row['id']}", headers=owner.headers)
    assert resp.status == 204, await resp.text()
    resp = await client.delete(f"/api/beneficiaries/{setup.beneficiaries[2]['id']}", headers=owner.headers)
    assert resp.status == 204, await resp.text()
    return owner, setup


def _summaries(entries: list[dict[str, Any]], kind: str) -> list[str]:
    return sorted(e["summary"] for e in entries if e["kind"] == kind)


async def test_the_timeline_names_guardians_and_heirs_and_the_removed_as_former(client, settings):
    owner, _ = await _named_plan(client)
    entries = await _timeline(client, owner)
    assert _summaries(entries, "guardian.accepted") == [
        "A former guardian accepted to guard your plan",
        "Guardian 0 accepted to guard your plan",
        "Guardian 1 accepted to guard your plan",
    ]
    assert _summaries(entries, "beneficiary.email_confirmation_sent") == [
        "A former heir was asked to confirm that their email address reaches them",
        "Heir 0 was asked to confirm that their email address reaches them",
        "Heir 1 was asked to confirm that their email address reaches them",
    ]
    # Entries that name nobody are as their writer stored them.
    assert "Guardian removed" in _summaries(entries, "guardian.deleted")
    # Read raw: the table holds the anonymous sentences, and no name anywhere in a row.
    raw = query(settings, "SELECT row_to_json(a)::text AS row FROM activity a")
    assert raw and not any(
        name in r["row"]
        for r in raw
        for name in ("Guardian 0", "Guardian 1", "Guardian 2", "Heir 0", "Heir 2")
    )
    stored = [
        r["summary"] for r in query(settings, "SELECT summary FROM activity WHERE kind = 'guardian.accepted'")
    ]
    assert stored == ["A guardian accepted to guard your plan"] * 3


async def test_the_names_come_in_the_owners_language(client):
    owner, _ = await _named_plan(client)
    resp = await client.patch("/api/users/me", json={"locale": "es"}, headers=owner.headers)
    assert resp.status == 200, await resp.text()
    accepted = _summaries(await _timeline(client, owner), "guardian.accepted")
    assert "Guardian 0 aceptó formar parte de los guardianes de su plan" in accepted
    assert "Una antigua persona guardiana aceptó formar parte de los guardianes de su plan" in accepted


async def test_a_renamed_guardian_reads_with_the_name_they_have_now(client):
    owner, setup = await _named_plan(client)
    guardian = setup.guardians[0].row
    resp = await client.patch(
        f"/api/guardians/{guardian['id']}", json={"name": "Ana Ruiz"}, headers=owner.headers
    )
    assert resp.status == 200, await resp.text()
    assert "Ana Ruiz accepted to guard your plan" in _summaries(
        await _timeline(client, owner), "guardian.accepted"
    )


class _Counting:
    """A real cursor that counts the statements it runs (the naming must not grow per entry)."""

    def __init__(self, cur: Any) -> None:
        self.cur, self.statements = cur, 0

    async def execute(self, *args: Any) -> None:
        self.statements += 1
        await self.cur.execute(*args)

    async def fetchone(self) -> Any:
        return await self.cur.fetchone()

    async def fetchall(self) -> Any:
        return await self.cur.fetchall()


async def test_names_for_a_whole_page_take_two_statements(client, settings):
    owner, _ = await _named_plan(client)
    pool = await db.create_pool(settings.database_url, 1)
    try:
        async with autocommit(pool) as cur:
            entries = await activity.all_for_user(cur, user_id=owner.user["id"])
            counting = _Counting(cur)
            await activity.name_entries(
                counting, settings.key_ring, user_id=owner.user["id"], entries=entries
            )
    finally:
        pool.close()
        await pool.wait_closed()
    named = [e for e in entries if e["summary"].startswith(("Guardian ", "Heir ", "A former"))]
    assert len(named) >= 6  # three acceptances, three confirmations asked
    assert counting.statements == 2  # every name of the page, then the owner's language
