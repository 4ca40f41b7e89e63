"""Heirs see what they inherit (#16): assets carry an audience like messages and archive items,
and the released capsule and the owner's preview list the assets addressed to that heir, and
never another's."""

from __future__ import annotations

from tests.helpers import sign_in
from tests.lifecycle_helpers import activate_plan, approve_plan, get_overview
from tests.plan_helpers import activity_rows, create

ASSET_FIELDS = {"id", "label", "amount", "assetCode", "description", "share", "sharedWith"}


async def test_asset_audience_defaults_to_all_and_is_validated_like_messages(client, settings):
    owner = await sign_in(client)
    heir = await create(client, owner, "beneficiaries")
    created = await create(client, owner, "assets")
    assert created["audience"] == {"all": True}
    mine = await create(client, owner, "assets", audience={"beneficiaryIds": [heir["id"], heir["id"]]})
    assert mine["audience"] == {"beneficiaryIds": [heir["id"]]}
    listed = await (await client.get("/api/assets", headers=owner.headers)).json()
    assert {a["id"]: a["audience"] for a in listed} == {
        created["id"]: {"all": True},
        mine["id"]: {"beneficiaryIds": [heir["id"]]},
    }

    stranger = await sign_in(client)
    foreign = await create(client, stranger, "beneficiaries")
    for audience, field in (
        ({"beneficiaryIds": [foreign["id"]]}, "beneficiaryIds"),
        ({"beneficiaryIds": ["not-a-uuid"]}, "beneficiaryIds"),
        ({"beneficiaryIds": []}, "beneficiaryIds"),
        ({"all": False}, "_schema"),
        ({"all": True, "beneficiaryIds": [heir["id"]]}, "_schema"),
        ("everyone", "_schema"),
    ):
        resp = await client.post(
            "/api/assets", json={"label": "x", "amount": "1", "audience": audience}, headers=owner.headers
        )
        assert resp.status == 400, audience
        details = (await resp.json())["details"]
        assert field in str(details["audience"]), (audience, details)

    path = f"/api/assets/{created['id']}"
    resp = await client.patch(
        path, json={"audience": {"beneficiaryIds": [heir["id"]]}}, headers=owner.headers
    )
    assert resp.status == 200 and (await resp.json())["audience"] == {"beneficiaryIds": [heir["id"]]}
    resp = await client.patch(
        path, json={"audience": {"beneficiaryIds": [foreign["id"]]}}, headers=owner.headers
    )
    assert resp.status == 400
    updated = [r for r in activity_rows(settings, owner.user["id"]) if r["kind"] == "asset.updated"]
    assert [r["metadata"] for r in updated] == [{"fields": ["audience"]}]
    # Deleting the only heir named leaves the asset for nobody, never for everyone.
    resp = await client.delete(f"/api/beneficiaries/{heir['id']}", headers=owner.headers)
    assert resp.status == 204
    got = await (await client.get(f"/api/assets/{mine['id']}", headers=owner.headers)).json()
    assert got["audience"] == {"beneficiaryIds": []}


async def test_capsule_and_preview_list_only_the_heirs_assets(client, clock, run_worker):
    owner = await sign_in(client)
    setup = await activate_plan(client, owner, guardians=1)
    heir_a, heir_b = setup.beneficiaries
    # Contents are frozen once verification starts: the assets are recorded while Active.
    shared = await create(client, owner, "assets", label="House", amount="350000.00", assetCode=None)
    only_a = await create(
        client,
        owner,
        "assets",
        label="Grandfather's watch",
        amount="1",
        description="In the blue box",
        audience={"beneficiaryIds": [heir_a["id"]]},
    )
    preview = await (await client.get(f"/api/legacy/preview/{heir_b['id']}", headers=owner.headers)).json()
    assert [a["id"] for a in preview["assets"]] == [shared["id"]]

    await approve_plan(client, setup)
    clock.advance(seconds=setup.overview["settings"]["cancelWindowSeconds"] + 1)
    await run_worker()
    assert (await get_overview(client, owner))["status"] == "Released"

    capsule_a = await (await client.get(f"/api/claim/{heir_a['claimToken']}")).json()
    assert capsule_a["assets"] == [
        {
            "id": shared["id"],
            "label": "House",
            "amount": "350000.00",
            "assetCode": None,
            "description": None,
            "share": {"percentage": "60", "amount": "210000.00"},
            "sharedWith": None,
        },
        {
            "id": only_a["id"],
            "label": "Grandfather's watch",
            "amount": "1",
            "assetCode": "XLM",
            "description": "In the blue box",
            "share": {"percentage": "100", "amount": "1"},
            "sharedWith": None,
        },
    ]
    assert all(set(a) == ASSET_FIELDS for a in capsule_a["assets"])
    capsule_b = await (await client.get(f"/api/claim/{heir_b['claimToken']}")).json()
    assert [a["id"] for a in capsule_b["assets"]] == [shared["id"]]
    assert "watch" not in str(capsule_b) and only_a["id"] not in str(capsule_b)
    preview_a = await (await client.get(f"/api/legacy/preview/{heir_a['id']}", headers=owner.headers)).json()
    assert preview_a["assets"] == capsule_a["assets"]
