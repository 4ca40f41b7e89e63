"""An objection's window (docs/lifecycle.md "Objections"): the owner reminded halfway that it
lapses unless they check in, and, when it lapses, the owner, the guardian who objected and the
other guardians told that it did and what happens now. The facts of "now" are the plan's after
the lapse (models.flows.objection_lapses), so each reader learns the deadline as it now stands."""

from __future__ import annotations

from markupsafe import Markup

from core.text.markup import _
from models.delivery.deliveries import Delivery
from models.mail.texts.common import GUARDIAN, ONE_OF_THE_GUARDIANS, OWNER, Kind
from models.mail.texts.common import owner_name as _owner
from models.mail.texts.common import when as _when
from models.mail.texts.objections import your_guardian


def _guardian(d: Delivery) -> str:
    return d["about_guardian_name"] or _(ONE_OF_THE_GUARDIANS)


def what_now(*, d: Delivery, to_owner: bool) -> Markup:
    """What the deadline does now that this objection no longer counts."""
    ctx, owner = d["context"], _owner(d=d)
    if ctx.get("stillObjected"):
        return _(
            "Another guardian still objects: until their objection lapses too, the deadline cannot release "
            "the plan."
        )
    if ctx.get("deadlineAt") is None:
        return _("There is no deadline: the plan is released only if enough guardians approve.")
    at = _when(value=ctx["deadlineAt"])
    if ctx.get("onTimeout") != "release" or ctx.get("contract"):
        return _("If not enough guardians approve by {at}, the plan goes on waiting.").format(at=at)
    if to_owner:
        return _(
            "The deadline applies again: if not enough guardians approve by {at}, your plan will be released "
            "then, after your cancel window, unless you check in."
        ).format(at=at)
    return _(
        "The deadline applies again: if not enough guardians approve by {at}, the plan will be released "
        "then, after the cancel window, unless {owner} checks in."
    ).format(at=at, owner=owner)


def _check_in_now() -> Markup:
    return _(
        "If you are well, please check in now (the link below): it ends this verification, and nothing is "
        "released."
    )


def _reminder(d: Delivery, links: dict[str, Markup]) -> tuple[Markup, Markup]:
    lapses = _when(value=d["context"].get("lapsesAt"))
    return (
        _("Please check in: the objection from {guardian} lapses on {date}").format(
            guardian=your_guardian(d=d), date=lapses
        ),
        _(
            "{guardian} told us that this verification is a mistake: they know you are alive or able to act. "
            "Their objection holds your plan's deadline back only until {date}: if you have not checked in "
            "by then, it lapses and the deadline applies again."
        ).format(guardian=_guardian(d), date=lapses)
        + " "
        + _check_in_now(),
    )


def _lapsed(d: Delivery, links: dict[str, Markup]) -> tuple[Markup, Markup]:
    return (
        _("The objection from {guardian} has lapsed").format(guardian=your_guardian(d=d)),
        _(
            "{guardian} told us you are alive or able to act, and you did not check in by {date}: their "
            "objection has lapsed and no longer holds your plan's deadline back."
        ).format(guardian=_guardian(d), date=_when(value=d["context"].get("lapsesAt")))
        + " "
        + what_now(d=d, to_owner=True)
        + " "
        + _check_in_now(),
    )


def _lapsed_guardian(d: Delivery, links: dict[str, Markup]) -> tuple[Markup, Markup]:
    owner = _owner(d=d)
    return (
        _("An objection about {owner}'s plan has lapsed").format(owner=owner),
        _(
            "{guardian} told us {owner} is alive or able to act. {owner} did not check in by {date}, so "
            "that objection has lapsed: it no longer holds the deadline back."
        ).format(guardian=_guardian(d), owner=owner, date=_when(value=d["context"].get("lapsesAt")))
        + " "
        + what_now(d=d, to_owner=False)
        + " "
        + _(
            "Enough guardians' approvals still release the plan, and {owner} can stop everything by "
            "checking in. If you are unsure, do nothing."
        ).format(owner=owner),
    )


def _lapsed_objector(d: Delivery, links: dict[str, Markup]) -> tuple[Markup, Markup]:
    owner = _owner(d=d)
    return (
        _("Your objection about {owner}'s plan has lapsed").format(owner=owner),
        _(
            "You told us {owner} is alive or able to act. We asked {owner} to check in, and they did not by "
            "{date}, so your objection has lapsed: it no longer holds the deadline back, and you cannot "
            "object again in this verification."
        ).format(owner=owner, date=_when(value=d["context"].get("lapsesAt")))
        + " "
        + what_now(d=d, to_owner=False)
        + " "
        + _(
            "If you know {owner} is alive, please ask them to check in: that ends this verification, and "
            "nothing is released."
        ).format(owner=owner),
    )


# The owner's two say so by the check-in link (models.check_in_links.KINDS); the guardians' end with
# their page.
KINDS: dict[str, Kind] = {
    "objection_check_in_reminder": Kind(_reminder, audience=(OWNER,), footers=("check_in",)),
    "objection_lapsed": Kind(_lapsed, audience=(OWNER,), footers=("check_in",)),
    "objection_lapsed_guardian": Kind(_lapsed_guardian, audience=(GUARDIAN,), footers=("guardian_page",)),
    "objection_lapsed_objector": Kind(_lapsed_objector, audience=(GUARDIAN,), footers=("guardian_page",)),
}
