"""The guardians' emails, by kind: the invitation and the yearly reconfirmation, a verification
asked of them and its reminders, what became of the plan (approved, ready, released, a false
alarm, deleted), an heir's link that did not arrive, and an heir's new wallet to approve. They
speak of the owner by name, to someone who acts for them. Their words:
models/mail/templates/kinds/<kind>.html."""

from __future__ import annotations

from models.mail.texts.common import GUARDIAN, Kind

# Each kind of the guardians' emails: its template, and what follows its words. All but the
# invitation (whose words give the page) and the plan's deletion (a page soon gone) end with the
# guardian's page.
_PAGE = ("guardian_page",)
KINDS: dict[str, Kind] = {
    "verification_requested": Kind("kinds/verification_requested.html", audience=(GUARDIAN,), footers=_PAGE),
    "false_alarm": Kind("kinds/false_alarm.html", audience=(GUARDIAN,), footers=_PAGE),
    "plan_approved_guardian": Kind("kinds/plan_approved_guardian.html", audience=(GUARDIAN,), footers=_PAGE),
    "plan_ready_guardian": Kind("kinds/plan_ready_guardian.html", audience=(GUARDIAN,), footers=_PAGE),
    "plan_released_guardian": Kind("kinds/plan_released_guardian.html", audience=(GUARDIAN,), footers=_PAGE),
    "guardian_invitation": Kind(
        "kinds/guardian_invitation.html",
        audience=(GUARDIAN,),
        links=("guardian", "app"),
        footers=("unknown",),
    ),
    "guardian_reconfirm": Kind(
        "kinds/guardian_reconfirm.html", audience=(GUARDIAN,), links=("app",), footers=_PAGE
    ),
    "verification_reminder": Kind("kinds/verification_reminder.html", audience=(GUARDIAN,), footers=_PAGE),
    "verification_timeout_guardian": Kind(
        "kinds/verification_timeout_guardian.html", audience=(GUARDIAN,), footers=_PAGE
    ),
    "claim_link_undelivered": Kind("kinds/claim_link_undelivered.html", audience=(GUARDIAN,), footers=_PAGE),
    "wallet_change_requested": Kind(
        "kinds/wallet_change_requested.html", audience=(GUARDIAN,), footers=_PAGE
    ),
    "plan_deleted": Kind("kinds/plan_deleted.html", audience=(GUARDIAN,)),
}
