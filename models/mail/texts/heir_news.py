"""An heir's emails around their own request: their link sent early (when the owner chose so),
the receipt of their request to check, and its outcome. Neutral words: an early link does not
mean that anything has happened; sympathy only when a guardian reported a death. Their words:
models/mail/templates/kinds/<kind>.html."""

from __future__ import annotations

from models.mail.texts.common import HEIR, Kind

KINDS: dict[str, Kind] = {
    "early_heir_link": Kind(
        "kinds/early_heir_link.html", audience=(HEIR,), links=("claim",), footers=("unknown",)
    ),
    "heir_request_received": Kind("kinds/heir_request_received.html", audience=(HEIR,)),
    "heir_request_outcome": Kind("kinds/heir_request_outcome.html", audience=(HEIR,), links=("claim",)),
}
