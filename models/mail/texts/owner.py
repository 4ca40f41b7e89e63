"""The owner's emails, by kind: check-in reminders, a verification started, approvals and the
release ahead, what their guardians did (declined, fell silent, a bounced invitation), a damaged
file (the digest of changes to their plan and account: `account`). They change with what the owner is
told, in the owner's own words ("your plan"). Their words: models/mail/templates/kinds/<kind>.html."""

from __future__ import annotations

from models.mail.texts.common import OWNER, Kind

# Each kind of the owner's emails: its template, and what follows its words. Every one that checks
# the owner in by its link says so (models.check_in_links.KINDS).
_CHECK_IN = ("check_in",)
KINDS: dict[str, Kind] = {
    "check_in_reminder": Kind("kinds/check_in_reminder.html", audience=(OWNER,), footers=_CHECK_IN),
    "grace_started": Kind("kinds/grace_started.html", audience=(OWNER,), footers=_CHECK_IN),
    "verification_started": Kind("kinds/verification_started.html", audience=(OWNER,), footers=_CHECK_IN),
    "plan_approved": Kind("kinds/plan_approved.html", audience=(OWNER,), footers=_CHECK_IN),
    "plan_ready": Kind("kinds/plan_ready.html", audience=(OWNER,), footers=_CHECK_IN),
    "guardian_unresponsive": Kind("kinds/guardian_unresponsive.html", audience=(OWNER,)),
    "guardian_declined": Kind("kinds/guardian_declined.html", audience=(OWNER,)),
    "guardian_accepted": Kind("kinds/guardian_accepted.html", audience=(OWNER,)),
    "plan_activated": Kind("kinds/plan_activated.html", audience=(OWNER,)),
    "guardians_short": Kind("kinds/guardians_short.html", audience=(OWNER,)),
    "deadline_warning": Kind("kinds/deadline_warning.html", audience=(OWNER,), footers=_CHECK_IN),
    "verification_timeout": Kind("kinds/verification_timeout.html", audience=(OWNER,), footers=_CHECK_IN),
    "guardian_email_bounced": Kind("kinds/guardian_email_bounced.html", audience=(OWNER,)),
    "recipient_unknown": Kind("kinds/recipient_unknown.html", audience=(OWNER,)),
    "archive_item_damaged": Kind("kinds/archive_item_damaged.html", audience=(OWNER,)),
}
