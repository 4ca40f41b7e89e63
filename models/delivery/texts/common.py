"""What every email's words share: times as a person reads them, the owner as the emails name
them, the template's signature, and the on-chain release in words (the owner's and guardians'
emails both say it)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from models.account import users
from models.delivery.deliveries import Delivery


def when(*, value: Any) -> str:
    """A time as a person reads it, in UTC."""
    if not value:
        return "soon"
    moment = datetime.fromisoformat(str(value))
    return moment.strftime("%A %d %B %Y at %H:%M UTC")


Template = Callable[[Delivery, dict[str, str]], tuple[str, str]]


def owner_name(*, d: Delivery) -> str:
    return users.known_as(name=d["owner_name"], wallet=d["owner_wallet"])


# On-chain, a plan is not released on a date: its beneficiaries are sent their links when the
# cancel window ends, and one of them finalises the release with their wallet. Those emails say
# that, and never promise a date (context "onchain", set by models.plan.release_path.approve_in).
ONCHAIN_NEXT = (
    "each beneficiary will be sent their link, and the release happens when one of them confirms it "
    "with their wallet"
)
