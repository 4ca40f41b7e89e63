"""The owner's emails, by kind: check-in reminders, a verification started, approvals and the
release ahead, what their guardians did (declined, fell silent, a bounced invitation), a damaged
file (the digest of changes to their plan and account: `account`). They change with what the owner is
told, in the owner's own words ("your plan")."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from markupsafe import Markup

from core.text import i18n
from core.text.i18n import N_
from core.text.markup import _, ngettext
from models.delivery.deliveries import Delivery
from models.mail.texts.common import ONE_OF_YOUR_BENEFICIARIES, ONE_OF_YOUR_GUARDIANS, OWNER, Kind
from models.mail.texts.common import when as _when
from models.mail.texts.objections import lapses as objection_lapses

# What a guardian reported, in the words each email uses (plans.REPORT_REASONS; None: no reason
# given, or no report at all). Sympathy only when a death was reported.
_TO_OWNER = {
    "death": N_("One of your guardians reported your death."),
    "incapacity": N_("One of your guardians reported that you can no longer act for yourself."),
    "unreachable": N_("One of your guardians reported that they cannot reach you."),
}
_TO_OWNER_UNSAID = N_("One of your guardians told us you may have died or can no longer act.")


def _check_in_reminder(d: Delivery, links: dict[str, Markup]) -> tuple[Markup, Markup]:
    ctx = d["context"]
    return (
        _("A gentle reminder to check in"),
        _(
            "Your plan asks you to check in by {when}. Signing in with your wallet is enough, and so is "
            "the link below."
        ).format(when=_when(value=ctx.get("dueAt"))),
    )


def _grace_started(d: Delivery, links: dict[str, Markup]) -> tuple[Markup, Markup]:
    ctx = d["context"]
    return (
        _("We haven't heard from you"),
        _(
            "Your check-in is overdue. If you do not check in by {when}, we will ask your guardians to "
            "confirm you are well. Signing in with your wallet, or the link below, is enough to stop this."
        ).format(when=_when(value=ctx.get("verificationAt"))),
    )


def _verification_started(d: Delivery, links: dict[str, Markup]) -> tuple[Markup, Markup]:
    reason = d["context"].get("reason")
    if reason == "guardian_report":
        why = _(_TO_OWNER.get(d["report_reason"] or "", _TO_OWNER_UNSAID))
    elif reason == "beneficiary_request":
        why = (
            _(
                "{heir}, whom you named in your plan, asked us to verify whether you have died or can no "
                "longer act."
            ).format(heir=d["subject_name"])
            if d["subject_name"]
            else _(
                "One of your beneficiaries, whom you named in your plan, asked us to verify whether you "
                "have died or can no longer act."
            )
        )
    else:
        why = _("We have not heard from you for longer than your plan allows.")
    return (
        _("Your guardians have been asked to verify your plan"),
        why
        + " "
        + _(
            "Your guardians are now being asked to confirm. If you are well, please check in with the "
            "link below: it stops everything, and nothing will be released. Signing in alone does not "
            "stop it."
        )
        + _your_deadline(d=d),
    )


def _your_deadline(*, d: Delivery) -> Markup:
    """What this round's deadline does, told to the owner when it starts, in their zone (context
    from models.flows.release_path `deadline_facts`; nothing for a row written before it)."""
    ctx = d["context"]
    if "onTimeout" not in ctx:
        return Markup("")
    if ctx.get("deadlineAt") is None:
        return Markup(" ") + _("There is no deadline: nothing is released unless enough guardians approve.")
    at = _when(value=ctx["deadlineAt"])
    if ctx["onTimeout"] == "release":
        return Markup(" ") + _(
            "If not enough guardians approve by {at}, your plan will be released then all the same, "
            "unless you check in before then or a guardian objects."
        ).format(at=at)
    return Markup(" ") + _("If not enough guardians approve by {at}, your plan goes on waiting.").format(
        at=at
    )


def _plan_approved(d: Delivery, links: dict[str, Markup]) -> tuple[Markup, Markup]:
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


def _plan_ready(d: Delivery, links: dict[str, Markup]) -> tuple[Markup, Markup]:
    return (
        _("Your plan is ready to be released"),
        _(
            "Your cancel window has ended. Each of your beneficiaries has been sent their link, and your "
            "plan is released when one of them confirms it with their wallet. If you are well, check in "
            "now: it still stops everything."
        ),
    )


def _guardian_unresponsive(d: Delivery, links: dict[str, Markup]) -> tuple[Markup, Markup]:
    name = d["about_guardian_name"] or _(ONE_OF_YOUR_GUARDIANS)
    return (
        _("{name} has not confirmed they can still act").format(name=name),
        _(
            "We asked {name} on {when} to confirm that they can still act as a guardian of your plan, and "
            "they have not answered. They may have changed their email address, lost the wallet you "
            "recorded for them, or be unable to act. You may want to ask them, update their details, or "
            "add another guardian. We will not write to you about this again unless they confirm and "
            "later fall silent."
        ).format(name=name, when=_when(value=d["context"].get("askedAt"))),
    )


def _short(ctx: dict[str, Any]) -> str:
    """Whether the accepted guardians still reach the approvals the plan needs, in words."""
    accepted, needed = ctx.get("accepted"), ctx.get("needed")
    if accepted is None or needed is None:
        return ""
    counts = {"accepted": i18n.number(accepted), "needed": i18n.number(needed)}
    if accepted >= needed:
        # Translators: {needed} is the number of approvals the plan needs.
        still = ngettext(
            "Your plan can still be released: {accepted} guardian has accepted and it needs {needed}.",
            "Your plan can still be released: {accepted} guardians have accepted and it needs {needed}.",
            accepted,
        )
        return " " + still.format(**counts)
    # Translators: {needed} is a number of approvals; if your language's plural must agree with it,
    # write the number so that it reads for any count ("approvals needed: {needed}").
    cannot = ngettext(
        "As things stand your plan cannot be released: only {accepted} of your guardians has accepted, "
        "and it needs {needed} approvals.",
        "As things stand your plan cannot be released: only {accepted} of your guardians have accepted, "
        "and it needs {needed} approvals.",
        accepted,
    )
    return " " + cannot.format(**counts) + " " + _("Add a guardian, or lower the number of approvals needed.")


def _guardian_declined(d: Delivery, links: dict[str, Markup]) -> tuple[Markup, Markup]:
    name = d["about_guardian_name"] or _(ONE_OF_YOUR_GUARDIANS)
    return (
        _("{name} declined to be your guardian").format(name=name),
        _(
            "{name} has declined to be a guardian of your legacy plan. Guardians count only once they have "
            "accepted: you may want to ask someone else, or lower the number of approvals your plan needs."
        ).format(name=name)
        + _short(d["context"]),
    )


def _guardian_accepted(d: Delivery, links: dict[str, Markup]) -> tuple[Markup, Markup]:
    name = d["about_guardian_name"] or _(ONE_OF_YOUR_GUARDIANS)
    return (
        _("{name} accepted to be your guardian").format(name=name),
        _("{name} has accepted to be a guardian of your legacy plan.").format(name=name)
        + _short(d["context"]),
    )


def _plan_activated(d: Delivery, links: dict[str, Markup]) -> tuple[Markup, Markup]:
    ctx = d["context"]
    said = [
        _(
            "Your legacy plan is now active. From now on we expect you to check in by {when}, and then "
            "as often as your plan asks. If you do not, we remind you, then give you a grace period, and "
            "only then ask your guardians to confirm whether you have died or can no longer act."
        ).format(when=_when(value=ctx.get("dueAt")))
    ]
    days = ctx.get("deadlineDays")
    if ctx.get("onTimeout") == "release" and days:
        said.append(
            ngettext(
                "If not enough of them approve within {days} day of being asked, your plan is released all "
                "the same, unless you check in or a guardian objects.",
                "If not enough of them approve within {days} days of being asked, your plan is released all "
                "the same, unless you check in or a guardian objects.",
                int(days),
            ).format(days=i18n.number(int(days)))
        )
    elif "onTimeout" in ctx:
        said.append(_("Nothing is released unless enough of them approve."))
    said.append(
        _("Checking in stops everything at any time, and you can change your plan whenever you like.")
    )
    return (_("Your plan is active"), Markup(" ").join(said))


def _guardians_short(d: Delivery, links: dict[str, Markup]) -> tuple[Markup, Markup]:
    if d["context"].get("cause") == "added":
        return (
            _("Your plan needs more guardians to accept"),
            _(
                "You added a guardian, so your plan now needs more approvals to be released, and the new "
                "guardian has not accepted yet."
            )
            + _short(d["context"]),
        )
    return (_("Your plan needs more guardians"), _("You removed a guardian.") + _short(d["context"]))


def _deadline_warning(d: Delivery, links: dict[str, Markup]) -> tuple[Markup, Markup]:
    ctx = d["context"]
    when = _when(value=ctx.get("deadlineAt"))
    asked = _(
        "On {started} we asked your guardians to confirm whether you have died or can no longer act, and "
        "not enough of them have answered."
    ).format(started=_when(value=ctx.get("startedAt")))
    # "As you chose" only when the owner set the deadline or what happens at it (deadline_chosen_at).
    what = (
        _("As you chose, if nothing changes your plan will be released after {when}.")
        if ctx.get("deadlineChosen", True)
        else _(
            "If nothing changes, your plan will be released after {when}: every plan is set this way unless "
            "its owner chooses otherwise."
        )
    ).format(when=when)
    if ctx.get("stage") == "final":
        return (
            _("Last warning: your plan will be released unless you check in"),
            asked
            + " "
            + what
            + " "
            + _("This is our last warning before then. If you are well, check in now: it stops everything."),
        )
    return (
        _("Your plan will be released unless you check in"),
        asked
        + " "
        + what
        + " "
        + _("We will warn you once more before then. If you are well, check in now: it stops everything."),
    )


def _verification_timeout(d: Delivery, links: dict[str, Markup]) -> tuple[Markup, Markup]:
    chosen = d["context"].get("deadlineChosen", True)
    asked = (
        _(
            "We asked your guardians to confirm, and by the deadline you chose not enough of them had "
            "approved."
        )
        if chosen
        else _("We asked your guardians to confirm, and by the deadline not enough of them had approved.")
    )
    if d["context"].get("outcome") == "release":
        release_at = _when(value=d["context"].get("releaseAt"))
        then = (
            _("As you chose, your plan will be released on {when}. If you are well, check in now to stop it.")
            if chosen
            else _(
                "Your plan will be released on {when}: every plan is set this way unless its owner chooses "
                "otherwise. If you are well, check in now to stop it."
            )
        )
        return (
            _("Your plan will be released unless you check in"),
            asked + " " + then.format(when=release_at),
        )
    if d["context"].get("objected"):
        then = _(
            "A guardian objects, saying you are alive or able to act, so your plan is not released: it goes "
            "on waiting until enough guardians approve or you check in. If you are well, check in to end "
            "this verification."
        ) + objection_lapses(d=d, to_owner=True)
    elif chosen:
        then = _(
            "As you chose, the plan goes on waiting: nothing is released until enough guardians approve. If "
            "you are well, check in to end this verification."
        )
    else:
        then = _(
            "The plan goes on waiting, as every plan is set unless its owner chooses otherwise: nothing is "
            "released until enough guardians approve. If you are well, check in to end this verification."
        )
    return (_("Your plan is still waiting for your guardians"), asked + " " + then)


def _guardian_email_bounced(d: Delivery, links: dict[str, Markup]) -> tuple[Markup, Markup]:
    guardian = d["about_guardian_name"] or _(ONE_OF_YOUR_GUARDIANS)
    what = (
        _("The email asking {guardian} to be a guardian of your plan was marked as spam by its recipient.")
        if d["context"].get("outcome") == "complained"
        else _(
            "The email asking {guardian} to be a guardian of your plan could not be delivered: the address "
            "refused it."
        )
    )
    return (
        _("Your invitation to {guardian} did not reach them").format(guardian=guardian),
        what.format(guardian=guardian)
        + " "
        + _(
            "Until they answer it they cannot confirm a release. Please check the address you gave for them "
            "(correct it and invite them again), or tell them to look for it in their spam folder."
        ),
    )


def _recipient_unknown(d: Delivery, links: dict[str, Markup]) -> tuple[Markup, Markup]:
    """Someone the owner emailed through the service pressed "I don't know this person"."""
    if d["context"].get("guardianId"):
        who = d["about_guardian_name"] or _(ONE_OF_YOUR_GUARDIANS)
        emailed = _("We emailed {who} at the address you gave for them, to ask them to be a guardian.")
    else:
        who = d["subject_name"] or _(ONE_OF_YOUR_BENEFICIARIES)
        emailed = _("We emailed {who} at the address you gave for them, to confirm their address.")
    return (
        _("An email to {who} was refused").format(who=who),
        emailed.format(who=who)
        + " "
        + _(
            "The person who received it told us they do not know you, so nothing more will be sent from "
            "your account to that address.\n\n"
            "If the address was wrong, correct it in your plan: the new address is asked again. If it was "
            "right, please speak to them. If you did not add this person yourself, someone else may be "
            "using your account: sign in with a wallet only you hold and sign out everywhere."
        ),
    )


# What a damaged file was, in the sentence that says so (photo, video, voice recording, other).
_DAMAGED = {
    "photo": N_(
        "Our regular check of the files kept for your plan found that the photo you uploaded on "
        "{day}{size} can no longer be read whole from storage."
    ),
    "video": N_(
        "Our regular check of the files kept for your plan found that the video you uploaded on "
        "{day}{size} can no longer be read whole from storage."
    ),
    "voice": N_(
        "Our regular check of the files kept for your plan found that the voice recording you uploaded "
        "on {day}{size} can no longer be read whole from storage."
    ),
    "": N_(
        "Our regular check of the files kept for your plan found that the file you uploaded on "
        "{day}{size} can no longer be read whole from storage."
    ),
}
_DAMAGED_UNDATED = {
    "photo": N_(
        "Our regular check of the files kept for your plan found that the photo you uploaded "
        "earlier{size} can no longer be read whole from storage."
    ),
    "video": N_(
        "Our regular check of the files kept for your plan found that the video you uploaded "
        "earlier{size} can no longer be read whole from storage."
    ),
    "voice": N_(
        "Our regular check of the files kept for your plan found that the voice recording you uploaded "
        "earlier{size} can no longer be read whole from storage."
    ),
    "": N_(
        "Our regular check of the files kept for your plan found that the file you uploaded "
        "earlier{size} can no longer be read whole from storage."
    ),
}


def _archive_item_damaged(d: Delivery, links: dict[str, Markup]) -> tuple[Markup, Markup]:
    ctx = d["context"]
    kind = ctx.get("itemType", "") if ctx.get("itemType") in _DAMAGED else ""
    size = ctx.get("sizeBytes")
    # The file's size, in parentheses after the date, when it is big enough to say.
    how_big = (
        " (" + i18n.megabytes(size / 1_000_000) + ")" if isinstance(size, int) and size >= 100_000 else ""
    )
    found = (
        _(_DAMAGED[kind]).format(day=i18n.day(datetime.fromisoformat(ctx["uploadedAt"])), size=how_big)
        if ctx.get("uploadedAt")
        else _(_DAMAGED_UNDATED[kind]).format(size=how_big)
    )
    return (
        _("Please upload a file in your plan again"),
        found
        + " "
        + _(
            'It is marked "damaged" in your archive, and your heirs would see it listed as damaged instead '
            "of receiving it.\n\n"
            "Please re-upload this file: delete the damaged item, then upload the file again from your own "
            "copy. We will remind you at most once a week while it stays damaged."
        ),
    )


# Each kind of the owner's emails: its words, and what follows them. Every one that checks the owner
# in by its link says so (models.check_in_links.KINDS).
_CHECK_IN = ("check_in",)
KINDS: dict[str, Kind] = {
    "check_in_reminder": Kind(_check_in_reminder, audience=(OWNER,), footers=_CHECK_IN),
    "grace_started": Kind(_grace_started, audience=(OWNER,), footers=_CHECK_IN),
    "verification_started": Kind(_verification_started, audience=(OWNER,), footers=_CHECK_IN),
    "plan_approved": Kind(_plan_approved, audience=(OWNER,), footers=_CHECK_IN),
    "plan_ready": Kind(_plan_ready, audience=(OWNER,), footers=_CHECK_IN),
    "guardian_unresponsive": Kind(_guardian_unresponsive, audience=(OWNER,)),
    "guardian_declined": Kind(_guardian_declined, audience=(OWNER,)),
    "guardian_accepted": Kind(_guardian_accepted, audience=(OWNER,)),
    "plan_activated": Kind(_plan_activated, audience=(OWNER,)),
    "guardians_short": Kind(_guardians_short, audience=(OWNER,)),
    "deadline_warning": Kind(_deadline_warning, audience=(OWNER,), footers=_CHECK_IN),
    "verification_timeout": Kind(_verification_timeout, audience=(OWNER,), footers=_CHECK_IN),
    "guardian_email_bounced": Kind(_guardian_email_bounced, audience=(OWNER,)),
    "recipient_unknown": Kind(_recipient_unknown, audience=(OWNER,)),
    "archive_item_damaged": Kind(_archive_item_damaged, audience=(OWNER,)),
}
