"""An heir's share of an asset several heirs are left: pure arithmetic, exact, and adding up.

Each heir of the asset's audience (every beneficiary, or the owner's list) weighs their plan
allocation; an heir's share is their allocation over the audience's total. The percentage is
given to two decimals and the amount to the owner's own decimal places (two when the owner
wrote fewer and the split does not come out exact at theirs: "1" house among three heirs is
0.34, 0.33, 0.33, never 1, 0, 0). Rounding never loses or invents a unit: every share is first
rounded down, and the units left over go one each to the largest remainders, the heir the
owner named first winning a tie (the largest-remainder method). So the shares of one asset add
up to exactly its amount, and the percentages to exactly 100, whichever heir reads theirs.
Integers throughout (amounts in units of their last decimal place): nothing is a float.
Decisions: docs/capsule.md, "Shares".
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from decimal import Decimal
from typing import Any, NamedTuple, TypedDict

from babel import lists, numbers

from core.files.crypto import KeyRing
from core.text import i18n
from core.text.i18n import N_, _
from models import sealed_text

PERCENT_PLACES = 2
AMOUNT_MIN_PLACES = 2  # when the split is not exact at the owner's own places


class Share(TypedDict):
    percentage: Decimal  # two decimals at most, trailing zeros dropped ("60", "33.34")
    amount: Decimal  # at the places chosen for the asset (the owner's, or two)


def places(*, amount: Decimal) -> int:
    """The decimal places the owner wrote ("12.50": 2, "25000": 0)."""
    exponent = amount.as_tuple().exponent
    return -exponent if isinstance(exponent, int) and exponent < 0 else 0


def apportion(*, units: int, weights: Sequence[int]) -> list[int]:
    """`units` split in proportion to `weights` (positive integers), in whole units that add up
    to `units`: each quota rounded down, the rest one each to the largest remainders, ties to
    the earlier weight."""
    total = sum(weights)
    if total <= 0 or units < 0:
        raise ValueError("weights must be positive and units not negative")
    floors = [units * w // total for w in weights]
    left = units - sum(floors)
    by_remainder = sorted(range(len(weights)), key=lambda i: (-(units * weights[i] % total), i))
    for i in by_remainder[:left]:
        floors[i] += 1
    return floors


def _units(value: Decimal, scale: int) -> int:
    """`value` in units of its `scale`-th decimal place, exactly (an amount may have 38 digits,
    past the decimal context's 28: no context arithmetic, so nothing rounds)."""
    sign, digits, exponent = value.as_tuple()
    if not isinstance(exponent, int) or exponent + scale < 0:
        raise ValueError("the value has more decimal places than the scale")
    units = int("".join(map(str, digits)) or "0") * 10 ** (exponent + scale)
    return -units if sign else units


def _decimal(units: int, scale: int) -> Decimal:
    """`units` of the `scale`-th decimal place, as an exact Decimal ("15000.00" keeps its zeros)."""
    return Decimal(f"{units}E-{scale}")


def _weights(allocations: Sequence[Decimal]) -> list[int]:
    """Allocations (numeric(5, 2), > 0) as whole hundredths."""
    return [_units(a, PERCENT_PLACES) for a in allocations]


def split(*, amount: Decimal, allocations: Sequence[Decimal]) -> list[Share]:
    """Every audience member's share of `amount`, in the order given (the owner's order)."""
    weights = _weights(allocations)
    total = sum(weights)
    scale = places(amount=amount)
    if any(_units(amount, scale) * w % total for w in weights):
        scale = max(scale, AMOUNT_MIN_PLACES)
    amounts = apportion(units=_units(amount, scale), weights=weights)
    percents = apportion(units=100 * 10**PERCENT_PLACES, weights=weights)
    return [
        Share(
            percentage=_trimmed(_decimal(p, PERCENT_PLACES)),
            amount=_decimal(a, scale),
        )
        for p, a in zip(percents, amounts, strict=True)
    ]


def _trimmed(value: Decimal) -> Decimal:
    """60.00 → 60, 33.30 → 33.3: a percentage reads without trailing zeros (never as 6E+1)."""
    text = format(value, "f")
    return Decimal(text.rstrip("0").rstrip(".") if "." in text else text)


def _part(*, units: int, weights: Sequence[int], total: int, index: int) -> int:
    """`apportion(units=units, weights=weights)[index]` without the others' parts: the floor of
    this weight's quota, plus one if its remainder ranks among the `left` largest."""
    left = units - sum(units * w // total for w in weights)
    floor, remainder = divmod(units * weights[index], total)
    if left == 0:
        return floor
    ahead = 0
    for j, w in enumerate(weights):
        other = units * w % total
        if other > remainder or (other == remainder and j < index):
            ahead += 1
    return floor + 1 if ahead < left else floor


class _Audience(NamedTuple):
    weights: tuple[int, ...]
    total: int
    place: int  # the heir's index in the owner's order
    percentage: Decimal


class HeirShares:
    """One heir's share of each asset of their capsule: `split`'s figures for that heir alone.

    What depends only on an asset's audience (its weights, the heir's place in it, the heir's
    percentage) is worked out once per distinct audience, not once per asset: a capsule's assets
    mostly have one audience (everyone), and the whole split per asset was most of what the
    shares cost the capsule route.
    """

    def __init__(self, *, beneficiary_id: str, heirs: Iterable[tuple[str, Decimal]] = ()) -> None:
        self._beneficiary_id = beneficiary_id
        self._heirs = tuple(heirs)  # the owner's heirs (id, allocation) in the owner's order
        self._audiences: dict[tuple[tuple[str, ...], tuple[Decimal, ...]], _Audience] = {}
        self._lists: dict[frozenset[str] | None, _Audience] = {}

    def _audience(self, ids: Sequence[str], allocations: Sequence[Decimal]) -> _Audience:
        key = (tuple(ids), tuple(allocations))
        audience = self._audiences.get(key)
        if audience is None:
            weights = tuple(_weights(allocations))
            total = sum(weights)
            if total <= 0 or len(weights) != len(key[0]):
                raise ValueError("one positive allocation per member of the audience")
            index = key[0].index(self._beneficiary_id)
            percent = _part(units=100 * 10**PERCENT_PLACES, weights=weights, total=total, index=index)
            percentage = _trimmed(_decimal(percent, PERCENT_PLACES))
            audience = self._audiences[key] = _Audience(weights, total, index, percentage)
        return audience

    def share(self, *, amount: Decimal, ids: Sequence[str], allocations: Sequence[Decimal]) -> Share:
        """The heir's share of `amount` among `ids` (the owner's order) weighing `allocations`;
        the heir must be one of them."""
        return self._share(amount, self._audience(ids, allocations))

    def share_among(self, *, amount: Decimal, audience: Collection[str] | None) -> Share:
        """The heir's share of `amount` among the owner's `heirs` the asset is for: `audience` is
        its list of ids, None for everyone. The capsule reads the owner's heirs once and each
        asset's list only when it has one, instead of every asset's whole audience with its
        allocations, which cost the capsule route most of what the shares added."""
        key = None if audience is None else frozenset(audience)
        found = self._lists.get(key)
        if found is None:
            members = self._heirs if key is None else [heir for heir in self._heirs if heir[0] in key]
            found = self._audience([i for i, _ in members], [a for _, a in members])
            self._lists[key] = found
        return self._share(amount, found)

    @staticmethod
    def _share(amount: Decimal, audience: _Audience) -> Share:
        weights, total = audience.weights, audience.total
        if len(weights) == 1 and not amount.is_signed():
            exponent = amount.as_tuple().exponent
            if isinstance(exponent, int) and exponent <= 0:
                return Share(percentage=audience.percentage, amount=amount)  # all of it, as written
        scale = places(amount=amount)
        units = _units(amount, scale)
        if any(units * w % total for w in weights):
            scale = max(scale, AMOUNT_MIN_PLACES)
            units = _units(amount, scale)
        if units < 0:
            raise ValueError("weights must be positive and units not negative")
        mine = _part(units=units, weights=weights, total=total, index=audience.place)
        return Share(percentage=audience.percentage, amount=_decimal(mine, scale))


class Together:
    """The other heirs a thing goes to with this one, by name (as the owner wrote it), in the
    owner's order. The names are opened only when a capsule holds a thing, once each."""

    def __init__(self, ring: KeyRing, *, beneficiary_id: str, first: dict[str, Any] | None) -> None:
        self._ring, self._me = ring, beneficiary_id
        self._heirs = list(zip(first["heir_ids"], first["heir_names"], strict=True)) if first else []
        self._names: dict[str, str] = {}

    def _name(self, heir_id: str, sealed: str) -> str:
        if heir_id not in self._names:
            opened = sealed_text.open_text(
                self._ring, table="beneficiaries", column="name", row_id=heir_id, sealed=sealed
            )
            self._names[heir_id] = opened or ""
        return self._names[heir_id]

    def others(self, *, audience: Collection[str] | None) -> list[str]:
        members = None if audience is None else set(audience)
        return [
            self._name(heir_id, sealed)
            for heir_id, sealed in self._heirs
            if heir_id != self._me and (members is None or heir_id in members)
        ]


def currency_words(*, code: str) -> str:
    """'XLM', or 'USDC (issued by G…)': the code first, the issuer for whoever needs it."""
    name, _sep, issuer = code.partition(":")
    return _("{code} (issued by {issuer})").format(code=name, issuer=issuer) if issuer else name


def amount_figure(*, amount: Decimal) -> str:
    """The amount as written (every decimal place the owner gave, no grouping), with the reader's
    decimal sign: '0.60' in English reads as sixty in German, where it is '0,60'."""
    exponent = amount.as_tuple().exponent
    places = -exponent if isinstance(exponent, int) and exponent < 0 else 0
    return numbers.format_decimal(
        amount, format="0." + "0" * places if places else "0", locale=_figure_locale()
    )


def amount_words(*, amount: Decimal, asset_code: str | None) -> str:
    """'25000 XLM'; with no currency (a house, a collection), the number alone, as written."""
    number = amount_figure(amount=amount)
    return f"{number} {currency_words(code=asset_code)}" if asset_code else number


def share_words(*, amount: Decimal, asset_code: str | None, share: Share) -> str:
    """The heir's share in a sentence: 'All of it is yours: 25000 XLM.' or 'Your share: 15000 XLM,
    which is 60 % of the whole 25000 XLM.' (a no-break space before %)."""
    whole = amount_words(amount=amount, asset_code=asset_code)
    if share["percentage"] == 100:
        return _("All of it is yours: {whole}.").format(whole=whole)
    part = amount_words(amount=share["amount"], asset_code=asset_code)
    return _("Your share: {part}, which is {percentage}\u00a0% of the whole {whole}.").format(
        part=part, percentage=exact_figure(value=share["percentage"]), whole=whole
    )


THING_ALONE = N_("It goes to you.")
THING_TOGETHER = N_("It goes to you, together with {names}.")


def asset_words(
    *, amount: Decimal | None, asset_code: str | None, share: Share | None, shared_with: Sequence[str] | None
) -> str:
    """An asset's line for its heir: their share of an amount, or a thing's whole."""
    if amount is None or share is None:
        return thing_words(shared_with=shared_with or ())
    return share_words(amount=amount, asset_code=asset_code, share=share)


def thing_words(*, shared_with: Sequence[str]) -> str:
    """A thing's line for its heir: no share and no unit, it goes whole to everyone it is for
    ("It goes to you." / "It goes to you, together with Cal and Dee.")."""
    if not shared_with:
        return _(THING_ALONE)
    return _(THING_TOGETHER).format(names=names_list(names=list(shared_with)))


def names_list(*, names: list[str]) -> str:
    """Names joined as the reader's language joins a list ("Cal, Dee and Eve")."""
    return lists.format_list(names, locale=_figure_locale())


def exact_figure(*, value: Decimal) -> str:
    """A percentage as the reader's language writes it, every decimal kept (a share is exact)."""
    return numbers.format_decimal(value, locale=_figure_locale(), decimal_quantization=False)


def _figure_locale() -> str:
    language = i18n.language()
    return i18n.babel_id(language) if language in i18n.SHIPPED else i18n.SOURCE
