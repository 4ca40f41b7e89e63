"""Who a thing, a letter or a file is for, as a form posts it and as the owner reads it.

A form offers "everyone" or "chosen heirs" as a radio named `audience.all` (`true` / `false`)
beside a checkbox per heir named `audience.beneficiaryIds`. The API takes one or the other, never
both and never `all: false`: the form is read as the choice the owner made (the ticked heirs are
forgotten when "everyone" is chosen, and `all` is left out when heirs are chosen).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from multidict import MultiDict

from core.text.i18n import _
from models.claim import shares
from models.common import Audience
from models.contents.beneficiaries import Beneficiary

ALL = "audience.all"
IDS = "audience.beneficiaryIds"


def chosen(form: MultiDict[str]) -> MultiDict[str]:
    """The form with the audience as the API reads it (see the module's note)."""
    everyone = form.getall(ALL, [])
    read: MultiDict[str] = MultiDict((key, value) for key, value in form.items() if key not in (ALL, IDS))
    if everyone and everyone[-1].strip().lower() == "false":
        for value in form.getall(IDS, []):
            read.add(IDS, value)
        if not form.getall(IDS, []):
            read.add(ALL, "false")  # nobody ticked: refused by the schema, never read as everyone
        return read
    if everyone:
        read.add(ALL, "true")
    else:
        for value in form.getall(IDS, []):
            read.add(IDS, value)
    return read


def wire(audience: Audience) -> dict[str, Any]:
    """A record's audience under the form's names, for an edit page."""
    if audience["all"]:
        return {ALL: "true"}
    return {ALL: "false", IDS: list(audience["beneficiary_ids"])}


def members(audience: Audience, heirs: Sequence[Beneficiary]) -> list[Beneficiary]:
    """The heirs it is for, in the order they were added."""
    if audience["all"]:
        return list(heirs)
    ids = set(audience["beneficiary_ids"])
    return [heir for heir in heirs if heir["id"] in ids]


def words(audience: Audience, heirs: Sequence[Beneficiary]) -> str:
    """ "For all your heirs" or "For Ana and Ben", in the page's language."""
    if audience["all"]:
        return _("For all your heirs, including any you add later.")
    names = [heir["name"] for heir in members(audience, heirs)]
    if not names:
        return _("For nobody: the heirs it was for were removed. Choose who it is for.")
    return _("For {names}.").format(names=shares.names_list(names=names))
