"""Access rules over every plan-contents route and method: 401 without a session, and another
owner's record is a 404 indistinguishable from a missing or malformed id (never 403 or 500).
Also: every route is documented in the OpenAPI document."""

from __future__ import annotations

import uuid

import pytest

from tests.helpers import assert_error, sign_in
from tests.plan_helpers import COLLECTIONS, create

PATCHES = {
    "beneficiaries": {"name": "Mallory"},
    "guardians": {"name": "Mallory"},
    "assets": {"label": "Mallory"},
    "messages": {"content": "Mallory"},
}
MALFORMED_IDS = ["not-a-uuid", "123", "%00", "' OR 1=1 --", "0" * 200, str(uuid.uuid4())[:-1] + "g"]


def _item_routes(collection: str, item_id: str) -> list[tuple[str, str, dict | None]]:
    path = f"/api/{collection}/{item_id}"
    routes = [("GET", path, None), ("PATCH", path, PATCHES[collection]), ("DELETE", path, None)]
    if collection == "beneficiaries":
        routes.append(("POST", f"{path}/claim-token/rotate", None))
    return routes


async def test_every_route_needs_a_session(client):
    session = await sign_in(client)
    routes = []
    for collection in COLLECTIONS:
        row = await create(client, session, collection)
        routes += [("GET", f"/api/{collection}", None), ("POST", f"/api/{collection}", {})]
        routes += _item_routes(collection, row["id"])
    routes.append(("GET", "/api/activity", None))
    for headers in ({}, {"Authorization": "Bearer not-a-jwt"}, {"Authorization": session.token}):
        for method, path, body in routes:
            resp = await client.request(method, path, json=body, headers=headers)
            assert resp.status == 401, (method, path, headers)
            assert_error(await resp.json(), 401)


async def test_another_owners_records_are_404_on_every_route_and_method(client):
    owner, intruder = await sign_in(client), await sign_in(client)
    rows = {c: await create(client, owner, c) for c in COLLECTIONS}
    missing = str(uuid.uuid4())
    for collection, row in rows.items():
        for item_id in (row["id"], missing):
            for method, path, body in _item_routes(collection, item_id):
                resp = await client.request(method, path, json=body, headers=intruder.headers)
                assert resp.status == 404, (method, path)
                error = await resp.json()
                assert_error(error, 404)
                assert row["id"] not in str(error)
        listed = await (await client.get(f"/api/{collection}", headers=intruder.headers)).json()
        assert listed == []
    # Nothing the intruder tried changed anything.
    for collection, row in rows.items():
        resp = await client.get(f"/api/{collection}/{row['id']}", headers=owner.headers)
        assert await resp.json() == row


async def test_foreign_and_missing_ids_get_the_same_answer(client):
    owner, intruder = await sign_in(client), await sign_in(client)
    foreign = await create(client, owner, "assets")
    a = await client.get(f"/api/assets/{foreign['id']}", headers=intruder.headers)
    b = await client.get(f"/api/assets/{uuid.uuid4()}", headers=intruder.headers)
    assert (a.status, await a.json()) == (b.status, await b.json())


@pytest.mark.parametrize("collection", COLLECTIONS)
async def test_malformed_ids_are_404_not_500(client, collection):
    session = await sign_in(client)
    for bad in MALFORMED_IDS:
        for method, path, body in _item_routes(collection, bad):
            resp = await client.request(method, path, json=body, headers=session.headers)
            assert resp.status == 404, (method, path)
            assert_error(await resp.json(), 404)


async def test_every_route_is_documented(client):
    spec = await (await client.get("/api/docs/openapi.json")).json()
    paths = spec["paths"]
    expected = {
        "/api/activity": {"get": (400, 401)},
        "/api/beneficiaries/{id}/claim-token/rotate": {"post": (401, 404)},
    }
    for collection in COLLECTIONS:
        expected[f"/api/{collection}"] = {"get": (400, 401), "post": (400, 401)}
        expected[f"/api/{collection}/{{id}}"] = {
            "get": (401, 404),
            "patch": (400, 401, 404),
            "delete": (401, 404),
        }
    for path, methods in expected.items():
        assert path in paths, path
        for method, errors in methods.items():
            operation = paths[path][method]
            assert operation.get("summary"), (path, method)
            responses = operation["responses"]
            assert any(code in responses for code in ("200", "201", "204")), (path, method)
            for code in errors:
                assert str(code) in responses, (path, method, code)
            if method in ("post", "patch") and not path.endswith("/rotate"):
                assert "requestBody" in operation, (path, method)
    schemas = spec["components"]["schemas"]
    beneficiary = next(
        s
        for name, s in schemas.items()
        if name.startswith("Beneficiary") and "claimToken" in s.get("properties", {})
    )
    assert "claimToken" in beneficiary["properties"]
    patch = next(s for name, s in schemas.items() if name.startswith("BeneficiaryPatch"))
    assert not patch.get("required")
