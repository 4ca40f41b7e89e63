"""An objection's window (docs/lifecycle.md "Objections"): the owner reminded halfway that it
lapses unless they check in, and, when it lapses, the owner, the guardian who objected and the
other guardians told that it did and what happens now. The facts of "now" are the plan's after
the lapse (models.flows.objection_lapses), so each reader learns the deadline as it now stands.
Their words: models/mail/templates/kinds/<kind>.html."""

from __future__ import annotations

from models.mail.texts.common import GUARDIAN, OWNER, Kind

# The owner's two say so by the check-in link (models.check_in_links.KINDS); the guardians' end with
# their page.
KINDS: dict[str, Kind] = {
    "objection_check_in_reminder": Kind(
        "kinds/objection_check_in_reminder.html", audience=(OWNER,), footers=("check_in",)
    ),
    "objection_lapsed": Kind("kinds/objection_lapsed.html", audience=(OWNER,), footers=("check_in",)),
    "objection_lapsed_guardian": Kind(
        "kinds/objection_lapsed_guardian.html", audience=(GUARDIAN,), footers=("guardian_page",)
    ),
    "objection_lapsed_objector": Kind(
        "kinds/objection_lapsed_objector.html", audience=(GUARDIAN,), footers=("guardian_page",)
    ),
}
