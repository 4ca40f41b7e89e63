"""What the owner configures (settings, within the operator's bounds) and what blocks activation.

Kept apart from the transitions (models.plan.lifecycle): these change with the plan's settings
and readiness rules, the transitions with the state machine. Decisions: docs/lifecycle.md.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any, TypedDict

from core.db import Cursor, Pool, transaction
from core.errors import Conflict, validation_error
from core.settings import Settings
from models.common import as_record, wire_names
from models.plan import plans
from models.plan.plans import (
    ACTIVE,
    DRAFT,
    SETTINGS_COLUMNS,
    Plan,
    effective_threshold,
    get_or_create,
    update_schedule,
)


class Facts(TypedDict):
    """What activation checks and the overview counts, read in one statement."""

    beneficiaries: int
    allocation_total: Any
    guardians: int
    assets: int
    archive_items: int
    messages: int
    has_owner_email: bool  # the address itself is sealed: only whether there is one


async def facts(cur: Cursor, user_id: str) -> Facts:
    await cur.execute(
        "SELECT (SELECT count(*) FROM beneficiaries WHERE user_id = u.id) AS beneficiaries,"
        " (SELECT COALESCE(sum(allocation_percentage), 0) FROM beneficiaries WHERE user_id = u.id)"
        " AS allocation_total,"
        " (SELECT count(*) FROM guardians WHERE user_id = u.id) AS guardians,"
        " (SELECT count(*) FROM assets WHERE user_id = u.id) AS assets,"
        " (SELECT count(*) FROM archive_items WHERE user_id = u.id) AS archive_items,"
        " (SELECT count(*) FROM messages WHERE user_id = u.id) AS messages,"
        " u.email_sealed IS NOT NULL AS has_owner_email FROM users u WHERE u.id = %s",
        (user_id,),
    )
    return as_record(Facts, await cur.fetchone())


def readiness(plan: Plan, known: Facts) -> list[str]:
    """What blocks activation, in words a person understands; empty when nothing does."""
    problems = []
    if known["beneficiaries"] == 0:
        problems.append("Add at least one beneficiary.")
    elif known["allocation_total"] != 100:
        total = format(known["allocation_total"].normalize(), "f")
        problems.append(f"Your beneficiaries' shares add up to {total}%; they must add up to exactly 100%.")
    if known["guardians"] == 0:
        problems.append("Add at least one guardian: someone you trust to confirm a release.")
    elif effective_threshold(plan, known["guardians"]) > known["guardians"]:
        problems.append(
            f"You ask for {plan['guardian_threshold']} guardian approvals but have {known['guardians']} "
            "guardian(s); add guardians or lower the number of approvals needed."
        )
    if not known["has_owner_email"]:
        problems.append("Add your email address to your profile, so reminders to check in can reach you.")
    return problems


def _check_settings(settings: Settings, merged: dict[str, Any], guardians: int) -> None:
    """400 naming each setting out of the operator's bounds."""
    errors: dict[str, list[str]] = {}
    if merged["check_in_interval_seconds"] < settings.plan_min_check_in_interval_seconds:
        errors["checkInIntervalSeconds"] = [
            f"Must be at least {settings.plan_min_check_in_interval_seconds} seconds."
        ]
    if merged["grace_period_seconds"] < 0:
        errors["gracePeriodSeconds"] = ["Must be at least 0 seconds."]
    if merged["cancel_window_seconds"] < settings.plan_min_cancel_window_seconds:
        errors["cancelWindowSeconds"] = [
            f"Must be at least {settings.plan_min_cancel_window_seconds} seconds."
        ]
    threshold = merged["guardian_threshold"]
    if threshold is not None and not 1 <= threshold <= max(guardians, 1):
        errors["guardianThreshold"] = [
            f"Must be between 1 and your number of guardians ({guardians}); null means a majority."
        ]
    if errors:
        raise validation_error(errors)


async def update_settings(
    pool: Pool, settings: Settings, *, user_id: str, changes: dict[str, Any], now: datetime
) -> None:
    """Settings change in Draft and Active only; in Active the current cycle's due time follows."""
    async with transaction(pool) as cur:
        plan = await get_or_create(cur, user_id, lock=True)
        if plan["status"] not in (DRAFT, ACTIVE):
            raise Conflict(
                f"Settings can change only while the plan is Draft or Active; it is {plan['status']}.",
                details={"status": plan["status"]},
            )
        known = await facts(cur, user_id)
        current: dict[str, Any] = dict(plan)
        merged: dict[str, Any] = {column: changes.get(column, current[column]) for column in SETTINGS_COLUMNS}
        _check_settings(settings, merged, known["guardians"])
        diff = {c: v for c, v in merged.items() if current[c] != v}
        if not diff:
            return
        values = dict(diff)
        if plan["status"] == ACTIVE and "check_in_interval_seconds" in diff and plan["last_check_in_at"]:
            values["check_in_due_at"] = plan["last_check_in_at"] + timedelta(
                seconds=diff["check_in_interval_seconds"]
            )
        await update_schedule(cur, plan["id"], values)
        await plans.timeline(
            cur,
            user_id=user_id,
            kind="plan.updated",
            plan_id=plan["id"],
            summary="Plan settings changed",
            metadata={"fields": wire_names(diff), "actor": "owner"},
        )
