"""Shares that add up: an asset several heirs are left shows each their part (allocation over
the audience's allocations) and the amount at that part, exact, rounded so that the parts add
up to the whole; in the capsule JSON, the owner's preview, the heir's page and the export."""

from __future__ import annotations

import io
import json
import zipfile
from decimal import Decimal, localcontext

import pytest

from core.text import i18n
from models.claim.shares import apportion, share_words, split
from tests.capsule_helpers import Family
from tests.plan_helpers import create


def D(value: str) -> Decimal:
    return Decimal(value)


def parts(amount: str, *allocations: str) -> list[tuple[str, str]]:
    return [
        (format(s["percentage"], "f"), format(s["amount"], "f"))
        for s in split(amount=D(amount), allocations=[D(a) for a in allocations])
    ]


@pytest.mark.parametrize(
    ("amount", "allocations", "expected"),
    [
        ("25000", ("60", "40"), [("60", "15000"), ("40", "10000")]),
        ("25000", ("10", "10", "10"), [("33.34", "8333.34"), ("33.33", "8333.33"), ("33.33", "8333.33")]),
        ("1", ("60", "40"), [("60", "0.60"), ("40", "0.40")]),  # never 1 and 0 of a house
        ("12.50", ("33.33", "33.33", "33.34"), [("33.33", "4.17"), ("33.33", "4.16"), ("33.34", "4.17")]),
        ("0.0000001", ("50", "50"), [("50", "0.0000001"), ("50", "0.0000000")]),  # the first named wins
        ("350000.00", ("50", "30"), [("62.5", "218750.00"), ("37.5", "131250.00")]),
        ("100", ("25.5",), [("100", "100")]),
    ],
)
def test_split_is_exact_rounds_to_the_owners_places_and_adds_up(amount, allocations, expected):
    assert parts(amount, *allocations) == expected
    shares = split(amount=D(amount), allocations=[D(a) for a in allocations])
    assert sum(s["amount"] for s in shares) == D(amount)
    assert sum(s["percentage"] for s in shares) == 100


def test_split_holds_38_digit_amounts_past_the_decimal_context():
    amount = "9" * 31 + ".1234567"
    shares = split(amount=D(amount), allocations=[D("10"), D("20"), D("70")])
    with localcontext() as wide:
        wide.prec = 60  # the test's own sum, past the default 28 digits
        assert sum(s["amount"] for s in shares) == D(amount)
    assert format(shares[2]["amount"], "f") == "6999999999999999999999999999999.3864197"


def test_apportion_gives_leftover_units_to_the_largest_remainders_then_the_first():
    assert apportion(units=10, weights=[1, 1, 1]) == [4, 3, 3]
    assert apportion(units=10, weights=[1, 2, 2]) == [2, 4, 4]
    assert apportion(units=7, weights=[3, 3, 4]) == [2, 2, 3]
    assert apportion(units=0, weights=[5, 5]) == [0, 0]
    with pytest.raises(ValueError):
        apportion(units=1, weights=[0])


def test_share_words_say_the_part_and_the_whole():
    alone = {"percentage": D("100"), "amount": D("25000")}
    assert share_words(amount=D("25000"), asset_code="XLM", share=alone) == "All of it is yours: 25000 XLM."
    part = {"percentage": D("60"), "amount": D("15000")}
    assert (
        share_words(amount=D("25000"), asset_code=None, share=part)
        == "Your share: 15000, which is 60\u00a0% of the whole 25000."
    )
    issued = {"percentage": D("33.34"), "amount": D("3.34")}
    assert share_words(amount=D("10.00"), asset_code="USDC:GABC", share=issued) == (
        "Your share: 3.34 USDC (issued by GABC), which is 33.34\u00a0% of the whole"
        " 10.00 USDC (issued by GABC)."
    )


def test_share_words_write_amounts_with_the_readers_decimal_sign():
    """A German reader takes the point in '750.30' for a thousands separator: every place kept,
    the decimal sign the reader's."""
    part = {"percentage": D("60"), "amount": D("750.30")}
    with i18n.speaking("de"):
        words = share_words(amount=D("1250.50"), asset_code="USDC:GABC", share=part)
    assert words == (
        "Ihr Anteil: 750,30 USDC (ausgegeben von GABC), das sind 60\u00a0% des Gesamtbetrags"
        " von 1250,50 USDC (ausgegeben von GABC)."
    )
    with i18n.speaking("ar"):
        assert "750.30 USDC (الجهة المُصدِرة: GABC)" in share_words(
            amount=D("1250.50"), asset_code="USDC:GABC", share=part
        )


async def test_each_heir_sees_their_share_in_the_capsule_preview_page_and_export(fam: Family):
    ada = await fam.add_heir("Ada", 50)
    ben = await fam.add_heir("Ben", 30)
    cal = await fam.add_heir("Cal", 20)
    savings = await create(
        fam.client, fam.owner, "assets", label="Savings account", amount="25000", assetCode=None
    )
    pair = await create(
        fam.client,
        fam.owner,
        "assets",
        label="Lumens",
        amount="100.0000001",
        assetCode="XLM",
        audience={"beneficiaryIds": [ada["id"], ben["id"]]},
    )
    watch = await create(
        fam.client,
        fam.owner,
        "assets",
        label="Watch",
        amount="1",
        assetCode=None,
        audience={"beneficiaryIds": [cal["id"]]},
    )

    preview = {h["name"]: await fam.preview(h) for h in (ada, ben, cal)}
    await fam.release()
    capsules = {h["name"]: await fam.capsule(h) for h in (ada, ben, cal)}
    for name in capsules:
        assert capsules[name]["assets"] == preview[name]["assets"], name

    def shares_of(asset_id: str) -> dict[str, dict[str, str]]:
        return {name: a["share"] for name, c in capsules.items() for a in c["assets"] if a["id"] == asset_id}

    assert shares_of(savings["id"]) == {
        "Ada": {"percentage": "50", "amount": "12500"},
        "Ben": {"percentage": "30", "amount": "7500"},
        "Cal": {"percentage": "20", "amount": "5000"},
    }
    # Among Ada and Ben only: 50:30 is 62.5 % and 37.5 %; the odd stroop goes to the larger remainder.
    assert shares_of(pair["id"]) == {
        "Ada": {"percentage": "62.5", "amount": "62.5000001"},
        "Ben": {"percentage": "37.5", "amount": "37.5000000"},
    }
    assert shares_of(watch["id"]) == {"Cal": {"percentage": "100", "amount": "1"}}
    for asset in (savings, pair, watch):
        amounts = [Decimal(s["amount"]) for s in shares_of(asset["id"]).values()]
        assert sum(amounts) == Decimal(asset["amount"])

    page = await (await fam.client.get(f"/claim/{ada['claimToken']}")).text()
    assert "Your share: 12500, which is 50\u00a0% of the whole 25000." in page
    assert "Your share: 62.5000001 XLM, which is 62.5\u00a0% of the whole 100.0000001 XLM." in page
    cal_page = await (await fam.client.get(f"/claim/{cal['claimToken']}")).text()
    assert "All of it is yours: 1." in cal_page
    assert "Your share: 5000, which is 20\u00a0% of the whole 25000." in cal_page

    resp = await fam.open(ben["claimToken"], "/export")
    archive = zipfile.ZipFile(io.BytesIO(await resp.read()))
    exported = json.loads(archive.read("capsule.json"))
    assert exported["assets"] == capsules["Ben"]["assets"]


async def test_the_openapi_document_describes_the_share(fam: Family):
    spec = await (await fam.client.get("/api/docs/openapi.json")).json()
    schemas = spec["components"]["schemas"]
    asset = next(s for name, s in schemas.items() if name.startswith("CapsuleAsset"))
    assert "share" in asset["required"]
    share = next(s for name, s in schemas.items() if name.startswith("Share"))
    assert set(share["properties"]) == {"percentage", "amount"}
    assert "add up" in share["properties"]["amount"]["description"]
