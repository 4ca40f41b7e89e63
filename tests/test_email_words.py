"""The words of the guardians' and heirs' emails when the owner has no name (cleared after
activation): the wallet stands in (models.account.users.known_as), and a sentence or subject
that opens with it starts with a capital, never "the holder of…" (models.mail.emails.render)."""

from __future__ import annotations

import re
from typing import Any

import pytest

from core.mailer import Email
from models.mail import emails
from models.mail.texts import guardian, heir, heir_news
from tests.support.emails import RING, WALLET, delivery

KINDS = (
    [(k, "guardian") for k in guardian.KINDS]
    + [(k, "beneficiary") for k in heir.KINDS]
    + [(k, "beneficiary") for k in heir_news.KINDS]
)
# A lower-case letter after the start of the text or of a sentence (not inside a link).
LOWER_START = re.compile(r"(?:^|[.!?]\s+|\n)(the holder|the plan's owner)")


def render(kind: str, recipient_type: str, **changes: Any) -> Email:
    row = delivery(kind, recipient_type, **changes)
    return emails.render(d=row, ring=RING, base_url="https://legacy.example", app_url="https://app.example")


@pytest.mark.parametrize(("kind", "recipient_type"), KINDS)
def test_the_wallet_stands_in_and_opens_a_sentence_with_a_capital(kind: str, recipient_type: str) -> None:
    email = render(kind, recipient_type)
    assert email.subject[:1].isupper(), email.subject
    for text in (email.subject, email.text):
        assert not LOWER_START.search(text), text
    named = f"{email.subject}\n{email.text}"
    if WALLET in named:  # every text that names the owner names them by the wallet, not "the owner"
        assert f"holder of the Stellar wallet {WALLET}" in named


def test_a_name_is_kept_exactly_as_written_and_the_stand_in_only_moves_at_a_sentence_start() -> None:
    email = render("plan_released_guardian", "guardian", owner_name="de la Cruz")
    assert email.subject.startswith("de la Cruz's plan")
    email = render("plan_released_guardian", "guardian")
    assert email.subject == f"The holder of the Stellar wallet {WALLET}'s plan has been released"
    invitation = render("guardian_invitation", "guardian")
    # In the middle of a sentence the words stay lower-case.
    assert f"What a guardian does: if the holder of the Stellar wallet {WALLET} stops" in invitation.text
