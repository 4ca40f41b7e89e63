"""The owner's readiness sentences (GET /api/legacy): what blocks activation and the advice
that blocks nothing, in the reader's language (the owner's, set by models.plan.journey.overview;
English inside an error body, where activation refuses: models.flows.lifecycle).

Apart from the settings (models.plan.plan_settings) because these change with the words and the
languages, the settings with the operator's bounds.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from core.text import i18n
from core.text.i18n import _, ngettext
from models import address_links
from models.plan.plan_settings import Facts
from models.plans import Plan, threshold


class Advice(str):
    """A sentence of the checklist that knows which part of the plan it is about (`topic`:
    heirs, guardians, account, settings, mail), so that the owner's pages link it to the page
    that fixes it. It is still the plain string every other reader (the JSON body) takes."""

    topic: str

    def __new__(cls, sentence: str, topic: str) -> Advice:
        said = super().__new__(cls, sentence)
        said.topic = topic
        return said


class _Checklist(list[str]):
    """Sentences appended under the topic named last (`on`)."""

    topic = ""

    def on(self, topic: str) -> _Checklist:
        self.topic = topic
        return self

    def append(self, sentence: str) -> None:
        super().append(Advice(sentence, self.topic))

    def extend(self, sentences: Iterable[str]) -> None:
        for sentence in sentences:
            self.append(sentence)


def readiness(*, plan: Plan, known: Facts, contract: bool = False) -> list[str]:
    """What blocks activation, in words a person understands, in the reader's language (the
    owner's: models.plan.journey.overview; English in an error body); empty when nothing does.
    With a contract (`contract`), approvals are signed on-chain: a guardian without a wallet cannot."""
    problems = _Checklist()
    if contract and known["walletless_guardians"]:
        problems.on("guardians").append(
            _(
                "Approvals are signed on the Stellar network here, and a passkey cannot sign them: record a "
                "Stellar wallet for {names}, or remove them."
            ).format(names=_names(known["walletless_guardians"]))
        )
    if known["beneficiaries"] == 0:
        problems.on("heirs").append(_("Add at least one beneficiary."))
    elif known["allocation_total"] != 100:
        problems.on("heirs").append(
            _("Your beneficiaries' shares add up to {total}%; they must add up to exactly 100%.").format(
                total=_figure(known["allocation_total"])
            )
        )
    if known["guardians"] == 0:
        problems.on("guardians").append(
            _("Add at least one guardian: someone you trust to confirm a release.")
        )
    elif threshold(plan=plan, standing=known["standing_guardians"]) > known["standing_guardians"]:
        problems.on("guardians").append(_too_few_problem(plan, known))
    elif known["accepted_guardians"] < threshold(plan=plan, standing=known["standing_guardians"]):
        problems.on("guardians").append(_acceptance_problem(plan, known))
    if not known["has_owner_name"]:
        problems.on("account").append(_("Add your name so guardians and heirs know whose plan this is."))
    if not known["has_owner_email"]:
        problems.on("account").append(
            _("Add your email address to your profile, so reminders to check in can reach you.")
        )
    elif known["owner_email_bounced"]:
        problems.on("account").append(
            _(
                "Your email address bounced (or our email to it was marked as spam): reminders to check in "
                "may not reach you. Correct it in your profile, or check your mailbox's filters."
            )
        )
    return problems


def _names(names: list[str]) -> str:
    """People named in a sentence, as written ("Ana, Bo"): names are never translated."""
    # Translators: the separator between names in a list ("Ana, Bo").
    return _(", ").join(names)


def _figure(value: Any) -> str:
    """A decimal figure in a sentence: as written before (99.5) in English, the reader's way elsewhere."""
    if i18n.language() == i18n.SOURCE:
        return format(value.normalize(), "f")
    return i18n.number(value)


def _too_few_problem(plan: Plan, known: Facts) -> str:
    """Fewer guardians standing than the approvals asked for. The English forms are the ones
    owners read before the sentences were translated ("guardian(s)"), kept as they were."""
    standing = known["standing_guardians"]
    asked = threshold(plan=plan, standing=standing)
    # Translators: how many approvals the owner asks for, as "2 guardian approvals".
    approvals = ngettext("{count} guardian approvals", "{count} guardian approvals", asked).format(
        count=i18n.number(asked)
    )
    # Translators: how many guardians the owner has, as "1 guardian".
    guardians = ngettext("{count} guardian(s)", "{count} guardian(s)", standing).format(
        count=i18n.number(standing)
    )
    if known["declined_guardians"]:
        return _(
            "You ask for {approvals} but have {guardians} who have not declined ({names} did); add "
            "guardians or lower the number of approvals needed."
        ).format(approvals=approvals, guardians=guardians, names=_names(known["declined_guardians"]))
    return _(
        "You ask for {approvals} but have {guardians}; add guardians or lower the number of approvals needed."
    ).format(approvals=approvals, guardians=guardians)


def _acceptance_problem(plan: Plan, known: Facts) -> str:
    needed = threshold(plan=plan, standing=known["standing_guardians"])
    answers = []
    if known["unanswered_guardians"]:
        answers.append(_("not answered yet: {names}").format(names=_names(known["unanswered_guardians"])))
    if known["declined_guardians"]:
        answers.append(_("declined: {names}").format(names=_names(known["declined_guardians"])))
    approvals = ngettext("{count} approval", "{count} approvals", needed).format(count=i18n.number(needed))
    return _(
        "Guardians count once they accept the invitation we emailed them: {accepted} of {guardians} have, "
        "and your plan needs {approvals} ({answers}). Wait for them, add guardians, or lower the number of "
        "approvals needed."
    ).format(
        accepted=i18n.number(known["accepted_guardians"]),
        guardians=i18n.number(known["guardians"]),
        approvals=approvals,
        # Translators: the separator between two lists of guardians ("not answered yet: …; declined: …").
        answers=_("; ").join(answers),
    )


def _one_silent_guardian_holds_it(*, plan: Plan, known: Facts) -> bool:
    """A plan that waits at its deadline (or has none) whose approvals needed equal its accepted
    guardians: nothing but every one of them releases it, so one who never answers holds it for
    ever. A guardian's objection lapses (docs/lifecycle.md); silence does not."""
    waits = plan["verification_timeout_seconds"] is None or plan["on_verification_timeout"] == "wait"
    accepted = known["accepted_guardians"]
    return waits and accepted > 0 and threshold(plan=plan, standing=known["standing_guardians"]) == accepted


def _guardians_and_deadline(*, plan: Plan, known: Facts) -> _Checklist:
    """What the deadline and the guardians' number leave to chance."""
    advice = _Checklist()
    if plan["verification_timeout_seconds"] is None:
        advice.on("settings").append(
            _(
                "Your plan has no verification deadline: if your guardians cannot or do not answer, it waits "
                "for ever and your beneficiaries are never told."
            )
        )
    elif plan["on_verification_timeout"] == "wait":
        advice.on("settings").append(
            _(
                "When the verification deadline passes, your plan goes on waiting: if your guardians cannot "
                "or do not answer, it is never released and your beneficiaries are never told."
            )
        )
    standing, declined = known["standing_guardians"], known["declined_guardians"]
    if declined and standing > 1 and threshold(plan=plan, standing=standing) == standing:
        advice.on("guardians").append(
            _(
                "Since {names} declined, your plan needs the approval of every remaining guardian "
                "({count} of {count}): if one of them cannot act, it can never be released by its "
                "guardians. Add a guardian, or lower the number of approvals needed."
            ).format(names=_names(declined), count=i18n.number(standing))
        )
    if _one_silent_guardian_holds_it(plan=plan, known=known):
        advice.on("settings").append(
            _(
                "As you chose, your plan is never released by its deadline, and it needs the approval of "
                "every guardian who has accepted ({count} of {count}): one of them who stays silent holds it "
                "back for ever, and your beneficiaries are never told. Choose that the deadline releases the "
                "plan, ask for fewer approvals, or add a guardian."
            ).format(count=i18n.number(known["accepted_guardians"]))
        )
    if known["unresponsive_guardians"]:
        advice.on("guardians").append(
            _(
                "Not confirmed when asked whether they can still act as your guardian: {names}. Check on "
                "them, update their details, or add another guardian."
            ).format(names=_names(known["unresponsive_guardians"]))
        )
    return advice


def _requests_and_heirs(*, plan: Plan, known: Facts) -> _Checklist:
    """What the heirs' requests and early links do, and who would confirm a release."""
    advice = _Checklist()
    if not plan["allow_beneficiary_requests"]:
        advice.on("settings").append(
            _(
                "Your beneficiaries cannot ask for a verification: if your guardians stay silent, only your "
                "silence past the grace period starts one."
            )
        )
    requests = plan["allow_beneficiary_requests"] and known["beneficiaries"] > 0
    if requests and plan["on_verification_timeout"] == "release" and plan["verification_timeout_seconds"]:
        advice.on("settings").append(
            _(
                "A beneficiary's request can lead to a release if nobody answers: it starts a verification, "
                "and unless you check in, or a guardian says it is a mistake, your plan is released when the "
                "deadline passes. If that is not what you want, choose that the deadline holds the plan "
                "rather than releasing it, or turn off requests from beneficiaries."
            )
        )
    if plan["notify_beneficiaries_on_activation"]:
        advice.on("settings").append(
            _(
                "As you chose, each beneficiary is emailed their link while your plan is active: it opens "
                "nothing until the release, and from it they can ask your guardians to check."
            )
            if requests
            else _(
                "As you chose, each beneficiary is emailed their link while your plan is active: it opens "
                "nothing until the release."
            )
        )
    if known["guardians_also_heirs"]:
        advice.on("guardians").append(
            ngettext(
                "{names} is both a guardian and a beneficiary (the same email address or wallet): a guardian "
                "who inherits has a stake in the release they confirm. Consider asking someone who does not "
                "inherit.",
                "{names} are both a guardian and a beneficiary (the same email address or wallet): a "
                "guardian who inherits has a stake in the release they confirm. Consider asking someone who "
                "does not inherit.",
                len(known["guardians_also_heirs"]),
            ).format(names=_names(known["guardians_also_heirs"]))
        )
    if known["guardians"] and threshold(plan=plan, standing=known["standing_guardians"]) == 1:
        advice.on("guardians").append(
            _(
                "One guardian's approval is enough to release your plan: a single person, mistaken or "
                "dishonest, could release it. Add guardians and ask for at least two approvals."
            )
        )
    return advice


def warnings(*, plan: Plan, known: Facts) -> list[str]:
    """Advice that never blocks anything: what would make the plan fail its owner (in the
    reader's language, as readiness)."""
    advice = _guardians_and_deadline(plan=plan, known=known)
    advice += _requests_and_heirs(plan=plan, known=known)  # their sentences keep their topics
    if known["deferred_emails"]:
        count = known["deferred_emails"]
        advice.on("mail").append(
            ngettext(
                "{count} email waits to be sent: your account has sent as many invitations and address "
                "confirmations as it may in a day. They go out by themselves as the day's allowance frees, "
                "within 24 hours; nothing is lost.",
                "{count} emails wait to be sent: your account has sent as many invitations and address "
                "confirmations as it may in a day. They go out by themselves as the day's allowance frees, "
                "within 24 hours; nothing is lost.",
                count,
            ).format(count=i18n.number(count))
        )
    needed = threshold(plan=plan, standing=known["standing_guardians"])
    if address_links.short_of_guardians(accepted=known["accepted_guardians"], needed=needed):
        advice.on("heirs").extend(address_links.uncorrectable(name=name) for name in known["bounced_heirs"])
    if known["bounced_heirs"]:
        advice.on("heirs").append(
            _(
                "Our email to {names} bounced (or was marked as spam): check the address you gave, or they "
                "may never receive what you leave them."
            ).format(names=_names(known["bounced_heirs"]))
        )
    if known["unconfirmed_heirs"]:
        advice.on("heirs").append(
            ngettext(
                "{names} has not confirmed their email address: a mistyped address is otherwise found only "
                "after the release. We can send them a short, neutral note asking them to confirm it.",
                "{names} have not confirmed their email address: a mistyped address is otherwise found only "
                "after the release. We can send them a short, neutral note asking them to confirm it.",
                len(known["unconfirmed_heirs"]),
            ).format(names=_names(known["unconfirmed_heirs"]))
        )
    if known["owner_wallets"] < 2:
        advice.on("account").append(
            _(
                "You sign in with a single wallet: link a second one, so that losing one key does not lock "
                "you out. (The check-in link in our emails also works without a wallet.)"
            )
        )
    return advice
