"""A corrected heir address, in words: to the owner before the release (a guardian proposes, the
owner decides); after it, to the guardians (agree, or stop it), to the heir at their old address
and to the other heirs during the hold, the confirmation link to the new address, and to the
guardians when that link reached nobody who could confirm it. Their words:
models/mail/templates/kinds/<kind>.html."""

from __future__ import annotations

from models.mail.texts.common import GUARDIAN, HEIR, OWNER, Kind

# An heir's "Stop" (the heir concerned) or "This looks wrong" (every other heir) while a change
# holds (models.address_links.heir_links).
_HEIR_LINKS = ("stop", "doubt")
KINDS: dict[str, Kind] = {
    "address_proposed": Kind("kinds/address_proposed.html", audience=(OWNER,)),
    "address_change_proposed": Kind(
        "kinds/address_change_proposed.html", audience=(GUARDIAN,), footers=("guardian_page",)
    ),
    "address_change_holding": Kind(
        "kinds/address_change_holding.html",
        audience=(GUARDIAN, HEIR),
        links=_HEIR_LINKS,
        footers=("guardian_page",),
    ),
    "address_change_stopped": Kind(
        "kinds/address_change_stopped.html", audience=(GUARDIAN,), footers=("guardian_page",)
    ),
    "address_change_doubted": Kind(
        "kinds/address_change_doubted.html",
        audience=(GUARDIAN, HEIR),
        links=_HEIR_LINKS,
        footers=("guardian_page",),
    ),
    "address_change_undeliverable": Kind(
        "kinds/address_change_undeliverable.html", audience=(GUARDIAN,), footers=("guardian_page",)
    ),
    "address_confirmation": Kind(
        "kinds/address_confirmation.html",
        audience=(HEIR,),
        links=("address_confirmation",),
        footers=("unknown",),
    ),
}
