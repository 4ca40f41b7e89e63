"""A guardian's objection ("This is a mistake: I know they are alive or able to act") and its
withdrawal, told to the owner and to the other guardians, and the deadline as every
verification email to guardians states it: what happens then, whether the owner chose it, and
how to object. docs/lifecycle.md "Objections"."""

from __future__ import annotations

from models.delivery.deliveries import Delivery
from models.mail.texts.common import Template
from models.mail.texts.common import owner_name as _owner
from models.mail.texts.common import when as _when


def _guardian(d: Delivery) -> str:
    return d["about_guardian_name"] or "One of the guardians"


def _note(d: Delivery) -> str:
    note = d["context"].get("note")
    return f' They wrote: "{note}"' if note else ""


def deadline_sentence(*, d: Delivery) -> str:
    """What happens if not enough guardians approve by the round's deadline, whose choice it
    is, and how a guardian who knows better says so (context from models.flows.release_path
    `deadline_facts`)."""
    ctx, owner = d["context"], _owner(d=d)
    if "onTimeout" not in ctx:  # a row written before the emails said it
        return ""
    if ctx.get("deadlineAt") is None:
        said = "There is no deadline: nothing is released unless enough guardians approve."
    else:
        whose = (
            f"{owner} chose this deadline and what happens at it."
            if ctx.get("deadlineChosen")
            else f"This is the service's usual deadline, which {owner} has not changed."
        )
        at = _when(value=ctx["deadlineAt"])
        if ctx["onTimeout"] == "release":
            said = (
                f"If not enough guardians approve by {at}, the plan will be released then all the same, "
                f"unless {owner} checks in or a guardian objects. {whose}"
            )
        else:
            said = f"If not enough guardians approve by {at}, the plan goes on waiting. {whose}"
    return (
        f"{said} If you know {owner} is alive or able to act, say so on your page: "
        f'"This is a mistake" tells {owner} and the other guardians, and the deadline then cannot '
        "release the plan."
    )


def _guardian_objected(d: Delivery, links: dict[str, str]) -> tuple[str, str]:
    took_back = (
        " They had approved the release before: that approval no longer counts."
        if d["context"].get("approvalWithdrawn")
        else ""
    )
    return (
        "A guardian says the verification of your plan is a mistake",
        f"{_guardian(d)}, one of your guardians, told us this verification is a mistake: they know you are "
        f"alive or able to act.{_note(d)}{took_back} While their objection stands, your plan is not released "
        "when the deadline passes: it waits until enough guardians approve or you check in. If enough "
        "guardians approve, it is still released after your cancel window. If you are well, please check "
        "in now (the link below): it ends this verification, and nothing is released.",
    )


def _guardian_objected_guardian(d: Delivery, links: dict[str, str]) -> tuple[str, str]:
    owner = _owner(d=d)
    return (
        f"A guardian says {owner} is alive or able to act",
        f"{_guardian(d)}, another guardian of {owner}'s plan, told us this verification is a mistake: they "
        f"know {owner} is alive or able to act.{_note(d)} While their objection stands, the plan is not "
        f"released when the deadline passes; it is released only if enough guardians approve, and {owner} "
        "can stop everything by checking in. If you know more, your page lets you approve the release or "
        "object too. If you are unsure, do nothing.",
    )


def _withdrawn(d: Delivery) -> str:
    how = " and approved the release" if d["context"].get("approved") else ""
    return f"{_guardian(d)} has withdrawn their objection{how}."


def _objection_withdrawn(d: Delivery, links: dict[str, str]) -> tuple[str, str]:
    return (
        "A guardian has withdrawn their objection",
        f"{_withdrawn(d)} Your plan's verification goes on: unless another guardian objects, the deadline "
        "applies again. If you are well, please check in now (the link below): it ends this verification, "
        "and nothing is released.",
    )


def _objection_withdrawn_guardian(d: Delivery, links: dict[str, str]) -> tuple[str, str]:
    owner = _owner(d=d)
    return (
        f"A guardian of {owner}'s plan has withdrawn their objection",
        f"{_withdrawn(d)} The verification of {owner}'s plan goes on: unless another guardian objects, the "
        f"deadline applies again. {owner} can still stop everything by checking in.",
    )


TEMPLATES: dict[str, Template] = {
    "guardian_objected": _guardian_objected,
    "guardian_objected_guardian": _guardian_objected_guardian,
    "objection_withdrawn": _objection_withdrawn,
    "objection_withdrawn_guardian": _objection_withdrawn_guardian,
}
