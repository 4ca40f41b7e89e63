"""/api/messages: release rules, audiences (own beneficiaries only, pruned on delete), private
content (size-limited, never in logs or the timeline), and mediaId (an archive item)."""

from __future__ import annotations

import logging
import uuid

import pytest

from tests.helpers import assert_error, sign_in
from tests.plan_helpers import activity_rows, body_for, create, query

FIELDS = {
    "id",
    "userId",
    "title",
    "content",
    "opensAt",
    "releaseRule",
    "audience",
    "mediaId",
    "createdAt",
    "updatedAt",
}


@pytest.mark.parametrize(
    "rule",
    [
        {"kind": "on_release", "value": None},
        {"kind": "on_date", "value": "2030-05-01"},
        {"kind": "after_release", "value": 30},
        {"kind": "after_release", "value": 1},
    ],
)
async def test_create_with_each_release_rule(client, settings, rule):
    session = await sign_in(client)
    body = await create(client, session, "messages", releaseRule=rule)
    assert set(body) == FIELDS
    assert body["releaseRule"] == rule
    assert body["audience"] == {"all": True} and body["mediaId"] is None
    got = await (await client.get(f"/api/messages/{body['id']}", headers=session.headers)).json()
    assert got == body


async def test_on_release_value_may_be_omitted(client):
    session = await sign_in(client)
    body = await create(client, session, "messages", releaseRule={"kind": "on_release"}, title=None)
    assert body["releaseRule"] == {"kind": "on_release", "value": None} and body["title"] is None


@pytest.mark.parametrize(
    "rule",
    [
        {"kind": "on_release", "value": "2030-01-01"},
        {"kind": "on_release", "value": 3},
        {"kind": "on_date", "value": None},
        {"kind": "on_date", "value": 5},
        {"kind": "on_date", "value": "2030-13-01"},
        {"kind": "on_date", "value": "2030-1-1"},
        {"kind": "on_date", "value": "2030-01-01T00:00:00Z"},
        {"kind": "after_release", "value": 0},
        {"kind": "after_release", "value": -1},
        {"kind": "after_release", "value": "5"},
        {"kind": "after_release", "value": 1.5},
        {"kind": "after_release", "value": True},
        {"kind": "after_release", "value": 36501},
        {"kind": "after_release"},
    ],
)
async def test_wrong_value_for_kind_is_400(client, rule):
    session = await sign_in(client)
    resp = await client.post(
        "/api/messages", json=body_for("messages", releaseRule=rule), headers=session.headers
    )
    assert resp.status == 400
    body = await resp.json()
    assert_error(body, 400)
    assert body["details"]["releaseRule"]["value"]
    assert body["message"][0].startswith("releaseRule.value: ")


@pytest.mark.parametrize(
    "rule", [{"kind": "on_death", "value": None}, {"value": None}, "on_release", None, {"kind": 1}]
)
async def test_bad_rule_kind_is_400(client, rule):
    session = await sign_in(client)
    resp = await client.post(
        "/api/messages", json=body_for("messages", releaseRule=rule), headers=session.headers
    )
    assert resp.status == 400
    assert "releaseRule" in (await resp.json())["details"]


async def test_audience_of_own_beneficiaries(client):
    session = await sign_in(client)
    a = await create(client, session, "beneficiaries")
    b = await create(client, session, "beneficiaries")
    ids = [a["id"], b["id"], a["id"].upper()]
    body = await create(client, session, "messages", audience={"beneficiaryIds": ids})
    assert sorted(body["audience"]["beneficiaryIds"]) == sorted([a["id"], b["id"]])
    assert set(body["audience"]) == {"beneficiaryIds"}


async def test_audience_must_be_own_beneficiaries(client, settings):
    owner, other = await sign_in(client), await sign_in(client)
    mine = await create(client, owner, "beneficiaries")
    theirs = await create(client, other, "beneficiaries")
    missing = str(uuid.uuid4())
    for foreign in (theirs["id"], missing):
        resp = await client.post(
            "/api/messages",
            json=body_for("messages", audience={"beneficiaryIds": [mine["id"], foreign]}),
            headers=owner.headers,
        )
        assert resp.status == 400
        body = await resp.json()
        assert body["details"]["audience"]["beneficiaryIds"]
        assert foreign in body["message"][0] and mine["id"] not in body["message"][0]
    assert query(settings, "SELECT count(*) AS n FROM messages")[0]["n"] == 0


@pytest.mark.parametrize(
    "audience",
    [
        {},
        {"all": False},
        {"all": "yes"},
        {"all": True, "beneficiaryIds": []},
        {"beneficiaryIds": []},
        {"beneficiaryIds": ["not-a-uuid"]},
        {"beneficiaryIds": "x"},
        {"beneficiaryIds": [str(uuid.uuid4()) for _ in range(201)]},
        ["all"],
        None,
    ],
)
async def test_audience_shape_is_validated(client, audience):
    session = await sign_in(client)
    resp = await client.post(
        "/api/messages", json=body_for("messages", audience=audience), headers=session.headers
    )
    assert resp.status == 400
    assert "audience" in (await resp.json())["details"]


@pytest.mark.parametrize(
    "overrides,field",
    [
        ({"content": None}, "content"),
        ({"content": ""}, "content"),
        ({"content": " \n\t "}, "content"),
        ({"content": "x" * 100_001}, "content"),
        ({"content": 42}, "content"),
        ({"title": ""}, "title"),
        ({"title": "x" * 201}, "title"),
    ],
)
async def test_content_and_title_validation(client, overrides, field):
    session = await sign_in(client)
    resp = await client.post("/api/messages", json=body_for("messages", **overrides), headers=session.headers)
    assert resp.status == 400
    body = await resp.json()
    assert field in body["details"]
    assert "xxxxxxxxxx" not in str(body)


async def test_content_up_to_100k_characters_kept_exactly(client):
    session = await sign_in(client)
    content = "  é" + "x" * 99_996 + "\n"
    body = await create(client, session, "messages", content=content)
    assert body["content"] == content and len(content) == 100_000


async def test_content_never_in_logs_or_timeline(client, settings, caplog):
    caplog.set_level(logging.DEBUG)
    session = await sign_in(client)
    secret = "the key is under the blue flowerpot"
    message = await create(client, session, "messages", content=secret)
    path = f"/api/messages/{message['id']}"
    await client.patch(path, json={"content": secret + "!"}, headers=session.headers)
    await client.post(
        "/api/messages", json=body_for("messages", content=secret, title=""), headers=session.headers
    )
    await client.delete(path, headers=session.headers)
    assert "flowerpot" not in caplog.text
    entries = activity_rows(settings, session.user["id"])
    assert "flowerpot" not in str(entries)
    assert [e["metadata"] for e in entries if e["kind"] == "message.updated"] == [{"fields": ["content"]}]


async def test_media_id_must_be_an_archive_item(client):
    session = await sign_in(client)
    resp = await client.post(
        "/api/messages", json=body_for("messages", mediaId=str(uuid.uuid4())), headers=session.headers
    )
    assert resp.status == 400
    assert (await resp.json())["message"] == ["mediaId: Not one of your archive items."]
    body = await create(client, session, "messages", mediaId=None)
    assert body["mediaId"] is None


async def test_patch(client, settings):
    session = await sign_in(client)
    beneficiary = await create(client, session, "beneficiaries")
    message = await create(client, session, "messages")
    path = f"/api/messages/{message['id']}"
    resp = await client.patch(
        path,
        json={
            "releaseRule": {"kind": "after_release", "value": 7},
            "audience": {"beneficiaryIds": [beneficiary["id"]]},
            "title": None,
        },
        headers=session.headers,
    )
    body = await resp.json()
    assert resp.status == 200, body
    assert body["releaseRule"] == {"kind": "after_release", "value": 7}
    assert body["audience"] == {"beneficiaryIds": [beneficiary["id"]]}
    assert body["title"] is None and body["content"] == message["content"]
    resp = await client.patch(
        path, json={"releaseRule": {"kind": "on_date", "value": 7}}, headers=session.headers
    )
    assert resp.status == 400
    resp = await client.patch(path, json={"audience": {"all": True}}, headers=session.headers)
    assert (await resp.json())["audience"] == {"all": True}
    assert query(settings, "SELECT count(*) AS n FROM message_audience")[0]["n"] == 0
    for empty in ({}, {"userId": "x", "id": "y"}):
        assert (await client.patch(path, json=empty, headers=session.headers)).status == 400
    updates = [
        r["metadata"] for r in activity_rows(settings, session.user["id"]) if r["kind"] == "message.updated"
    ]
    assert updates == [{"fields": ["title", "releaseRule", "audience"]}, {"fields": ["audience"]}]


async def test_same_audience_in_another_order_is_no_change(client, settings):
    session = await sign_in(client)
    a = await create(client, session, "beneficiaries")
    b = await create(client, session, "beneficiaries")
    message = await create(client, session, "messages", audience={"beneficiaryIds": [a["id"], b["id"]]})
    resp = await client.patch(
        f"/api/messages/{message['id']}",
        json={"audience": {"beneficiaryIds": [b["id"], a["id"]]}},
        headers=session.headers,
    )
    assert (await resp.json())["updatedAt"] == message["updatedAt"]
    assert "message.updated" not in [r["kind"] for r in activity_rows(settings, session.user["id"])]


async def test_deleting_a_beneficiary_removes_it_from_audiences(client, settings):
    session = await sign_in(client)
    a = await create(client, session, "beneficiaries")
    b = await create(client, session, "beneficiaries")
    both = await create(client, session, "messages", audience={"beneficiaryIds": [a["id"], b["id"]]})
    only_a = await create(client, session, "messages", audience={"beneficiaryIds": [a["id"]]})
    everyone = await create(client, session, "messages")
    assert (await client.delete(f"/api/beneficiaries/{a['id']}", headers=session.headers)).status == 204

    async def audience(message):
        return await (await client.get(f"/api/messages/{message['id']}", headers=session.headers)).json()

    assert (await audience(both))["audience"] == {"beneficiaryIds": [b["id"]]}
    left = await audience(only_a)
    assert left["audience"] == {"beneficiaryIds": []} and left["updatedAt"] > only_a["updatedAt"]
    assert (await audience(everyone))["audience"] == {"all": True}
    entry = activity_rows(settings, session.user["id"])[-1]
    assert entry["kind"] == "beneficiary.deleted"
    assert entry["metadata"] == {
        "messageIds": sorted([both["id"], only_a["id"]]),
        "messagesWithoutAudience": [only_a["id"]],
    }
    assert "1 message(s) now have no recipients" in entry["summary"]


async def test_list_and_delete(client, settings):
    session = await sign_in(client)
    one = await create(client, session, "messages")
    two = await create(client, session, "messages")
    listed = await (await client.get("/api/messages", headers=session.headers)).json()
    assert [m["id"] for m in listed] == [two["id"], one["id"]]
    assert (await client.delete(f"/api/messages/{one['id']}", headers=session.headers)).status == 204
    assert (await client.get(f"/api/messages/{one['id']}", headers=session.headers)).status == 404
    assert activity_rows(settings, session.user["id"])[-1]["kind"] == "message.deleted"
