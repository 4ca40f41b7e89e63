"""SEP-7 signing requests (`web+stellar:tx?...`), the way a page without scripts asks any wallet
to sign: a link, the same URI as a QR code, and the callback the wallet posts the signed
envelope to. stellar-sdk builds and signs the URI (`stellar_sdk.sep.stellar_uri`); segno draws
the QR code as inline SVG. Decisions: docs/pages.md "Asking a wallet".
"""

from __future__ import annotations

from urllib.parse import urlsplit

import segno
from stellar_sdk import Keypair, TransactionEnvelope
from stellar_sdk.sep.stellar_uri import TransactionStellarUri

from core.text.cleaning import clean_line
from core.text.i18n import _

# SEP-7: "msg ... should not be more than 300 characters".
MSG_LIMIT = 300


def origin_domain(public_base_url: str) -> str:
    """The host of the service's public origin: where a wallet fetches its stellar.toml."""
    return urlsplit(public_base_url).hostname or ""


def message(template: str, **names: str | None) -> str:
    """`template` (already in the signer's language: the caller's `_()`) with the people named in
    it, the longest name cut (with "…") until the whole fits SEP-7's 300 characters in every
    language; a missing name is "the owner", in the signer's language. Should names alone not
    make room (a translation longer than the limit), the text itself is cut: a wallet refuses a
    longer `msg`. Names lose their control and bidi characters (core/text/cleaning.py): a wallet
    shows `msg` as the service's words."""
    values = {key: (clean_line(value or "") or _("the owner")) for key, value in names.items()}
    text = template.format(**values)
    while len(text) > MSG_LIMIT:
        cuttable = [key for key in values if len(values[key]) > 2]
        if not cuttable:
            return text[: MSG_LIMIT - 1].rstrip() + "…"
        longest = max(cuttable, key=lambda k: len(values[k]))
        excess = len(text) - MSG_LIMIT
        values[longest] = values[longest][: max(1, len(values[longest]) - excess - 1)].rstrip() + "…"
        text = template.format(**values)
    return text


def signing_uri(
    envelope_xdr: str,
    *,
    callback: str,
    msg: str,
    public_base_url: str,
    passphrase: str,
    pubkey: str,
    signer: Keypair,
) -> str:
    """The `web+stellar:tx` URI for this unsigned envelope, signed by the stellar.toml key
    (URI_REQUEST_SIGNING_KEY), its callback `url:<callback>`."""
    uri = TransactionStellarUri(
        transaction_envelope=TransactionEnvelope.from_xdr(envelope_xdr, passphrase),
        callback=callback,
        pubkey=pubkey,
        message=msg,
        network_passphrase=passphrase,
        origin_domain=origin_domain(public_base_url),
    )
    uri.sign(signer)
    return uri.to_uri()


def qr_svg(uri: str) -> str:
    """The URI as a QR code, inline SVG markup (no XML declaration, no script, no style
    attribute: the pages' CSP allows neither). Error correction L: a Soroban call's URI is long,
    and a phone reads a code shown on a screen cleanly."""
    code = segno.make(uri, error="l", micro=False)
    return str(
        code.svg_inline(
            scale=3,
            border=4,
            omitsize=True,
            title="QR code of the signing request",
            dark="#000",
            light="#fff",
        )
    )
