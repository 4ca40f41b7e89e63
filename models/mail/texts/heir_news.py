"""An heir's emails around their own request: their link sent early (when the owner chose so),
the receipt of their request to check, and its outcome. Neutral words: an early link does not
mean that anything has happened; sympathy only when a guardian reported a death."""

from __future__ import annotations

from markupsafe import Markup

from core.text.markup import _, gendered
from models.delivery.deliveries import Delivery
from models.mail.texts.common import HEIR, Kind
from models.mail.texts.common import owner_name as _owner
from models.mail.texts.common import when as _when
from models.mail.texts.heir import sympathy


def _early_link(d: Delivery, links: dict[str, Markup]) -> tuple[Markup, Markup]:
    owner = _owner(d=d)
    ask = (
        _(
            "If a day comes when you believe {owner} has died or can no longer act, you can ask the "
            "people {owner} chose to confirm it, their guardians, to check: the page has a button for it."
        )
        if d["context"].get("mayAsk")
        else _("There is nothing to do on it for now: {owner} will not be asked anything through it.")
    )
    return (
        # Translators: gendered by the owner's grammatical gender (their plan).
        gendered("{owner} has named you in their legacy plan", d.get("owner_gender")).format(owner=owner),
        _(
            "{owner} has made a plan with us, so that something reaches you one day, and named you in "
            "it. This email does not mean that anything has happened to {owner}: they chose to let you "
            "know in advance.\n\nThis is your own page for the plan:\n\n{link}\n\n"
            "It opens nothing until the plan is released: until then it only says that it is waiting."
        ).format(owner=owner, link=links["claim"])
        + " "
        + ask.format(owner=owner)
        + "\n\n"
        + _("Please keep this email, and do not share the link: it is yours alone."),
    )


def _received(d: Delivery, links: dict[str, Markup]) -> tuple[Markup, Markup]:
    owner = _owner(d=d)
    return (
        _("We have your request about {owner}").format(owner=owner),
        _(
            "You asked us to check whether {owner} has died or can no longer act. We have told {owner} "
            "and the guardians {owner} chose. {owner} can answer at any time by checking in with us; "
            "the guardians are asked to confirm what they know.\n\n"
            "Nothing more is asked of you. We will write to you again when there is an answer: if "
            "{owner} checks in, or if the plan is released, or if it has to wait."
        ).format(owner=owner),
    )


def _outcome(d: Delivery, links: dict[str, Markup]) -> tuple[Markup, Markup]:
    owner = _owner(d=d)
    outcome = d["context"].get("outcome")
    if outcome == "well":
        return (
            _("{owner} has checked in").format(owner=owner),
            _(
                "After you asked us to check, {owner} checked in with us: they are well and able to "
                "act. The check has ended and nothing was released.\n\n"
                "If you are worried about them later, you can ask again, after a while, from the same "
                "page:\n\n{link}"
            ).format(owner=owner, link=links["claim"]),
        )
    if outcome == "released":
        return (
            _("{owner}'s plan has been released").format(owner=owner),
            sympathy(d=d)
            + _(
                "After you asked us to check, {owner}'s plan was released. Your link now opens what "
                "{owner} left for you, whenever you are ready:\n\n{link}\n\n"
                "This link is yours alone; please do not share it."
            ).format(owner=owner, link=links["claim"]),
        )
    why = str(d["context"].get("why"))
    if why == "objected":
        said = _(
            "The time for {owner}'s guardians to answer your request has passed without enough of "
            "them confirming, and nothing was released, because one of the guardians told us that it "
            "is a mistake: they know {owner} is alive or able to act."
        )
        if d["context"].get("lapsesAt"):
            said += " " + _(
                "That objection lapses on {date} unless {owner} checks in by then; the deadline then "
                "applies again, and you will hear from us."
            ).format(date=_when(value=d["context"]["lapsesAt"]), owner="{owner}")
    elif why == "onchain":
        said = _(
            "The time for {owner}'s guardians to answer your request has passed without enough of "
            "them confirming, and nothing was released, because this plan can only be released when "
            "enough guardians have approved it."
        )
    else:  # owner_chose_wait, or a row written before the reason was kept
        said = _(
            "The time for {owner}'s guardians to answer your request has passed without enough of "
            "them confirming, and nothing was released, because {owner} chose that, in that case, the "
            "plan goes on waiting."
        )
    return (
        _("Your request about {owner} could not go ahead for now").format(owner=owner),
        said.format(owner=owner)
        + "\n\n"
        + _(
            "The plan stays as it is: the guardians can still confirm, and {owner} can still check in. "
            "We will write to you if either happens."
        ).format(owner=owner),
    )


KINDS: dict[str, Kind] = {
    "early_heir_link": Kind(_early_link, audience=(HEIR,), links=("claim",), footers=("unknown",)),
    "heir_request_received": Kind(_received, audience=(HEIR,)),
    "heir_request_outcome": Kind(_outcome, audience=(HEIR,), links=("claim",)),
}
