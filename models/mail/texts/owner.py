"""The owner's emails, by kind: check-in reminders, a verification started, approvals and the
release ahead, what their guardians did (declined, fell silent, a bounced invitation), a damaged
file, and the digest of changes to their plan and account. They change with what the owner is
told, in the owner's own words ("your plan")."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from core.text.i18n import _
from models.delivery.deliveries import Delivery
from models.mail.texts.common import Template
from models.mail.texts.common import when as _when

# What a guardian reported, in the words each email uses (plans.REPORT_REASONS; None: no reason
# given, or no report at all). Sympathy only when a death was reported.
_TO_OWNER = {
    "death": "One of your guardians reported your death.",
    "incapacity": "One of your guardians reported that you can no longer act for yourself.",
    "unreachable": "One of your guardians reported that they cannot reach you.",
}


def _check_in_reminder(d: Delivery, links: dict[str, str]) -> tuple[str, str]:
    ctx = d["context"]
    return (
        "A gentle reminder to check in",
        f"Your plan asks you to check in by {_when(value=ctx.get('dueAt'))}. "
        "Signing in with your wallet is enough, and so is the link below.",
    )


def _grace_started(d: Delivery, links: dict[str, str]) -> tuple[str, str]:
    ctx = d["context"]
    return (
        "We haven't heard from you",
        "Your check-in is overdue. If you do not check in by "
        f"{_when(value=ctx.get('verificationAt'))}, we will ask your guardians to confirm you are well. "
        "Signing in with your wallet, or the link below, is enough to stop this.",
    )


def _verification_started(d: Delivery, links: dict[str, str]) -> tuple[str, str]:
    reason = d["context"].get("reason")
    why = (
        _TO_OWNER.get(
            d["report_reason"] or "", "One of your guardians told us you may have died or can no longer act."
        )
        if reason == "guardian_report"
        else f"{d['subject_name'] or 'One of your beneficiaries'}, whom you named in your plan, asked us to "
        "verify whether you have died or can no longer act."
        if reason == "beneficiary_request"
        else "We have not heard from you for longer than your plan allows."
    )
    return (
        "Your guardians have been asked to verify your plan",
        f"{why} Your guardians are now being asked to confirm. If you are well, please check in with "
        "the link below: it stops everything, and nothing will be released. Signing in alone does not "
        "stop it.",
    )


def _plan_approved(d: Delivery, links: dict[str, str]) -> tuple[str, str]:
    when = _when(value=d["context"].get("releaseAt"))
    subject = _("Your plan will be released unless you check in")
    if d["context"].get("onchain"):
        return (
            subject,
            _(
                "Your guardians have approved the release of your plan. If you do not check in by "
                "{when}, each beneficiary will be sent their link, and the release happens when one of "
                "them confirms it with their wallet. If you are well, check in now to stop it."
            ).format(when=when),
        )
    return (
        subject,
        _(
            "Your guardians have approved the release of your plan. It will be released on {when}. If "
            "you are well, check in now to stop it."
        ).format(when=when),
    )


def _plan_ready(d: Delivery, links: dict[str, str]) -> tuple[str, str]:
    return (
        "Your plan is ready to be released",
        "Your cancel window has ended. Each of your beneficiaries has been sent their link, and your plan "
        "is released when one of them confirms it with their wallet. If you are well, check in now: it "
        "still stops everything.",
    )


def _guardian_unresponsive(d: Delivery, links: dict[str, str]) -> tuple[str, str]:
    name = d["about_guardian_name"] or "One of your guardians"
    return (
        f"{name} has not confirmed they can still act",
        f"We asked {name} on {_when(value=d['context'].get('askedAt'))}"
        " to confirm that they can still act as a "
        "guardian of your plan, and they have not answered. They may have changed their email address, "
        "lost the wallet you recorded for them, or be unable to act. You may want to ask them, update "
        "their details, or add another guardian. We will not write to you about this again unless they "
        "confirm and later fall silent.",
    )


def _short(ctx: dict[str, Any]) -> str:
    """Whether the accepted guardians still reach the approvals the plan needs, in words."""
    accepted, needed = ctx.get("accepted"), ctx.get("needed")
    if accepted is None or needed is None:
        return ""
    if accepted >= needed:
        return f" Your plan can still be released: {accepted} guardians have accepted and it needs {needed}."
    have = "has" if accepted == 1 else "have"
    return (
        f" As things stand your plan cannot be released: only {accepted} of your guardians {have} "
        f"accepted, and it needs {needed} approvals. Add a guardian, or lower the number of approvals "
        "needed."
    )


def _guardian_declined(d: Delivery, links: dict[str, str]) -> tuple[str, str]:
    name = d["about_guardian_name"] or "One of your guardians"
    return (
        f"{name} declined to be your guardian",
        f"{name} has declined to be a guardian of your legacy plan. Guardians count only once they "
        "have accepted: you may want to ask someone else, or lower the number of approvals your plan "
        "needs." + _short(d["context"]),
    )


def _guardians_short(d: Delivery, links: dict[str, str]) -> tuple[str, str]:
    if d["context"].get("cause") == "added":
        return (
            "Your plan needs more guardians to accept",
            "You added a guardian, so your plan now needs more approvals to be released, and the new "
            "guardian has not accepted yet." + _short(d["context"]),
        )
    return ("Your plan needs more guardians", "You removed a guardian." + _short(d["context"]))


def _deadline_warning(d: Delivery, links: dict[str, str]) -> tuple[str, str]:
    ctx = d["context"]
    when = _when(value=ctx.get("deadlineAt"))
    asked = (
        f"On {_when(value=ctx.get('startedAt'))} we asked your guardians to confirm whether you have died or "
        "can no longer act, and not enough of them have answered."
    )
    # "As you chose" only when the owner set the deadline or what happens at it (deadline_chosen_at).
    what = (
        f"As you chose, if nothing changes your plan will be released after {when}."
        if ctx.get("deadlineChosen", True)
        else f"If nothing changes, your plan will be released after {when}: every plan is set this way "
        "unless its owner chooses otherwise."
    )
    if ctx.get("stage") == "final":
        return (
            "Last warning: your plan will be released unless you check in",
            f"{asked} {what} This is our last warning before then. If you are well, check in now: it stops "
            "everything.",
        )
    return (
        "Your plan will be released unless you check in",
        f"{asked} {what} We will warn you once more before then. If you are well, check in now: it stops "
        "everything.",
    )


def _verification_timeout(d: Delivery, links: dict[str, str]) -> tuple[str, str]:
    chosen = d["context"].get("deadlineChosen", True)
    asked = (
        "We asked your guardians to confirm, and by the deadline you chose not enough of them had approved."
        if chosen
        else "We asked your guardians to confirm, and by the deadline not enough of them had approved."
    )
    if d["context"].get("outcome") == "release":
        release_at = _when(value=d["context"].get("releaseAt"))
        return (
            "Your plan will be released unless you check in",
            f"{asked} As you chose, your plan will be released on {release_at}. If you are well, check in "
            "now to stop it."
            if chosen
            else f"{asked} Your plan will be released on {release_at}: every plan is set this way unless its "
            "owner chooses otherwise. If you are well, check in now to stop it.",
        )
    if d["context"].get("objected"):
        return (
            "Your plan is still waiting for your guardians",
            f"{asked} A guardian objects, saying you are alive or able to act, so your plan is not released: "
            "it goes on waiting until enough guardians approve or you check in. If you are well, check in to "
            "end this verification.",
        )
    return (
        "Your plan is still waiting for your guardians",
        f"{asked} As you chose, the plan goes on waiting: nothing is released until enough guardians "
        "approve. If you are well, check in to end this verification."
        if chosen
        else f"{asked} The plan goes on waiting, as every plan is set unless its owner chooses otherwise: "
        "nothing is released until enough guardians approve. If you are well, check in to end this "
        "verification.",
    )


def _guardian_email_bounced(d: Delivery, links: dict[str, str]) -> tuple[str, str]:
    guardian = d["about_guardian_name"] or "One of your guardians"
    spam = d["context"].get("outcome") == "complained"
    what = "was marked as spam by its recipient" if spam else "could not be delivered: the address refused it"
    return (
        f"Your invitation to {guardian} did not reach them",
        f"The email asking {guardian} to be a guardian of your plan {what}. Until they answer it they "
        "cannot confirm a release. Please check the address you gave for them (correct it and invite them "
        "again), or tell them to look for it in their spam folder.",
    )


def _recipient_unknown(d: Delivery, links: dict[str, str]) -> tuple[str, str]:
    """Someone the owner emailed through the service pressed "I don't know this person"."""
    if d["context"].get("guardianId"):
        who, why = d["about_guardian_name"] or "one of your guardians", "to ask them to be a guardian"
    else:
        who, why = d["subject_name"] or "one of your beneficiaries", "to confirm their address"
    return (
        f"An email to {who} was refused",
        f"We emailed {who} at the address you gave for them, {why}. The person who received it told us "
        "they do not know you, so nothing more will be sent from your account to that address.\n\n"
        "If the address was wrong, correct it in your plan: the new address is asked again. If it was "
        "right, please speak to them. If you did not add this person yourself, someone else may be "
        "using your account: sign in with a wallet only you hold and sign out everywhere.",
    )


def _archive_item_damaged(d: Delivery, links: dict[str, str]) -> tuple[str, str]:
    ctx = d["context"]
    kind = {"photo": "photo", "video": "video", "voice": "voice recording"}.get(
        ctx.get("itemType", ""), "file"
    )
    uploaded = (
        datetime.fromisoformat(ctx["uploadedAt"]).strftime("%d %B %Y") if ctx.get("uploadedAt") else "earlier"
    )
    size = ctx.get("sizeBytes")
    how_big = f" ({size / 1_000_000:.1f} MB)" if isinstance(size, int) and size >= 100_000 else ""
    return (
        "Please upload a file in your plan again",
        f"Our regular check of the files kept for your plan found that the {kind} you uploaded on "
        f'{uploaded}{how_big} can no longer be read whole from storage. It is marked "damaged" in your '
        "archive, and your heirs would see it listed as damaged instead of receiving it.\n\n"
        "Please re-upload this file: delete the damaged item, then upload the file again from your own "
        "copy. We will remind you at most once a week while it stays damaged.",
    )


# The owner's digest of changes (models.delivery.owner_notices): each line names the person and what
# changed about them; never an address or any other value.
_CHANGES = {
    "beneficiary_added": ("{name}", "added as a beneficiary"),
    "beneficiary_removed": ("{name}", "removed from your beneficiaries"),
    "beneficiary_email": ("{name} (beneficiary)", "email address changed"),
    "beneficiary_wallet": ("{name} (beneficiary)", "Stellar wallet changed"),
    "guardian_added": ("{name}", "added as a guardian (and invited)"),
    "guardian_removed": ("{name}", "removed from your guardians"),
    "guardian_email": ("{name} (guardian)", "email address changed"),
    "guardian_wallet": ("{name} (guardian)", "Stellar wallet changed (they are asked to accept again)"),
    "guardian_reinvited": ("{name} (guardian)", "invited again with a new link (old passkeys stop working)"),
    "wallet_linked": ("The wallet {name}", "linked to your account (it can now sign in as you)"),
    "wallet_removed": ("The wallet {name}", "removed from your account; every session was ended"),
    "owner_email": ("Your email address", "changed to this one (the previous address was told too)"),
}


def _if_not_you(links: dict[str, str]) -> str:
    then = (
        f"Then sign in at {links['app']} with a wallet only you hold, sign out everywhere (every session "
        "ends), remove any wallet you do not recognise, and review your beneficiaries and guardians."
        if links.get("app")
        else "Then sign in with a wallet only you hold, sign out everywhere (every session ends), remove "
        "any wallet you do not recognise, and review your beneficiaries and guardians."
    )
    return (
        "If this was you, there is nothing to do. If it was not, someone else may hold your wallet's key. "
        "First check in with the link below: it keeps your plan from being released while you put this "
        f"right. {then}"
    )


def _account_changes(d: Delivery, links: dict[str, str]) -> tuple[str, str]:
    changes = d["context"].get("changes", [])
    lines = []
    for change in changes:
        who, what = _CHANGES.get(change.get("what", ""), ("Your plan", "changed"))
        name = change.get("name") or "(name unavailable)"  # sealed under a key retired since
        lines.append(f"{_when(value=change.get('at'))} — {who.format(name=name)}: {what}.")
    subject = (
        "A change to your legacy plan" if len(lines) == 1 else f"{len(lines)} changes to your legacy plan"
    )
    return (
        subject,
        "Your legacy plan or account changed:\n\n" + "\n\n".join(lines) + "\n\n" + _if_not_you(links),
    )


def _owner_email_changed(d: Delivery, links: dict[str, str]) -> tuple[str, str]:
    return (
        "The email address of your legacy plan was changed",
        f"On {_when(value=d['context'].get('at'))}"
        " the email address of your legacy plan account was changed from "
        "this one to another address; our emails about your plan now go there. " + _if_not_you(links),
    )


TEMPLATES: dict[str, Template] = {
    "check_in_reminder": _check_in_reminder,
    "grace_started": _grace_started,
    "verification_started": _verification_started,
    "plan_approved": _plan_approved,
    "plan_ready": _plan_ready,
    "guardian_unresponsive": _guardian_unresponsive,
    "guardian_declined": _guardian_declined,
    "guardians_short": _guardians_short,
    "deadline_warning": _deadline_warning,
    "verification_timeout": _verification_timeout,
    "guardian_email_bounced": _guardian_email_bounced,
    "recipient_unknown": _recipient_unknown,
    "archive_item_damaged": _archive_item_damaged,
    "account_changes": _account_changes,
    "owner_email_changed": _owner_email_changed,
}
