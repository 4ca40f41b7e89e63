"""An objection asks the owner to check in, and lapses if they don't (docs/lifecycle.md
"Objections"). Run by the lifecycle scan on a locked plan in verification, before its deadline
stages, so that a lapse and the warnings it makes due go out in the same transaction and before
anything can be released.

An objection says "I know they are alive or able to act". The owner is the one person who can
show that, so they are asked: halfway through the window they are reminded (once), and at its
end an objection they did not confirm stops counting. The deadline then applies as if it had
never been made, exactly as after a withdrawal (models.flows.release_path `resume_deadline_in`).
"""

from __future__ import annotations

from datetime import datetime

from core.db import Cursor
from core.text.i18n import N_
from models import plans
from models.delivery import outbox
from models.delivery.announce import Email, Entry, announce
from models.flows import release_path
from models.plan import objections
from models.plans import Plan


async def due_in(
    cur: Cursor, *, plan: Plan, now: datetime, contract_configured: bool
) -> tuple[Plan, list[str]]:
    """The reminders and lapses due for this plan's standing objections; returns the plan as it
    now stands and the outbox ids to enqueue after COMMIT. Lapses are marked first and the
    deadline brought back, so every email about them states the deadline as it now stands."""
    row_ids: list[str] = []
    found = await objections.due(cur, plan=plan, now=now)
    lapsing = [f for f in found if f["lapsing"]]
    for due in found:
        if due["lapsing"]:
            await objections.lapse(cur, objection_id=due["id"], now=now)
        else:
            await objections.reminded(cur, objection_id=due["id"])
            row_ids += await _remind_in(cur, plan=plan, found=due, now=now)
    plan = await objections.recount(cur, plan=plan)
    if lapsing:
        row_ids += await release_path.resume_deadline_in(
            cur, plan=plan, now=now, contract_configured=contract_configured
        )
        plan = await plans.get_by_id(cur, plan_id=plan["id"]) or plan
        for due in lapsing:
            row_ids += await _lapsed_in(
                cur, plan=plan, found=due, now=now, contract_configured=contract_configured
            )
    return plan, row_ids


async def _remind_in(cur: Cursor, *, plan: Plan, found: objections.Due, now: datetime) -> list[str]:
    """Halfway: the owner reminded that this objection lapses on its date unless they check in."""
    return await announce(
        cur,
        plan_id=plan["id"],
        owner_id=plan["user_id"],
        now=now,
        owner=Email(
            "objection_check_in_reminder",
            {"guardianId": found["guardian_id"], "lapsesAt": found["lapses_at"].isoformat()},
        ),
        timeline=Entry(
            "plan.objection_reminder_sent",
            N_("Reminder sent: a guardian's objection lapses unless you check in"),
            {
                "actor": "scheduler",
                "guardianId": found["guardian_id"],
                "lapsesAt": found["lapses_at"].isoformat(),
            },
        ),
    )


async def _lapsed_in(
    cur: Cursor, *, plan: Plan, found: objections.Due, now: datetime, contract_configured: bool
) -> list[str]:
    """The owner, the guardian who objected and the other accepted guardians told that it lapsed,
    and what the deadline does now (the plan as it stands after the lapse)."""
    gid = found["guardian_id"]
    context = {
        "guardianId": gid,
        "lapsesAt": found["lapses_at"].isoformat(),
        "stillObjected": bool(plan["objections"]),
        "contract": contract_configured,
        **release_path.deadline_facts(plan=plan),
    }
    row_ids = [
        await outbox.add(
            cur,
            kind="objection_lapsed_objector",
            plan_id=plan["id"],
            recipient_type="guardian",
            recipient_id=gid,
            now=now,
            context=context,
        )
    ]
    return row_ids + await announce(
        cur,
        plan_id=plan["id"],
        owner_id=plan["user_id"],
        now=now,
        owner=Email("objection_lapsed", context),
        guardians=Email("objection_lapsed_guardian", context, exclude=[gid]),
        timeline=Entry(
            "guardian.objection_lapsed",
            N_("A guardian's objection lapsed: you did not check in while it held the deadline back"),
            {"actor": "scheduler", "guardianId": gid},
        ),
    )
