"""What every email's words share: times as a person reads them, the owner as the emails name
them, the template's signature, and the on-chain release in words (the owner's and guardians'
emails both say it)."""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from core.clock import spelled
from models.account import users
from models.delivery.deliveries import Delivery


def when(*, value: Any) -> str:
    """A time as a person reads it, in UTC, written as the pages write it (core.clock.spelled)."""
    if not value:
        return "soon"
    moment = datetime.fromisoformat(str(value))
    return spelled(moment if moment.tzinfo else moment.replace(tzinfo=UTC))


Template = Callable[[Delivery, dict[str, str]], tuple[str, str]]


def owner_name(*, d: Delivery) -> str:
    return users.known_as(name=d["owner_name"], wallet=d["owner_wallet"])


# A sentence (or a subject) that opens with the owner's stand-in words (users.known_as: "the
# holder of the Stellar wallet G…") starts with a capital, as the guardian's page does
# (api/templates/guardian.html `Owner`). A name is left exactly as the owner wrote it.
_OPENING_STAND_IN = re.compile(r"(^|[.!?]\s+|\n)(" + "|".join(map(re.escape, users.STAND_INS)) + ")")


def sentence_case(*, text: str) -> str:
    """`text` with every sentence that opens with the owner's stand-in words capitalised."""
    return _OPENING_STAND_IN.sub(lambda m: m.group(1) + m.group(2)[0].upper() + m.group(2)[1:], text)


# On-chain, a plan is not released on a date: its beneficiaries are sent their links when the
# cancel window ends, and one of them finalises the release with their wallet. Those emails say
# that, and never promise a date (context "onchain", set by models.flows.release_path.approve_in).
ONCHAIN_NEXT = (
    "each beneficiary will be sent their link, and the release happens when one of them confirms it "
    "with their wallet"
)
