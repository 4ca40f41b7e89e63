"""Each person's language and time zone (docs/translations.md): the owner sets theirs on
/api/users/me; the owner sets each beneficiary's and guardian's; a new one copies the owner's
language (never the zone); anything but a supported tag or an IANA zone is a 400 that changes
nothing; an email's outbox row carries its recipient's."""

from __future__ import annotations

from typing import Any

import pytest

from api.keys import DB, SETTINGS
from models.delivery import deliveries
from tests.helpers import assert_error, sign_in
from tests.lifecycle_helpers import activate_plan, report
from tests.plan_helpers import query

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
