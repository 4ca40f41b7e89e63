"""Corrected heir addresses still running (`pending`, `holding`, `confirming`), and the latest of an
heir when its new address could not be reached (`undeliverable`: shown until a guardian proposes
another, so the guardians know the heir is still unreached), as guardians read them: on their
page (`open_changes`, one plan) and on `GET /api/legacy/guardianships` (`of_plans`, every plan of
the account whose heirs hold their links). Never the address; the heir's name only where the
guardian sees the heirs already (released, or ready to finalise). The changes themselves:
models.plan.guardianships.address_changes, their one writer.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, TypedDict

from core.db import Cursor
from core.errors import NotFound
from core.files.crypto import KeyRing
from models import sealed_text
from models.common import as_record, parse_id
from models.plans import Plan

OPEN = ("pending", "holding", "confirming")  # still running: another for the heir waits
UNREACHED = "undeliverable"  # ended, its new address never reached: shown while it is the heir's latest
# Which changes a guardian is shown: those running, and an unreached one nothing has followed.
_SHOWN = (
    "(c.status = ANY(%s) OR (c.status = 'undeliverable' AND NOT EXISTS (SELECT 1 FROM address_changes"
    " n WHERE n.beneficiary_id = c.beneficiary_id AND n.created_at > c.created_at)))"
)


class OpenChange(TypedDict):
    """A change still running, or one whose new address could not be reached, as a guardian's page
    shows it (never the address)."""

    id: str
    beneficiary_id: str
    status: str  # pending | holding | confirming | undeliverable
    approvals: int
    hold_until: datetime | None
    agreed_by_me: bool


class ListedChange(OpenChange):
    """The same on the guardian's list of plans: with the heir's name, when it was proposed and
    whether this guardian proposed it."""

    name: str | None
    proposed_at: datetime
    proposed_by_me: bool


_COLUMNS = (
    "c.id::text AS id, c.beneficiary_id::text AS beneficiary_id, c.status, c.hold_until,"
    " (SELECT count(*)::int FROM address_change_approvals a WHERE a.change_id = c.id) AS approvals,"
    " EXISTS (SELECT 1 FROM address_change_approvals a WHERE a.change_id = c.id"
    "   AND a.guardian_id = {me}) AS agreed_by_me"
)


async def open_changes(cur: Cursor, *, plan_id: str, guardian_id: str) -> list[OpenChange]:
    await cur.execute(
        f"SELECT {_COLUMNS.format(me='%s')}"
        f" FROM address_changes c WHERE c.plan_id = %s AND {_SHOWN} ORDER BY c.created_at, c.id",
        (guardian_id, plan_id, list(OPEN)),
    )
    return [as_record(OpenChange, row=row) for row in await cur.fetchall()]


async def of_plans(
    cur: Cursor, ring: KeyRing, *, guardian_of: dict[str, str]
) -> dict[str, list[ListedChange]]:
    """The changes shown in each plan of `guardian_of` (plan id → the caller's guardian row
    in it: call it only with plans whose heirs hold their links), oldest first."""
    if not guardian_of:
        return {}
    plan_ids, guardian_ids = list(guardian_of), [guardian_of[p] for p in guardian_of]
    await cur.execute(
        f"SELECT c.plan_id::text AS plan_id, {_COLUMNS.format(me='m.guardian_id')},"
        " c.created_at AS proposed_at, c.proposed_by IS NOT DISTINCT FROM m.guardian_id AS proposed_by_me,"
        f" {sealed_text.select_list(table='beneficiaries', alias='b', columns=('name',))}"
        " FROM unnest(%s::uuid[], %s::uuid[]) AS m(plan_id, guardian_id)"
        " JOIN address_changes c ON c.plan_id = m.plan_id JOIN beneficiaries b ON b.id = c.beneficiary_id"
        f" WHERE {_SHOWN} ORDER BY c.created_at, c.id",
        (plan_ids, guardian_ids, list(OPEN)),
    )
    result: dict[str, list[ListedChange]] = {}
    for sealed_row in await cur.fetchall():
        row = sealed_text.open_row(ring, table="beneficiaries", row=sealed_row, id_key="beneficiary_id")
        plan_id = row.pop("plan_id")
        result.setdefault(plan_id, []).append(as_record(ListedChange, row=row))
    return result


async def heir(cur: Cursor, ring: KeyRing, *, plan: Plan, raw_beneficiary_id: str) -> dict[str, Any]:
    """The plan's heir a guardian names (404 for any other), opened."""
    beneficiary_id = parse_id(raw=raw_beneficiary_id, what="Beneficiary")
    await cur.execute(
        f"SELECT b.id::text AS id, {sealed_text.select_list(table='beneficiaries', alias='b')}"
        " FROM beneficiaries b WHERE b.id = %s AND b.user_id = %s",
        (beneficiary_id, plan["user_id"]),
    )
    row = await cur.fetchone()
    if row is None:
        raise NotFound("Beneficiary")
    return sealed_text.open_row(ring, table="beneficiaries", row=row)


def decided(*, status: str) -> str:
    """Why a change cannot be agreed to or stopped now."""
    return {
        "holding": "Enough guardians have agreed already: this address waits out its 7 days.",
        "confirming": "This address has been agreed; we are waiting for the beneficiary to confirm it.",
        "applied": "This address is already the beneficiary's.",
        "stopped": "This address was stopped, by a guardian or by the beneficiary; nothing changed.",
        "to_owner": "This proposal went to the plan's owner, who decides.",
        UNREACHED: "This address could not be reached; nothing changed. You can propose another.",
    }.get(status, "This address change is decided already.")
