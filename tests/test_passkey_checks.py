"""The passkey checks (models/proofs/passkey.py, py_webauthn) on a recorded ceremony: one
registration and one assertion made by Chromium's virtual authenticator on
http://localhost:8123 (tests/fixtures/passkey_ceremony.json; `python -m tests.passkey_helpers`
records it again). Each check passes the recorded answer and refuses it once one thing differs."""

from __future__ import annotations

import dataclasses
import json
import logging
from datetime import UTC, datetime
from typing import Any

import pytest

from core.errors import BadRequest, ServiceUnavailable, Unauthorized
from models.proofs import passkey
from tests.passkey_helpers import FIXTURE, _settings

RECORDED = json.loads(FIXTURE.read_text())
SETTINGS = dataclasses.replace(_settings(), public_base_url=RECORDED["origin"])


def request(kind: str, **changes: Any) -> passkey.PasskeyRequest:
    recorded = RECORDED[kind]["request"]
    return {**recorded, "expires_at": datetime.now(UTC), **changes}  # type: ignore[typeddict-item]


def registered() -> passkey.Passkey:
    return passkey.check_registration(
        settings=SETTINGS, request=request("registration"), answer=RECORDED["registration"]["answer"]
    )


def test_a_recorded_registration_gives_the_passkey_to_keep_and_nothing_else() -> None:
    new = registered()
    assert set(new) == {"credential_id", "guardian_id", "public_key", "sign_count", "transports"}
    assert new["guardian_id"] == RECORDED["registration"]["request"]["subject_id"]
    assert new["transports"] == ["internal"] and new["public_key"] and new["credential_id"]
    assert new["credential_id"] == passkey.credential_id(answer=RECORDED["registration"]["answer"])


@pytest.mark.parametrize(
    ("base", "changes"),
    [
        (dataclasses.replace(SETTINGS, public_base_url="http://localhost:8124"), {}),  # another origin
        (dataclasses.replace(SETTINGS, public_base_url="http://example.localhost:8123"), {}),  # RP ID
        (SETTINGS, {"purpose": "guardian.decline"}),  # a challenge for another answer
        (SETTINGS, {"plan_id": "00000000-0000-4000-8000-000000000009"}),  # another plan
        (SETTINGS, {"round": 1}),  # another verification round
    ],
)
def test_a_registration_for_anything_else_is_refused(base: Any, changes: dict[str, Any]) -> None:
    with pytest.raises(Unauthorized) as refused:
        passkey.check_registration(
            settings=base,
            request=request("registration", **changes),
            answer=RECORDED["registration"]["answer"],
        )
    assert refused.value.message == passkey.REFUSED


def test_a_recorded_assertion_passes_with_its_counter_and_nothing_else_does() -> None:
    key = registered()
    answer = RECORDED["assertion"]["answer"]
    count = passkey.check_assertion(
        settings=SETTINGS, request=request("assertion"), answer=answer, passkey=key
    )
    assert count > key["sign_count"]
    for changes in ({"purpose": "guardian.report"}, {"round": 2}, {"extra": "death"}, {"nonce": "1" * 32}):
        with pytest.raises(Unauthorized):
            passkey.check_assertion(
                settings=SETTINGS, request=request("assertion", **changes), answer=answer, passkey=key
            )
    # Signed by another passkey's key: the registration's public key is the only one that verifies.
    other = {
        **key,
        "public_key": passkey.check_registration(
            settings=SETTINGS, request=request("registration"), answer=RECORDED["registration"]["answer"]
        )["public_key"][:-1]
        + b"\x00",
    }
    with pytest.raises((Unauthorized, BadRequest)):
        passkey.check_assertion(settings=SETTINGS, request=request("assertion"), answer=answer, passkey=other)


def test_a_counter_that_did_not_go_up_is_refused_and_logged_and_zero_after_zero_passes(
    caplog: pytest.LogCaptureFixture,
) -> None:
    key = registered()
    answer = RECORDED["assertion"]["answer"]
    sent = passkey.check_assertion(
        settings=SETTINGS, request=request("assertion"), answer=answer, passkey=key
    )
    with caplog.at_level(logging.WARNING), pytest.raises(Unauthorized) as refused:
        passkey.check_assertion(
            settings=SETTINGS,
            request=request("assertion"),
            answer=answer,
            passkey={**key, "sign_count": sent},
        )
    assert refused.value.message == passkey.CLONED
    assert any("possible cloned authenticator" in r.getMessage() for r in caplog.records)
    assert not passkey.counter_went_back(stored=0, sent=0)  # synced passkeys always send 0
    assert passkey.counter_went_back(stored=5, sent=0)  # a counting passkey does not drop to 0
    assert passkey.counter_went_back(stored=5, sent=5) and passkey.counter_went_back(stored=5, sent=4)
    assert not passkey.counter_went_back(stored=5, sent=6)


@pytest.mark.parametrize(
    "answer", ["", "   ", "not json", "[]", '{"id": "x"}', '{"rawId": "!!", "response": {}}']
)
def test_something_that_is_not_a_passkey_answer_is_a_400(answer: str) -> None:
    with pytest.raises(BadRequest):
        passkey.check_assertion(
            settings=SETTINGS, request=request("assertion"), answer=answer, passkey=registered()
        )
    with pytest.raises(BadRequest):
        passkey.check_registration(settings=SETTINGS, request=request("registration"), answer=answer)


def test_an_ip_address_cannot_be_the_relying_party() -> None:
    for base in ("http://127.0.0.1:8080", "https://[::1]:8443"):
        with pytest.raises(ServiceUnavailable):
            passkey.relying_party(settings=dataclasses.replace(SETTINGS, public_base_url=base))
    assert passkey.relying_party(settings=SETTINGS) == ("localhost", "http://localhost:8123")


@pytest.mark.parametrize(
    ("base", "origin"),
    [
        ("https://Legacy.Example.org:443/", "https://legacy.example.org"),
        ("HTTP://example.org:80", "http://example.org"),
        ("https://user:secret@example.org:8443/app", "https://example.org:8443"),
        ("http://localhost:8123", "http://localhost:8123"),
    ],
)
def test_the_origin_is_the_browsers_spelling_of_public_base_url(base: str, origin: str) -> None:
    settings = dataclasses.replace(SETTINGS, public_base_url=base)
    assert passkey.relying_party(settings=settings)[1] == origin


def test_a_recorded_ceremony_passes_with_public_base_url_spelt_otherwise() -> None:
    for base in ("http://LOCALHOST:8123/", "http://someone@localhost:8123"):
        settings = dataclasses.replace(SETTINGS, public_base_url=base)
        key = passkey.check_registration(
            settings=settings, request=request("registration"), answer=RECORDED["registration"]["answer"]
        )
        assert passkey.check_assertion(
            settings=settings,
            request=request("assertion"),
            answer=RECORDED["assertion"]["answer"],
            passkey=key,
        )
