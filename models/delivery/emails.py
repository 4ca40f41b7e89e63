"""Rendering outbox rows into emails at send time (the rows themselves: models.delivery.outbox).

Names are user input: every value is escaped in the HTML part. Claim links are built here,
at send time, from the sealed claim token (`$PUBLIC_BASE_URL/claim/<token>`), guardians' page
links from the guardian's id and page version (models.plan.guardian_links), and check-in
links from the outbox row id (models.check_in_links), so no token or address is ever stored
in the outbox. Texts are short and kind; they are read by people at a
hard moment.
"""

from __future__ import annotations

import html
from collections.abc import Callable
from datetime import datetime
from typing import Any

from core.files.crypto import KeyRing
from core.mailer import Email
from models.account import users
from models.contents import email_confirmations
from models.contents.beneficiaries import open_claim_token
from models.delivery.deliveries import Delivery
from models.plan import check_in_links, guardian_links


def _when(value: Any) -> str:
    """A time as a person reads it, in UTC."""
    if not value:
        return "soon"
    moment = datetime.fromisoformat(str(value))
    return moment.strftime("%A %d %B %Y at %H:%M UTC")


Template = Callable[[Delivery, dict[str, str]], tuple[str, str]]


def _owner(d: Delivery) -> str:
    return users.known_as(name=d["owner_name"], wallet=d["owner_wallet"])


# What a guardian reported, in the words each email uses (plans.REPORT_REASONS; None: no reason
# given, or no report at all). Sympathy only when a death was reported.
_TO_OWNER = {
    "death": "One of your guardians reported your death.",
    "incapacity": "One of your guardians reported that you can no longer act for yourself.",
    "unreachable": "One of your guardians reported that they cannot reach you.",
}
_TO_GUARDIAN = {
    "death": "One of {owner}'s guardians has told us that {owner} has died.",
    "incapacity": "One of {owner}'s guardians has told us that {owner} can no longer act for themselves.",
    "unreachable": "One of {owner}'s guardians has told us that they cannot reach {owner}.",
}


def _sympathy(d: Delivery) -> str:
    return "We are sorry for your loss. " if d["report_reason"] == "death" else ""


def _check_in_reminder(d: Delivery, links: dict[str, str]) -> tuple[str, str]:
    ctx = d["context"]
    return (
        "A gentle reminder to check in",
        f"Your plan asks you to check in by {_when(ctx.get('dueAt'))}. "
        'Signing in with your wallet, or pressing "I\'m here", is enough.',
    )


def _grace_started(d: Delivery, links: dict[str, str]) -> tuple[str, str]:
    ctx = d["context"]
    return (
        "We haven't heard from you",
        "Your check-in is overdue. If you do not check in by "
        f"{_when(ctx.get('verificationAt'))}, we will ask your guardians to confirm you are well. "
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
        f"{why} Your guardians are now being asked to confirm. If you are well, please check in (the "
        "button in the app, or the link below): it stops everything, and nothing will be released. "
        "Signing in alone does not stop it.",
    )


def _verification_requested(d: Delivery, links: dict[str, str]) -> tuple[str, str]:
    why = _TO_GUARDIAN.get(
        d["report_reason"] or "", "We have reason to think they may have died or can no longer act."
    ).format(owner=_owner(d))
    if d["context"].get("reason") == "beneficiary_request":
        heir = d["subject_name"] or "One of the people they named in their plan"
        why = f"{heir}, one of the people {_owner(d)} named in their plan, asked us to verify whether they "
        why += "have died or can no longer act."
        if d["request_note"]:
            why += f' They wrote: "{d["request_note"]}"'
    return (
        f"Your help is needed with {_owner(d)}'s plan",
        f"You are a guardian of {_owner(d)}'s legacy plan. {why} If you know this to be true, please sign in "
        "with your wallet and approve the release (or report it). "
        "If you are unsure, please do nothing for now: we release only when enough guardians agree.",
    )


def _false_alarm(d: Delivery, links: dict[str, str]) -> tuple[str, str]:
    return (
        "Good news: it was a false alarm",
        f"{_owner(d)} has checked in. Nothing will be released, and there is nothing more for you to do. "
        "Thank you for being there.",
    )


# On-chain, a plan is not released on a date: its beneficiaries are sent their links when the
# cancel window ends, and one of them finalises the release with their wallet. Those emails say
# that, and never promise a date (context "onchain", set by models.plan.release_path.approve_in).
_ONCHAIN_NEXT = (
    "each beneficiary will be sent their link, and the release happens when one of them confirms it "
    "with their wallet"
)


def _plan_approved(d: Delivery, links: dict[str, str]) -> tuple[str, str]:
    when = _when(d["context"].get("releaseAt"))
    if d["context"].get("onchain"):
        return (
            "Your plan will be released unless you check in",
            f"Your guardians have approved the release of your plan. If you do not check in by {when}, "
            f"{_ONCHAIN_NEXT}. If you are well, check in now to stop it.",
        )
    return (
        "Your plan will be released unless you check in",
        "Your guardians have approved the release of your plan. It will be released on "
        f"{when}. If you are well, check in now to stop it.",
    )


def _plan_approved_guardian(d: Delivery, links: dict[str, str]) -> tuple[str, str]:
    when = _when(d["context"].get("releaseAt"))
    if d["context"].get("onchain"):
        return (
            f"{_owner(d)}'s plan has been approved",
            f"Enough guardians have approved the release of {_owner(d)}'s plan. Unless they check in by "
            f"{when}, {_ONCHAIN_NEXT}.",
        )
    return (
        f"{_owner(d)}'s plan has been approved",
        f"Enough guardians have approved the release of {_owner(d)}'s plan. It will be released on "
        f"{when}, unless they check in before then.",
    )


def _plan_ready(d: Delivery, links: dict[str, str]) -> tuple[str, str]:
    return (
        "Your plan is ready to be released",
        "Your cancel window has ended. Each of your beneficiaries has been sent their link, and your plan "
        "is released when one of them confirms it with their wallet. If you are well, check in now: it "
        "still stops everything.",
    )


def _plan_ready_guardian(d: Delivery, links: dict[str, str]) -> tuple[str, str]:
    return (
        f"{_owner(d)}'s plan is ready to be released",
        f"The time {_owner(d)} left to cancel has passed. Each of the people they named has been sent "
        "their link; the plan is released when one of them confirms it with their wallet. If one of them "
        "tells you the link never came, you can send it again from your guardian page.",
    )


def _plan_released_guardian(d: Delivery, links: dict[str, str]) -> tuple[str, str]:
    return (
        f"{_owner(d)}'s plan has been released",
        f"{_owner(d)}'s plan has been released to the people they chose. Thank you for your care.",
    )


def _guardian_invitation(d: Delivery, links: dict[str, str]) -> tuple[str, str]:
    wallet = d["context"].get("walletAddress") or "the wallet they recorded for you"
    days = d["context"].get("silenceDays")
    silence = f"for about {days} days" if days else "for longer than their plan allows"
    return (
        f"{_owner(d)} asks you to be a guardian of their legacy plan",
        f"{_owner(d)} has named you as a guardian of their legacy plan, with the Stellar wallet {wallet}.\n\n"
        f"What a guardian does: if {_owner(d)} stops checking in {silence}, or "
        "a guardian tells us they have died or can no longer act, we ask the guardians to confirm. "
        f"The plan is released to the people {_owner(d)} chose only when enough guardians approve, and "
        f"{_owner(d)} can stop it at any time by checking in. Most of the time there is nothing to do.\n\n"
        f"To accept or decline, open your page for this plan:\n\n{links['guardian']}\n\n"
        "Your wallet app signs your answer there (a link or a QR code; nothing is paid)."
        + (
            f" Or sign in at {links['app']} with that wallet and answer among the plans you guard."
            if links.get("app")
            else ""
        )
        + " You count as a guardian only once you have accepted. Keep the link to yourself.",
    )


def _guardian_reconfirm(d: Delivery, links: dict[str, str]) -> tuple[str, str]:
    wallet = d["context"].get("walletAddress") or "the wallet they recorded for you"
    days = d["context"].get("graceDays", 30)
    where = f" at {links['app']}" if links.get("app") else ""
    return (
        f"Are you still able to act for {_owner(d)}?",
        f"Some time ago you agreed to be a guardian of {_owner(d)}'s legacy plan. Please tell us that you "
        f"still can: confirm on your page for this plan (the link below) with your Stellar wallet {wallet}"
        + (f", or sign in{where} with that wallet and confirm among the plans you guard" if where else "")
        + ". Your wallet's signature proves you still hold the key; it takes a minute, and nothing else "
        "changes.\n\n"
        f"If we do not hear from you within {days} days, we will let {_owner(d)} know, so that they can "
        "check on you or choose someone else. If you no longer have that wallet, tell them.",
    )


def _guardian_unresponsive(d: Delivery, links: dict[str, str]) -> tuple[str, str]:
    name = d["about_guardian_name"] or "One of your guardians"
    return (
        f"{name} has not confirmed they can still act",
        f"We asked {name} on {_when(d['context'].get('askedAt'))} to confirm that they can still act as a "
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


def _release_stopped(d: Delivery, links: dict[str, str]) -> tuple[str, str]:
    return (
        f"{_owner(d)}'s plan is no longer ready to be released",
        f"We recently sent you a link to {_owner(d)}'s legacy plan. The release has been stopped, so the "
        "link opens nothing for now and there is nothing for you to do. If the plan becomes ready again, "
        "we will write to you.",
    )


def _guardians_short(d: Delivery, links: dict[str, str]) -> tuple[str, str]:
    return ("Your plan needs more guardians", "You removed a guardian." + _short(d["context"]))


def _verification_reminder(d: Delivery, links: dict[str, str]) -> tuple[str, str]:
    days = d["context"].get("days", 3)
    return (
        f"A reminder: {_owner(d)}'s plan is waiting for you",
        f"{days} days ago we asked the guardians of {_owner(d)}'s legacy plan to confirm whether they "
        "have died or can no longer act, and we have not had your answer yet. If you know this to be "
        "true, please sign in with your wallet and approve the release. If you are unsure, or you know "
        f"they are well, do nothing: the plan waits, and {_owner(d)} can stop it at any time by checking in.",
    )


def _deadline_warning(d: Delivery, links: dict[str, str]) -> tuple[str, str]:
    ctx = d["context"]
    when = _when(ctx.get("deadlineAt"))
    asked = (
        f"On {_when(ctx.get('startedAt'))} we asked your guardians to confirm whether you have died or "
        "can no longer act, and not enough of them have answered."
    )
    if ctx.get("stage") == "final":
        return (
            "Last warning: your plan will be released unless you check in",
            f"{asked} As you chose, if nothing changes your plan will be released after {when}: this is "
            "our last warning before then. If you are well, check in now: it stops everything.",
        )
    return (
        "Your plan will be released unless you check in",
        f"{asked} As you chose, if nothing changes your plan will be released after {when}; we will "
        "warn you once more before then. If you are well, check in now: it stops everything.",
    )


def _verification_timeout(d: Delivery, links: dict[str, str]) -> tuple[str, str]:
    asked = (
        "We asked your guardians to confirm, and by the deadline you chose not enough of them had approved."
    )
    if d["context"].get("outcome") == "release":
        return (
            "Your plan will be released unless you check in",
            f"{asked} As you chose, your plan will be released on {_when(d['context'].get('releaseAt'))}. "
            "If you are well, check in now to stop it.",
        )
    return (
        "Your plan is still waiting for your guardians",
        f"{asked} As you chose, the plan goes on waiting: nothing is released until enough guardians "
        "approve. If you are well, check in to end this verification.",
    )


def _verification_timeout_guardian(d: Delivery, links: dict[str, str]) -> tuple[str, str]:
    passed = f"The deadline {_owner(d)} set for this verification has passed without enough approvals."
    if d["context"].get("outcome") == "release":
        return (
            f"{_owner(d)}'s plan will be released",
            f"{passed} As they chose, their plan will be released on {_when(d['context'].get('releaseAt'))}, "
            "unless they check in before then. There is nothing more you need to do.",
        )
    return (
        f"{_owner(d)}'s plan is still waiting for its guardians",
        f"{passed} As they chose, the plan goes on waiting. If you know they have died or can no longer "
        "act, please sign in with your wallet and approve the release; if you are unsure, do nothing.",
    )


def _claim_link(d: Delivery, links: dict[str, str]) -> tuple[str, str]:
    """The heir's link: at release, when an on-chain plan is ready (one step left, theirs to
    take, in plain words), or again on request (context "stage")."""
    stage = d["context"].get("stage")
    if stage == "resend":
        return (
            f"Your link to what {_owner(d)} left you",
            f"Here is your link again, as asked:\n\n{links['claim']}\n\n"
            "If you did not ask for it, you can ignore this email: the link works only for you. "
            "Please do not share it.",
        )
    if stage == "ready":
        return (
            f"{_owner(d)} left something for you",
            f"{_sympathy(d)}{_owner(d)} asked us to pass something on to you when the time "
            "came. Everything is ready; one last step opens it, whenever you feel able:"
            f"\n\n{links['claim']}\n\n"
            "On that page you connect a Stellar wallet (an app that holds digital money, such as "
            "Freighter) and sign once to confirm the release. Any one of the people named in the plan "
            "can take this step for everyone. The wallet needs a little XLM (a few cents) for the "
            "network fee. If you would like help, one of the plan's guardians can guide you.\n\n"
            "This link is yours alone; please do not share it.",
        )
    return (
        f"{_owner(d)} left something for you",
        f"{_sympathy(d)}{_owner(d)} asked us to pass something on to you when the time came. "
        f"You can open it here, whenever you are ready:\n\n{links['claim']}\n\n"
        "This link is yours alone; please do not share it.",
    )


def _claim_link_undelivered(d: Delivery, links: dict[str, str]) -> tuple[str, str]:
    heir = d["subject_name"] or "one of the people they named"
    return (
        f"{heir} has not received their link",
        f"We could not deliver to {heir} the link to what {_owner(d)} left them: the email to the address "
        f"{_owner(d)} gave us did not go through. You can send it again from your guardian page; it "
        f"goes to that same address only. {heir} can also ask for it themselves on the claim page, with "
        "that address. If the address is wrong or no longer used, please reply to this email: we will "
        f"confirm who {heir} is before sending the link anywhere else.",
    )


def _letter_opened(d: Delivery, links: dict[str, str]) -> tuple[str, str]:
    count = int(d["context"].get("letters") or 1)
    what = "A letter" if count == 1 else f"{count} letters"
    return (
        f"{what} from {_owner(d)} opened today",
        f"{what} from {_owner(d)} opened today. {_owner(d)} asked that {'it' if count == 1 else 'they'} "
        f"reach you now, and {'it is' if count == 1 else 'they are'} waiting for you here, whenever you are "
        f"ready:\n\n{links['claim']}\n\n"
        "This is the same link you were given before; it is yours alone, please do not share it.",
    )


def _email_confirmation(d: Delivery, links: dict[str, str]) -> tuple[str, str]:
    return (
        "Please confirm that this address reaches you",
        f"{_owner(d)} has listed this address to receive something from them in the future, and would "
        "like to be sure it reaches you. If it does, please confirm it here (one button, nothing else "
        f"is asked of you):\n\n{links['confirm']}\n\n"
        f"The link works once, for 30 days. If you do not know {_owner(d)}, or this is not your address, "
        "you can ignore this email: nothing happens unless you press the button.",
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


def _wallet_change_requested(d: Delivery, links: dict[str, str]) -> tuple[str, str]:
    heir = d["subject_name"] or "One of the people they named"
    wallet_end = d["context"].get("walletEnd", "")
    return (
        f"{heir} asks to claim with a new wallet",
        f"{heir} says they no longer hold the wallet {_owner(d)}'s plan had for them, and has proven a new "
        f"one (ending in {wallet_end}). Please approve it from your guardian page only after confirming "
        f"with {heir} themselves, in person or by phone, that this wallet is theirs: whoever it belongs "
        "to will be able to claim their share. If you are unsure, do nothing.",
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


def _plan_deleted(d: Delivery, links: dict[str, str]) -> tuple[str, str]:
    return (
        f"{_owner(d)}'s plan no longer exists",
        f"{_owner(d)} has deleted their legacy plan, so there is nothing more for you to do as its guardian.",
    )


# The owner's digest of changes (models.delivery.changes): each line names the person and what
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
    "wallet_linked": ("The wallet {name}", "linked to your account (it can now sign in as you)"),
    "wallet_removed": ("The wallet {name}", "removed from your account; every session was ended"),
    "owner_email": ("Your email address", "changed to this one (the previous address was told too)"),
}


def _if_not_you(links: dict[str, str]) -> str:
    return (
        "If this was you, there is nothing to do. If it was not, someone else may hold your wallet's key. "
        f"Sign in at {links['app']} with a wallet only you hold, check in, sign out everywhere (every "
        "session ends), remove any wallet you do not recognise, and review your beneficiaries and guardians."
    )


def _account_changes(d: Delivery, links: dict[str, str]) -> tuple[str, str]:
    changes = d["context"].get("changes", [])
    lines = []
    for change in changes:
        who, what = _CHANGES.get(change.get("what", ""), ("Your plan", "changed"))
        name = change.get("name") or "(name unavailable)"  # sealed under a key retired since
        lines.append(f"{_when(change.get('at'))} — {who.format(name=name)}: {what}.")
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
        f"On {_when(d['context'].get('at'))} the email address of your legacy plan account was changed from "
        "this one to another address; our emails about your plan now go there. " + _if_not_you(links),
    )


TEMPLATES: dict[str, Template] = {
    "account_changes": _account_changes,
    "owner_email_changed": _owner_email_changed,
    "check_in_reminder": _check_in_reminder,
    "grace_started": _grace_started,
    "verification_started": _verification_started,
    "verification_requested": _verification_requested,
    "false_alarm": _false_alarm,
    "plan_approved": _plan_approved,
    "plan_approved_guardian": _plan_approved_guardian,
    "plan_released_guardian": _plan_released_guardian,
    "plan_ready": _plan_ready,
    "plan_ready_guardian": _plan_ready_guardian,
    "claim_link": _claim_link,
    "guardian_invitation": _guardian_invitation,
    "guardian_declined": _guardian_declined,
    "guardians_short": _guardians_short,
    "release_stopped": _release_stopped,
    "guardian_reconfirm": _guardian_reconfirm,
    "guardian_unresponsive": _guardian_unresponsive,
    "verification_reminder": _verification_reminder,
    "verification_timeout": _verification_timeout,
    "deadline_warning": _deadline_warning,
    "verification_timeout_guardian": _verification_timeout_guardian,
    "claim_link_undelivered": _claim_link_undelivered,
    "wallet_change_requested": _wallet_change_requested,
    "guardian_email_bounced": _guardian_email_bounced,
    "letter_opened": _letter_opened,
    "email_confirmation": _email_confirmation,
    "archive_item_damaged": _archive_item_damaged,
    "plan_deleted": _plan_deleted,
}
# Appended to every guardian email (the invitation says it in its own words).
GUARDIAN_PAGE_TEXT = (
    "Your page for this plan shows what is asked of you now, and your wallet app answers there "
    "(keep the link to yourself):\n\n{url}"
)
# Appended to every owner email that carries a check-in link (models.check_in_links.KINDS).
CHECK_IN_LINK_TEXT = (
    "No wallet at hand? This link checks you in once, without signing in (it works for 30 days, "
    "until you next check in):\n\n{url}"
)


def _html(greeting: str, paragraphs: list[str], links: dict[str, str]) -> str:
    parts = [f"<p>{html.escape(greeting)}</p>"]
    for paragraph in paragraphs:
        escaped = html.escape(paragraph)
        for url in links.values():
            safe = html.escape(url)
            escaped = escaped.replace(safe, f'<a href="{safe}">{safe}</a>')
        parts.append(f"<p>{escaped}</p>")
    return "<!doctype html><html><body>" + "".join(parts) + "</body></html>"


def render(d: Delivery, *, ring: KeyRing, base_url: str, app_url: str) -> Email:
    """The email for one outbox row. Links to the service's own pages use `base_url`
    (PUBLIC_BASE_URL); only "sign in" points at `app_url` (PUBLIC_APP_URL), docs/pages.md."""
    links: dict[str, str] = {}
    if d["kind"] in ("claim_link", "letter_opened"):
        token = open_claim_token(ring, d["claim_token_sealed"] or "", d["beneficiary_id"] or "")
        links["claim"] = f"{base_url}/claim/{token}"
    if d["kind"] == "email_confirmation":
        token = email_confirmations.token_for(ring, key_id=d["context"]["keyId"], outbox_id=d["id"])
        links["confirm"] = email_confirmations.url(base_url, token)
    if d["kind"] in ("guardian_invitation", "guardian_reconfirm") and app_url != base_url:
        links["app"] = app_url  # the owners' web client, where a deployment has one
    if d["recipient_type"] == "guardian" and d["guardian_id"] and d["guardian_page_version"]:
        token = guardian_links.token_for(
            ring,
            key_id=d["guardian_page_key_id"] or ring.primary_id,
            guardian_id=d["guardian_id"],
            version=d["guardian_page_version"],
        )
        links["guardian"] = guardian_links.url(base_url, token)
    if d["kind"] in ("account_changes", "owner_email_changed"):
        links["app"] = app_url  # where the owner signs in to act on it
    if d["check_in_link"]:
        key_id = d["check_in_key_id"] or ring.primary_id
        token = check_in_links.token_for(ring, key_id=key_id, outbox_id=d["id"])
        links["check_in"] = check_in_links.url(base_url, token)
    subject, text = TEMPLATES[d["kind"]](d, links)
    if "check_in" in links:
        text += "\n\n" + CHECK_IN_LINK_TEXT.format(url=links["check_in"])
    if "guardian" in links and d["kind"] not in ("guardian_invitation", "plan_deleted"):  # a page soon gone
        text += "\n\n" + GUARDIAN_PAGE_TEXT.format(url=links["guardian"])
    greeting = f"Dear {d['recipient_name']}," if d["recipient_name"] else "Hello,"
    paragraphs = [p for p in text.split("\n\n") if p]
    signoff = "With care,\nThe legacy planning service"
    return Email(
        to=d["address"] or "",
        subject=subject,
        text=f"{greeting}\n\n{text}\n\n{signoff}\n",
        html=_html(greeting, [*paragraphs, signoff], links),
    )
