"""The owner's emails about their account: the digest of changes to their plan and account, and
their address changed. Each says what changed and, if it was not them, what to do first (check
in, then take the account back): someone else may hold their wallet's key. Their words:
models/mail/templates/kinds/<kind>.html."""

from __future__ import annotations

from models.mail.texts.common import OWNER, Kind

# Both end with the owner's check-in link (models.check_in_links.KINDS).
KINDS: dict[str, Kind] = {
    "account_changes": Kind(
        "kinds/account_changes.html", audience=(OWNER,), links=("app",), footers=("check_in",)
    ),
    "owner_email_changed": Kind(
        "kinds/owner_email_changed.html", audience=(OWNER,), links=("app",), footers=("check_in",)
    ),
}
