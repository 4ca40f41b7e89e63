"""The heirs' emails, by kind: their link (at release, when an on-chain plan is ready, or again
on request), a letter that opened, a release stopped, and the confirmation of their address. They
reach people at a hard moment: sympathy only for a reported death, nothing of the contents."""

from __future__ import annotations

from models.delivery.deliveries import Delivery
from models.mail.texts.common import Template
from models.mail.texts.common import owner_name as _owner


def _sympathy(d: Delivery) -> str:
    return "We are sorry for your loss. " if d["report_reason"] == "death" else ""


def _release_stopped(d: Delivery, links: dict[str, str]) -> tuple[str, str]:
    return (
        f"{_owner(d=d)}'s plan is no longer ready to be released",
        f"We recently sent you a link to {_owner(d=d)}'s legacy plan. The release has been stopped, so the "
        "link opens nothing for now and there is nothing for you to do. If the plan becomes ready again, "
        "we will write to you.",
    )


def _claim_link(d: Delivery, links: dict[str, str]) -> tuple[str, str]:
    """The heir's link: at release, when an on-chain plan is ready (one step left, theirs to
    take, in plain words), or again on request (context "stage")."""
    stage = d["context"].get("stage")
    if stage == "resend":
        return (
            f"Your link to what {_owner(d=d)} left you",
            f"Here is your link again, as asked:\n\n{links['claim']}\n\n"
            "If you did not ask for it, you can ignore this email: the link works only for you. "
            "Please do not share it.",
        )
    if stage == "ready":
        return (
            f"{_owner(d=d)} left something for you",
            f"{_sympathy(d)}{_owner(d=d)} asked us to pass something on to you when the time "
            "came. Everything is ready; one last step opens it, whenever you feel able:"
            f"\n\n{links['claim']}\n\n"
            "On that page you connect a Stellar wallet (an app that holds digital money, such as "
            "Freighter) and sign once to confirm the release. Any one of the people named in the plan "
            "can take this step for everyone. The wallet needs a little XLM (a few cents) for the "
            "network fee. If you would like help, one of the plan's guardians can guide you.\n\n"
            "This link is yours alone; please do not share it.",
        )
    return (
        f"{_owner(d=d)} left something for you",
        f"{_sympathy(d)}{_owner(d=d)} asked us to pass something on to you when the time came. "
        f"You can open it here, whenever you are ready:\n\n{links['claim']}\n\n"
        "This link is yours alone; please do not share it.",
    )


def _letter_opened(d: Delivery, links: dict[str, str]) -> tuple[str, str]:
    count = int(d["context"].get("letters") or 1)
    what = "A letter" if count == 1 else f"{count} letters"
    return (
        f"{what} from {_owner(d=d)} opened today",
        f"{what} from {_owner(d=d)} opened today. {_owner(d=d)} asked that {'it' if count == 1 else 'they'} "
        f"reach you now, and {'it is' if count == 1 else 'they are'} waiting for you here, whenever you are "
        f"ready:\n\n{links['claim']}\n\n"
        "This is the same link you were given before; it is yours alone, please do not share it.",
    )


def _email_confirmation(d: Delivery, links: dict[str, str]) -> tuple[str, str]:
    return (
        "Please confirm that this address reaches you",
        f"{_owner(d=d)} has listed this address to receive something from them in the future, and would "
        "like to be sure it reaches you. If it does, please confirm it here (one button, nothing else "
        f"is asked of you):\n\n{links['confirm']}\n\n"
        f"The link works once, for 30 days. If you do not know {_owner(d=d)}, or this is not your address, "
        "you can ignore this email: nothing happens unless you press the button.",
    )


TEMPLATES: dict[str, Template] = {
    "claim_link": _claim_link,
    "release_stopped": _release_stopped,
    "letter_opened": _letter_opened,
    "email_confirmation": _email_confirmation,
}
