"""Each guardian answer declared once (models/flows/answers/declared.py) and checked once
(models/flows/answers/asking.py): every declared answer, asked with the same bad input through
both proofs (a guardian wallet's signing request and a passkey's ceremony), is refused by the
same check in the same words, before anything is issued or read from the database."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime
from typing import Any

import pytest
from redis.asyncio import Redis

from core.errors import AppError
from core.settings import Settings
from models.flows.answers import declared, guardian
from models.flows.guardian_pages import GuardianPage
from models.plan.guardianships import address_suggestions

HEIR = "00000000-0000-4000-8000-00000000000a"
CHANGE = "00000000-0000-4000-8000-00000000000c"
NOW = datetime(2026, 11, 28, tzinfo=UTC)
GOOD_SUGGESTION = address_suggestions.packed(
    suggestion={"heir": "Ann", "email": "ann@example.org", "note": None}
)


def _page(*, wallet: str | None, asks: list[str]) -> GuardianPage:
    """A page offering `asks`, with one heir listed and one change running (no database: the
    checks read nothing else)."""
    page: dict[str, Any] = {
        "plan_id": "00000000-0000-4000-8000-000000000002",
        "status": "Released",
        "owner": "Olive",
        "locale": None,
        "time_zone": None,
        "guardian": {
            "id": "00000000-0000-4000-8000-000000000001",
            "name": "Grace",
            "wallet_address": wallet,
            "passkeys": 0 if wallet else 1,
            "invitation": "accepted",
        },
        "plan": {"owner_name": "Olive", "owner_wallet": "G" + "A" * 55, "threshold": 1},
        "heirs": {
            "links": [{"beneficiary_id": HEIR, "name": "Ann", "status": "sent", "at": None}],
            "changes": [
                {
                    "id": CHANGE,
                    "beneficiary_id": HEIR,
                    "status": "holding",
                    "approvals": 1,
                    "hold_until": None,
                    "agreed_by_me": True,
                }
            ],
        },
        "asks": asks,
    }
    return page  # type: ignore[return-value]


# Bad input, by what an answer carries or binds: each is refused whatever proves the answer.
BAD: dict[str, list[dict[str, Any]]] = {
    "reason": [{"reason": "bored"}],
    "heir": [{"beneficiary_id": "00000000-0000-4000-8000-0000000000ff"}, {"beneficiary_id": None}],
    "change": [{"change_id": "00000000-0000-4000-8000-0000000000ff"}, {"change_id": None}],
    "address": [{"beneficiary_id": HEIR, "note": "not an address"}, {"beneficiary_id": HEIR, "note": None}],
    "suggestion": [{"note": "{not json"}, {"note": '{"heir": 3}'}, {"note": "[" * 5_000 + "]" * 5_000}],
}


def _cases() -> list[tuple[str, dict[str, Any]]]:
    cases: list[tuple[str, dict[str, Any]]] = []
    for answer in declared.ANSWERS:
        cases.append((answer.name, {"asked": False}))  # not asked now
        for key in (answer.carries, answer.note):
            cases += [(answer.name, bad) for bad in BAD.get(key or "", [])]
    # Agreeing to a change already agreed to: the page shows it, but not as one to agree to.
    cases.append(("agree_address", {"change_id": CHANGE}))
    return cases


async def _refusal(
    redis: Redis, settings: Settings, *, wallet: str | None, name: str, bad: dict[str, Any]
) -> Any:
    asked = [] if bad.get("asked") is False else [name]
    fields = {k: v for k, v in bad.items() if k != "asked"}
    with pytest.raises(AppError) as refused:
        await guardian.ask(
            None,  # type: ignore[arg-type]  # refused before anything is read
            redis,  # type: ignore[arg-type]
            settings,
            gateway=None,
            page=_page(wallet=wallet, asks=asked),
            action=name,
            beneficiary_id=fields.get("beneficiary_id"),
            reason=fields.get("reason"),
            client_ip=f"198.51.100.{len(name)}",
            now=NOW,
            note=fields.get("note"),
            change_id=fields.get("change_id"),
        )
    return type(refused.value), refused.value.status, refused.value.message


@pytest.mark.parametrize(("name", "bad"), _cases(), ids=lambda v: v if isinstance(v, str) else "")
async def test_every_declared_answer_is_refused_alike_through_both_proofs(
    settings: Settings, name: str, bad: dict[str, Any]
) -> None:
    redis = Redis.from_url(settings.redis_url)
    try:
        by_wallet = await _refusal(redis, settings, wallet="G" + "B" * 55, name=name, bad=bad)
        by_passkey = await _refusal(redis, settings, wallet=None, name=name, bad=bad)
    finally:
        await redis.aclose()
    assert by_wallet == by_passkey
    assert by_wallet[1] in (400, 404, 409)


def test_every_answer_is_declared_once_with_what_its_pages_need() -> None:
    names = [a.name for a in declared.ANSWERS]
    assert sorted(names) == sorted(declared.ACTIONS) and len(set(names)) == 13
    for answer in declared.ANSWERS:
        assert answer.passkey_title and answer.passkey_button
        # Everything but adding a passkey is signed by a wallet too, with words of its own.
        assert (answer.message is None) == (answer.wallet_title is None) == (answer.name == "add_passkey")
        # What runs it: its own function, or the attestation (approve), or the next ceremony.
        assert (answer.act is None) == (answer.name in ("approve", "add_passkey"))
        assert declared.by_purpose(purpose=answer.purpose) is answer
    assert declared.by_purpose(purpose="heir.stop") is None


async def test_in_contract_mode_a_passkey_cannot_approve_and_says_so_as_every_proof_does(
    settings: Settings,
) -> None:
    redis = Redis.from_url(settings.redis_url)
    contract = dataclasses.replace(settings, service_contract_id="C" + "A" * 55)
    try:
        with pytest.raises(AppError) as refused:
            await guardian.ask(
                None,  # type: ignore[arg-type]
                redis,  # type: ignore[arg-type]
                contract,
                gateway=None,
                page=_page(wallet=None, asks=["approve"]),
                action="approve",
                beneficiary_id=None,
                reason=None,
                client_ip="198.51.100.200",
                now=NOW,
            )
    finally:
        await redis.aclose()
    from models.plan import approvals

    assert refused.value.status == 409 and refused.value.message == approvals.ON_CHAIN


def test_the_page_and_the_ask_read_one_rule_for_what_only_a_wallet_proves() -> None:
    approve, report = declared.BY_NAME["approve"], declared.BY_NAME["report"]
    contract = "C" + "A" * 55
    passkey_page, wallet_page = _page(wallet=None, asks=[]), _page(wallet="G" + "B" * 55, asks=[])
    assert declared.needs_a_wallet(answer=approve, page=passkey_page, contract_id=contract)
    assert not declared.needs_a_wallet(answer=approve, page=wallet_page, contract_id=contract)
    assert not declared.needs_a_wallet(answer=approve, page=passkey_page, contract_id=None)
    assert not declared.needs_a_wallet(answer=report, page=passkey_page, contract_id=contract)


GUARDIAN_TEMPLATES = (
    "guardian.html",
    "_address_changes.html",
    "_address_suggestion.html",
    "_heir_address.html",
)


def test_every_answer_the_page_offers_has_its_words_on_its_declaration() -> None:
    """The guardian page's button (and the answer's own sentence) live on the declaration, in
    the page's placeholders: a new answer brings its words with it, and the templates write no
    answer's button themselves."""
    import re
    from pathlib import Path

    from babel.messages.pofile import read_po

    root = Path(__file__).resolve().parent.parent
    with (root / "core" / "text" / "locale" / "es" / "LC_MESSAGES" / "messages.po").open("rb") as f:
        catalog = read_po(f)
    for answer in declared.ANSWERS:
        assert answer.button, answer.name
        for words in (answer.button, answer.paragraph):
            if words is None:
                continue
            assert set(re.findall(r"%\((\w+)\)s", words)) <= {"owner", "heir", "when"}, words
            assert "{" not in words, words  # %-formatted by the page, never str.format
            entry = catalog.get(words)
            assert entry is not None and entry.string and not entry.fuzzy, words
    for name in GUARDIAN_TEMPLATES:
        text = (root / "api" / "templates" / name).read_text()
        buttons = re.findall(r"<button[^>]*>(.*?)</button>", text)
        assert buttons, name
        for button in buttons:
            assert re.fullmatch(r"\{\{ _\((words\.\w+|answer)\.button(, \w+=[\w.|]+)*\) \}\}", button), (
                name,
                button,
            )
