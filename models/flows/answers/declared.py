"""Every answer a guardian gives from their page, declared once: its name; when it may be asked
(the plan's states, the guardian's standing, what else the page must show); what it carries
(a reason word, an heir, a proposed change, a note) and so what the wallet's request and the
passkey's challenge bind; the words a wallet shows and the titles and button of its pages; and
the one function that performs it once proved.

The page (models.flows.guardian_pages) asks `asked_now` what to offer; the one `ask`
(models.flows.answers.asking) checks an answer against its declaration whatever proves it;
the SEP-7 callback and the passkey ceremony find what to run by the request's purpose
(`by_purpose`). A new answer is one more entry here, its act in models.flows.answers.acts.
docs/pages.md "The guardian's page".
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from core.text.i18n import N_
from models.flows.answers import acts
from models.flows.answers.shown import ACTIONS as ACTIONS
from models.flows.answers.shown import Action, GuardianPage
from models.plan import approvals
from models.plan.guardianships import open_addresses
from models.plans import ACTIVE, APPROVED, DRAFT, FROZEN, PENDING, RELEASED

# What an answer carries beside itself, by the form field the page posts.
Carried = Literal["reason", "heir", "change"]
# What rides as the answer's note, sealed beside a wallet's request or bound into a passkey's
# challenge by its SHA-256: a report's or objection's words, a proposed address, a suggestion.
Note = Literal["note", "address", "suggestion"]
# The guardian's standing an answer needs: invited (not accepted yet), accepted, or either.
Standing = Literal["invited", "accepted", "any"]
# What the proof is over: the answer's own words (purpose, plan, round, what it carries), or,
# for an approval, the attestation text (signed as a challenge carrying its SHA-256, or on chain).
Binds = Literal["answer", "attestation"]

EVERY_STATE = (DRAFT, ACTIVE, PENDING, APPROVED, RELEASED)
NOT_RELEASED = (DRAFT, ACTIVE, PENDING, APPROVED)
# Nobody takes the role on or steps down in the middle of a verification (invitation.answer),
# nor once the plan is released: the page says they can accept once it ends.
OUT_OF_A_ROUND = (DRAFT, ACTIVE)
WHILE_PLANNED = (ACTIVE, PENDING, APPROVED)


def _always(page: GuardianPage) -> bool:
    return True


@dataclass(frozen=True)
class Declared:
    name: Action
    states: tuple[str, ...]
    standing: Standing
    message: str | None  # what a wallet shows (SEP-7 `msg`); None: never asked of a wallet
    wallet_title: str | None  # the signing request's page
    passkey_title: str
    passkey_button: str
    act: acts.Act | None  # None: an approval (bound to its attestation) or adding a passkey
    also: Callable[[GuardianPage], bool] = _always  # what else the page must show
    carries: Carried | None = None
    note: Note | None = None
    binds: Binds = "answer"
    on_chain: bool = False  # with a contract configured, proved only by the wallet, on chain
    # The guardian page's words for it: its button, and the sentence above it where that is
    # the answer's own. The page's (`%(owner)s`, `%(heir)s`, `%(when)s`): translated and
    # %-formatted there as a `{% trans %}` block is, each name in its <bdi>.
    button: str = ""
    paragraph: str | None = None

    @property
    def purpose(self) -> str:
        return f"guardian.{self.name}"

    def asked(self, *, page: GuardianPage) -> bool:
        """Whether the page offers this answer now (the model functions refuse it otherwise)."""
        accepted = page["guardian"]["invitation"] == "accepted"
        if (self.standing == "accepted" and not accepted) or (self.standing == "invited" and accepted):
            return False
        return page["status"] in self.states and self.also(page)


def _reconfirm_asked(page: GuardianPage) -> bool:
    guardian = page["guardian"]
    return guardian["reconfirm_asked_at"] is not None or guardian["unresponsive_since"] is not None


def _report_open(page: GuardianPage) -> bool:
    return page["plan"]["report_from"] is None


def _not_approved(page: GuardianPage) -> bool:
    return not page["verification"]["approved_by_me"]


def _not_objected(page: GuardianPage) -> bool:
    # One answer per round: objecting takes an approval back. An objection that lapsed (the
    # owner did not check in) cannot be made again in the round.
    verification = page["verification"]
    return verification["objected_at"] is None and verification["objection_lapsed_at"] is None


def _objected(page: GuardianPage) -> bool:
    return page["verification"]["objected_at"] is not None


def _heirs_listed(page: GuardianPage) -> bool:
    return bool(page["heirs"]["links"])


def _heirs_not_listed(page: GuardianPage) -> bool:
    return not page["heirs"]["links"]  # to the owner, who decides: the heirs are not listed yet


def _change_to_agree(page: GuardianPage) -> bool:
    return any(c["status"] == "pending" and not c["agreed_by_me"] for c in page["heirs"]["changes"])


def _change_running(page: GuardianPage) -> bool:
    return any(c["status"] in open_addresses.OPEN for c in page["heirs"]["changes"])


def _passkey_held(page: GuardianPage) -> bool:
    # Another device, after proving with a passkey they have.
    return page["guardian"]["wallet_address"] is None and bool(page["guardian"]["passkeys"])


# In the order the page lists them.
ANSWERS: tuple[Declared, ...] = (
    Declared(
        "accept",
        OUT_OF_A_ROUND,
        "invited",
        N_("Accept being a guardian for {owner}'s plan"),
        N_("Accept with your wallet"),
        N_("Accept with a passkey"),
        N_("Create a passkey and accept"),
        acts.accept,
        button=N_("Accept"),
        paragraph=N_(
            "Accept to guard the plan: if %(owner)s stops checking in, or a guardian tells us they have died "
            "or can no longer act, we will ask you to confirm."
        ),
    ),
    Declared(
        "reconfirm",
        WHILE_PLANNED,
        "accepted",
        N_("Confirm you can still act as a guardian for {owner}'s plan"),
        N_("Confirm with your wallet"),
        N_("Confirm with your passkey"),
        N_("Use my passkey to confirm"),
        acts.reconfirm,
        also=_reconfirm_asked,
        button=N_("Confirm"),
        paragraph=N_("Confirm that you can still act as a guardian of %(owner)s’s plan."),  # noqa: RUF001 - the page's apostrophe
    ),
    Declared(
        "report",
        (ACTIVE,),
        "accepted",
        N_("Report that {owner} has died or can no longer act"),
        N_("Report with your wallet"),
        N_("Report with your passkey"),
        N_("Use my passkey to report"),
        acts.report,
        also=_report_open,
        carries="reason",
        note="note",
        button=N_("Report"),
        paragraph=N_(
            "If you know that %(owner)s has died or can no longer act, tell us: the other guardians are asked"
            " to confirm, and %(owner)s is asked to check in, which stops everything."
        ),
    ),
    Declared(
        "approve",
        approvals.VERIFYING,
        "accepted",
        N_("Approve the release of {owner}'s plan, as their guardian"),
        N_("Approve with your wallet"),
        N_("Approve with your passkey"),
        N_("Use my passkey to approve the release"),
        None,
        also=_not_approved,
        binds="attestation",
        on_chain=True,
        button=N_("Approve the release"),
        paragraph=N_(
            "If you have good reason to believe %(owner)s has died or can no longer act, approve the release."
        ),
    ),
    Declared(
        "object",
        (PENDING,),
        "accepted",
        N_("Say the verification of {owner}'s plan is a mistake: they are alive or able to act"),
        N_("Object with your wallet"),
        N_("Object with your passkey"),
        N_("Use my passkey to object"),
        acts.object_,
        also=_not_objected,
        note="note",
        button=N_("This is a mistake: I know they are alive or able to act"),
        paragraph=N_(
            "If you know %(owner)s is alive or able to act, say so: %(owner)s and the other guardians are "
            "told at once, and %(owner)s is asked to check in. The deadline cannot release the plan while you"
            " object, for a limited time: if %(owner)s has not checked in by the date shown here once you "
            "object, your objection lapses and the deadline applies again."
        ),
    ),
    Declared(
        "withdraw_objection",
        FROZEN,
        "accepted",
        N_("Withdraw your objection to the release of {owner}'s plan"),
        N_("Withdraw your objection with your wallet"),
        N_("Withdraw your objection with your passkey"),
        N_("Use my passkey to withdraw it"),
        acts.withdraw_objection,
        also=_objected,
        button=N_("Withdraw my objection"),
        paragraph=N_(
            "You said on %(when)s that this verification is a mistake. If you no longer think so, withdraw "
            "it: %(owner)s and the other guardians are told, and the deadline applies again."
        ),
    ),
    Declared(
        "resend",
        EVERY_STATE,
        "accepted",
        N_("Send {heir}'s link again, for {owner}'s plan"),
        N_("Send the link again"),
        N_("Send the link again"),
        N_("Use my passkey to send it"),
        acts.resend,
        also=_heirs_listed,
        carries="heir",
        button=N_("Send %(heir)s’s link again"),  # noqa: RUF001 - the page's apostrophe
    ),
    Declared(
        "propose_address",
        EVERY_STATE,
        "accepted",
        N_("Propose a new email address for {heir}, in {owner}'s plan"),
        N_("Propose the new address with your wallet"),
        N_("Propose the new address with your passkey"),
        N_("Use my passkey to propose it"),
        acts.propose_address,
        also=_heirs_listed,
        carries="heir",
        note="address",
        button=N_("Propose this address for %(heir)s"),
    ),
    Declared(
        "suggest_address",
        WHILE_PLANNED,
        "accepted",
        N_("Tell {owner} of a new email address for {heir}, someone they chose"),
        N_("Send the address with your wallet"),
        N_("Send the address with your passkey"),
        N_("Use my passkey to send it"),
        acts.suggest_address,
        also=_heirs_not_listed,
        note="suggestion",
        button=N_("Send this address to %(owner)s"),
        paragraph=N_(
            "If you know that the email address %(owner)s gave for one of the people they chose is wrong, "
            "tell %(owner)s: they decide, and change it themselves. This page does not show whom they chose, "
            "so name the person as you know them."
        ),
    ),
    Declared(
        "agree_address",
        EVERY_STATE,
        "accepted",
        N_("Agree to the new email address for {heir}, in {owner}'s plan"),
        N_("Agree with your wallet"),
        N_("Agree with your passkey"),
        N_("Use my passkey to agree"),
        acts.agree_address,
        also=_change_to_agree,
        carries="change",
        button=N_("I know this address reaches %(heir)s: agree"),
    ),
    Declared(
        "stop_address",
        EVERY_STATE,
        "accepted",
        N_("Stop the new email address for {heir}, in {owner}'s plan"),
        N_("Stop it with your wallet"),
        N_("Stop it with your passkey"),
        N_("Use my passkey to stop it"),
        acts.stop_address,
        also=_change_running,
        carries="change",
        button=N_("Stop this new address"),
    ),
    Declared(
        "decline",
        OUT_OF_A_ROUND,
        "any",
        N_("Decline being a guardian for {owner}'s plan"),
        N_("Decline with your wallet"),
        N_("Decline with your passkey"),
        N_("Use my passkey to decline"),
        acts.decline,
        button=N_("Decline"),
        paragraph=N_(
            "If you cannot be a guardian, decline: %(owner)s will be told, and can ask someone else."
        ),
    ),
    Declared(
        "add_passkey",
        NOT_RELEASED,
        "accepted",
        None,
        None,
        N_("Add a passkey on another device"),
        N_("Use my passkey first"),
        None,
        also=_passkey_held,
        button=N_("Add another device"),
        paragraph=N_(
            "Add a passkey on another phone or computer, so that losing one device does not stop you "
            "answering."
        ),
    ),
)
BY_NAME: dict[str, Declared] = {d.name: d for d in ANSWERS}
# The ceremony that creates another passkey, once proved with one (`add_passkey`).
NEW_PASSKEY = (N_("Create your new passkey"), N_("Create a passkey on this device"))
REGISTER = "guardian.register"


def needs_a_wallet(*, answer: Declared, page: GuardianPage, contract_id: str | None) -> bool:
    """An answer only a guardian wallet can prove here: with a contract configured, one proved
    on chain (an approval), asked of a guardian without a wallet. The page says so in place of
    its button; asked anyway, it is refused (approvals.require_off_chain)."""
    return answer.on_chain and bool(contract_id) and page["guardian"]["wallet_address"] is None


def asked_now(*, page: GuardianPage) -> list[Action]:
    """What the guardian can answer now, in the page's order."""
    if page["status"] is None:
        return []
    return [d.name for d in ANSWERS if d.asked(page=page)]


def by_purpose(*, purpose: str) -> Declared | None:
    """The answer a request was issued for (`guardian.<name>`)."""
    return BY_NAME.get(purpose.removeprefix("guardian.")) if purpose.startswith("guardian.") else None
