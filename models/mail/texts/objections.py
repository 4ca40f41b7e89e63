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
    OWNER,
    Kind,
)
from models.mail.texts.common import owner_name as _owner
from models.mail.texts.common import when as _when


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


KINDS: dict[str, Kind] = {
    "guardian_objected": Kind("kinds/guardian_objected.html", audience=(OWNER,), footers=("check_in",)),
    "guardian_objected_guardian": Kind(
        "kinds/guardian_objected_guardian.html", audience=(GUARDIAN,), footers=("guardian_page",)
    ),
    "objection_withdrawn": Kind("kinds/objection_withdrawn.html", audience=(OWNER,), footers=("check_in",)),
    "objection_withdrawn_guardian": Kind(
        "kinds/objection_withdrawn_guardian.html", audience=(GUARDIAN,), footers=("guardian_page",)
    ),
}
