"""A corrected heir address, in words: to the owner before the release (a guardian proposes, the
owner decides); after it, to the guardians (agree, or stop it), to the heir at their old address
and to the other heirs during the hold, the confirmation link to the new address, and to the
guardians when that link reached nobody who could confirm it."""

from __future__ import annotations

from markupsafe import Markup

from core.text.markup import _, escaped
from models.address_links import unreachable
from models.delivery.deliveries import Delivery
from models.mail.texts.common import (
    ANOTHER_GUARDIAN,
    GUARDIAN,
    HEIR,
    ONE_OF_THE_BENEFICIARIES,
    OWNER,
    Kind,
    when,
)
from models.mail.texts.common import owner_name as _owner


def _heir(d: Delivery) -> str:
    return d["subject_name"] or _(ONE_OF_THE_BENEFICIARIES)


def _address(d: Delivery) -> str:
    return d["context"].get("proposed") or _("an address we could not read")


def _proposed(d: Delivery, links: dict[str, Markup]) -> tuple[Markup, Markup]:
    guardian, heir = d["about_guardian_name"], _heir(d)
    if guardian:
        subject = _("{guardian} suggests a new address for {heir}")
        told = _(
            "{guardian}, one of your guardians, tells us that the email address you gave for {heir} may "
            "be wrong, and suggests this one instead:\n\n{address}"
        )
    else:
        subject = _("One of your guardians suggests a new address for {heir}")
        told = _(
            "One of your guardians tells us that the email address you gave for {heir} may be wrong, and "
            "suggests this one instead:\n\n{address}"
        )
    return (
        subject.format(guardian=guardian, heir=heir),
        told.format(guardian=guardian, heir=heir, address=_address(d))
        + "\n\n"
        + _(
            "Nothing changes unless you change it. If it is right, edit {heir}'s address in your plan; if "
            "it is not, you need do nothing."
        ).format(heir=heir),
    )


def _change_proposed(d: Delivery, links: dict[str, Markup]) -> tuple[Markup, Markup]:
    heir = _heir(d)
    return (
        _("A new address is proposed for {heir}").format(heir=heir),
        _(
            "Another guardian of {owner}'s plan proposes a new email address for {heir}, whose link could "
            "not reach them. It needs the agreement of enough guardians before anything changes. If you "
            "know the address is right, agree to it from your page; if you have any doubt, you can stop it "
            "there."
        ).format(owner=_owner(d=d), heir=heir),
    )


def _holding(d: Delivery, links: dict[str, Markup]) -> tuple[Markup, Markup]:
    until = when(value=d["context"].get("holdUntil"))
    owner, heir = _owner(d=d), _heir(d)
    if d["recipient_type"] == "guardian":
        return (
            _("{heir}'s address changes on {until} unless a guardian stops it").format(
                heir=heir, until=until
            ),
            _(
                "Enough guardians of {owner}'s plan agreed to a new email address for {heir}. It waits "
                "until {until}: until then any guardian, you included, can stop it from their page. After "
                "that, the new address is asked to confirm, and only then is the link sent there."
            ).format(owner=owner, heir=heir, until=until),
        )
    if "stop" in links or "doubt" in links:
        return _to_heirs(d, links, until=until)
    if d["beneficiary_id"] == d["context"].get("beneficiaryId"):
        return (
            _("Your address for a legacy plan is about to change"),
            _(
                "The guardians of {owner}'s plan agreed to send your link to another email address, "
                "because they believe this one no longer reaches you. It changes on {until}. If this "
                "address is still yours and you did not ask for this, please contact one of the guardians "
                "and ask them to stop it: any of them can, until then."
            ).format(owner=owner, until=until),
        )
    return (
        _("{heir}'s address is about to change").format(heir=heir),
        _(
            "The guardians of {owner}'s plan agreed to send {heir}'s link to a new email address. It "
            "changes on {until}, unless a guardian stops it. We tell every beneficiary, so that nobody is "
            "surprised; there is nothing you need to do."
        ).format(owner=owner, heir=heir, until=until),
    )


def _to_heirs(d: Delivery, links: dict[str, Markup], *, until: Markup) -> tuple[Markup, Markup]:
    """The heirs' email while a change holds: the heir concerned can stop it from here; another heir
    can only say it looks wrong (models.plan.guardianships.heir_stops)."""
    owner, heir = _owner(d=d), _heir(d)
    if "stop" in links:
        return (
            _("Your address for a legacy plan is about to change"),
            _("From {until}, your link would go to a new address that the guardians chose.").format(
                until=until
            )
            + " "
            + _(
                "The guardians of {owner}'s plan believe this address no longer reaches you. If it is still "
                "yours, stop the change here (one button): it ends, your link stays at this address, and the "
                "guardians are told. It works until the new address is confirmed:\n\n{link}"
            ).format(owner=owner, link=links["stop"]),
        )
    return (
        _("{heir}'s address is about to change").format(heir=heir),
        _("From {until}, {heir}'s link would go to a new address that the guardians chose.").format(
            until=until, heir=heir
        )
        + " "
        + _(
            "Only {heir} and the guardians of {owner}'s plan can stop it. If it looks wrong to you, say so "
            "here: the guardians and {heir} are told, and the change waits 7 days longer (once). Otherwise "
            "there is nothing you need to do:\n\n{link}"
        ).format(heir=heir, owner=owner, link=links["doubt"]),
    )


def _doubted(d: Delivery, links: dict[str, Markup]) -> tuple[Markup, Markup]:
    until, owner, heir = when(value=d["context"].get("holdUntil")), _owner(d=d), _heir(d)
    if d["recipient_type"] == "guardian":
        return (
            _("A beneficiary says {heir}'s new address looks wrong").format(heir=heir),
            _(
                "Another beneficiary of {owner}'s plan says the new email address the guardians agreed for "
                "{heir} looks wrong. The change now waits until {until}. If you have any doubt, stop it from "
                "your page; {heir} can stop it too, from their current address."
            ).format(owner=owner, heir=heir, until=until),
        )
    said = _(
        "Another beneficiary of {owner}'s plan says the new email address the guardians agreed for you "
        "looks wrong, so we tell you again: from {until}, your link would go to a new address that the "
        "guardians chose."
    ).format(owner=owner, until=until)
    if "stop" in links:
        said += " " + _(
            "If this address is still yours, stop the change here (one button): it ends, and your link "
            "stays at this address:\n\n{link}"
        ).format(link=links["stop"])
    return (_("Your address for a legacy plan is about to change"), said)


def _stopped(d: Delivery, links: dict[str, Markup]) -> tuple[Markup, Markup]:
    guardian, heir = d["about_guardian_name"] or _(ANOTHER_GUARDIAN), _heir(d)
    if d["context"].get("byHeir"):
        return (
            _("The new address for {heir} was stopped").format(heir=heir),
            _(
                "{heir} stopped the new email address proposed for them in {owner}'s plan, from the address "
                "we already had. Nothing changed: their link stays at that address."
            ).format(heir=heir, owner=_owner(d=d)),
        )
    return (
        _("The new address for {heir} was stopped").format(heir=heir),
        _(
            "{guardian} stopped the new email address proposed for {heir} in {owner}'s plan. Nothing "
            "changed. If you know the right address, you can propose it again from your page."
        ).format(guardian=guardian, heir=heir, owner=_owner(d=d)),
    )


def _undeliverable(d: Delivery, links: dict[str, Markup]) -> tuple[Markup, Markup]:
    heir = _heir(d)
    return (
        _("The new address for {heir} could not be reached").format(heir=heir),
        escaped(unreachable(name=heir, short=bool(d.get("short_of_guardians")))),
    )


def _confirmation(d: Delivery, links: dict[str, Markup]) -> tuple[Markup, Markup]:
    owner = _owner(d=d)
    return (
        _("Please confirm this address to receive what {owner} left you").format(owner=owner),
        _(
            "The guardians of {owner}'s plan told us that this is now your email address. If it is, "
            "please confirm it here (one button), and your link will be sent to it:\n\n{link}\n\n"
            "If you do not know {owner}, or this is not your address, you can ignore this email: nothing "
            "happens unless you press the button."
        ).format(owner=owner, link=links["address_confirmation"]),
    )


# An heir's "Stop" (the heir concerned) or "This looks wrong" (every other heir) while a change
# holds (models.address_links.heir_links).
_HEIR_LINKS = ("stop", "doubt")
KINDS: dict[str, Kind] = {
    "address_proposed": Kind(_proposed, audience=(OWNER,)),
    "address_change_proposed": Kind(_change_proposed, audience=(GUARDIAN,), footers=("guardian_page",)),
    "address_change_holding": Kind(
        _holding, audience=(GUARDIAN, HEIR), links=_HEIR_LINKS, footers=("guardian_page",)
    ),
    "address_change_stopped": Kind(_stopped, audience=(GUARDIAN,), footers=("guardian_page",)),
    "address_change_doubted": Kind(
        _doubted, audience=(GUARDIAN, HEIR), links=_HEIR_LINKS, footers=("guardian_page",)
    ),
    "address_change_undeliverable": Kind(_undeliverable, audience=(GUARDIAN,), footers=("guardian_page",)),
    "address_confirmation": Kind(
        _confirmation, audience=(HEIR,), links=("address_confirmation",), footers=("unknown",)
    ),
}
