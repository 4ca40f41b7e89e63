"""The heirs' emails, by kind: their link (at release, when an on-chain plan is ready, or again
on request), a letter that opened, a release stopped, and the confirmation of their address. They
reach people at a hard moment: sympathy only for a reported death, nothing of the contents."""

from __future__ import annotations

from markupsafe import Markup

from core.text import i18n
from core.text.markup import _, ngettext
from models.delivery.deliveries import Delivery
from models.mail.texts.common import HEIR, Kind
from models.mail.texts.common import owner_name as _owner


def sympathy(*, d: Delivery) -> str:
    """The sentence of sympathy that opens an heir's email, only when a death was reported."""
    return _("We are sorry for your loss.") + " " if d["report_reason"] == "death" else ""


def _release_stopped(d: Delivery, links: dict[str, Markup]) -> tuple[Markup, Markup]:
    owner = _owner(d=d)
    return (
        _("{owner}'s plan is no longer ready to be released").format(owner=owner),
        _(
            "We recently sent you a link to {owner}'s legacy plan. The release has been stopped, so the "
            "link opens nothing for now and there is nothing for you to do. If the plan becomes ready "
            "again, we will write to you."
        ).format(owner=owner),
    )


def _what_it_opens(*, owner: Markup) -> Markup:
    """What the heir's link opens, that it is theirs alone, and how long it works: said in every
    claim-link email, so that a stranger's email with a long link reads as what it is."""
    return (
        _(
            "This link opens your part of {owner}'s plan: what was left to you, and the letters and files "
            "meant for you. Opening it needs no account and no password."
        ).format(owner=owner)
        + "\n\n"
        + _(
            "The link is yours alone: anyone who has it can open what it leads to, so please do not "
            "forward it or share it. It does not expire: keep this email, and come back to it whenever "
            "you need."
        )
    )


def _unexpected(*, owner: Markup, links: dict[str, Markup]) -> Markup:
    """What to do with a claim link nobody expected: the owner may simply not have said; a
    stranger's copy is left unopened, and the operator told where there is one to tell."""
    said = _(
        "Did you not expect this email? {owner} may not have told you that they named you; many people "
        "do not."
    ).format(owner=owner)
    if "contact" in links:
        return (
            said
            + " "
            + _(
                "If you do not know {owner}, this email was not meant for you: please do not open the "
                "link, and tell us at {contact} so that it can reach the right person."
            ).format(owner=owner, contact=links["contact"])
        )
    return (
        said
        + " "
        + _(
            "If you do not know {owner}, this email was not meant for you: please do not open the link, "
            "and delete this email."
        ).format(owner=owner)
    )


def _claim_link(d: Delivery, links: dict[str, Markup]) -> tuple[Markup, Markup]:
    """The heir's link: at release, when an on-chain plan is ready (one step left, theirs to
    take, in plain words), or again on request (context "stage"). Each says what the link opens,
    that it is theirs alone and that it does not expire; the first two, what to do with an email
    nobody expected."""
    owner, link = _owner(d=d), links["claim"]
    stage = d["context"].get("stage")
    if stage == "resend":
        return (
            _("Your link to what {owner} left you").format(owner=owner),
            _(
                "Here is your link again, as asked:\n\n{link}\n\n"
                "If you did not ask for it, someone else typed your address on our page: we send the link "
                "only to the address {owner}'s plan gives for you, so you can ignore this email."
            ).format(owner=owner, link=link)
            + "\n\n"
            + _what_it_opens(owner=owner),
        )
    if stage == "ready":
        return (
            _("{owner} left something for you").format(owner=owner),
            sympathy(d=d)
            + _(
                "{owner} asked us to pass something on to you when the time came. Everything is "
                "ready; one last step opens it, whenever you feel able:\n\n{link}\n\n"
                "On that page you connect a Stellar wallet (an app that holds digital money, such as "
                "Freighter) and sign once to confirm the release. Any one of the people named in the "
                "plan can take this step for everyone. The wallet needs a little XLM (a few cents) for "
                "the network fee. If you would like help, one of the plan's guardians can guide you."
            ).format(owner=owner, link=link)
            + "\n\n"
            + _what_it_opens(owner=owner)
            + "\n\n"
            + _unexpected(owner=owner, links=links),
        )
    return (
        _("{owner} left something for you").format(owner=owner),
        sympathy(d=d)
        + _(
            "{owner} asked us to pass something on to you when the time came. You can open it here, "
            "whenever you are ready:\n\n{link}"
        ).format(owner=owner, link=link)
        + "\n\n"
        + _what_it_opens(owner=owner)
        + "\n\n"
        + _unexpected(owner=owner, links=links),
    )


def _letter_opened(d: Delivery, links: dict[str, Markup]) -> tuple[Markup, Markup]:
    count = int(d["context"].get("letters") or 1)
    owner, number = _owner(d=d), i18n.number(count)
    return (
        ngettext(
            "A letter from {owner} opened today", "{count} letters from {owner} opened today", count
        ).format(owner=owner, count=number),
        ngettext(
            "A letter from {owner} opened today. {owner} asked that it reach you now, and it is waiting "
            "for you here, whenever you are ready:\n\n{link}\n\n"
            "This is the same link you were given before; it is yours alone, please do not share it.",
            "{count} letters from {owner} opened today. {owner} asked that they reach you now, and they "
            "are waiting for you here, whenever you are ready:\n\n{link}\n\n"
            "This is the same link you were given before; it is yours alone, please do not share it.",
            count,
        ).format(owner=owner, count=number, link=links["claim"]),
    )


def _email_confirmation(d: Delivery, links: dict[str, Markup]) -> tuple[Markup, Markup]:
    return (
        _("Please confirm that this address reaches you"),
        _(
            "{owner} has listed this address to receive something from them in the future, and would "
            "like to be sure it reaches you. If it does, please confirm it here (one button, nothing "
            "else is asked of you):\n\n{link}\n\n"
            "The link works once, for 30 days. If you do not know {owner}, or this is not your "
            "address, you can ignore this email: nothing happens unless you press the button."
        ).format(owner=_owner(d=d), link=links["email_confirmation"]),
    )


KINDS: dict[str, Kind] = {
    "claim_link": Kind(_claim_link, audience=(HEIR,), links=("claim", "contact")),
    "release_stopped": Kind(_release_stopped, audience=(HEIR,)),
    "letter_opened": Kind(_letter_opened, audience=(HEIR,), links=("claim",)),
    "email_confirmation": Kind(
        _email_confirmation, audience=(HEIR,), links=("email_confirmation",), footers=("unknown",)
    ),
}
