"""The words of the guardians' and heirs' emails when the owner has no name (cleared after
activation): the wallet stands in (models.account.users.known_as), and a sentence or subject
that opens with it starts with a capital, never "the holder of…" (models.mail.emails.render)."""

from __future__ import annotations

import re
import uuid
from typing import Any

import pytest

from core.files.crypto import KeyRing
from core.mailer import Email
from models.claim_tokens import new_claim_token, seal_claim_token
from models.delivery.deliveries import Delivery
from models.mail import emails
from models.mail.texts import guardian, heir, heir_news

WALLET = "GBRPYHIL2CI3FNQ4BXLFMNDLFJUNPU2HY3ZMFSHONUCEOASW7QC7OX2H"
RING = KeyRing.parse(KeyRing.generate_entry("k1"))


def delivery(kind: str, recipient_type: str, **changes: Any) -> Delivery:
    beneficiary_id = str(uuid.uuid4())
    row: dict[str, Any] = {
        "id": str(uuid.uuid4()),
        "kind": kind,
        "attempts": 0,
        "context": {"keyId": "k1", "days": 7, "outcome": "release", "reason": "death"},
        "recipient_type": recipient_type,
        "address": "someone@example.org",
        "recipient_name": "Sam",
        "locale": None,
        "time_zone": None,
        "owner_name": None,
        "owner_wallet": WALLET,
        "beneficiary_id": beneficiary_id,
        "claim_token_sealed": seal_claim_token(RING, beneficiary_id=beneficiary_id, token=new_claim_token()),
        "check_in_link": False,
        "check_in_key_id": None,
        "about_guardian_name": None,
        "subject_name": "Heir 0",
        "guardian_id": str(uuid.uuid4()) if recipient_type == "guardian" else None,
        "guardian_page_version": 1 if recipient_type == "guardian" else None,
        "guardian_page_key_id": "k1" if recipient_type == "guardian" else None,
        "request_note": None,
        "report_reason": "death",
        "suppressed": False,
        "answered": False,
        "account_gone": False,
    }
    row.update(changes)
    return row  # type: ignore[return-value]


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
