"""An heir's emails around their own request: their link sent early (when the owner chose so),
the receipt of their request to check, and its outcome. Neutral words: an early link does not
mean that anything has happened; sympathy only when a guardian reported a death."""

from __future__ import annotations

from models.delivery.deliveries import Delivery
from models.mail.texts.common import Template
from models.mail.texts.common import owner_name as _owner


def _early_link(d: Delivery, links: dict[str, str]) -> tuple[str, str]:
    owner = _owner(d=d)
    ask = (
        f"If a day comes when you believe {owner} has died or can no longer act, you can ask the people "
        f"{owner} chose to confirm it, their guardians, to check: the page has a button for it."
        if d["context"].get("mayAsk")
        else f"There is nothing to do on it for now: {owner} will not be asked anything through it."
    )
    return (
        f"{owner} has named you in their legacy plan",
        f"{owner} has made a plan with us, so that something reaches you one day, and named you in it. "
        f"This email does not mean that anything has happened to {owner}: they chose to let you know in "
        f"advance.\n\nThis is your own page for the plan:\n\n{links['claim']}\n\n"
        "It opens nothing until the plan is released: until then it only says that it is waiting. "
        f"{ask}\n\nPlease keep this email, and do not share the link: it is yours alone.",
    )


def _received(d: Delivery, links: dict[str, str]) -> tuple[str, str]:
    owner = _owner(d=d)
    return (
        f"We have your request about {owner}",
        f"You asked us to check whether {owner} has died or can no longer act. We have told {owner} and "
        f"the guardians {owner} chose. {owner} can answer at any time by checking in with us; the guardians "
        "are asked to confirm what they know.\n\n"
        "Nothing more is asked of you. We will write to you again when there is an answer: if "
        f"{owner} checks in, or if the plan is released, or if it has to wait.",
    )


def _outcome(d: Delivery, links: dict[str, str]) -> tuple[str, str]:
    owner = _owner(d=d)
    outcome = d["context"].get("outcome")
    if outcome == "well":
        return (
            f"{owner} has checked in",
            f"After you asked us to check, {owner} checked in with us: they are well and able to act. "
            "The check has ended and nothing was released.\n\n"
            "If you are worried about them later, you can ask again, after a while, from the same page:\n\n"
            f"{links['claim']}",
        )
    if outcome == "released":
        sympathy = "We are sorry for your loss. " if d["report_reason"] == "death" else ""
        return (
            f"{owner}'s plan has been released",
            f"{sympathy}After you asked us to check, {owner}'s plan was released. Your link now opens what "
            f"{owner} left for you, whenever you are ready:\n\n{links['claim']}\n\n"
            "This link is yours alone; please do not share it.",
        )
    why = {
        "objected": "one of the guardians told us that it is a mistake: they know "
        f"{owner} is alive or able to act",
        "owner_chose_wait": f"{owner} chose that, in that case, the plan goes on waiting",
        "onchain": "this plan can only be released when enough guardians have approved it",
    }.get(str(d["context"].get("why")), f"{owner} chose that, in that case, the plan goes on waiting")
    return (
        f"Your request about {owner} could not go ahead for now",
        f"The time for {owner}'s guardians to answer your request has passed without enough of them "
        f"confirming, and nothing was released, because {why}.\n\n"
        f"The plan stays as it is: the guardians can still confirm, and {owner} can still check in. "
        "We will write to you if either happens.",
    )


TEMPLATES: dict[str, Template] = {
    "early_heir_link": _early_link,
    "heir_request_received": _received,
    "heir_request_outcome": _outcome,
}
