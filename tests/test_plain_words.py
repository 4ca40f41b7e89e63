"""Sentences for people carry no machine words: no route, no field name, no ISO timestamp, no
None/null, no template placeholder, and emails no machine time even in markup. Every email
template is rendered in every variant that changes its words (with and without names, each
report reason, each stage and outcome, on-chain or not, a deadline the owner chose or the
default, with and without a web client), and the plan's own sentences are read through the API
along a whole journey (readiness problems and warnings, `verificationNotice`, the timeline's
summaries). docs/pages.md, "Words for people"."""

from __future__ import annotations

import html
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from models.mail import emails
from tests.helpers import sign_in
from tests.lifecycle_helpers import activate_plan, approve, get_overview, guardian_session, report
from tests.support.words import URL, assert_plain, machine_words
from tests.test_email_words import RING, delivery


def test_the_scan_catches_each_kind_of_machine_word() -> None:
    for sample in (
        "Link one (POST /api/auth/link-wallet)",
        "Due 2026-11-27T12:00:43.949Z",
        "Hello None",
        "Dear {name},",
        "Hi {{ name }}",
        "set checkInIntervalSeconds",
        "the next_check_in_due_at",
    ):
        assert machine_words(sample), sample
    assert not machine_words("Check in at https://legacy.example/check-in/abcDEF_12 by Friday 27 November.")


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


def test_every_email_has_its_recipients_here() -> None:
    """Every kind says who it is to."""
    assert all(AUDIENCE.values())


@pytest.mark.parametrize("kind", sorted(emails.KINDS))
def test_every_email_in_every_variant_speaks_plain_words(kind: str) -> None:
    recipients = AUDIENCE[kind]
    for recipient in recipients:
        for where, changes, app_url in variants(kind):
            row = delivery(kind, recipient, **changes)
            if row["context"].get("beneficiaryId") == "the recipient's":
                row["context"]["beneficiaryId"] = row["beneficiary_id"]
            if recipient != "guardian":
                row.update(guardian_id=None, guardian_page_version=None, guardian_page_key_id=None)
            email = emails.render(d=row, ring=RING, base_url="https://legacy.example", app_url=app_url)
            where = f"{where} to {recipient}"
            for part, text in (("subject", email.subject), ("text", email.text)):
                assert_plain(text, f"{where} {part}")
            assert "<time" not in email.html and "datetime=" not in email.html, where
            assert_plain(re.sub(r"<[^>]+>", " ", email.html), f"{where} html")
            if not app_url:  # no web client: no place to sign in is named, and no link but ours
                assert all(u.startswith("https://legacy.example/") for u in URL.findall(email.text)), where


async def test_the_plans_own_sentences_along_a_journey_speak_plain_words(
    client, run_worker, settings
) -> None:
    """Readiness problems and warnings in Draft and Active, the verification notice while
    guardians verify and once approved, and every timeline summary of the journey."""
    owner_session = await sign_in(client)
    resp = await client.patch("/api/users/me", json={"name": "Olive Owner"}, headers=owner_session.headers)
    draft = await get_overview(client, owner_session)
    said = [*draft["readiness"]["problems"], *draft["readiness"]["warnings"]]
    setup = await activate_plan(client, owner_session, threshold=2, guardians=3)
    active = await get_overview(client, owner_session)
    said += active["readiness"]["warnings"]
    assert (await report(client, setup, setup.guardians[0])).status == 200
    pending = await get_overview(client, owner_session)
    assert pending["verificationNotice"]
    said.append(pending["verificationNotice"])
    for guardian_ in setup.guardians[:2]:
        assert (await approve(client, setup, guardian_)).status == 200
    approved = await get_overview(client, owner_session)
    assert approved["status"] == "Approved" and approved["verificationNotice"]
    said.append(approved["verificationNotice"])
    resp = await client.get("/api/activity?limit=200", headers=owner_session.headers)
    assert resp.status == 200
    summaries = [entry["summary"] for entry in await resp.json()]
    assert len(summaries) > 5
    said += summaries
    assert said
    for sentence in said:
        assert_plain(sentence, "GET /api/legacy or /api/activity")


PAGE_TEMPLATES = sorted(
    p
    for p in (Path(__file__).parent.parent / "api" / "templates").glob("*.html")
    if not p.name.startswith("dev_")
)


@pytest.mark.parametrize("template", PAGE_TEMPLATES, ids=lambda p: p.name)
def test_every_pages_own_words_are_plain(template: Path) -> None:
    """The words each page template writes itself (what it fills in is checked where it is
    rendered: the journey above, tests/test_dev_mailbox.py); the development mailbox's pages
    are for the engineer and name the outbox kind on purpose."""
    text = template.read_text()
    text = re.sub(r"\{#.*?#\}|\{%.*?%\}|\{\{.*?\}\}", " ", text, flags=re.S)
    text = re.sub(r"<(script|style)\b.*?</\1>", " ", text, flags=re.S)
    words = html.unescape(re.sub(r"<[^>]+>", " ", text))
    assert_plain(words, template.name)


@pytest.mark.parametrize("reason", [None, "death", "incapacity", "unreachable"])
async def test_the_notice_for_each_report_reason_is_plain(client, reason: str | None) -> None:
    owner_session = await sign_in(client)
    setup = await activate_plan(client, owner_session)
    body = {"reason": reason} if reason else {}
    session = await guardian_session(client, setup.guardians[0])
    resp = await client.post(
        f"/api/legacy/guardianships/{setup.plan_id}/report", json=body, headers=session.headers
    )
    assert resp.status == 200, await resp.text()
    notice = (await get_overview(client, owner_session))["verificationNotice"]
    assert notice and "Guardian 0" in notice
    assert_plain(notice, f"verificationNotice ({reason})")


# Guardian kinds whose "wallet" is an heir's (the heir confirms or changes theirs): a passkey
# guardian reads of it, never of a wallet of their own.
HEIRS_WALLET = {"plan_approved_guardian", "plan_ready_guardian", "wallet_change_requested"}
OWN_WALLET = re.compile(r"\b(?:your|that) (?:Stellar )?wallet\b|\bwallet app\b|Stellar wallet", re.I)
AFTER_RELEASE = {kind for kind in emails.KINDS if "released" in kind}
RELEASING = re.compile(r"only (?:when|if) enough guardians approve", re.I)


def _as_reader(kind: str, recipient: str, context: dict[str, Any], passkey: bool) -> str:
    row = delivery(kind, recipient, owner_name="Olive Owner", context={**BASE_CONTEXT, **context})
    row["guardian_passkey"] = passkey  # type: ignore[typeddict-unknown-key]
    if passkey:
        row["context"]["walletAddress"] = None
    if recipient != "guardian":
        row.update(guardian_id=None, guardian_page_version=None, guardian_page_key_id=None)
    email = emails.render(d=row, ring=RING, base_url="https://legacy.example", app_url="https://app.example")
    return f"{email.subject}\n{email.text}"


@pytest.mark.parametrize("kind", sorted(emails.KINDS))
def test_every_email_is_true_for_each_kind_of_reader(kind: str) -> None:
    """docs/pages.md, "Each sentence knows its reader": a passkey guardian reads of no wallet of
    their own (of none at all but an heir's); after the release nobody is told to ask the owner;
    a fee only where a network call costs one; no "only when enough guardians approve" under a
    deadline that releases."""
    for recipient in AUDIENCE[kind]:
        for context in CONTEXTS:
            for passkey in (False, True) if recipient == "guardian" else (False,):
                text = _as_reader(kind, recipient, context, passkey)
                where = f"{kind} to {recipient} {context} passkey={passkey}\n{text}"
                if passkey:
                    assert not OWN_WALLET.search(text), where
                    assert kind in HEIRS_WALLET or not re.search(r"wallet", text, re.I), where
                if kind in AFTER_RELEASE:
                    assert not re.search(r"\bask\s+(?:<[^>]+>)?Olive Owner", text), where
                # A network call: contract mode, or the heir's last step that confirms on chain.
                if not (context.get("contract") or context.get("onchain") or context.get("stage") == "ready"):
                    assert not re.search(r"\bfees?\b", text, re.I), where
                ctx = {**BASE_CONTEXT, **context}
                deadline = ctx.get("deadlineDays") if kind == "guardian_invitation" else ctx.get("deadlineAt")
                if ctx.get("onTimeout") == "release" and deadline:
                    sentences = re.split(r"(?<=[.!?])\s+", text)
                    promised = [s for s in sentences if RELEASING.search(s)]
                    # Only while an objection stands (its lapse date follows), never as the rule.
                    assert all("objection" in s for s in promised), where


def test_a_passkey_guardian_is_told_their_passkey_answers() -> None:
    text = _as_reader("verification_requested", "guardian", {}, passkey=True)
    assert "you answer there with your passkey" in text
    assert "wallet" not in text.lower()
    assert "wallet app answers there" in _as_reader("verification_requested", "guardian", {}, passkey=False)


def test_the_invitation_says_what_a_releasing_deadline_does() -> None:
    released = _as_reader(
        "guardian_invitation", "guardian", {"onTimeout": "release", "deadlineDays": 30}, False
    )
    assert "it is released to them all the same" in released
    assert not RELEASING.search(released)
    waits = _as_reader("guardian_invitation", "guardian", {"onTimeout": "wait", "deadlineDays": 30}, False)
    assert "only when enough guardians approve" in waits


def test_each_verification_email_gives_its_reason_and_deadline() -> None:
    missed = _as_reader("verification_requested", "guardian", {"reason": "inactivity"}, False)
    assert "has not checked in for longer than their plan allows" in missed
    assert "only reason" in missed
    started = _as_reader("verification_started", "owner", {"reason": "inactivity"}, False)
    assert "If not enough guardians approve by Friday 27 November 2026" in started
    waiting = _as_reader("verification_started", "owner", {"onTimeout": "wait"}, False)
    assert "your plan goes on waiting" in waiting
