"""Each person's language and time zone (docs/translations.md): the owner sets theirs on
/api/users/me; the owner sets each beneficiary's and guardian's; a new one copies the owner's
language (never the zone); anything but a supported tag or an IANA zone is a 400 that changes
nothing; an email's outbox row carries its recipient's."""

from __future__ import annotations

import io
import json
import zipfile
from typing import Any

import pytest

from api.keys import DB, SETTINGS
from models.delivery import deliveries
from tests.helpers import assert_error, sign_in
from tests.lifecycle_helpers import activate_plan, report
from tests.plan_helpers import body_for, create, query

# What the API refuses for `locale`: an unknown tag, the wrong case, a region not shipped, a
# base language where only a region is shipped, Babel's spelling, a number, a list, empty, long.
BAD_LOCALES: list[Any] = ["xx", "EN", "es-ES", "pt", "pt_BR", "pt-br", 7, ["en"], {"en": 1}, "", "e" * 10_000]
BAD_ZONES: list[Any] = [
    "Mars/Olympus",
    "../etc",
    "Europe/Madrid\x00",
    "",
    "europe/madrid",
    3,
    ["UTC"],
    "x" * 5_000,
    "localtime",  # the server's own zone, whatever host it runs on
    "Factory",  # tzdata's placeholder, no place
]


async def me(client, session) -> dict[str, Any]:
    resp = await client.get("/api/users/me", headers=session.headers)
    assert resp.status == 200, await resp.text()
    body: dict[str, Any] = await resp.json()
    return body


async def test_the_owner_sets_reads_and_clears_their_language_and_zone(client):
    owner = await sign_in(client)
    assert {k: owner.user[k] for k in ("locale", "timeZone")} == {"locale": None, "timeZone": None}
    resp = await client.patch(
        "/api/users/me", json={"locale": "pt-BR", "timeZone": "America/Sao_Paulo"}, headers=owner.headers
    )
    assert resp.status == 200, await resp.text()
    assert (await resp.json())["locale"] == "pt-BR"
    body = await me(client, owner)
    assert (body["locale"], body["timeZone"]) == ("pt-BR", "America/Sao_Paulo")
    resp = await client.patch("/api/users/me", json={"name": "Olive"}, headers=owner.headers)
    assert (await resp.json())["locale"] == "pt-BR"  # a patch without it leaves it
    resp = await client.patch("/api/users/me", json={"locale": None, "timeZone": None}, headers=owner.headers)
    assert resp.status == 200
    body = await me(client, owner)
    assert (body["locale"], body["timeZone"]) == (None, None)


@pytest.mark.parametrize(
    ("field", "value"), [("locale", v) for v in BAD_LOCALES] + [("timeZone", v) for v in BAD_ZONES]
)
async def test_the_owner_cannot_set_what_is_not_a_language_or_zone(client, field, value):
    owner = await sign_in(client)
    resp = await client.patch(
        "/api/users/me", json={"locale": "fr", "timeZone": "Europe/Paris"}, headers=owner.headers
    )
    assert resp.status == 200
    resp = await client.patch("/api/users/me", json={field: value}, headers=owner.headers)
    assert resp.status == 400, await resp.text()
    body = await resp.json()
    assert_error(body, 400)
    if field == "locale":
        assert "en, es, fr, de, pt-BR, ar" in str(body)
    after = await me(client, owner)
    assert (after["locale"], after["timeZone"]) == ("fr", "Europe/Paris")


async def test_each_email_row_carries_its_recipients_language_and_zone(client, settings):
    """Read at send time, joined like the recipient's name: the owner's for the owner's email,
    the heir's for an heir's, the guardian's for a guardian's; nobody's set reads None."""
    owner = await sign_in(client)
    setup = await activate_plan(
        client, owner, guardians=2, settings={"notifyBeneficiariesOnActivation": True}
    )
    resp = await client.patch(
        "/api/users/me", json={"locale": "de", "timeZone": "Europe/Berlin"}, headers=owner.headers
    )
    assert resp.status == 200
    heir, guardian = setup.beneficiaries[0], setup.guardians[0].row
    query(
        settings,
        "UPDATE beneficiaries SET locale = 'ar', time_zone = 'Asia/Dubai' WHERE id = %s",
        (heir["id"],),
    )
    query(
        settings,
        "UPDATE guardians SET locale = 'es', time_zone = 'Europe/Madrid' WHERE id = %s",
        (guardian["id"],),
    )
    assert (await report(client, setup, setup.guardians[0])).status == 200
    pool, ring = client.app[DB], client.app[SETTINGS].key_ring
    expected = {
        ("owner", owner.user["id"]): ("de", "Europe/Berlin"),
        ("beneficiary", heir["id"]): ("ar", "Asia/Dubai"),
        ("guardian", guardian["id"]): ("es", "Europe/Madrid"),
    }
    seen = set()
    for row in query(
        settings,
        "SELECT id::text AS id, recipient_type, recipient_id::text AS recipient_id FROM outbox"
        " WHERE status = 'pending'",
    ):
        delivery = await deliveries.load(pool, ring, row_id=row["id"])
        assert delivery is not None
        key = (row["recipient_type"], row["recipient_id"])
        assert (delivery["locale"], delivery["time_zone"]) == expected.get(key, (None, None)), delivery[
            "kind"
        ]
        seen.add(key if key in expected else row["recipient_type"])
    assert set(expected) <= seen and {"beneficiary", "guardian"} <= seen  # the others: None


async def test_an_heir_and_a_guardian_carry_a_language_and_zone_set_by_the_owner(client):
    owner = await sign_in(client)
    for collection in ("beneficiaries", "guardians"):
        person = await create(client, owner, collection, locale="ar", timeZone="Asia/Dubai")
        assert (person["locale"], person["timeZone"]) == ("ar", "Asia/Dubai")
        path = f"/api/{collection}/{person['id']}"
        one = await (await client.get(path, headers=owner.headers)).json()
        (listed,) = await (await client.get(f"/api/{collection}", headers=owner.headers)).json()
        assert (
            (one["locale"], one["timeZone"]) == (listed["locale"], listed["timeZone"]) == ("ar", "Asia/Dubai")
        )
        resp = await client.patch(
            path, json={"locale": "fr", "timeZone": "Europe/Paris"}, headers=owner.headers
        )
        assert resp.status == 200, await resp.text()
        one = await (await client.get(path, headers=owner.headers)).json()
        assert (one["locale"], one["timeZone"]) == ("fr", "Europe/Paris")
        resp = await client.patch(path, json={"timeZone": None}, headers=owner.headers)
        assert (await resp.json())["locale"] == "fr"  # one field cleared, the other kept
        resp = await client.patch(path, json={"locale": None}, headers=owner.headers)
        body = await resp.json()
        assert (body["locale"], body["timeZone"]) == (None, None)
        one = await (await client.get(path, headers=owner.headers)).json()
        assert (one["locale"], one["timeZone"]) == (None, None)


async def test_a_new_heir_or_guardian_takes_the_owners_language_never_the_zone(client):
    owner = await sign_in(client)
    for collection in ("beneficiaries", "guardians"):  # the owner has set none: none is copied
        person = await create(client, owner, collection, email=f"first@{collection}.example.org")
        assert (person["locale"], person["timeZone"]) == (None, None)
    resp = await client.patch(
        "/api/users/me", json={"locale": "es", "timeZone": "America/Mexico_City"}, headers=owner.headers
    )
    assert resp.status == 200
    for collection in ("beneficiaries", "guardians"):
        copied = await create(client, owner, collection, email=f"copied@{collection}.example.org")
        assert (copied["locale"], copied["timeZone"]) == ("es", None)
        sent = await create(client, owner, collection, locale="de", email=f"sent@{collection}.example.org")
        assert sent["locale"] == "de"
        cleared = await create(client, owner, collection, locale=None, email=f"null@{collection}.example.org")
        assert cleared["locale"] is None  # null sent: the owner chose no language for them
        body = await (await client.get(f"/api/{collection}", headers=owner.headers)).json()
        assert sorted(str(p["locale"]) for p in body) == ["None", "None", "de", "es"]


BAD = [("locale", v) for v in BAD_LOCALES] + [("timeZone", v) for v in BAD_ZONES]


@pytest.mark.parametrize("collection", ["beneficiaries", "guardians"])
@pytest.mark.parametrize(("field", "value"), BAD)
async def test_an_heir_or_guardian_cannot_be_given_what_is_not_a_language_or_zone(
    client, settings, collection, field, value
):
    owner = await sign_in(client)
    person = await create(client, owner, collection, locale="pt-BR", timeZone="America/Sao_Paulo")
    path = f"/api/{collection}/{person['id']}"
    for resp in (
        await client.patch(path, json={field: value}, headers=owner.headers),
        await client.post(
            f"/api/{collection}", json=body_for(collection, **{field: value}), headers=owner.headers
        ),
    ):
        assert resp.status == 400, await resp.text()
        body = await resp.json()
        assert_error(body, 400)
        if field == "locale":
            assert "en, es, fr, de, pt-BR, ar" in str(body)
    one = await (await client.get(path, headers=owner.headers)).json()
    assert (one["locale"], one["timeZone"]) == ("pt-BR", "America/Sao_Paulo")
    assert len(query(settings, f"SELECT id FROM {collection}")) == 1  # nothing created


async def test_the_owners_export_carries_each_persons_language_and_zone(fam):
    client, owner = fam.client, fam.owner
    resp = await client.patch(
        "/api/users/me", json={"locale": "ar", "timeZone": "Africa/Cairo"}, headers=owner.headers
    )
    assert resp.status == 200
    await create(client, owner, "beneficiaries", locale="fr", timeZone="Europe/Paris")
    await create(client, owner, "guardians")  # the owner's language, no zone
    resp = await client.get("/api/legacy/export", headers=owner.headers)
    data = await resp.read()
    assert resp.status == 200, data[:500]
    plan = json.loads(zipfile.ZipFile(io.BytesIO(data)).read("plan.json"))
    assert (plan["owner"]["locale"], plan["owner"]["timeZone"]) == ("ar", "Africa/Cairo")
    assert [(b["locale"], b["timeZone"]) for b in plan["beneficiaries"]] == [("fr", "Europe/Paris")]
    assert [(g["locale"], g["timeZone"]) for g in plan["guardians"]] == [("ar", None)]


async def test_an_address_confirmation_is_written_in_the_heirs_language(client, settings):
    """An email to an address not yet confirmed for an heir reads the heir's language and zone
    (the row's recipient is the heir, as for an address a guardian proposed for them)."""
    owner = await sign_in(client)
    await client.patch(
        "/api/users/me", json={"name": "Olive", "email": "o@example.org"}, headers=owner.headers
    )
    heir = await create(client, owner, "beneficiaries", locale="pt-BR", timeZone="America/Sao_Paulo")
    resp = await client.post(f"/api/beneficiaries/{heir['id']}/confirm-email", headers=owner.headers)
    assert resp.status == 202, await resp.text()
    (row,) = query(settings, "SELECT id::text AS id FROM outbox WHERE kind = 'email_confirmation'")
    delivery = await deliveries.load(client.app[DB], client.app[SETTINGS].key_ring, row_id=row["id"])
    assert delivery is not None
    assert (delivery["locale"], delivery["time_zone"]) == ("pt-BR", "America/Sao_Paulo")
