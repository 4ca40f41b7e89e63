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

import cbor2
import pytest
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa

from core.errors import BadRequest, ServiceUnavailable, Unauthorized
from models.proofs import passkey
from tests.passkey_helpers import FIXTURE, _settings
from tests.soft_passkey import SoftPasskey, b64
from tests.soft_passkey import unb64 as b64decode_url

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


# What a device posts, made by tests/soft_passkey.py against this module's own options.
def _made(device: SoftPasskey, kind: str) -> tuple[passkey.PasskeyRequest, str]:
    if kind == "registration":
        asked = request("registration")
        options = passkey.creation_options(
            settings=SETTINGS, request=asked, user_name="Grace", display_name="Grace", existing=[]
        )
        return asked, device.create(json.loads(options))
    asked = request("assertion")
    return asked, device.get(
        json.loads(passkey.request_options(settings=SETTINGS, request=asked, passkeys=[]))
    )


def _rsa(bits: int, exponent: int = 65537, alg: int = -257) -> bytes:
    numbers = rsa.generate_private_key(public_exponent=exponent, key_size=bits).public_key().public_numbers()
    return cbor2.dumps(
        {1: 3, 3: alg, -1: numbers.n.to_bytes((bits + 7) // 8, "big"), -2: numbers.e.to_bytes(3, "big")}
    )


def _ec(curve: ec.EllipticCurve, alg: int = -7, crv: int = 1, *, off_curve: bool = False) -> bytes:
    numbers = ec.generate_private_key(curve).public_key().public_numbers()
    size = (curve.key_size + 7) // 8
    y = numbers.y + 1 if off_curve else numbers.y
    return cbor2.dumps(
        {1: 2, 3: alg, -1: crv, -2: numbers.x.to_bytes(size, "big"), -3: y.to_bytes(size, "big")}
    )


def test_a_credential_nested_past_the_bound_is_a_400_in_words_and_never_a_recursion() -> None:
    deep = '{"rawId":"AA","x":' + "[" * 100_000 + "]" * 100_000 + "}"
    small_deep = '{"rawId":"AA","x":' + "[" * 2_000 + "]" * 2_000 + "}"  # short, still past the depth
    for answer in (deep, small_deep, '{"rawId":"AA","x":"' + "a" * 70_000 + '"}'):
        for check in (
            lambda a: passkey.check_registration(
                settings=SETTINGS, request=request("registration"), answer=a
            ),
            lambda a: passkey.check_assertion(
                settings=SETTINGS, request=request("assertion"), answer=a, passkey=registered()
            ),
            lambda a: passkey.credential_id(answer=a),
        ):
            with pytest.raises(BadRequest) as refused:
                check(answer)
            assert refused.value.message == passkey.NOT_SENT


def test_client_data_nested_past_the_bound_is_a_400_not_a_recursion_in_the_library() -> None:
    device = SoftPasskey(RECORDED["origin"], client_extra={"x": [[[[]]]]})
    asked, answer = _made(device, "registration")
    posted = json.loads(answer)
    deep = json.loads(b64decode_url(posted["response"]["clientDataJSON"]))
    text = json.dumps(deep)[:-1] + ', "y": ' + "[" * 5_000 + "]" * 5_000 + "}"
    posted["response"]["clientDataJSON"] = b64(text.encode())
    with pytest.raises(BadRequest):
        passkey.check_registration(settings=SETTINGS, request=asked, answer=json.dumps(posted))


@pytest.mark.parametrize("kind", ["registration", "assertion"])
@pytest.mark.parametrize("top", [None, "http://evil.example", RECORDED["origin"]])
def test_a_cross_origin_ceremony_is_refused_whatever_its_top_origin(kind: str, top: str | None) -> None:
    honest = SoftPasskey(RECORDED["origin"])
    key = passkey.check_registration(
        settings=SETTINGS, request=request("registration"), answer=_made(honest, "registration")[1]
    )
    framed = {"crossOrigin": True, **({} if top is None else {"topOrigin": top})}
    device = SoftPasskey(
        RECORDED["origin"], key=honest.key, credential_id=honest.credential_id, client_extra=framed
    )
    asked, answer = _made(device, kind)
    with pytest.raises(Unauthorized) as refused:
        if kind == "registration":
            passkey.check_registration(settings=SETTINGS, request=asked, answer=answer)
        else:
            passkey.check_assertion(settings=SETTINGS, request=asked, answer=answer, passkey=key)
    assert refused.value.message == passkey.REFUSED


def test_the_same_device_in_the_pages_own_frame_passes() -> None:
    device = SoftPasskey(RECORDED["origin"], client_extra={"crossOrigin": False})
    key = passkey.check_registration(
        settings=SETTINGS, request=request("registration"), answer=_made(device, "registration")[1]
    )
    asked, answer = _made(device, "assertion")
    assert passkey.check_assertion(settings=SETTINGS, request=asked, answer=answer, passkey=key) == 1


@pytest.mark.parametrize(
    ("why", "cose"),
    [
        ("the probe's RSA key, n = 1", cbor2.dumps({1: 3, 3: -257, -1: b"\x01", -2: b"\x03"})),
        ("RSA under 2048 bits", _rsa(1024)),
        ("RSA with exponent 3", _rsa(2048, exponent=3)),
        ("EC2 point off its curve", _ec(ec.SECP256R1(), off_curve=True)),
        ("ES256 named on P-384", _ec(ec.SECP384R1(), crv=2)),
        ("ES512, not verified here", _ec(ec.SECP521R1(), alg=-36, crv=3)),
        ("PS256, not verified here", _rsa(2048, alg=-37)),
        ("RS256 label on an EC key", _ec(ec.SECP256R1(), alg=-257)),
    ],
    ids=lambda value: value if isinstance(value, str) else "",
)
def test_a_key_that_could_never_verify_is_refused_at_registration(why: str, cose: bytes) -> None:
    asked, answer = _made(SoftPasskey(RECORDED["origin"], cose=cose), "registration")
    with pytest.raises(BadRequest) as refused:
        passkey.check_registration(settings=SETTINGS, request=asked, answer=answer)
    assert refused.value.message == passkey.UNUSABLE, why


@pytest.mark.parametrize(
    "cose",
    [
        _rsa(2048),
        _ec(ec.SECP256R1()),
        cbor2.dumps(
            {1: 1, 3: -8, -1: 6, -2: ed25519.Ed25519PrivateKey.generate().public_key().public_bytes_raw()}
        ),
    ],
    ids=["rsa", "p256", "ed25519"],  # the keys are random
)
def test_a_key_the_service_verifies_registers(cose: bytes) -> None:
    asked, answer = _made(SoftPasskey(RECORDED["origin"], cose=cose), "registration")
    assert passkey.check_registration(settings=SETTINGS, request=asked, answer=answer)["public_key"] == cose
    assert passkey.usable_key(public_key=cose)


def test_the_creation_options_offer_only_what_registration_accepts() -> None:
    options = json.loads(
        passkey.creation_options(
            settings=SETTINGS, request=request("registration"), user_name="G", display_name="G", existing=[]
        )
    )
    assert sorted(p["alg"] for p in options["pubKeyCredParams"]) == sorted(int(a) for a in passkey.ALGORITHMS)
