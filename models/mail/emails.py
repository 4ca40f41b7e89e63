"""Rendering outbox rows into emails at send time (the rows themselves: models.delivery.outbox).

Every kind is one declaration (`models.mail.texts.common.Kind`, in its audience's module of
texts/): the template of its words (`templates/kinds/<kind>.html`), its audience, the links its
words use and the paragraphs that follow them. This module builds those links and footers by
name (`LINKS`, `FOOTERS`) and frames the words in the one layout (`templates/email.html`, through
Jinja, as the pages are: autoescape, every typed name in `<bdi>`), in the recipient's language
and time zone (docs/translations.md).

The words are written once, as markup: the subject and the body come from one rendering of the
kind's template, and the text part is the same paragraphs as the HTML part, without their tags.
Names are user input: each is escaped and isolated where it is put in a sentence. Claim links
are built here, at send time, from the sealed claim token (`$PUBLIC_BASE_URL/claim/<token>`),
guardians' page links from the guardian's id and page version (models.guardian_links), and
check-in links from the outbox row id (models.check_in_links), so no token or address is ever
stored in the outbox. Texts are short and kind; they are read by people at a hard moment.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import urlsplit

from markupsafe import Markup

from core.files.crypto import KeyRing
from core.mailer import Email
from core.text import i18n, markup
from core.text.cleaning import cut
from core.text.i18n import N_
from core.text.markup import _
from models import address_links, check_in_links, guardian_links
from models.claim_tokens import open_claim_token
from models.contents import email_confirmations
from models.delivery import suppressions
from models.delivery.deliveries import Delivery
from models.mail.texts import (
    account,
    address_changes,
    address_suggestions,
    guardian,
    heir,
    heir_news,
    objection_lapses,
    objections,
    owner,
)
from models.mail.texts.common import Kind, environment, owner_name, sentence_case

# Every outbox kind, declared in its audience's module (models/mail/texts/).
KINDS: dict[str, Kind] = {
    **owner.KINDS,
    **account.KINDS,
    **guardian.KINDS,
    **heir.KINDS,
    **heir_news.KINDS,
    **address_changes.KINDS,
    **address_suggestions.KINDS,
    **objections.KINDS,
    **objection_lapses.KINDS,
}

_ENVIRONMENT = environment()
_LAYOUT = _ENVIRONMENT.get_template("email.html")


@dataclass(frozen=True)
class Site:
    """Where the links lead: the service's own pages (`base_url`, PUBLIC_BASE_URL) and the web
    client, if one is deployed (`app_url`, PUBLIC_APP_URL), with the key ring their tokens use;
    and who runs it, as every email names them (OPERATOR_NAME, OPERATOR_CONTACT: "" when unset)."""

    ring: KeyRing
    base_url: str
    app_url: str
    operator_name: str = ""
    operator_contact: str = ""


def _claim(d: Delivery, site: Site) -> str:
    token = open_claim_token(
        site.ring, sealed=d["claim_token_sealed"] or "", beneficiary_id=d["beneficiary_id"] or ""
    )
    return f"{site.base_url}/claim/{token}"


def _email_confirmation(d: Delivery, site: Site) -> str:
    token = email_confirmations.token_for(site.ring, key_id=d["context"]["keyId"], outbox_id=d["id"])
    return email_confirmations.url(base_url=site.base_url, token=token)


def _address_confirmation(d: Delivery, site: Site) -> str:
    token = address_links.token_for(site.ring, change_id=d["context"]["changeId"])
    return address_links.url(base_url=site.base_url, token=token)


def _app(d: Delivery, site: Site) -> str | None:
    """Where the email says to sign in: the web client where one is deployed; else, for the
    owner, this service's own sign-in page; else none (a guardian's page is their door;
    docs/pages.md)."""
    if site.app_url and site.app_url != site.base_url:
        return site.app_url
    return f"{site.base_url}/sign-in" if d["recipient_type"] == "owner" else None


def _heir_stop(d: Delivery, site: Site) -> str | None:
    """The heir concerned by a holding address change, at the address on record: their "Stop"."""
    return address_links.heir_links(site.ring, d=d, base_url=site.base_url).get("stop")


def _heir_doubt(d: Delivery, site: Site) -> str | None:
    """Every other heir, while an address change holds: their "This looks wrong"."""
    return address_links.heir_links(site.ring, d=d, base_url=site.base_url).get("doubt")


def _guardian_page(d: Delivery, site: Site) -> str | None:
    if d["recipient_type"] != "guardian" or not d["guardian_id"] or not d["guardian_page_version"]:
        return None
    token = guardian_links.token_for(
        site.ring,
        key_id=d["guardian_page_key_id"] or site.ring.primary_id,
        guardian_id=d["guardian_id"],
        version=d["guardian_page_version"],
    )
    return guardian_links.url(base_url=site.base_url, token=token)


def _unknown_sender(d: Delivery, site: Site) -> str | None:
    if not suppressions.carries_link(
        kind=d["kind"], recipient_type=d["recipient_type"], answered=d["answered"]
    ):
        return None
    return suppressions.url(
        base_url=site.base_url, token=suppressions.token_for(site.ring, outbox_id=d["id"])
    )


def _check_in(d: Delivery, site: Site) -> str | None:
    if not d["check_in_link"]:  # ended by a check-in since
        return None
    token = check_in_links.token_for(
        site.ring, key_id=d["check_in_key_id"] or site.ring.primary_id, outbox_id=d["id"]
    )
    return check_in_links.url(base_url=site.base_url, token=token)


def _contact(d: Delivery, site: Site) -> str | None:
    """Where the reader can write to whoever runs the service: their page, or their address."""
    contact = site.operator_contact
    if not contact:
        return None
    return contact if contact.startswith("https://") else f"mailto:{contact}"


# Every link a kind may name, by name: None where it does not apply to the row.
LINKS: dict[str, Callable[[Delivery, Site], str | None]] = {
    "claim": _claim,
    "email_confirmation": _email_confirmation,
    "address_confirmation": _address_confirmation,
    "app": _app,
    "stop": _heir_stop,
    "doubt": _heir_doubt,
    "guardian": _guardian_page,
    "unknown": _unknown_sender,
    "check_in": _check_in,
    "contact": _contact,
}

# The paragraphs a kind may add after its words, in this order, each with the link it carries
# (and only when that link applies to the row).
FOOTERS: dict[str, tuple[str, str]] = {
    # On every owner email that carries a check-in link (models.check_in_links.KINDS).
    "check_in": (
        "check_in",
        N_(
            "No wallet at hand? This link checks you in once, without signing in (it works for 30 days, "
            "until you next check in):\n\n{url}"
        ),
    ),
    # On an invitation or a confirmation request until the person has answered it
    # (models.delivery.budget.BUDGETED).
    "unknown": (
        "unknown",
        N_(
            "Don't know this person, or not your address? One button on this page stops every email from "
            "them through us:\n\n{url}"
        ),
    ),
    # On every guardian email but the invitation (which says it in its own words) and the plan's
    # deletion (a page soon gone).
    "guardian_page": (
        "guardian",
        N_(
            "Your page for this plan shows what is asked of you now, and your wallet app answers there "
            "(keep the link to yourself):\n\n{url}"
        ),
    ),
}
# The same page, to a guardian who answers with a passkey: no wallet is theirs to open.
PASSKEY_PAGE = N_(
    "Your page for this plan shows what is asked of you now, and you answer there with your passkey "
    "(keep the link to yourself):\n\n{url}"
)


# Who sends every email, on whose behalf, how to tell it is genuine and whom to write to: the
# paragraphs under the sign-off, in the HTML part as in the text part (docs/pages.md, "Who sends
# an email"). Each says only what is known: no operator named unless OPERATOR_NAME is set, no
# owner for the owner's own emails, no contact unless OPERATOR_CONTACT is set. By (operator
# named, on someone's behalf).
SENT_BY = {
    (True, True): N_(
        "This email comes from the legacy planning service at {host}, run by {operator}, on behalf of "
        "{owner}."
    ),
    (True, False): N_("This email comes from the legacy planning service at {host}, run by {operator}."),
    (False, True): N_("This email comes from the legacy planning service at {host}, on behalf of {owner}."),
    (False, False): N_("This email comes from the legacy planning service at {host}."),
}
# Translators: {hosts} is one web address or a list of them ("legacy.example.org or app.example.org").
GENUINE = N_(
    "How to tell this email is genuine: every link in it leads to {hosts}. We never ask for a secret key, "
    "a recovery phrase or a password, and never ask you to send money to anyone."
)
# Whom to write to, by the kind of contact: an email address, or a page.
CONTACT = {
    "mailto": N_("If you have a question, or something here looks wrong, write to {contact}."),
    "https": N_("If you have a question, or something here looks wrong, you can reach us here: {contact}"),
}


def _host(url: str) -> str:
    return urlsplit(url).netloc


def _about(
    d: Delivery, named: Delivery, site: Site, links: dict[str, Markup], urls: dict[str, str]
) -> list[Markup]:
    """The sender's paragraphs: who sends it (the service at its own host, run by the operator),
    on whose behalf (the plan's owner, by name, to everyone but the owner), how to tell it is
    genuine (the hosts its links lead to, what we never ask for) and whom to write to."""
    host = _host(site.base_url)
    behalf = d["recipient_type"] != "owner" and bool(d["owner_name"])
    sent_by = _(SENT_BY[bool(site.operator_name), behalf]).format(
        host=markup.bdi(host), operator=markup.bdi(site.operator_name), owner=named["owner_name"]
    )
    # The service's own host first, then each other one in the order of LINKS (not of `urls`, a
    # set's order), so an email reads the same each time it is rendered.
    hosts = [host, *(_host(urls[name]) for name in LINKS if urls.get(name, "").startswith("http"))]
    listed = i18n.either([str(markup.bdi(h)) for h in dict.fromkeys(hosts)])
    genuine = _(GENUINE).format(hosts=Markup(listed))  # noqa: S704 - each host escaped in its <bdi>
    about = [sent_by, genuine]
    if "contact" in links:
        about.append(_(CONTACT[urls["contact"].split(":")[0]]).format(contact=links["contact"]))
    return about


def _footer_sentence(footer: str, d: Delivery) -> str:
    """A footer's sentence as this reader needs it: a passkey guardian never reads "wallet"."""
    if footer == "guardian_page" and d.get("guardian_passkey"):
        return PASSKEY_PAGE
    return FOOTERS[footer][1]


# A name in a subject is cut to this many characters (with "…"): the subject is what an inbox
# shows before anyone opens the email, so it must not carry a sentence the owner typed as their
# name ("URGENT: your bank account is frozen…"). The body names them in full. docs/security.md.
SUBJECT_NAME_LIMIT = 40
_NAMES = ("owner_name", "recipient_name", "about_guardian_name", "subject_name")


def _named(d: Delivery) -> Delivery:
    """The row with every name as people should read it, isolated: no control or bidi character
    (rows stored before names were cleaned on the way in), in `<bdi>`."""
    shown = d.copy()
    for key in _NAMES:
        name = d[key]  # type: ignore[literal-required]
        if name is not None:
            shown[key] = markup.bdi(name)  # type: ignore[literal-required]
    return shown


def _links(kind: Kind, d: Delivery, site: Site) -> dict[str, str]:
    """The URLs of the links the kind names, its footers carry and the sender's paragraphs give
    (the operator's contact), where they apply to the row."""
    names = {*kind.links, *(FOOTERS[footer][0] for footer in kind.footers), "contact"}
    urls = {name: LINKS[name](d, site) for name in names}
    return {name: url for name, url in urls.items() if url}


def render(
    *,
    d: Delivery,
    ring: KeyRing,
    base_url: str,
    app_url: str,
    operator_name: str = "",
    operator_contact: str = "",
) -> Email:
    """The email for one outbox row, written in its recipient's language and time zone (the
    row's `locale` and `time_zone`; English and UTC when none is recorded). Links to the
    service's own pages use `base_url` (PUBLIC_BASE_URL); "sign in" points at `app_url`
    (PUBLIC_APP_URL) when one is configured, and otherwise, for the owner, at this service's own
    sign-in page, `<base_url>/sign-in` (a guardian's email names none: their page is their door;
    docs/pages.md). Every email ends saying who sends it: the service at `base_url`'s host, run by
    `operator_name` (OPERATOR_NAME), with `operator_contact` (OPERATOR_CONTACT) to write to."""
    site = Site(
        ring=ring,
        base_url=base_url,
        app_url=app_url,
        operator_name=operator_name,
        operator_contact=operator_contact,
    )
    with i18n.speaking(d["locale"], d["time_zone"]):
        return _render(KINDS[d["kind"]], d=d, site=site)


def _words(kind: Kind, named: Delivery, links: dict[str, Markup]) -> tuple[Markup, Markup]:
    """The kind's subject and body, from one rendering of its template: the `subject` and `body`
    it sets, given the row (`d`, every name isolated), its context (`ctx`), the owner as the
    emails name them (`owner`) and the links (`links`, each an `<a>`)."""
    rendered = _ENVIRONMENT.get_template(kind.template).make_module(
        {"d": named, "ctx": named["context"], "owner": owner_name(d=named), "links": links}
    )
    words = vars(rendered)  # what the template set, by name
    return words["subject"], words["body"]


def _render(kind: Kind, *, d: Delivery, site: Site) -> Email:
    urls = _links(kind, d, site)
    links = {name: markup.link(url) for name, url in urls.items()}
    named = _named(d)
    subject, body = _words(kind, named, links)
    footers = [
        _(_footer_sentence(footer, d)).format(url=links[link])
        for footer, (link, _sentence) in FOOTERS.items()
        if footer in kind.footers and link in links
    ]
    # Translators: the email's greeting; {name} is the recipient's name.
    greeting = _("Dear {name},").format(name=named["recipient_name"]) if d["recipient_name"] else _("Hello,")
    # Translators: the email's sign-off, on two lines (keep the line break).
    signoff = _("With care,\nThe legacy planning service")
    words = Markup("\n\n").join([greeting, sentence_case(text=body), *footers, signoff])
    about = _about(d, named, site, links, urls)
    return Email(
        to=d["address"] or "",
        subject=markup.plain(
            markup.names_cut(sentence_case(text=subject), lambda name: cut(name, limit=SUBJECT_NAME_LIMIT))
        ),
        text=markup.plain(Markup("\n\n").join([words, *about])) + "\n",
        html=_LAYOUT.render(
            language=i18n.language(),
            direction=i18n.direction(),
            paragraphs=[paragraph for paragraph in words.split("\n\n") if paragraph],
            about=about,
        ),
        headers={
            # The language the email is written in (RFC 3282), for the mail client and screen readers.
            "Content-Language": i18n.language(),
            **(suppressions.headers(link=urls["unknown"]) if "unknown" in urls else {}),
        },
    )
