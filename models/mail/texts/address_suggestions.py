"""A guardian's suggestion to the owner, before the release, that the address of someone the owner
chose may be wrong (models.plan.guardianships.address_suggestions): the guardian is not shown the
heirs, so the email names the person as the guardian wrote it, and the owner decides. Its words:
models/mail/templates/kinds/address_suggested.html."""

from __future__ import annotations

from models.mail.texts.common import OWNER, Kind

KINDS: dict[str, Kind] = {"address_suggested": Kind("kinds/address_suggested.html", audience=(OWNER,))}
