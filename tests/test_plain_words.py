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
from pathlib import Path
from typing import Any

import pytest

from models.mail import emails
from tests.helpers import sign_in
from tests.lifecycle_helpers import activate_plan, approve, get_overview, guardian_session, report
from tests.support.emails import (
    AUDIENCE,
    BASE_CONTEXT,
    CONTEXTS,
    RING,
    delivery,
    variants,
)
from tests.support.words import URL, assert_plain, machine_words


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
