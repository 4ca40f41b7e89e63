"""The capsule's per-heir shares (`HeirShares`, worked out once per distinct audience) are
exactly `split`'s figures for that heir, for every heir, whatever the audience and amount."""

from __future__ import annotations

import random
from decimal import Decimal

import pytest

from models.claim.shares import HeirShares, split


def test_each_heirs_share_is_splits_figure_for_them():
    rng = random.Random(36)
    for _ in range(400):
        size = rng.randint(1, 7)
        ids = [f"b{i}" for i in range(size)]
        allocations = [Decimal(rng.randint(1, 3000)) / 100 for _ in ids]
        amount = Decimal(rng.randint(0, 10 ** rng.randint(1, 38))).scaleb(-rng.randint(0, 7))
        expected = split(amount=amount, allocations=allocations)
        for index, member in enumerate(ids):
            heir = HeirShares(beneficiary_id=member)
            for _ in range(2):  # the second asset of the same audience reads the remembered part
                got = heir.share(amount=amount, ids=ids, allocations=allocations)
                assert got == expected[index]
                assert str(got["amount"]) == str(expected[index]["amount"])
                assert str(got["percentage"]) == str(expected[index]["percentage"])


def test_an_heir_outside_the_audience_is_refused():
    with pytest.raises(ValueError):
        HeirShares(beneficiary_id="b9").share(amount=Decimal("1"), ids=["b0"], allocations=[Decimal("50")])
