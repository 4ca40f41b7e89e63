"""The guardians' emails, by kind: the invitation and the yearly reconfirmation, a verification
asked of them and its reminders, what became of the plan (approved, ready, released, a false
alarm, deleted), an heir's link that did not arrive, and an heir's new wallet to approve. They
speak of the owner by name, to someone who acts for them."""

from __future__ import annotations

from core.text.i18n import _
from models.address_links import uncorrectable
from models.delivery.deliveries import Delivery
from models.mail.texts.common import Template
from models.mail.texts.common import owner_name as _owner
from models.mail.texts.common import when as _when
from models.mail.texts.objections import deadline_sentence

# What a guardian reported, in the words each email uses (plans.REPORT_REASONS; None: no reason
# given, or no report at all). Sympathy only when a death was reported.
_TO_GUARDIAN = {
    "death": "One of {owner}'s guardians has told us that {owner} has died.",
    "incapacity": "One of {owner}'s guardians has told us that {owner} can no longer act for themselves.",
    "unreachable": "One of {owner}'s guardians has told us that they cannot reach {owner}.",
}


# The same, to the guardian who reported: their own words come back to them as theirs.
_TO_REPORTER = {
    "death": "You told us that {owner} has died.",
    "incapacity": "You told us that {owner} can no longer act for themselves.",
    "unreachable": "You told us that you cannot reach {owner}.",
}


def _verification_requested(d: Delivery, links: dict[str, str]) -> tuple[str, str]:
    why = _TO_GUARDIAN.get(
        d["report_reason"] or "", "We have reason to think they may have died or can no longer act."
    ).format(owner=_owner(d=d))
    reporter = d["guardian_id"] is not None and d["context"].get("reporterId") == d["guardian_id"]
    if reporter:
        why = _TO_REPORTER.get(
            d["report_reason"] or "", "You told us that {owner} may have died or can no longer act."
        ).format(owner=_owner(d=d))
        why += " The other guardians are now asked to confirm; your report alone is not an approval."
    if d["context"].get("reason") == "beneficiary_request":
        heir = d["subject_name"] or "One of the people they named in their plan"
        why = f"{heir}, one of the people {_owner(d=d)} named in their plan, asked us to verify whether they "
        why += "have died or can no longer act."
        if d["request_note"]:
            why += f' They wrote: "{d["request_note"]}"'
    return (
        f"Your help is needed with {_owner(d=d)}'s plan",
        f"You are a guardian of {_owner(d=d)}'s legacy plan. {why}"
        " If you know this to be true, please approve the release from your guardian page "
        "(the link below). "
        f"If you are unsure, you may do nothing for now. {deadline_sentence(d=d)}".rstrip(),
    )


def _false_alarm(d: Delivery, links: dict[str, str]) -> tuple[str, str]:
    return (
        "Good news: it was a false alarm",
        f"{_owner(d=d)} has checked in. Nothing will be released, and there is nothing more for you to do. "
        "Thank you for being there.",
    )


def _plan_approved_guardian(d: Delivery, links: dict[str, str]) -> tuple[str, str]:
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


def _plan_ready_guardian(d: Delivery, links: dict[str, str]) -> tuple[str, str]:
    return (
        f"{_owner(d=d)}'s plan is ready to be released",
        f"The time {_owner(d=d)} left to cancel has passed. Each of the people they named has been sent "
        "their link; the plan is released when one of them confirms it with their wallet. If one of them "
        "tells you the link never came, you can send it again from your guardian page.",
    )


def _plan_released_guardian(d: Delivery, links: dict[str, str]) -> tuple[str, str]:
    return (
        f"{_owner(d=d)}'s plan has been released",
        f"{_owner(d=d)}'s plan has been released to the people they chose. Thank you for your care.",
    )


PASSKEY_ANSWER = (
    "You accept there by creating a passkey on your phone or computer: the fingerprint, face or PIN you "
    "unlock it with, nothing to install and nothing to pay. From then on that passkey is how you answer."
)


def _passkey(*, d: Delivery) -> bool:
    """A guardian without a recorded wallet: they answer with a passkey from their page."""
    return "walletAddress" in d["context"] and d["context"]["walletAddress"] is None


def _guardian_invitation(d: Delivery, links: dict[str, str]) -> tuple[str, str]:
    wallet = d["context"].get("walletAddress") or "the wallet they recorded for you"
    days = d["context"].get("silenceDays")
    silence = f"for about {days} days" if days else "for longer than their plan allows"
    return (
        f"{_owner(d=d)} asks you to be a guardian of their legacy plan",
        f"{_owner(d=d)} has named you as a guardian of their legacy plan"
        + ("" if _passkey(d=d) else f", with the Stellar wallet {wallet}")
        + ".\n\n"
        f"What a guardian does: if {_owner(d=d)} stops checking in {silence}, or "
        "a guardian tells us they have died or can no longer act, we ask the guardians to confirm. "
        f"The plan is released to the people {_owner(d=d)} chose only when enough guardians approve, and "
        f"{_owner(d=d)} can stop it at any time by checking in. Most of the time there is nothing to do.\n\n"
        f"To accept or decline, open your page for this plan:\n\n{links['guardian']}\n\n"
        + (
            PASSKEY_ANSWER
            if _passkey(d=d)
            else "Your wallet app signs your answer there (a link or a QR code; nothing is paid)."
            + (
                f" Or sign in at {links['app']} with that wallet and answer among the plans you guard."
                if links.get("app")
                else ""
            )
        )
        + " You count as a guardian only once you have accepted. Keep the link to yourself.",
    )


def _guardian_reconfirm(d: Delivery, links: dict[str, str]) -> tuple[str, str]:
    wallet = d["context"].get("walletAddress") or "the wallet they recorded for you"
    days = d["context"].get("graceDays", 30)
    where = f" at {links['app']}" if links.get("app") else ""
    return (
        f"Are you still able to act for {_owner(d=d)}?",
        f"Some time ago you agreed to be a guardian of {_owner(d=d)}'s legacy plan. Please tell us that you "
        + (
            "still can: confirm on your page for this plan (the link below) with your passkey. It takes a "
            "minute, and nothing else changes.\n\n"
            if _passkey(d=d)
            else "still can: confirm on your page for this plan (the link below) with your Stellar wallet "
            f"{wallet}"
            + (f", or sign in{where} with that wallet and confirm among the plans you guard" if where else "")
            + ". Your wallet's signature proves you still hold the key; it takes a minute, and nothing else "
            "changes.\n\n"
        )
        + f"If we do not hear from you within {days} days, we will let {_owner(d=d)} know, so that they can "
        "check on you or choose someone else. If you no longer have that "
        + ("device" if _passkey(d=d) else "wallet")
        + ", tell them.",
    )


def _verification_reminder(d: Delivery, links: dict[str, str]) -> tuple[str, str]:
    days = d["context"].get("days", 3)
    return (
        f"A reminder: {_owner(d=d)}'s plan is waiting for you",
        f"{days} days ago we asked the guardians of {_owner(d=d)}'s legacy plan to confirm whether they "
        "have died or can no longer act, and we have not had your answer yet. If you know this to be "
        "true, please approve the release from your guardian page (the link below). "
        f"{_owner(d=d)} can stop it at any time by checking in. {deadline_sentence(d=d)}".rstrip(),
    )


def _verification_timeout_guardian(d: Delivery, links: dict[str, str]) -> tuple[str, str]:
    passed = "The deadline for this verification has passed without enough approvals."
    if d["context"].get("objected"):
        return (
            f"{_owner(d=d)}'s plan is still waiting for its guardians",
            f"{passed} A guardian objects, saying {_owner(d=d)} is alive or able to act, so the plan is not "
            "released: it goes on waiting until enough guardians approve or they check in. If you know they "
            "have died or can no longer act, please approve the release on your page; if you are unsure, "
            "do nothing.",
        )
    chosen = "As they chose" if d["context"].get("deadlineChosen", True) else "As the usual deadline has it"
    if d["context"].get("outcome") == "release":
        return (
            f"{_owner(d=d)}'s plan will be released",
            f"{passed}"
            f" {chosen}, their plan will be released on {_when(value=d['context'].get('releaseAt'))}, "
            "unless they check in before then. There is nothing more you need to do.",
        )
    return (
        f"{_owner(d=d)}'s plan is still waiting for its guardians",
        f"{passed} {chosen}, the plan goes on waiting. If you know they have died or can no longer "
        "act, please approve the release from your guardian page (the link below); if you are unsure, "
        f"do nothing. If you know {_owner(d=d)} is alive or able to act, say so there: "
        f'"This is a mistake" tells {_owner(d=d)} and the other guardians.',
    )


def _claim_link_undelivered(d: Delivery, links: dict[str, str]) -> tuple[str, str]:
    heir = d["subject_name"] or "one of the people they named"
    return (
        f"{heir} has not received their link",
        f"We could not deliver to {heir} the link to what {_owner(d=d)} left them: the email to the address "
        f"{_owner(d=d)} gave us did not go through. You can send it again from your guardian page; it "
        f"goes to that same address only. {heir} can also ask for it themselves on the claim page, with "
        f"that address. If you know the address that reaches {heir}, propose it beside their name on your "
        "guardian page: once enough guardians agree, and after seven days in which any of you can stop "
        f"it, {heir} is asked to confirm it, and only then is the link sent there."
        + (f" {uncorrectable(name=heir)}" if d.get("short_of_guardians") else ""),
    )


def _wallet_change_requested(d: Delivery, links: dict[str, str]) -> tuple[str, str]:
    heir = d["subject_name"] or "One of the people they named"
    wallet_end = d["context"].get("walletEnd", "")
    return (
        f"{heir} asks to claim with a new wallet",
        f"{heir} says they no longer hold the wallet {_owner(d=d)}'s plan had for them, and has proven a new "
        f"one (ending in {wallet_end}). Please approve it from your guardian page only after confirming "
        f"with {heir} themselves, in person or by phone, that this wallet is theirs: whoever it belongs "
        "to will be able to claim their share. If you are unsure, do nothing.",
    )


def _plan_deleted(d: Delivery, links: dict[str, str]) -> tuple[str, str]:
    return (
        f"{_owner(d=d)}'s plan no longer exists",
        f"{_owner(d=d)}"
        " has deleted their legacy plan, so there is nothing more for you to do as its guardian.",
    )


TEMPLATES: dict[str, Template] = {
    "verification_requested": _verification_requested,
    "false_alarm": _false_alarm,
    "plan_approved_guardian": _plan_approved_guardian,
    "plan_ready_guardian": _plan_ready_guardian,
    "plan_released_guardian": _plan_released_guardian,
    "guardian_invitation": _guardian_invitation,
    "guardian_reconfirm": _guardian_reconfirm,
    "verification_reminder": _verification_reminder,
    "verification_timeout_guardian": _verification_timeout_guardian,
    "claim_link_undelivered": _claim_link_undelivered,
    "wallet_change_requested": _wallet_change_requested,
    "plan_deleted": _plan_deleted,
}
