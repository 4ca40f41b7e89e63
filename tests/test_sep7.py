"""core.stellar.sep7 and sep10 on their own: the words fit SEP-7's 300 characters with the
names cut, the URI's signature verifies with the signing key, the QR code is plain SVG the
pages' CSP allows, and a challenge binds to a text only through its SHA-256."""

from __future__ import annotations

import base64

import pytest
from stellar_sdk import Keypair, TransactionEnvelope
from stellar_sdk.exceptions import BadSignatureError
from stellar_sdk.sep.stellar_uri import TransactionStellarUri

from core.errors import BadRequest
from core.stellar import sep7, sep10

PASSPHRASE = "Test SDF Network ; September 2015"


def test_the_message_fits_300_characters_by_cutting_the_longest_name():
    short = sep7.message("Accept being a guardian for {owner}'s plan", owner="Ada Lovelace")
    assert short == "Accept being a guardian for Ada Lovelace's plan"
    long = sep7.message("Send {heir}'s link again, for {owner}'s plan", owner="O" * 400, heir="Ben")
    assert len(long) == 300 and long.startswith("Send Ben's link again, for OOO") and "…'s plan" in long
    assert sep7.message("Claim {heir}'s share of what {owner} left", heir="Eve", owner=None).endswith(
        "what the owner left"
    )


def test_the_uri_is_signed_by_the_key_and_its_qr_code_is_plain_svg():
    server, client = Keypair.random(), Keypair.random()
    challenge = sep10.build(
        server, client=client.public_key, home_domain="legacy.example.org", passphrase=PASSPHRASE
    )
    uri = sep7.signing_uri(
        challenge["xdr"],
        callback="https://legacy.example.org/claim/x/sep7/y",
        msg="Prove this wallet is yours",
        public_base_url="https://legacy.example.org",
        passphrase=PASSPHRASE,
        pubkey=client.public_key,
        signer=server,
    )
    parsed = TransactionStellarUri.from_uri(uri, PASSPHRASE)
    assert parsed.origin_domain == "legacy.example.org" and parsed.callback.endswith("/sep7/y")
    server.verify(parsed._signature_payload, base64.b64decode(parsed.signature))
    with pytest.raises(BadSignatureError):  # any other key refuses it
        Keypair.random().verify(parsed._signature_payload, base64.b64decode(parsed.signature))
    svg = sep7.qr_svg(uri)
    assert svg.startswith("<svg") and "viewBox" in svg
    for absent in ("<script", "style=", "<?xml", "href="):
        assert absent not in svg


def test_a_challenge_carrying_a_texts_digest_verifies_only_for_that_text_and_signer():
    server, client = Keypair.random(), Keypair.random()
    built = sep10.build(
        server,
        client=client.public_key,
        home_domain="legacy.example.org",
        passphrase=PASSPHRASE,
        value=sep10.digest_value("I approve"),
    )
    envelope = TransactionEnvelope.from_xdr(built["xdr"], PASSPHRASE)
    envelope.sign(client)
    signed = envelope.to_xdr()
    check = {"server_key": server.public_key, "home_domain": "legacy.example.org", "passphrase": PASSPHRASE}
    assert (
        sep10.verify(signed, client=client.public_key, value=sep10.digest_value("I approve"), **check)
        == (built["hash"])
    )
    with pytest.raises(BadRequest):
        sep10.verify(signed, client=client.public_key, value=sep10.digest_value("Something else"), **check)
    with pytest.raises(BadRequest):  # another wallet: a bad request, not a missing credential
        sep10.verify(signed, client=Keypair.random().public_key, **check)
    with pytest.raises(BadRequest):  # unsigned by the client, or not ours
        sep10.verify(
            built["xdr"], client=client.public_key, **{**check, "server_key": Keypair.random().public_key}
        )
    other = TransactionEnvelope.from_xdr(built["xdr"], PASSPHRASE)
    other.sign(Keypair.random())
    with pytest.raises(BadRequest):
        sep10.verify(other.to_xdr(), client=client.public_key, **check)
