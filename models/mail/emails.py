"""Rendering outbox rows into emails at send time (the rows themselves: models.delivery.outbox).

Names are user input: every value is escaped in the HTML part. Claim links are built here,
at send time, from the sealed claim token (`$PUBLIC_BASE_URL/claim/<token>`), guardians' page
links from the guardian's id and page version (models.guardian_links), and check-in
links from the outbox row id (models.check_in_links), so no token or address is ever stored
in the outbox. Texts are short and kind; they are read by people at a
hard moment. The words of each kind are in models/mail/texts/, by audience (owner,
guardian, heir); this module builds the links, picks the template and frames the email, in
the recipient's language and time zone (docs/translations.md).
"""

from __future__ import annotations

import html

from core.files.crypto import KeyRing
from core.mailer import Email
from core.text import i18n
from core.text.cleaning import clean_line, cut
from core.text.i18n import N_, _
from models import address_links, check_in_links, guardian_links
from models.claim_tokens import open_claim_token
from models.contents import email_confirmations
from models.delivery import suppressions
from models.delivery.deliveries import Delivery
from models.mail.texts import (
    address_changes,
    address_suggestions,
    guardian,
    heir,
    heir_news,
    objection_lapses,
    objections,
    owner,
)
from models.mail.texts.common import Template, sentence_case

# Every outbox kind's template, from the three audiences' modules (models/mail/texts/).
TEMPLATES: dict[str, Template] = {
    **owner.TEMPLATES,
    **guardian.TEMPLATES,
    **heir.TEMPLATES,
    **heir_news.TEMPLATES,
    **address_changes.TEMPLATES,
    **address_suggestions.TEMPLATES,
    **objections.TEMPLATES,
    **objection_lapses.TEMPLATES,
}
# The heirs' emails that carry their own link.
CLAIM_LINK_KINDS = frozenset({"claim_link", "letter_opened", "early_heir_link", "heir_request_outcome"})
# The emails that offer signing in at the web client too, when PUBLIC_APP_URL names one.
SIGN_IN_KINDS = frozenset(
    {"guardian_invitation", "guardian_reconfirm", "account_changes", "owner_email_changed"}
)
# Appended to every guardian email (the invitation says it in its own words).
GUARDIAN_PAGE_TEXT = N_(
    "Your page for this plan shows what is asked of you now, and your wallet app answers there "
    "(keep the link to yourself):\n\n{url}"
)
# Appended to an invitation or a confirmation request until the person has answered it.
UNKNOWN_SENDER_TEXT = N_(
    "Don't know this person, or not your address? One button on this page stops every email from "
    "them through us:\n\n{url}"
)
# Appended to every owner email that carries a check-in link (models.check_in_links.KINDS).
CHECK_IN_LINK_TEXT = N_(
    "No wallet at hand? This link checks you in once, without signing in (it works for 30 days, "
    "until you next check in):\n\n{url}"
)


# A name in a subject is cut to this many characters (with "…"): the subject is what an inbox
# shows before anyone opens the email, so it must not carry a sentence the owner typed as their
# name ("URGENT: your bank account is frozen…"). The body names them in full. docs/security.md.
SUBJECT_NAME_LIMIT = 40
_NAMES = ("owner_name", "recipient_name", "about_guardian_name", "subject_name")
# Marks around each name in a body (private-use characters, taken out of the names first).
_ISOLATE, _POP = "\ue000", "\ue001"


def _cleaned(d: Delivery, *, limit: int | None) -> Delivery:
    """The row with every name as people should read it: no control or bidi character (rows
    stored before names were cleaned on the way in), cut to `limit` for a subject."""
    shown = d.copy()
    for key in _NAMES:
        name = d[key]  # type: ignore[literal-required]
        if name is not None:
            name = clean_line(name).replace(_ISOLATE, "").replace(_POP, "")
            # In a body, each name is marked: the HTML part shows it in <bdi>, the text part
            # drops the marks.
            shown[key] = cut(name, limit=limit) if limit else f"{_ISOLATE}{name}{_POP}"  # type: ignore[literal-required]
    return shown


def _html(greeting: str, paragraphs: list[str], links: dict[str, str]) -> str:
    """The HTML part, its language and direction said (`lang`, and `dir="rtl"` for Arabic), as the
    pages say theirs."""
    parts = [f"<p>{_bdi(html.escape(greeting))}</p>"]
    for paragraph in paragraphs:
        escaped = html.escape(paragraph)
        for url in links.values():
            safe = html.escape(url)
            escaped = escaped.replace(safe, f'<a href="{safe}">{safe}</a>')
        parts.append(f"<p>{_bdi(escaped)}</p>")
    opening = f'<!doctype html><html lang="{html.escape(i18n.language())}" dir="{i18n.direction()}"><body>'
    return opening + "".join(parts) + "</body></html>"


def _bdi(escaped: str) -> str:
    return escaped.replace(_ISOLATE, "<bdi>").replace(_POP, "</bdi>")


def _plain(text: str) -> str:
    return text.replace(_ISOLATE, "").replace(_POP, "")


def render(*, d: Delivery, ring: KeyRing, base_url: str, app_url: str) -> Email:
    """The email for one outbox row, written in its recipient's language and time zone (the
    row's `locale` and `time_zone`; English and UTC when none is recorded). Links to the
    service's own pages use `base_url` (PUBLIC_BASE_URL); "sign in" points at `app_url`
    (PUBLIC_APP_URL) when one is configured, and otherwise, for the owner, at this service's own
    sign-in page, `<base_url>/sign-in` (a guardian's email names none: their page is their door;
    docs/pages.md)."""
    with i18n.speaking(d["locale"], d["time_zone"]):
        return _render(d=d, ring=ring, base_url=base_url, app_url=app_url)


def _page_links(*, d: Delivery, ring: KeyRing, base_url: str) -> dict[str, str]:
    """The links an email carries to the recipient's own pages of this service (each one a token)."""
    links: dict[str, str] = {}
    if d["kind"] in CLAIM_LINK_KINDS:
        token = open_claim_token(
            ring, sealed=d["claim_token_sealed"] or "", beneficiary_id=d["beneficiary_id"] or ""
        )
        links["claim"] = f"{base_url}/claim/{token}"
    if d["kind"] == "email_confirmation":
        token = email_confirmations.token_for(ring, key_id=d["context"]["keyId"], outbox_id=d["id"])
        links["confirm"] = email_confirmations.url(base_url=base_url, token=token)
    if d["kind"] == "address_confirmation":
        token = address_links.token_for(ring, change_id=d["context"]["changeId"])
        links["confirm"] = address_links.url(base_url=base_url, token=token)
    links |= address_links.heir_links(ring, d=d, base_url=base_url)  # an heir's "Stop", "This looks wrong"
    if d["recipient_type"] == "guardian" and d["guardian_id"] and d["guardian_page_version"]:
        token = guardian_links.token_for(
            ring,
            key_id=d["guardian_page_key_id"] or ring.primary_id,
            guardian_id=d["guardian_id"],
            version=d["guardian_page_version"],
        )
        links["guardian"] = guardian_links.url(base_url=base_url, token=token)
    if suppressions.carries_link(kind=d["kind"], recipient_type=d["recipient_type"], answered=d["answered"]):
        links["unknown"] = suppressions.url(
            base_url=base_url, token=suppressions.token_for(ring, outbox_id=d["id"])
        )
    if d["check_in_link"]:
        key_id = d["check_in_key_id"] or ring.primary_id
        token = check_in_links.token_for(ring, key_id=key_id, outbox_id=d["id"])
        links["check_in"] = check_in_links.url(base_url=base_url, token=token)
    return links


def _sign_in_link(*, d: Delivery, base_url: str, app_url: str) -> str | None:
    """Where the email says to sign in: the web client where one is deployed; else, for the
    owner, this service's own sign-in page; else none (a guardian's page is their door)."""
    if d["kind"] not in SIGN_IN_KINDS:
        return None
    if app_url and app_url != base_url:
        return app_url
    return f"{base_url}/sign-in" if d["recipient_type"] == "owner" else None


def _render(*, d: Delivery, ring: KeyRing, base_url: str, app_url: str) -> Email:
    links = _page_links(d=d, ring=ring, base_url=base_url)
    sign_in = _sign_in_link(d=d, base_url=base_url, app_url=app_url)
    if sign_in is not None:
        links["app"] = sign_in
    template = TEMPLATES[d["kind"]]
    subject = sentence_case(text=template(_cleaned(d, limit=SUBJECT_NAME_LIMIT), links)[0])
    d = _cleaned(d, limit=None)
    text = sentence_case(text=template(d, links)[1])
    if "check_in" in links:
        text += "\n\n" + _(CHECK_IN_LINK_TEXT).format(url=links["check_in"])
    if "unknown" in links:
        text += "\n\n" + _(UNKNOWN_SENDER_TEXT).format(url=links["unknown"])
    if "guardian" in links and d["kind"] not in ("guardian_invitation", "plan_deleted"):  # a page soon gone
        text += "\n\n" + _(GUARDIAN_PAGE_TEXT).format(url=links["guardian"])
    # Translators: the email's greeting; {name} is the recipient's name.
    greeting = _("Dear {name},").format(name=d["recipient_name"]) if d["recipient_name"] else _("Hello,")
    paragraphs = [p for p in text.split("\n\n") if p]
    # Translators: the email's sign-off, on two lines (keep the line break).
    signoff = _("With care,\nThe legacy planning service")
    return Email(
        to=d["address"] or "",
        subject=subject,
        text=_plain(f"{greeting}\n\n{text}\n\n{signoff}\n"),
        html=_html(greeting, [*paragraphs, signoff], links),
        headers={
            # The language the email is written in (RFC 3282), for the mail client and screen readers.
            "Content-Language": i18n.language(),
            **(suppressions.headers(link=links["unknown"]) if "unknown" in links else {}),
        },
    )
