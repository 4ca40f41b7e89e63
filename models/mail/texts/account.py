"""The owner's emails about their account: the digest of changes to their plan and account, and
their address changed. Each says what changed and, if it was not them, what to do first (check
in, then take the account back): someone else may hold their wallet's key."""

from __future__ import annotations

from markupsafe import Markup

from core.text import i18n
from core.text.i18n import N_
from core.text.markup import _, ngettext
from models.delivery.deliveries import Delivery
from models.mail.texts.common import OWNER, Kind
from models.mail.texts.common import when as _when

# The owner's digest of changes (models.delivery.owner_notices): each line names the person and what
# changed about them; never an address or any other value. {when} is the moment of the change.
_CHANGES = {
    "beneficiary_added": N_("{when} — {name}: added as a beneficiary."),
    "beneficiary_removed": N_("{when} — {name}: removed from your beneficiaries."),
    "beneficiary_email": N_("{when} — {name} (beneficiary): email address changed."),
    "beneficiary_wallet": N_("{when} — {name} (beneficiary): Stellar wallet changed."),
    "guardian_added": N_("{when} — {name}: added as a guardian (and invited)."),
    "guardian_removed": N_("{when} — {name}: removed from your guardians."),
    "guardian_email": N_("{when} — {name} (guardian): email address changed."),
    "guardian_wallet": N_(
        "{when} — {name} (guardian): Stellar wallet changed (they are asked to accept again)."
    ),
    "guardian_reinvited": N_(
        "{when} — {name} (guardian): invited again with a new link (old passkeys stop working)."
    ),
    "wallet_linked": N_("{when} — The wallet {name}: linked to your account (it can now sign in as you)."),
    "wallet_removed": N_("{when} — The wallet {name}: removed from your account; every session was ended."),
    "owner_email": N_(
        "{when} — Your email address: changed to this one (the previous address was told too)."
    ),
    "signed_in_wallet": N_("{when} — Someone signed in to your plan's pages with the wallet {name}."),
    "signed_in_passkey": N_("{when} — Someone signed in to your plan's pages with one of your passkeys."),
}
_CHANGED = N_("{when} — Your plan: changed.")


def _if_not_you(links: dict[str, Markup]) -> Markup:
    if links.get("app"):
        return _(
            "If this was you, there is nothing to do. If it was not, someone else may hold your "
            "wallet's key. First check in with the link below: it keeps your plan from being released "
            "while you put this right. Then sign in at {app} with a wallet only you hold, sign out "
            "everywhere (every session ends), remove any wallet you do not recognise, and review your "
            "beneficiaries and guardians."
        ).format(app=links["app"])
    return _(
        "If this was you, there is nothing to do. If it was not, someone else may hold your wallet's "
        "key. First check in with the link below: it keeps your plan from being released while you put "
        "this right. Then sign in with a wallet only you hold, sign out everywhere (every session "
        "ends), remove any wallet you do not recognise, and review your beneficiaries and guardians."
    )


def _account_changes(d: Delivery, links: dict[str, Markup]) -> tuple[Markup, Markup]:
    changes = d["context"].get("changes", [])
    lines = []
    for change in changes:
        line = _CHANGES.get(change.get("what", ""), _CHANGED)
        # A name sealed under a key retired since.
        name = change.get("name") or _("(name unavailable)")
        lines.append(_(line).format(when=_when(value=change.get("at")), name=name))
    subject = ngettext(
        "A change to your legacy plan", "{count} changes to your legacy plan", len(lines)
    ).format(count=i18n.number(len(lines)))
    return (
        subject,
        _("Your legacy plan or account changed:")
        + "\n\n"
        + Markup("\n\n").join(lines)
        + "\n\n"
        + _if_not_you(links),
    )


def _owner_email_changed(d: Delivery, links: dict[str, Markup]) -> tuple[Markup, Markup]:
    return (
        _("The email address of your legacy plan was changed"),
        _(
            "On {when} the email address of your legacy plan account was changed from this one to another "
            "address; our emails about your plan now go there."
        ).format(when=_when(value=d["context"].get("at")))
        + " "
        + _if_not_you(links),
    )


# Both end with the owner's check-in link (models.check_in_links.KINDS).
KINDS: dict[str, Kind] = {
    "account_changes": Kind(_account_changes, audience=(OWNER,), links=("app",), footers=("check_in",)),
    "owner_email_changed": Kind(
        _owner_email_changed, audience=(OWNER,), links=("app",), footers=("check_in",)
    ),
}
