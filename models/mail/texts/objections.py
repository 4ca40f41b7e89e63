"""A guardian's objection ("This is a mistake: I know they are alive or able to act") and its
withdrawal, told to the owner and to the other guardians, and the deadline as every
verification email to guardians states it: what happens then, whether the owner chose it, and
how to object. docs/lifecycle.md "Objections"."""

from __future__ import annotations

from markupsafe import Markup

from core.text.markup import _
from models.delivery.deliveries import Delivery
from models.mail.texts.common import (
    GUARDIAN,
    ONE_OF_THE_GUARDIANS,
    ONE_OF_YOUR_GUARDIANS,
    OWNER,
    Kind,
    they_wrote,
)
from models.mail.texts.common import owner_name as _owner
from models.mail.texts.common import when as _when


def _guardian(d: Delivery) -> str:
    return d["about_guardian_name"] or _(ONE_OF_THE_GUARDIANS)


def your_guardian(*, d: Delivery) -> str:
    """The guardian an owner's email is about, by name, or the words standing in."""
    return d["about_guardian_name"] or _(ONE_OF_YOUR_GUARDIANS)


def _note(d: Delivery) -> str:
    note = d["context"].get("note")
    return " " + they_wrote(note=note) if note else ""


def lapses(*, d: Delivery, to_owner: bool) -> Markup:
    """Until when the objection holds the deadline back (none on a row written before it lapsed)."""
    lapses = d["context"].get("lapsesAt")
    if not lapses:
        return Markup("")
    said = (
        _(
            "It holds the deadline back only until {date}: if you have not checked in by then, the objection "
            "lapses and the deadline applies again as if it had not been made."
        )
        if to_owner
        else _(
            "It holds the deadline back only until {date}: if {owner} has not checked in by then, the "
            "objection lapses and the deadline applies again as if it had not been made."
        )
    )
    return " " + said.format(date=_when(value=lapses), owner=_owner(d=d))


def deadline_sentence(*, d: Delivery) -> str:
    """What happens if not enough guardians approve by the round's deadline, whose choice it
    is, and how a guardian who knows better says so (context from models.flows.release_path
    `deadline_facts`)."""
    ctx, owner = d["context"], _owner(d=d)
    if "onTimeout" not in ctx:  # a row written before the emails said it
        return ""
    if ctx.get("deadlineAt") is None:
        said = _("There is no deadline: nothing is released unless enough guardians approve.")
    else:
        whose = (
            _("{owner} chose this deadline and what happens at it.")
            if ctx.get("deadlineChosen")
            else _("This is the service's usual deadline, which {owner} has not changed.")
        ).format(owner=owner)
        at = _when(value=ctx["deadlineAt"])
        if ctx["onTimeout"] == "release":
            said = _(
                "If not enough guardians approve by {at}, the plan will be released then all the same, "
                "unless {owner} checks in or a guardian objects."
            ).format(at=at, owner=owner)
        else:
            said = _("If not enough guardians approve by {at}, the plan goes on waiting.").format(at=at)
        said += " " + whose
    # Translators: "This is a mistake" is the button on the guardian's page: use its words there.
    how = _(
        'If you know {owner} is alive or able to act, say so on your page: "This is a mistake" tells '
        "{owner} and the other guardians and asks {owner} to check in. Until they do, the deadline cannot "
        "release the plan, for a limited time (your page gives the date): if {owner} does not check in by "
        "then, the objection lapses and the deadline applies again."
    ).format(owner=owner)
    return said + " " + how


def _guardian_objected(d: Delivery, links: dict[str, Markup]) -> tuple[Markup, Markup]:
    told = (
        _(
            "{guardian}, one of your guardians, told us this verification is a mistake: they know you are "
            "alive or able to act."
        ).format(guardian=d["about_guardian_name"])
        if d["about_guardian_name"]
        else _(
            "One of your guardians told us this verification is a mistake: they know you are alive or able "
            "to act."
        )
    )
    took_back = (
        " " + _("They had approved the release before: that approval no longer counts.")
        if d["context"].get("approvalWithdrawn")
        else ""
    )
    return (
        _("{guardian} says the verification of your plan is a mistake").format(guardian=your_guardian(d=d)),
        told
        + _note(d)
        + took_back
        + " "
        + _(
            "While their objection stands, your plan is not released when the deadline passes: it waits "
            "until enough guardians approve or you check in. If enough guardians approve, it is still "
            "released after your cancel window. If you are well, please check in now (the link below): it "
            "ends this verification, and nothing is released."
        )
        + lapses(d=d, to_owner=True),
    )


def _guardian_objected_guardian(d: Delivery, links: dict[str, Markup]) -> tuple[Markup, Markup]:
    owner = _owner(d=d)
    told = (
        _(
            "{guardian}, another guardian of {owner}'s plan, told us this verification is a mistake: they "
            "know {owner} is alive or able to act."
        )
        if d["about_guardian_name"]
        else _(
            "Another guardian of {owner}'s plan told us this verification is a mistake: they know {owner} "
            "is alive or able to act."
        )
    ).format(guardian=d["about_guardian_name"], owner=owner)
    return (
        _("A guardian says {owner} is alive or able to act").format(owner=owner),
        told
        + _note(d)
        + " "
        + _(
            "While their objection stands, the plan is not released when the deadline passes; it is "
            "released only if enough guardians approve, and {owner} can stop everything by checking in. "
            "If you know more, your page lets you approve the release or object too. If you are unsure, "
            "do nothing."
        ).format(owner=owner)
        + lapses(d=d, to_owner=False),
    )


def _withdrawn(d: Delivery) -> str:
    said = (
        _("{guardian} has withdrawn their objection and approved the release.")
        if d["context"].get("approved")
        else _("{guardian} has withdrawn their objection.")
    )
    return said.format(guardian=_guardian(d))


def _objection_withdrawn(d: Delivery, links: dict[str, Markup]) -> tuple[Markup, Markup]:
    return (
        _("{guardian} has withdrawn their objection").format(guardian=your_guardian(d=d)),
        _withdrawn(d)
        + " "
        + _(
            "Your plan's verification goes on: unless another guardian objects, the deadline applies "
            "again. If you are well, please check in now (the link below): it ends this verification, and "
            "nothing is released."
        ),
    )


def _objection_withdrawn_guardian(d: Delivery, links: dict[str, Markup]) -> tuple[Markup, Markup]:
    owner = _owner(d=d)
    return (
        _("A guardian of {owner}'s plan has withdrawn their objection").format(owner=owner),
        _withdrawn(d)
        + " "
        + _(
            "The verification of {owner}'s plan goes on: unless another guardian objects, the deadline "
            "applies again. {owner} can still stop everything by checking in."
        ).format(owner=owner),
    )


KINDS: dict[str, Kind] = {
    "guardian_objected": Kind(_guardian_objected, audience=(OWNER,), footers=("check_in",)),
    "guardian_objected_guardian": Kind(
        _guardian_objected_guardian, audience=(GUARDIAN,), footers=("guardian_page",)
    ),
    "objection_withdrawn": Kind(_objection_withdrawn, audience=(OWNER,), footers=("check_in",)),
    "objection_withdrawn_guardian": Kind(
        _objection_withdrawn_guardian, audience=(GUARDIAN,), footers=("guardian_page",)
    ),
}
