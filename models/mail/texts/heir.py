"""The heirs' emails, by kind: their link (at release, when an on-chain plan is ready, or again
on request), a letter that opened, a release stopped, and the confirmation of their address. They
reach people at a hard moment: sympathy only for a reported death, nothing of the contents. Their
words: models/mail/templates/kinds/<kind>.html."""

from __future__ import annotations

from models.mail.texts.common import HEIR, Kind

KINDS: dict[str, Kind] = {
    "claim_link": Kind("kinds/claim_link.html", audience=(HEIR,), links=("claim", "contact")),
    "release_stopped": Kind("kinds/release_stopped.html", audience=(HEIR,)),
    "letter_opened": Kind("kinds/letter_opened.html", audience=(HEIR,), links=("claim",)),
    "email_confirmation": Kind(
        "kinds/email_confirmation.html", audience=(HEIR,), links=("email_confirmation",), footers=("unknown",)
    ),
}
