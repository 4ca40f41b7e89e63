"""A guardian's suggestion to the owner, before the release, that the address of someone the owner
chose may be wrong (models.plan.guardianships.address_suggestions): the guardian is not shown the
heirs, so the email names the person as the guardian wrote it, and the owner decides."""

from __future__ import annotations

from markupsafe import Markup

from core.text.markup import _
from models.delivery.deliveries import Delivery
from models.mail.texts.common import OWNER, Kind


def _suggested(d: Delivery, links: dict[str, Markup]) -> tuple[Markup, Markup]:
    guardian, context = d["about_guardian_name"], d["context"]
    heir = context.get("heir_name") or _("someone you chose")
    address = context.get("proposed") or _("an address we could not read")
    if guardian:
        subject = _("{guardian} says an address in your plan may be wrong")
        told = _(
            "{guardian}, one of your guardians, tells us that the email address you gave for the person "
            "they know as {heir} may be wrong, and suggests this one instead:\n\n{address}"
        )
    else:
        subject = _("One of your guardians says an address in your plan may be wrong")
        told = _(
            "One of your guardians tells us that the email address you gave for the person they know as "
            "{heir} may be wrong, and suggests this one instead:\n\n{address}"
        )
    text = told.format(guardian=guardian, heir=heir, address=address)
    if context.get("note"):
        # Translators: a person's own words quoted; use the quotation marks of your language.
        text += "\n\n" + _('They wrote: "{note}"').format(note=context["note"])
    text += "\n\n" + _(
        "Guardians are not shown whom you chose, so they name the person as they know them. Nothing "
        "changes unless you change it: if the address is right, edit that person's address in your plan; "
        "if it is not, you need do nothing."
    )
    return subject.format(guardian=guardian), text


KINDS: dict[str, Kind] = {"address_suggested": Kind(_suggested, audience=(OWNER,))}
