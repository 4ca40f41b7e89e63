"""GET /api/activity (the Family Timeline) and the rule behind it: every mutation writes its
entry in the same transaction as the change, so a failure halfway leaves neither."""

from __future__ import annotations

from datetime import UTC

import pytest

from models import activity
from tests.helpers import assert_error, sign_in
from tests.plan_helpers import COLLECTIONS, activity_rows, body_for, create, query

ENTRY_FIELDS = {"id", "kind", "entityType", "entityId", "summary", "metadata", "createdAt"}
ENTITY = {"beneficiaries": "beneficiary", "guardians": "guardian", "assets": "asset", "messages": "message"}
PATCHES = {
    "beneficiaries": {"name": "Bea"},
    "guardians": {"name": "Gus"},
    "assets": {"label": "Car"},
    "messages": {"content": "changed"},
}


async def _timeline(client, session, query_string=""):
    resp = await client.get(f"/api/activity{query_string}", headers=session.headers)
    assert resp.status == 200, await resp.text()
    return await resp.json()


async def test_every_mutation_is_on_the_timeline_newest_first(client):
    session = await sign_in(client)
    expected = ["user.created"]
    for collection in COLLECTIONS:
        row = await create(client, session, collection)
        path = f"/api/{collection}/{row['id']}"
        assert (await client.patch(path, json=PATCHES[collection], headers=session.headers)).status == 200
        entity = ENTITY[collection]
        expected += [f"{entity}.created", f"{entity}.updated"]
        if collection == "beneficiaries":
            assert (await client.post(f"{path}/claim-token/rotate", headers=session.headers)).status == 200
            expected.append("beneficiary.claim_token_rotated")
        assert (await client.delete(path, headers=session.headers)).status == 204
        expected.append(f"{entity}.deleted")
    entries = await _timeline(client, session)
    assert [e["kind"] for e in entries] == expected[::-1]
    for entry in entries:
        assert set(entry) == ENTRY_FIELDS
        assert entry["summary"] and entry["createdAt"].endswith("Z")
        assert entry["entityType"] == entry["kind"].split(".")[0]
    updated = {e["kind"]: e["metadata"] for e in entries if e["kind"].endswith(".updated")}
    assert updated == {
        "beneficiary.updated": {"fields": ["name"]},
        "guardian.updated": {"fields": ["name"]},
        "asset.updated": {"fields": ["label"]},
        "message.updated": {"fields": ["content"]},
    }


async def test_entries_hold_no_private_values(client):
    session = await sign_in(client)
    beneficiary = await create(client, session, "beneficiaries", email="private@example.org", name="Zebedee")
    await create(client, session, "guardians", email="guard@example.org")
    await create(client, session, "messages", content="very private words", title="Secret title")
    await create(client, session, "assets", amount="987654.321", description="under the floor")
    text = str(await _timeline(client, session))
    for private in (
        "private@example.org",
        "Zebedee",
        "guard@example.org",
        "very private words",
        "Secret title",
        "987654.321",
        "under the floor",
        beneficiary["claimToken"],
    ):
        assert private not in text


async def test_filters(client, settings):
    session = await sign_in(client)
    await create(client, session, "assets")
    # The database's clock stamps entries (clock_timestamp()): read "between" from it, not
    # from this host's, so the two clocks never have to agree.
    middle = query(settings, "SELECT clock_timestamp() AS now")[0]["now"].astimezone(UTC)
    asset = await create(client, session, "assets")
    await client.patch(f"/api/assets/{asset['id']}", json={"label": "Boat"}, headers=session.headers)
    await create(client, session, "guardians")

    by_type = await _timeline(client, session, "?entityType=asset")
    assert [e["kind"] for e in by_type] == ["asset.updated", "asset.created", "asset.created"]
    by_kind = await _timeline(client, session, "?kind=asset.created")
    assert by_kind[0]["entityId"] == asset["id"] and len(by_kind) == 2
    stamp = middle.isoformat().replace("+00:00", "Z")
    since = await _timeline(client, session, f"?since={stamp}")
    assert [e["kind"] for e in since] == ["guardian.created", "asset.updated", "asset.created"]
    until = await _timeline(client, session, f"?until={stamp}")
    assert [e["kind"] for e in until] == ["asset.created", "user.created"]
    both = await _timeline(client, session, f"?since={stamp}&entityType=asset&kind=asset.created")
    assert [e["entityId"] for e in both] == [asset["id"]]
    assert await _timeline(client, session, "?entityType=archive_item") == []


@pytest.mark.parametrize(
    "query_string",
    [
        "?since=yesterday",
        "?since=2026-01-01T00:00:00",
        "?since=2026-01-02T00:00:00Z&until=2026-01-01T00:00:00Z",
        "?limit=0",
        "?limit=201",
        "?cursor=garbage",
        "?kind=" + "x" * 65,
    ],
)
async def test_bad_query_is_400(client, query_string):
    session = await sign_in(client)
    resp = await client.get(f"/api/activity{query_string}", headers=session.headers)
    assert resp.status == 400
    assert_error(await resp.json(), 400)


async def test_paged_with_link_header(client):
    session = await sign_in(client)
    for _ in range(4):
        await create(client, session, "assets")
    resp = await client.get("/api/activity?limit=2&entityType=asset", headers=session.headers)
    first = await resp.json()
    next_url = resp.headers["Link"].split(">")[0].lstrip("<")
    assert "entityType=asset" in next_url
    resp = await client.get(next_url, headers=session.headers)
    second = await resp.json()
    assert "Link" not in resp.headers
    assert len(first) == 2 and len(second) == 2 and not {e["id"] for e in first} & {e["id"] for e in second}


async def test_only_own_entries(client):
    first, second = await sign_in(client), await sign_in(client)
    await create(client, first, "assets")
    assert [e["kind"] for e in await _timeline(client, second)] == ["user.created"]


@pytest.mark.parametrize("method", ["post", "put", "patch", "delete"])
async def test_read_only(client, method):
    session = await sign_in(client)
    resp = await client.request(method.upper(), "/api/activity", json={}, headers=session.headers)
    assert resp.status == 405
    assert set(resp.headers["Allow"].split(",")) == {"GET", "HEAD"}
    assert_error(await resp.json(), 405)


async def test_without_token_is_401(client):
    resp = await client.get("/api/activity")
    assert resp.status == 401


# Atomicity: a mutation that fails after its row change leaves neither the change nor an entry.


async def test_create_failing_at_the_activity_insert_leaves_nothing(client, settings, monkeypatch):
    session = await sign_in(client)
    real_record = activity.record

    async def record_then_fail(cur, *args, **kwargs):
        await real_record(cur, *args, **kwargs)
        raise RuntimeError("simulated crash after the entry was written")

    monkeypatch.setattr(activity, "record", record_then_fail)
    for collection in COLLECTIONS:
        resp = await client.post(f"/api/{collection}", json=body_for(collection), headers=session.headers)
        assert resp.status == 500
    monkeypatch.undo()
    for table in ("beneficiaries", "guardians", "assets", "messages"):
        assert query(settings, f"SELECT count(*) AS n FROM {table}")[0]["n"] == 0
    assert [r["kind"] for r in activity_rows(settings, session.user["id"])] == ["user.created"]


@pytest.fixture
def failing_activity_inserts(settings):
    """Make PostgreSQL itself refuse every activity insert (a real failure mid-transaction)."""
    query(
        settings,
        "CREATE FUNCTION pc_test_refuse_activity() RETURNS trigger LANGUAGE plpgsql AS"
        " $$ BEGIN RAISE EXCEPTION 'activity insert refused for the test'; END $$;"
        " CREATE TRIGGER pc_test_refuse_activity BEFORE INSERT ON activity"
        " FOR EACH ROW EXECUTE FUNCTION pc_test_refuse_activity();",
    )
    yield
    query(
        settings,
        "DROP TRIGGER pc_test_refuse_activity ON activity; DROP FUNCTION pc_test_refuse_activity();",
    )


async def test_update_and_delete_failing_at_the_activity_insert_change_nothing(client, settings, request):
    session = await sign_in(client)
    rows = {c: await create(client, session, c) for c in COLLECTIONS}
    before = {
        c: await (await client.get(f"/api/{c}/{r['id']}", headers=session.headers)).json()
        for c, r in rows.items()
    }
    entries_before = activity_rows(settings, session.user["id"])
    request.getfixturevalue("failing_activity_inserts")
    for collection, row in rows.items():
        path = f"/api/{collection}/{row['id']}"
        assert (await client.patch(path, json=PATCHES[collection], headers=session.headers)).status == 500
        assert (await client.delete(path, headers=session.headers)).status == 500
    rotate = f"/api/beneficiaries/{rows['beneficiaries']['id']}/claim-token/rotate"
    assert (await client.post(rotate, headers=session.headers)).status == 500
    for collection, row in rows.items():
        got = await client.get(f"/api/{collection}/{row['id']}", headers=session.headers)
        assert got.status == 200 and await got.json() == before[collection]
    assert activity_rows(settings, session.user["id"]) == entries_before


@pytest.mark.parametrize("kind", ["asset", ".created", "asset.", ""])
async def test_a_kind_without_entity_and_verb_is_refused_before_any_sql(kind):
    """`entity_type` is derived from the `kind` prefix, so a kind must have both halves."""
    with pytest.raises(ValueError, match=r"<entity>\.<verb>"):
        await activity.record(None, user_id="u", kind=kind, entity_id=None, summary="s")
