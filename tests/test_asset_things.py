"""Assets that are things: a piano is recorded without an amount (and so without an asset code)
and goes whole to everyone it is for. Its heir reads "It goes to you" (or "…together with Cal"),
never a share or a unit: in the capsule's JSON, on their page and in their zip's README. The
shares of amounts are unchanged; an amount given is still a decimal string."""

from __future__ import annotations

import zipfile

from tests.capsule_helpers import Family
from tests.helpers import assert_error, sign_in
from tests.plan_helpers import create, query
from tests.support.capsule import page, read_zip
from tests.support.words import visible_text

ISSUER = "GA5ZSEJYB37JRC5AVCIA5MOP4RHTM335X2KGX3IHOJAPP5RE34K4KZVN"


async def test_a_thing_has_no_amount_and_no_currency(client, settings):
    session = await sign_in(client)
    piano = await create(client, session, "assets", label="The piano", amount=None, assetCode=None)
    assert piano["amount"] is None and piano["assetCode"] is None
    got = await (await client.get(f"/api/assets/{piano['id']}", headers=session.headers)).json()
    assert got["amount"] is None
    [row] = query(settings, "SELECT amount_sealed FROM assets WHERE id = %s", (piano["id"],))
    assert row["amount_sealed"] is None

    # Only a thing: an amount of a currency needs the amount, on creation and on a change.
    for code in ("XLM", f"USDC:{ISSUER}"):
        lumens = {"label": "Lumens", "amount": None, "assetCode": code}
        resp = await client.post("/api/assets", json=lumens, headers=session.headers)
        body = await resp.json()
        assert resp.status == 400 and "amount" in body["details"], body
        assert_error(body, 400)
    path = f"/api/assets/{piano['id']}"
    resp = await client.patch(path, json={"assetCode": "XLM"}, headers=session.headers)
    assert resp.status == 400 and "amount" in (await resp.json())["details"]
    lumens = await create(client, session, "assets", label="Lumens", amount="10", assetCode="XLM")
    resp = await client.patch(f"/api/assets/{lumens['id']}", json={"amount": None}, headers=session.headers)
    assert resp.status == 400
    # A thing may become an amount and back again; an amount given is still a decimal string.
    resp = await client.patch(path, json={"amount": "1"}, headers=session.headers)
    assert (await resp.json())["amount"] == "1"
    resp = await client.patch(path, json={"amount": 1}, headers=session.headers)
    assert resp.status == 400
    resp = await client.patch(path, json={"amount": None}, headers=session.headers)
    assert resp.status == 200 and (await resp.json())["amount"] is None


async def test_a_thing_goes_whole_to_its_heirs_with_no_share_or_unit(fam: Family):
    ada = await fam.add_heir("Ada", 60)
    cal = await fam.add_heir("Cal", 40)
    await create(fam.client, fam.owner, "assets", label="The piano", amount=None, assetCode=None)
    await create(
        fam.client,
        fam.owner,
        "assets",
        label="The ring",
        amount=None,
        assetCode=None,
        audience={"beneficiaryIds": [ada["id"]]},
    )
    await create(fam.client, fam.owner, "assets", label="Savings", amount="25000", assetCode=None)
    await fam.release()

    capsule = await fam.capsule(ada)
    piano, ring, savings = capsule["assets"]
    assert piano["amount"] is None and piano["share"] is None and piano["sharedWith"] == ["Cal"]
    assert ring["amount"] is None and ring["share"] is None and ring["sharedWith"] == []
    assert savings["share"] == {"percentage": "60", "amount": "15000"} and savings["sharedWith"] is None
    assert (await fam.capsule(cal))["assets"][0]["sharedWith"] == ["Ada"]

    status, markup = await page(fam, f"/claim/{ada['claimToken']}")
    assert status == 200
    words = visible_text(markup)
    assert "The piano It goes to you, together with Cal." in words
    assert "The ring It goes to you." in words
    assert "Savings Your share: 15000, which is 60 % of the whole 25000." in words
    assert "<bdi>Cal</bdi>" in markup
    assert "All of it is yours: 1" not in words and "None" not in words

    archive, _ = await read_zip(await fam.open(ada["claimToken"], "/export"))
    readme = archive.read("README.txt").decode()
    assert "- The piano\r\n  It goes to you, together with Cal.\r\n" in readme
    assert "- The ring\r\n  It goes to you.\r\n" in readme
    assert "None" not in readme
    assert isinstance(archive, zipfile.ZipFile)


async def test_a_things_words_are_the_heirs_language(fam: Family):
    ada = await fam.add_heir("Ada", 50)
    await fam.add_heir("Cal", 50)
    await create(fam.client, fam.owner, "assets", label="Piano", amount=None, assetCode=None)
    await fam.release()
    _status, markup = await page(fam, f"/claim/{ada['claimToken']}?lang=es")
    assert "Es para usted, junto con <bdi>Cal</bdi>." in markup
