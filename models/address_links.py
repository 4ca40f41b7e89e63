"""A corrected heir address (models.plan.guardianships.address_changes) as a page typed it
(`check_address`), and the link that confirms it: the change's id and an HMAC of it under a
key-ring subkey, nothing stored; checked under every key of the ring, so a rotation breaks no
link in a sent email. Single use by the change's status.

While it holds, two more links (models.plan.guardianships.heir_stops): the heir's own "Stop",
emailed to their old address (an HMAC of the change's id under its own subkey; only its SHA-256
digest is stored, with the key id, and the page looks it up by that digest, as the guardians'
pages do), and each other heir's "This looks wrong" (their id and the change's, with an HMAC of
both: it proves only that this heir was told of this change, and stops nothing).
"""

from __future__ import annotations

import hashlib
import hmac
import re
import uuid
from collections.abc import Mapping
from typing import Any

from markupsafe import Markup

from core.errors import BadRequest
from core.files.crypto import KeyRing
from core.text.i18n import N_, _

PURPOSE = "address-confirmation"
TOKEN_RE = re.compile(r"[0-9a-f]{64}")
PATH = "/confirm-address/"
STOP_PURPOSE, STOP_PATH = "address-stop", "/stop-address/"
# The heirs' emails about a holding change, which carry their "Stop" or "This looks wrong".
HEIR_LINK_KINDS = frozenset({"address_change_holding", "address_change_doubted"})
DOUBT_PURPOSE, DOUBT_PATH, DOUBT_RE = "address-doubt", "/address-looks-wrong/", re.compile(r"[0-9a-f]{96}")


def token_for(ring: KeyRing, *, change_id: str, key_id: str | None = None) -> str:
    """The confirmation link's token: the change's id and an HMAC of it (nothing stored; checked
    under every key of the ring, so a rotation breaks no link in a sent email)."""
    mac = hmac.new(ring.subkey(key_id or ring.primary_id, PURPOSE), change_id.encode("ascii"), hashlib.sha256)
    return uuid.UUID(change_id).hex + mac.hexdigest()[:32]


def url(*, base_url: str, token: str) -> str:
    return f"{base_url}{PATH}{token}"


def change_id_of(ring: KeyRing, *, token: str) -> str | None:
    """The change a well-formed, genuine token names; None otherwise."""
    if not TOKEN_RE.fullmatch(token):
        return None
    change_id = str(uuid.UUID(token[:32]))
    if any(hmac.compare_digest(token, token_for(ring, change_id=change_id, key_id=k)) for k in ring.key_ids):
        return change_id
    return None


_ADDRESS = re.compile(r"[^@\s]+@[^@\s]+\.[^@\s]+")


def check_address(*, email: str | None) -> str:
    """An address as a page typed it: 400 in words unless it looks like one."""
    address = (email or "").strip()
    if not _ADDRESS.fullmatch(address) or len(address) > 254:
        raise BadRequest(N_("That does not look like an email address: check it and try again."))
    return address


def _written(sentence: str, **values: Any) -> str:
    """`sentence` with `values` put in: plain text, or markup when a value is markup (an email's
    name in `<bdi>`: the sentence escaped, the other values too)."""
    if any(isinstance(value, Markup) for value in values.values()):
        return Markup.escape(sentence).format(**values)
    return sentence.format(**values)


def uncorrectable(*, name: str) -> str:
    """The one sentence (readiness, the guardian page, the guardians' emails) for an heir whose
    address bounced while too few guardians have accepted to agree on a new one after the release."""
    return _written(
        _(
            "Nobody can correct {name}'s email address: it does not reach them, and too few guardians "
            "have accepted to agree on a new one once the plan is released."
        ),
        name=name,
    )


def unreachable(*, name: str, short: bool) -> str:
    """The words (the guardian page, the guardians' email) for a new address that never reached
    anyone who confirmed it (it bounced, or its reader said they do not know this person): the
    change ended and a guardian may propose another; where too few guardians have accepted to
    agree on one, the `uncorrectable` sentence instead of that offer."""
    if short:
        ended = _written(
            _("The new email address proposed for {name} could not be reached, so nothing changed."),
            name=name,
        )
        return ended + " " + uncorrectable(name=name)
    return _written(
        _(
            "The new email address proposed for {name} could not be reached, so nothing changed. If you "
            "know another address that reaches them, you may propose it."
        ),
        name=name,
    )


def short_of_guardians(*, accepted: int, needed: int) -> bool:
    """Too few accepted guardians to reach the threshold a corrected address needs."""
    return accepted < needed


def stop_token(ring: KeyRing, *, change_id: str, key_id: str) -> str:
    """The heir's own "Stop" link for this change (256 bits; only its digest is stored)."""
    return hmac.new(ring.subkey(key_id, STOP_PURPOSE), change_id.encode("ascii"), hashlib.sha256).hexdigest()


def digest(*, token: str) -> bytes:
    return hashlib.sha256(token.encode("ascii")).digest()


def doubt_token(ring: KeyRing, *, change_id: str, beneficiary_id: str, key_id: str | None = None) -> str:
    """Another heir's "This looks wrong" link: both ids and an HMAC of them (nothing stored)."""
    ids = uuid.UUID(change_id).hex + uuid.UUID(beneficiary_id).hex
    mac = hmac.new(ring.subkey(key_id or ring.primary_id, DOUBT_PURPOSE), ids.encode("ascii"), hashlib.sha256)
    return ids + mac.hexdigest()[:32]


def doubt_ids(ring: KeyRing, *, token: str) -> tuple[str, str] | None:
    """(change id, heir id) a genuine "This looks wrong" token names; None otherwise."""
    if not DOUBT_RE.fullmatch(token):
        return None
    change_id, heir_id = str(uuid.UUID(token[:32])), str(uuid.UUID(token[32:64]))
    for key_id in ring.key_ids:
        if hmac.compare_digest(
            token, doubt_token(ring, change_id=change_id, beneficiary_id=heir_id, key_id=key_id)
        ):
            return change_id, heir_id
    return None


def heir_links(ring: KeyRing, *, d: Mapping[str, Any], base_url: str) -> dict[str, str]:
    """The links an heir's email about a holding change carries: the heir concerned, at the
    address on record (their old one), their "Stop"; every other heir their "This looks wrong".
    None on a row written before these links (no `stopKeyId`)."""
    context = d["context"]
    change_id, key_id = context.get("changeId"), context.get("stopKeyId")
    if (
        d["kind"] not in HEIR_LINK_KINDS
        or d["recipient_type"] != "beneficiary"
        or not change_id
        or not key_id
    ):
        return {}
    if d["beneficiary_id"] == context.get("beneficiaryId"):
        return {"stop": f"{base_url}{STOP_PATH}{stop_token(ring, change_id=change_id, key_id=key_id)}"}
    token = doubt_token(ring, change_id=change_id, beneficiary_id=str(d["beneficiary_id"]))
    return {"doubt": f"{base_url}{DOUBT_PATH}{token}"}
