"""The lifecycle scan: reminders, the grace notice, verification start, guardian reminders, the
verification deadline and release, for due plans only.

`plans.next_due_at` is when the scheduler next has something to do for a plan; the scan walks
the partial index on it, so its cost follows the number of due plans, not of all plans. Each
plan is advanced in its own transaction under `FOR UPDATE SKIP LOCKED`: two workers scanning
at once never process one plan twice, and a stage moves with its outbox row, so a reminder
is sent at most once per cycle however often the scan runs.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import TypedDict

from core.db import Cursor, Pool, autocommit, transaction
from core.text import i18n
from core.text.i18n import N_, ngettext
from models import plans
from models.activity import Summary
from models.common import as_record
from models.delivery import outbox
from models.delivery.announce import Email, Entry, announce
from models.flows import release_path
from models.plan import objections
from models.plan.approvals import approved_on_chain
from models.plans import (
    ACTIVE,
    APPROVED,
    COLUMNS,
    PENDING,
    REMINDER_OFFSETS,
    STAGE_GRACE,
    STAGE_VERIFY,
    TIMEOUT,
    Plan,
    next_due,
    owner_warnings,
    stage_times,
    update_schedule,
    verification_stages,
)

BATCH = 500
# How often an Approved plan past its window is looked at again while a contract decides.
CONTRACT_RECHECK = timedelta(hours=1)


# The scan's query, in parts (tests/test_lifecycle_scheduler.py checks its plan uses the index).
DUE_SQL = "SELECT next_due_at, id::text AS id FROM plans WHERE next_due_at <= %s"
DUE_AFTER_SQL = " AND (next_due_at, id) > (%s, %s::uuid)"
DUE_ORDER_SQL = " ORDER BY next_due_at, id LIMIT %s"


async def due_batch(
    pool: Pool, *, now: datetime, after: tuple[datetime, str] | None, limit: int = BATCH
) -> list[tuple[datetime, str]]:
    """(next_due_at, id) of due plans after the keyset `after`, oldest first."""
    sql = DUE_SQL
    params: list[object] = [now]
    if after is not None:
        sql += DUE_AFTER_SQL
        params += list(after)
    sql += DUE_ORDER_SQL
    params.append(limit)
    async with autocommit(pool) as cur:
        await cur.execute(sql, params)
        return [(row["next_due_at"], row["id"]) for row in await cur.fetchall()]


async def advance(
    pool: Pool, *, plan_id: str, now: datetime, contract_configured: bool, warning_seconds: int
) -> tuple[str, list[str]]:
    """Do what is due for one plan; returns (what was done, outbox ids to enqueue).
    `warning_seconds` (PLAN_DEADLINE_WARNING_SECONDS) goes to the verification rounds it starts."""
    async with transaction(pool) as cur:
        await cur.execute(
            f"SELECT {COLUMNS} FROM plans WHERE id = %s AND next_due_at <= %s FOR UPDATE SKIP LOCKED",
            (plan_id, now),
        )
        row = await cur.fetchone()
        if row is None:
            return "skipped", []  # another worker has it, or it is no longer due
        plan = as_record(Plan, row=row)
        if plan["status"] == ACTIVE:
            return await _active(cur, plan, now, warning_seconds)
        if plan["status"] == PENDING:
            return await _pending(cur, plan, now, contract_configured)
        if plan["status"] == APPROVED and plan["release_at"] is not None and plan["release_at"] <= now:
            if contract_configured and await approved_on_chain(cur, plan=plan):
                # With a contract, only a confirmed finalize_release releases, and a beneficiary
                # signs it: the plan is ready to finalise, and the heirs get their links now.
                # Look again later: if the operator removes the contract, no finalize_release
                # can ever come, and the release falls back to this scan.
                ready = await release_path.ready_in(cur, plan=plan, now=now)
                await plans.set_next_due(cur, plan_id=plan_id, due=now + CONTRACT_RECHECK)
                return ("ready_to_finalize", ready) if ready is not None else ("awaiting_contract", [])
            # No contract, or a round the contract never saw (approved by attestations before
            # one was configured): the service releases it, as its emails said it would.
            row_ids = await release_path.release_in(cur, plan_id=plan_id, now=now, actor="scheduler")
            return "released", row_ids or []
        await plans.set_next_due(cur, plan_id=plan_id, due=next_due(plan=plan))
        return "rescheduled", []


async def _active(cur: Cursor, plan: Plan, now: datetime, warning_seconds: int) -> tuple[str, list[str]]:
    times = stage_times(plan=plan)
    start = plan["stage_done"]
    due = [s for s, at in enumerate(times[start:], start) if at is not None and at <= now]
    if not due:
        await update_schedule(cur, plan_id=plan["id"], values={"stage_done": plan["stage_done"]})
        return "rescheduled", []
    # Only the latest due stage is acted on: after an outage the owner gets one current
    # reminder, not three stale ones, and verification supersedes the grace notice.
    stage = due[-1]
    if stage == STAGE_VERIFY:
        row_ids = await release_path.start_verification_in(
            cur,
            plan=plan,
            now=now,
            actor="scheduler",
            actor_name=None,
            reason="inactivity",
            warning_seconds=warning_seconds,
        )
        return "verification_started", row_ids or []
    due_at, verification_at = plan["check_in_due_at"], times[STAGE_VERIFY]
    assert due_at is not None and verification_at is not None  # a cycle has both (stage_times)
    context: dict[str, object]
    summary: Summary
    if stage == STAGE_GRACE:
        kind, summary = "grace_started", N_("Your check-in is overdue: the grace period has started")
        context = {"dueAt": due_at.isoformat(), "verificationAt": verification_at.isoformat()}
        label = "grace"
    else:
        days = REMINDER_OFFSETS[stage].days
        kind = "check_in_reminder"
        summary = lambda: ngettext(  # noqa: E731 - written in the owner's language by activity.record
            # Translators: "day(s)" as the English always wrote it.
            "Reminder sent: your check-in falls due in {count} day(s)",
            "Reminder sent: your check-in falls due in {count} day(s)",
            days,
        ).format(count=i18n.number(days))
        context = {"dueAt": due_at.isoformat(), "daysBefore": days}
        label = f"{days}d"
    row_ids = await announce(
        cur,
        plan_id=plan["id"],
        owner_id=plan["user_id"],
        now=now,
        owner=Email(kind, context),
        timeline=Entry("plan.reminder_sent", summary, {"actor": "scheduler", "stage": label}),
    )
    await update_schedule(cur, plan_id=plan["id"], values={"stage_done": stage + 1})
    return "reminded", row_ids


async def _pending(
    cur: Cursor, plan: Plan, now: datetime, contract_configured: bool
) -> tuple[str, list[str]]:
    """A verification round: remind the guardians who have not approved, then the deadline.

    Each stage is done at most once per round (`verification_stage_done` moves with its outbox
    rows). After an outage only the latest due reminder goes out, and a due deadline
    supersedes the reminders due with it (its own email tells the guardians).

    A deadline that releases is first announced to the owner (halfway where there is room,
    then a final warning); the final warning moves the deadline to at least the warning
    interval after it, so a deadline found due after an outage warns now and releases later.

    Objections come first: an owner's reminder, or a lapse that brings the deadline back (its
    warnings then go out here, before anything can be released)."""
    plan, warned = await objections_due_in(cur, plan=plan, now=now, contract_configured=contract_configured)
    plan, owner_warned = await _warn_owner_in(
        cur, plan=plan, now=now, contract_configured=contract_configured
    )
    warned += owner_warned
    stages = verification_stages(plan=plan)
    first = plan["verification_stage_done"]
    due = [index for index in range(first, len(stages)) if stages[index][1] <= now]
    if not due:
        await update_schedule(cur, plan_id=plan["id"], values={"verification_stage_done": first})
        return ("owner_warned", warned) if warned else ("rescheduled", [])
    done = due[-1] + 1
    if any(stages[index][0] == TIMEOUT for index in due):
        # With a contract, only on-chain approvals can release: the deadline can only wait.
        release = release_possible(plan=plan, contract_configured=contract_configured)
        row_ids = await release_path.verification_timeout_in(
            cur, plan=plan, now=now, release=release, stages_done=done
        )
        outcome = "verification_timeout_released" if release else "verification_timeout_waiting"
        return outcome, warned + (row_ids or [])
    label = stages[due[-1]][0]
    started_at = plan["verification_started_at"]
    assert started_at is not None  # a Pending plan's round has started (verification_stages)
    row_ids = await announce(
        cur,
        plan_id=plan["id"],
        owner_id=plan["user_id"],
        now=now,
        guardians=Email(
            "verification_reminder",
            {
                "days": int(label.rstrip("d")),
                "startedAt": started_at.isoformat(),
                **release_path.deadline_facts(plan=plan),
            },
            not_approved_in=plan["verification_round"],
        ),
        timeline=Entry(
            "plan.guardians_reminded",
            lambda: ngettext(
                # Translators: "3d": days, as the English always wrote it.
                "Guardians who have not answered were reminded ({count}d after verification started)",
                "Guardians who have not answered were reminded ({count}d after verification started)",
                int(label.rstrip("d")),
            ).format(count=i18n.number(int(label.rstrip("d")))),
            {"actor": "scheduler", "stage": label},
            count_as="guardians",
        ),
    )
    await update_schedule(cur, plan_id=plan["id"], values={"verification_stage_done": done})
    return "guardians_reminded", warned + row_ids


async def _warn_owner_in(
    cur: Cursor, *, plan: Plan, now: datetime, contract_configured: bool
) -> tuple[Plan, list[str]]:
    """The owner's warnings before a deadline that releases, the latest due one only; returns the
    plan as it then stands and the outbox ids."""
    warned: list[str] = []
    if release_possible(plan=plan, contract_configured=contract_configured):
        warnings = owner_warnings(plan=plan)
        first_warning = plan["deadline_stage_done"]
        due_warnings = [i for i in range(first_warning, len(warnings)) if warnings[i][1] <= now]
        if due_warnings:
            # The latest due one only: after an outage, the final warning rather than both.
            stage = due_warnings[-1]
            warned = await release_path.warn_owner_in(
                cur, plan=plan, now=now, stage=warnings[stage][0], stages_done=stage + 1
            )
            plan = await plans.get_by_id(cur, plan_id=plan["id"]) or plan
    elif plan["deadline_stage_done"] < len(owner_warnings(plan=plan)):
        # A plan set to release before a contract was configured: its deadline waits, so there
        # is nothing to warn of (and the stages must not stay due).
        plan = await update_schedule(
            cur, plan_id=plan["id"], values={"deadline_stage_done": len(owner_warnings(plan=plan))}
        )
    return plan, warned


def release_possible(*, plan: Plan, contract_configured: bool) -> bool:
    """Whether this plan's deadline releases: the owner chose it, no contract is configured
    (with one, only on-chain approvals release, so the deadline can only wait) and no guardian
    objects in this round (models.flows.answers.objections)."""
    return plan["on_verification_timeout"] == "release" and not contract_configured and not plan["objections"]


class ScanResult(TypedDict):
    counts: dict[str, int]  # plans by outcome ("reminded", …)
    outbox: list[str]  # outbox row ids to enqueue, once committed


async def scan(pool: Pool, *, now: datetime, contract_configured: bool, warning_seconds: int) -> ScanResult:
    """Advance every plan due at `now`; returns counts by outcome and the outbox ids to enqueue."""
    counts: dict[str, int] = {}
    row_ids: list[str] = []
    after = None
    while True:
        batch = await due_batch(pool, now=now, after=after)
        if not batch:
            break
        for _due_at, plan_id in batch:
            done, ids = await advance(
                pool,
                plan_id=plan_id,
                now=now,
                contract_configured=contract_configured,
                warning_seconds=warning_seconds,
            )
            counts[done] = counts.get(done, 0) + 1
            row_ids += ids
        after = batch[-1]
    return {"counts": counts, "outbox": row_ids}


# An objection asks the owner to check in, and lapses if they don't (docs/lifecycle.md
# "Objections"). It says "I know they are alive or able to act"; the owner is the one person who
# can show that, so they are asked: reminded halfway through the window (once), and at its end an
# objection they did not confirm stops counting. The deadline then applies as if it had never been
# made, exactly as after a withdrawal (models.flows.release_path `resume_deadline_in`). Run on the
# locked plan before its deadline stages, so a lapse and the warnings it makes due go out in the
# same transaction, before anything can be released.


async def objections_due_in(
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
