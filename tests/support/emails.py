"""Every email rendered without the worker: a delivery row as the outbox hands it to the
renderer (`delivery`, sealed with `RING`), and every variant of its context and row that
changes the words (`variants`: each stage, outcome, reason and name present or absent).

The plain-words, languages and first-minute tests render the same variants, so a new context
key is added once here (to `CONTEXTS` or `ROWS`) and read by each of them.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

from core.files.crypto import KeyRing
from models.claim_tokens import new_claim_token, seal_claim_token
from models.delivery.deliveries import Delivery
from models.mail import emails

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


ISO = "2026-11-27T12:00:43.949000+00:00"
DATES = {
    key: ISO
    for key in (
        "dueAt",
        "verificationAt",
        "releaseAt",
        "askedAt",
        "deadlineAt",
        "startedAt",
        "uploadedAt",
        "at",
    )
}
CHANGES = [
    {"what": what, "at": ISO, "name": name}
    for what, name in (
        ("beneficiary_added", "Ada"),
        ("beneficiary_removed", None),
        ("beneficiary_email", "Ada"),
        ("beneficiary_wallet", "Ada"),
        ("guardian_added", "Gus"),
        ("guardian_removed", "Gus"),
        ("guardian_email", "Gus"),
        ("guardian_wallet", "Gus"),
        ("wallet_linked", "GABC"),
        ("wallet_removed", "GABC"),
        ("owner_email", None),
        ("something_new", "Ada"),
    )
]
BASE_CONTEXT: dict[str, Any] = {
    **DATES,
    "keyId": "k1",
    "days": 3,
    "graceDays": 30,
    "silenceDays": 44,
    "letters": 1,
    "walletAddress": "GBRPYHIL2CI3FNQ4BXLFMNDLFJUNPU2HY3ZMFSHONUCEOASW7QC7OX2H",
    "walletEnd": "OX2H",
    "itemType": "photo",
    "sizeBytes": 2_500_000,
    "accepted": 1,
    "needed": 2,
    "approved": 1,
    "changes": CHANGES,
    "onTimeout": "release",
    "note": "I saw them yesterday",
    "holdUntil": ISO,
    "changeId": "5f0c2c1e-6b1d-4c36-9d8e-2f0b8a1f6a10",
    "proposed": "ada.new@example.org",
    "mayAsk": True,
}
# One axis at a time: each value that changes the words.
CONTEXTS: list[dict[str, Any]] = [
    {},
    *({"stage": s} for s in ("resend", "ready", "final", "halfway", "14d", "3d", "1d", "grace")),
    *({"outcome": o} for o in ("release", "wait", "complained", "bounced")),
    *({"reason": r} for r in ("guardian_report", "beneficiary_request", "inactivity")),
    {"onchain": True},
    {"deadlineChosen": False},
    {"deadlineChosen": False, "outcome": "release"},
    {"deadlineChosen": False, "outcome": "wait"},
    {"objected": True, "outcome": "wait"},
    {"approvalWithdrawn": True},
    {"deadlineAt": None, "onTimeout": "wait"},
    {"onTimeout": "wait"},
    {"letters": 3},
    {"accepted": 3, "needed": 2},
    {"itemType": "voice", "sizeBytes": 10},
    *({"outcome": o} for o in ("well", "released", "waits")),
    *({"outcome": "waits", "why": w} for w in ("objected", "owner_chose_wait", "onchain", None)),
    {"mayAsk": False},
    {"beneficiaryId": "the recipient's"},
    {"proposed": None, "holdUntil": None},
    {"changeId": "5f0c3c4e-0000-4000-8000-000000000001", "stopKeyId": "k1", "holdUntil": None},
    {"byHeir": True},
    {"lapsesAt": "2026-12-12T10:00:00+00:00", "stillObjected": True},
    {"lapsesAt": "2026-12-12T10:00:00+00:00", "outcome": "waiting", "why": "objected"},
    {
        "lapsesAt": "2026-12-12T10:00:00+00:00",
        "deadlineAt": "2026-12-13T10:00:00+00:00",
        "onTimeout": "release",
    },
    {"lapsesAt": "2026-12-12T10:00:00+00:00", "contract": True, "onTimeout": "release"},
    *({"onTimeout": o, "deadlineDays": 30} for o in ("release", "wait")),
    {"onTimeout": "release", "deadlineDays": None},
]
ROWS: list[dict[str, Any]] = [
    {},
    {
        "owner_name": "Olive Owner",
        "subject_name": "Ada",
        "about_guardian_name": "Gus",
        "recipient_name": "Sam",
    },
    {"subject_name": None, "about_guardian_name": None, "recipient_name": None},
    *({"report_reason": r} for r in (None, "death", "incapacity", "unreachable")),
    {"request_note": "Please check on them"},
    {"check_in_link": True, "check_in_key_id": "k1"},
]
# Who receives each email (some go to more than one kind of recipient, in other words): as each
# kind declares it (models.mail.texts.common.Kind), so a new kind is scanned from the day it lands.
AUDIENCE: dict[str, tuple[str, ...]] = {kind: declared.audience for kind, declared in emails.KINDS.items()}


def variants(kind: str) -> Iterator[tuple[str, dict[str, Any], str]]:
    for context in CONTEXTS:
        for row in ROWS:
            for app_url in ("", "https://app.example"):
                yield (
                    f"{kind} {context} {row} app={app_url!r}",
                    {"context": {**BASE_CONTEXT, **context}, **row},
                    app_url,
                )
