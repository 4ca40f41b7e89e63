"""/api/assets: amounts are exact decimal strings (a JSON number is a 400), asset codes checked."""

from __future__ import annotations

import pytest
from stellar_sdk import Keypair

from models import sealed_text
from tests.helpers import assert_error, sign_in
from tests.plan_helpers import activity_rows, body_for, create, query

FIELDS = {"id", "userId", "label", "amount", "assetCode", "description", "audience", "createdAt", "updatedAt"}
ISSUER = Keypair.random().public_key


@pytest.mark.parametrize(
    "amount", ["1250.50", "0", "0.0000001", "1234567890123456789012345678901.1234567", "100", "007.10"]
)
async def test_amount_comes_back_exactly(client, amount):
    session = await sign_in(client)
    body = await create(client, session, "assets", amount=amount)
    expected = amount.lstrip("0") or "0"
    expected = "0" + expected if expected.startswith(".") else expected
    assert body["amount"] == expected
    got = await (await client.get(f"/api/assets/{body['id']}", headers=session.headers)).json()
    assert got["amount"] == expected


async def test_create_shape_and_optional_fields(client):
    session = await sign_in(client)
    resp = await client.post(
        "/api/assets",
        json={"label": " House ", "amount": "1", "description": "Deed in the safe", "foo": "bar"},
        headers=session.headers,
    )
    assert resp.status == 201
    body = await resp.json()
    assert set(body) == FIELDS
    assert (
        body["label"] == "House" and body["assetCode"] is None and body["description"] == "Deed in the safe"
    )
    assert body["userId"] == session.user["id"]


@pytest.mark.parametrize(
    "code",
    ["XLM", f"USDC:{ISSUER}", f"A:{ISSUER}", f"ABCDEFGHIJKL:{ISSUER}", None],
    ids=["native", "four-letters", "one-letter", "twelve-letters", "none"],  # the issuer is random
)
async def test_valid_asset_codes(client, code):
    session = await sign_in(client)
    assert (await create(client, session, "assets", assetCode=code))["assetCode"] == code


@pytest.mark.parametrize(
    "overrides,field,text",
    [
        ({"amount": 12.5}, "amount", "decimal strings"),
        ({"amount": 12}, "amount", "decimal strings"),
        ({"amount": "-1"}, "amount", ""),
        ({"amount": "1.12345678"}, "amount", ""),
        ({"amount": "1e5"}, "amount", ""),
        ({"amount": " 1"}, "amount", ""),
        ({"amount": "1."}, "amount", ""),
        ({"amount": "1" * 32}, "amount", "31 integer digits"),
        ({"amount": None}, "amount", ""),
        ({"label": ""}, "label", ""),
        ({"label": "x" * 201}, "label", ""),
        ({"assetCode": "xlm"}, "assetCode", "CODE:ISSUER"),
        ({"assetCode": "USDC"}, "assetCode", ""),
        ({"assetCode": "USDC:GBAD"}, "assetCode", ""),
        ({"assetCode": f"ABCDEFGHIJKLM:{ISSUER}"}, "assetCode", ""),
        ({"assetCode": f"US-DC:{ISSUER}"}, "assetCode", ""),
        ({"assetCode": f"USDC:{ISSUER}:X"}, "assetCode", ""),
        ({"description": "x" * 2001}, "description", ""),
    ],
)
async def test_create_validation(client, overrides, field, text):
    session = await sign_in(client)
    resp = await client.post("/api/assets", json=body_for("assets", **overrides), headers=session.headers)
    assert resp.status == 400
    body = await resp.json()
    assert_error(body, 400)
    assert field in body["details"]
    assert text in " ".join(body["message"])


async def test_patch_amount_notation_and_no_op(client, settings):
    session = await sign_in(client)
    asset = await create(client, session, "assets", amount="12.5")
    path = f"/api/assets/{asset['id']}"
    resp = await client.patch(path, json={"amount": "12.50"}, headers=session.headers)
    assert (await resp.json())["amount"] == "12.50"
    resp = await client.patch(path, json={"amount": "12.50", "label": "Savings"}, headers=session.headers)
    assert resp.status == 200
    resp = await client.patch(path, json={"amount": 13}, headers=session.headers)
    assert resp.status == 400
    resp = await client.patch(path, json={"assetCode": None, "description": "cash"}, headers=session.headers)
    body = await resp.json()
    assert body["assetCode"] is None and body["description"] == "cash" and body["amount"] == "12.50"
    assert (await client.patch(path, json={}, headers=session.headers)).status == 400
    updates = [
        r["metadata"] for r in activity_rows(settings, session.user["id"]) if r["kind"] == "asset.updated"
    ]
    assert updates == [{"fields": ["amount"]}, {"fields": ["assetCode", "description"]}]
    # Stored sealed, as the decimal string sent (models/sealed_text.py): "12.50", not "12.5".
    (row,) = query(settings, "SELECT id, amount_sealed FROM assets")
    opened = sealed_text.open_text(
        settings.encryption_keys,
        table="assets",
        column="amount",
        row_id=row["id"],
        sealed=row["amount_sealed"],
        legacy=None,
    )
    assert opened == "12.50"


async def test_list_and_delete(client, settings):
    session = await sign_in(client)
    one = await create(client, session, "assets")
    two = await create(client, session, "assets", label="Car", amount="3")
    listed = await (await client.get("/api/assets", headers=session.headers)).json()
    assert [(a["id"], a["amount"]) for a in listed] == [(two["id"], "3"), (one["id"], "1250.50")]
    assert (await client.delete(f"/api/assets/{two['id']}", headers=session.headers)).status == 204
    assert (await client.get(f"/api/assets/{two['id']}", headers=session.headers)).status == 404
    assert activity_rows(settings, session.user["id"])[-1]["kind"] == "asset.deleted"
