"""A guardian's objection ("This is a mistake: I know they are alive or able to act") and its
withdrawal, told to the owner and to the other guardians. docs/lifecycle.md "Objections". Their
words: models/mail/templates/kinds/<kind>.html; the deadline as every verification email to
guardians states it (what happens then, whether the owner chose it, and how to object) and
until when an objection holds it back: `deadline_sentence` and `lapses` in shared.html."""

from __future__ import annotations

from models.mail.texts.common import GUARDIAN, OWNER, Kind

KINDS: dict[str, Kind] = {
    "guardian_objected": Kind("kinds/guardian_objected.html", audience=(OWNER,), footers=("check_in",)),
    "guardian_objected_guardian": Kind(
        "kinds/guardian_objected_guardian.html", audience=(GUARDIAN,), footers=("guardian_page",)
    ),
    "objection_withdrawn": Kind("kinds/objection_withdrawn.html", audience=(OWNER,), footers=("check_in",)),
    "objection_withdrawn_guardian": Kind(
        "kinds/objection_withdrawn_guardian.html", audience=(GUARDIAN,), footers=("guardian_page",)
    ),
}
