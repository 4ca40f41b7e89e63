"""The guardians' emails, by kind: the invitation and the yearly reconfirmation, a verification
asked of them and its reminders, what became of the plan (approved, ready, released, a false
alarm, deleted), an heir's link that did not arrive, and an heir's new wallet to approve. They
speak of the owner by name, to someone who acts for them."""

from __future__ import annotations

from markupsafe import Markup

from core.text import i18n
from core.text.i18n import N_
from core.text.markup import _, escaped, gendered, ngettext
from models.address_links import uncorrectable
from models.delivery.deliveries import Delivery
from models.mail.texts.common import GUARDIAN, ONE_OF_THE_PEOPLE_THEY_NAMED, Kind, they_wrote
from models.mail.texts.common import owner_name as _owner
from models.mail.texts.common import when as _when
from models.mail.texts.objections import deadline_sentence
from models.mail.texts.objections import lapses as objection_lapses

# What a guardian reported, in the words each email uses (plans.REPORT_REASONS; None: no reason
# given, or no report at all). Sympathy only when a death was reported.
_TO_GUARDIAN = {
    "death": N_("One of {owner}'s guardians has told us that {owner} has died."),
    "incapacity": N_("One of {owner}'s guardians has told us that {owner} can no longer act for themselves."),
    "unreachable": N_("One of {owner}'s guardians has told us that they cannot reach {owner}."),
}
_TO_GUARDIAN_UNSAID = N_("We have reason to think they may have died or can no longer act.")
# A verification after a missed check-in: that is its only reason, and the guardian is told so.
_MISSED_CHECK_IN = N_(
    "{owner} has not checked in for longer than their plan allows. That is the only reason we ask: "
    "nobody has told us anything has happened to them."
)


# The same, to the guardian who reported: their own words come back to them as theirs.
_TO_REPORTER = {
    "death": N_("You told us that {owner} has died."),
    "incapacity": N_("You told us that {owner} can no longer act for themselves."),
    "unreachable": N_("You told us that you cannot reach {owner}."),
}
_TO_REPORTER_UNSAID = N_("You told us that {owner} may have died or can no longer act.")


def _verification_requested(d: Delivery, links: dict[str, Markup]) -> tuple[Markup, Markup]:
    owner = _owner(d=d)
    why = _(_TO_GUARDIAN.get(d["report_reason"] or "", _TO_GUARDIAN_UNSAID)).format(owner=owner)
    if d["context"].get("reason") == "inactivity":
        why = _(_MISSED_CHECK_IN).format(owner=owner)
    reporter = d["guardian_id"] is not None and d["context"].get("reporterId") == d["guardian_id"]
    if reporter:
        why = _(_TO_REPORTER.get(d["report_reason"] or "", _TO_REPORTER_UNSAID)).format(owner=owner)
        why += " " + _("The other guardians are now asked to confirm; your report alone is not an approval.")
    if d["context"].get("reason") == "beneficiary_request":
        why = (
            _(
                "{heir}, one of the people {owner} named in their plan, asked us to verify whether they "
                "have died or can no longer act."
            ).format(heir=d["subject_name"], owner=owner)
            if d["subject_name"]
            else _(
                "One of the people {owner} named in their plan asked us to verify whether they have died "
                "or can no longer act."
            ).format(owner=owner)
        )
        if d["request_note"]:
            why += " " + they_wrote(note=d["request_note"])
    said = [
        _("You are a guardian of {owner}'s legacy plan.").format(owner=owner),
        why,
        _(
            "If you know this to be true, please approve the release from your guardian page (the link "
            "below). If you are unsure, you may do nothing for now."
        ),
        deadline_sentence(d=d),
    ]
    return (
        _("Your help is needed with {owner}'s plan").format(owner=owner),
        Markup(" ").join(s for s in said if s),
    )


def _false_alarm(d: Delivery, links: dict[str, Markup]) -> tuple[Markup, Markup]:
    return (
        _("Good news: it was a false alarm"),
        _(
            "{owner} has checked in. Nothing will be released, and there is nothing more for you to do. "
            "Thank you for being there."
        ).format(owner=_owner(d=d)),
    )


def _plan_approved_guardian(d: Delivery, links: dict[str, Markup]) -> tuple[Markup, Markup]:
    owner, when = _owner(d=d), _when(value=d["context"].get("releaseAt"))
    subject = _("{owner}'s plan has been approved").format(owner=owner)
    if d["context"].get("onchain"):
        return (
            subject,
            _(
                "Enough guardians have approved the release of {owner}'s plan. Unless they check in "
                "by {when}, each beneficiary will be sent their link, and the release happens when one "
                "of them confirms it with their wallet."
            ).format(owner=owner, when=when),
        )
    return (
        subject,
        _(
            "Enough guardians have approved the release of {owner}'s plan. It will be released on "
            "{when}, unless they check in before then."
        ).format(owner=owner, when=when),
    )


def _plan_ready_guardian(d: Delivery, links: dict[str, Markup]) -> tuple[Markup, Markup]:
    owner = _owner(d=d)
    return (
        _("{owner}'s plan is ready to be released").format(owner=owner),
        _(
            "The time {owner} left to cancel has passed. Each of the people they named has been sent "
            "their link; the plan is released when one of them confirms it with their wallet. If one of "
            "them tells you the link never came, you can send it again from your guardian page."
        ).format(owner=owner),
    )


def _plan_released_guardian(d: Delivery, links: dict[str, Markup]) -> tuple[Markup, Markup]:
    owner = _owner(d=d)
    return (
        _("{owner}'s plan has been released").format(owner=owner),
        _("{owner}'s plan has been released to the people they chose. Thank you for your care.").format(
            owner=owner
        ),
    )


PASSKEY_ANSWER = N_(
    "You accept there by creating a passkey on your phone or computer: the fingerprint, face or PIN you "
    "unlock it with, nothing to install and nothing to pay. From then on that passkey is how you answer."
)


def _passkey(*, d: Delivery) -> bool:
    """A guardian without a recorded wallet: they answer with a passkey from their page."""
    return "walletAddress" in d["context"] and d["context"]["walletAddress"] is None


_STOP = N_("{owner} can stop it at any time by checking in. Most of the time there is nothing to do.")


def _invitation_deadline(*, d: Delivery, owner: Markup) -> Markup:
    """What the plan's verification deadline does, as the plan stood when the invitation was
    written: a deadline that releases is said as such, never "only when enough guardians approve"
    (nothing for a row written before the invitation carried it)."""
    ctx = d["context"]
    if "onTimeout" not in ctx:
        return Markup("")
    days = ctx.get("deadlineDays")
    if ctx["onTimeout"] == "release" and days:
        releases = ngettext(
            "If enough guardians approve, the plan is released to the people {owner} chose. If they do not "
            "within {days} day, it is released to them all the same, unless {owner} checks in or a "
            "guardian objects.",
            "If enough guardians approve, the plan is released to the people {owner} chose. If they do not "
            "within {days} days, it is released to them all the same, unless {owner} checks in or a "
            "guardian objects.",
            int(days),
        ).format(owner=owner, days=i18n.number(int(days)))
        lapses = _(
            "An objection holds it back only for a limited time: {owner} is asked to check in, and if they "
            "do not, the objection lapses and the deadline applies again."
        ).format(owner=owner)
        return releases + Markup(" ") + lapses
    return _("The plan is released to the people {owner} chose only when enough guardians approve.").format(
        owner=owner
    )


def _guardian_invitation(d: Delivery, links: dict[str, Markup]) -> tuple[Markup, Markup]:
    owner, wallet = _owner(d=d), d["context"].get("walletAddress")
    days = d["context"].get("silenceDays")
    # The sentences naming the owner's plan as theirs agree with the owner (Arabic: بها / به).
    owners = d.get("owner_gender")
    if _passkey(d=d):
        # Translators: gendered by the owner's grammatical gender (their plan).
        named = gendered("{owner} has named you as a guardian of their legacy plan.", owners)
    elif wallet:
        # Translators: gendered by the owner's grammatical gender (their plan).
        named = gendered(
            "{owner} has named you as a guardian of their legacy plan, with the Stellar wallet {wallet}.",
            owners,
        )
    else:  # a row written before the wallet was kept with it
        # Translators: gendered by the owner's grammatical gender (their plan, they recorded).
        named = gendered(
            "{owner} has named you as a guardian of their legacy plan, with the Stellar wallet they "
            "recorded for you.",
            owners,
        )
    does = (
        ngettext(
            "What a guardian does: if {owner} stops checking in for about {days} day, or a guardian tells "
            "us they have died or can no longer act, we ask the guardians to confirm.",
            "What a guardian does: if {owner} stops checking in for about {days} days, or a guardian tells "
            "us they have died or can no longer act, we ask the guardians to confirm.",
            int(days),
        )
        if days
        else _(
            "What a guardian does: if {owner} stops checking in for longer than their plan allows, or a "
            "guardian tells us they have died or can no longer act, we ask the guardians to confirm."
        )
    ).format(owner=owner, days=i18n.number(int(days or 0)))
    does = Markup(" ").join(
        s for s in (does, _invitation_deadline(d=d, owner=owner), _(_STOP).format(owner=owner)) if s
    )
    if _passkey(d=d):
        answer = [_(PASSKEY_ANSWER)]
    else:
        answer = [_("Your wallet app signs your answer there (a link or a QR code; nothing is paid).")]
        if links.get("app"):
            answer.append(
                _("Or sign in at {app} with that wallet and answer among the plans you guard.").format(
                    app=links["app"]
                )
            )
    answer.append(_("You count as a guardian only once you have accepted. Keep the link to yourself."))
    return (
        # Translators: gendered by the owner's grammatical gender (their plan).
        gendered("{owner} asks you to be a guardian of their legacy plan", owners).format(owner=owner),
        named.format(owner=owner, wallet=wallet)
        + "\n\n"
        + does
        + "\n\n"
        + _("To accept or decline, open your page for this plan:\n\n{link}").format(link=links["guardian"])
        + "\n\n"
        + Markup(" ").join(answer),
    )


def _guardian_reconfirm(d: Delivery, links: dict[str, Markup]) -> tuple[Markup, Markup]:
    owner, wallet, app = _owner(d=d), d["context"].get("walletAddress"), links.get("app")
    days = int(d["context"].get("graceDays", 30))
    if _passkey(d=d):
        ask = _(
            "Some time ago you agreed to be a guardian of {owner}'s legacy plan. Please tell us that you "
            "still can: confirm on your page for this plan (the link below) with your passkey. It takes a "
            "minute, and nothing else changes."
        )
    elif wallet and app:
        ask = _(
            "Some time ago you agreed to be a guardian of {owner}'s legacy plan. Please tell us that you "
            "still can: confirm on your page for this plan (the link below) with your Stellar wallet "
            "{wallet}, or sign in at {app} with that wallet and confirm among the plans you guard. Your "
            "wallet's signature proves you still hold the key; it takes a minute, and nothing else changes."
        )
    elif wallet:
        ask = _(
            "Some time ago you agreed to be a guardian of {owner}'s legacy plan. Please tell us that you "
            "still can: confirm on your page for this plan (the link below) with your Stellar wallet "
            "{wallet}. Your wallet's signature proves you still hold the key; it takes a minute, and "
            "nothing else changes."
        )
    elif app:  # a row written before the wallet was kept with it
        ask = _(
            "Some time ago you agreed to be a guardian of {owner}'s legacy plan. Please tell us that you "
            "still can: confirm on your page for this plan (the link below) with the Stellar wallet they "
            "recorded for you, or sign in at {app} with that wallet and confirm among the plans you guard. "
            "Your wallet's signature proves you still hold the key; it takes a minute, and nothing else "
            "changes."
        )
    else:
        ask = _(
            "Some time ago you agreed to be a guardian of {owner}'s legacy plan. Please tell us that you "
            "still can: confirm on your page for this plan (the link below) with the Stellar wallet they "
            "recorded for you. Your wallet's signature proves you still hold the key; it takes a minute, "
            "and nothing else changes."
        )
    silent = (
        ngettext(
            "If we do not hear from you within {days} day, we will let {owner} know, so that they can check "
            "on you or choose someone else. If you no longer have that device, tell them.",
            "If we do not hear from you within {days} days, we will let {owner} know, so that they can "
            "check on you or choose someone else. If you no longer have that device, tell them.",
            days,
        )
        if _passkey(d=d)
        else ngettext(
            "If we do not hear from you within {days} day, we will let {owner} know, so that they can check "
            "on you or choose someone else. If you no longer have that wallet, tell them.",
            "If we do not hear from you within {days} days, we will let {owner} know, so that they can "
            "check on you or choose someone else. If you no longer have that wallet, tell them.",
            days,
        )
    )
    return (
        _("Are you still able to act for {owner}?").format(owner=owner),
        ask.format(owner=owner, wallet=wallet, app=app)
        + "\n\n"
        + silent.format(owner=owner, days=i18n.number(days)),
    )


def _verification_reminder(d: Delivery, links: dict[str, Markup]) -> tuple[Markup, Markup]:
    owner, days = _owner(d=d), int(d["context"].get("days", 3))
    asked = ngettext(
        "{days} day ago we asked the guardians of {owner}'s legacy plan to confirm whether they have died "
        "or can no longer act, and we have not had your answer yet. If you know this to be true, please "
        "approve the release from your guardian page (the link below). {owner} can stop it at any time by "
        "checking in.",
        "{days} days ago we asked the guardians of {owner}'s legacy plan to confirm whether they have died "
        "or can no longer act, and we have not had your answer yet. If you know this to be true, please "
        "approve the release from your guardian page (the link below). {owner} can stop it at any time by "
        "checking in.",
        days,
    ).format(owner=owner, days=i18n.number(days))
    return (
        _("A reminder: {owner}'s plan is waiting for you").format(owner=owner),
        Markup(" ").join(s for s in (asked, deadline_sentence(d=d)) if s),
    )


def _verification_timeout_guardian(d: Delivery, links: dict[str, Markup]) -> tuple[Markup, Markup]:
    owner = _owner(d=d)
    waiting = _("{owner}'s plan is still waiting for its guardians").format(owner=owner)
    if d["context"].get("objected"):
        return (
            waiting,
            _(
                "The deadline for this verification has passed without enough approvals. A guardian "
                "objects, saying {owner} is alive or able to act, so the plan is not released: it goes on "
                "waiting until enough guardians approve or they check in. If you know they have died or "
                "can no longer act, please approve the release on your page; if you are unsure, do nothing."
            ).format(owner=owner)
            + objection_lapses(d=d, to_owner=False),
        )
    chosen = d["context"].get("deadlineChosen", True)
    if d["context"].get("outcome") == "release":
        released = (
            _(
                "The deadline for this verification has passed without enough approvals. As they chose, "
                "their plan will be released on {when}, unless they check in before then. There is nothing "
                "more you need to do."
            )
            if chosen
            else _(
                "The deadline for this verification has passed without enough approvals. As the usual "
                "deadline has it, their plan will be released on {when}, unless they check in before then. "
                "There is nothing more you need to do."
            )
        )
        return (
            _("{owner}'s plan will be released").format(owner=owner),
            released.format(when=_when(value=d["context"].get("releaseAt"))),
        )
    waits = (
        _(
            "The deadline for this verification has passed without enough approvals. As they chose, the "
            "plan goes on waiting."
        )
        if chosen
        else _(
            "The deadline for this verification has passed without enough approvals. As the usual deadline "
            "has it, the plan goes on waiting."
        )
    )
    return (
        waiting,
        waits
        + " "
        + _(
            "If you know they have died or can no longer act, please approve the release from your guardian "
            "page (the link below); if you are unsure, do nothing. If you know {owner} is alive or able to "
            'act, say so there: "This is a mistake" tells {owner} and the other guardians.'
        ).format(owner=owner),
    )


def _claim_link_undelivered(d: Delivery, links: dict[str, Markup]) -> tuple[Markup, Markup]:
    heir, owner = d["subject_name"] or _(ONE_OF_THE_PEOPLE_THEY_NAMED), _owner(d=d)
    said = _(
        "We could not deliver to {heir} the link to what {owner} left them: the email to the address "
        "{owner} gave us did not go through. You can send it again from your guardian page; it goes to "
        "that same address only. {heir} can also ask for it themselves on the claim page, with that "
        "address. If you know the address that reaches {heir}, propose it beside their name on your "
        "guardian page: once enough guardians agree, and after seven days in which any of you can stop "
        "it, {heir} is asked to confirm it, and only then is the link sent there."
    ).format(heir=heir, owner=owner)
    return (
        _("{heir} has not received their link").format(heir=heir),
        said + (" " + escaped(uncorrectable(name=heir)) if d.get("short_of_guardians") else ""),
    )


def _wallet_change_requested(d: Delivery, links: dict[str, Markup]) -> tuple[Markup, Markup]:
    heir, owner = d["subject_name"] or _(ONE_OF_THE_PEOPLE_THEY_NAMED), _owner(d=d)
    wallet_end = d["context"].get("walletEnd", "")
    return (
        _("{heir} asks to claim with a new wallet").format(heir=heir),
        _(
            "{heir} says they no longer hold the wallet {owner}'s plan had for them, and has proven a new "
            "one (ending in {wallet_end}). Please approve it from your guardian page only after confirming "
            "with {heir} themselves, in person or by phone, that this wallet is theirs: whoever it belongs "
            "to will be able to claim their share. If you are unsure, do nothing."
        ).format(heir=heir, owner=owner, wallet_end=wallet_end),
    )


def _plan_deleted(d: Delivery, links: dict[str, Markup]) -> tuple[Markup, Markup]:
    owner = _owner(d=d)
    return (
        _("{owner}'s plan no longer exists").format(owner=owner),
        # Translators: gendered by the owner's grammatical gender (their plan).
        gendered(
            "{owner} has deleted their legacy plan, so there is nothing more for you to do as its guardian.",
            d.get("owner_gender"),
        ).format(owner=owner),
    )


# Each kind of the guardians' emails. All but the invitation (whose words give the page) and the
# plan's deletion (a page soon gone) end with the guardian's page.
_PAGE = ("guardian_page",)
KINDS: dict[str, Kind] = {
    "verification_requested": Kind(_verification_requested, audience=(GUARDIAN,), footers=_PAGE),
    "false_alarm": Kind(_false_alarm, audience=(GUARDIAN,), footers=_PAGE),
    "plan_approved_guardian": Kind(_plan_approved_guardian, audience=(GUARDIAN,), footers=_PAGE),
    "plan_ready_guardian": Kind(_plan_ready_guardian, audience=(GUARDIAN,), footers=_PAGE),
    "plan_released_guardian": Kind(_plan_released_guardian, audience=(GUARDIAN,), footers=_PAGE),
    "guardian_invitation": Kind(
        _guardian_invitation, audience=(GUARDIAN,), links=("guardian", "app"), footers=("unknown",)
    ),
    "guardian_reconfirm": Kind(_guardian_reconfirm, audience=(GUARDIAN,), links=("app",), footers=_PAGE),
    "verification_reminder": Kind(_verification_reminder, audience=(GUARDIAN,), footers=_PAGE),
    "verification_timeout_guardian": Kind(
        _verification_timeout_guardian, audience=(GUARDIAN,), footers=_PAGE
    ),
    "claim_link_undelivered": Kind(_claim_link_undelivered, audience=(GUARDIAN,), footers=_PAGE),
    "wallet_change_requested": Kind(_wallet_change_requested, audience=(GUARDIAN,), footers=_PAGE),
    "plan_deleted": Kind(_plan_deleted, audience=(GUARDIAN,)),
}
