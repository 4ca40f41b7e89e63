"""A corrected heir address, in words: to the owner before the release (a guardian proposes, the
owner decides); after it, to the guardians (agree, or stop it), to the heir at their old address
and to the other heirs during the hold, and the confirmation link to the new address."""

from __future__ import annotations

from models.delivery.deliveries import Delivery
from models.mail.texts.common import Template, when
from models.mail.texts.common import owner_name as _owner


def _heir(d: Delivery) -> str:
    return d["subject_name"] or "one of the beneficiaries"


def _address(d: Delivery) -> str:
    return str(d["context"].get("proposed") or "an address we could not read")


def _proposed(d: Delivery, links: dict[str, str]) -> tuple[str, str]:
    guardian = d["about_guardian_name"] or "One of your guardians"
    return (
        f"{guardian} suggests a new address for {_heir(d)}",
        f"{guardian}, one of your guardians, tells us that the email address you gave for {_heir(d)} may be "
        f"wrong, and suggests this one instead:\n\n{_address(d)}\n\nNothing changes unless you change "
        f"it. If it is right, edit {_heir(d)}'s address in your plan; if it is not, you need do nothing.",
    )


def _change_proposed(d: Delivery, links: dict[str, str]) -> tuple[str, str]:
    return (
        f"A new address is proposed for {_heir(d)}",
        f"Another guardian of {_owner(d=d)}'s plan proposes a new email address for {_heir(d)}, whose link "
        "could not reach them. It needs the agreement of enough guardians before anything changes. If you "
        "know the address is right, agree to it from your page; if you have any doubt, you can stop it "
        "there.",
    )


def _holding(d: Delivery, links: dict[str, str]) -> tuple[str, str]:
    until = when(value=d["context"].get("holdUntil"))
    if d["recipient_type"] == "guardian":
        return (
            f"{_heir(d)}'s address changes on {until} unless a guardian stops it",
            f"Enough guardians of {_owner(d=d)}'s plan agreed to a new email address for {_heir(d)}. "
            f"It waits until {until}: until then any guardian, you included, can stop it from their page. "
            "After that, the new address is asked to confirm, and only then is the link sent there.",
        )
    if d["beneficiary_id"] == d["context"].get("beneficiaryId"):
        return (
            "Your address for a legacy plan is about to change",
            f"The guardians of {_owner(d=d)}'s plan agreed to send your link to another email address, "
            f"because they believe this one no longer reaches you. It changes on {until}. If this address "
            "is still yours and you did not ask for this, please contact one of the guardians and ask them "
            "to stop it: any of them can, until then.",
        )
    return (
        f"{_heir(d)}'s address is about to change",
        f"The guardians of {_owner(d=d)}'s plan agreed to send {_heir(d)}'s link to a new email address. It "
        f"changes on {until}, unless a guardian stops it. We tell every beneficiary, so that nobody is "
        "surprised; there is nothing you need to do.",
    )


def _stopped(d: Delivery, links: dict[str, str]) -> tuple[str, str]:
    guardian = d["about_guardian_name"] or "Another guardian"
    return (
        f"The new address for {_heir(d)} was stopped",
        f"{guardian} stopped the new email address proposed for {_heir(d)} in {_owner(d=d)}'s plan. Nothing "
        "changed. If you know the right address, you can propose it again from your page.",
    )


def _confirmation(d: Delivery, links: dict[str, str]) -> tuple[str, str]:
    return (
        f"Please confirm this address to receive what {_owner(d=d)} left you",
        f"The guardians of {_owner(d=d)}'s plan told us that this is now your email address. If it is, "
        f"please confirm it here (one button), and your link will be sent to it:\n\n{links['confirm']}\n\n"
        f"If you do not know {_owner(d=d)}, or this is not your address, you can ignore this email: nothing "
        "happens unless you press the button.",
    )


TEMPLATES: dict[str, Template] = {
    "address_proposed": _proposed,
    "address_change_proposed": _change_proposed,
    "address_change_holding": _holding,
    "address_change_stopped": _stopped,
    "address_confirmation": _confirmation,
}
