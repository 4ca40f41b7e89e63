"""The plan row and its state machine: one plan per owner, Draft → Active →
PendingVerification → Approved → Released.

Every transition is one guarded UPDATE (`WHERE status = ANY(from)`) run inside the caller's
transaction, with its transition row; two racing triggers cannot both fire it. The caller
adds the timeline entry and the outbox rows in the same transaction, in one call of
models.delivery.announce (models.flows.lifecycle, models.flows.release_path).
`guard_contents` is the one freeze check every plan-content mutation takes. Decisions:
docs/lifecycle.md.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any, Literal, TypedDict

from core.db import Cursor
from core.errors import Conflict
from core.files.crypto import KeyRing
from models import sealed_text
from models.common import as_record

DRAFT = "Draft"
ACTIVE = "Active"
PENDING = "PendingVerification"
APPROVED = "Approved"
RELEASED = "Released"
STATUSES = (DRAFT, ACTIVE, PENDING, APPROVED, RELEASED)
# While guardians verify, contents wait for the owner's check-in; after release, for good.
FROZEN = (PENDING, APPROVED)

Actor = Literal["owner", "guardian", "scheduler", "contract", "beneficiary"]

DEFAULT_CHECK_IN_INTERVAL = 90 * 24 * 3600
DEFAULT_GRACE_PERIOD = 14 * 24 * 3600
DEFAULT_CANCEL_WINDOW = 72 * 3600

# Scheduler stages of one check-in cycle, in order: reminders before the check-in falls due
# (offsets before it), the grace notice when it falls due, verification when grace ends.
REMINDER_OFFSETS = (timedelta(days=14), timedelta(days=3), timedelta(days=1))
STAGE_GRACE = len(REMINDER_OFFSETS)
STAGE_VERIFY = STAGE_GRACE + 1
# Stages of one verification round: guardians who have not approved are reminded this long
# after it started; the owner's deadline (verification_timeout_seconds), if set, is one more.
VERIFICATION_REMINDERS = (timedelta(days=3), timedelta(days=7))
TIMEOUT = "timeout"
ON_TIMEOUT = ("wait", "release")
# The owner's warnings before a deadline that releases: halfway (where it falls before the
# final one) and the final warning, at least `deadline_warning_seconds` before the deadline.
HALFWAY = "halfway"
FINAL_WARNING = "final"

COLUMNS = (
    "id, user_id, status, check_in_interval_seconds, grace_period_seconds, cancel_window_seconds,"
    " guardian_threshold, activated_at, last_check_in_at, check_in_due_at, stage_done, next_due_at,"
    " verification_round, verification_started_at, verification_reason, approved_at, release_at,"
    " released_at, created_at, updated_at, verification_timeout_seconds, on_verification_timeout,"
    " verification_stage_done, verification_timed_out_at, last_vetoed_at, ready_at, round_threshold,"
    " deadline_stage_done, deadline_warned_at, deadline_warning_seconds, allow_beneficiary_requests,"
    " report_reason, objections, deadline_chosen_at, notify_beneficiaries_on_activation, objection_due_at"
)
# Why a guardian reported (optional): emails and the heir's page choose their words by it.
REPORT_REASONS = ("death", "incapacity", "unreachable", "other")
SETTINGS_COLUMNS = (
    "check_in_interval_seconds",
    "grace_period_seconds",
    "cancel_window_seconds",
    "guardian_threshold",
    "verification_timeout_seconds",
    "on_verification_timeout",
    "allow_beneficiary_requests",
    "notify_beneficiaries_on_activation",
)


class Plan(TypedDict):
    id: str
    user_id: str
    status: str
    check_in_interval_seconds: int
    grace_period_seconds: int
    cancel_window_seconds: int
    guardian_threshold: int | None  # None: a majority of the guardians
    activated_at: datetime | None
    last_check_in_at: datetime | None
    check_in_due_at: datetime | None
    stage_done: int
    next_due_at: datetime | None
    verification_round: int
    verification_started_at: datetime | None
    verification_reason: str | None
    approved_at: datetime | None
    release_at: datetime | None
    # Contract mode: when the cancel window's end made it ready to finalise (links emailed).
    ready_at: datetime | None
    released_at: datetime | None
    created_at: datetime
    updated_at: datetime
    verification_timeout_seconds: int | None  # None: no deadline
    on_verification_timeout: str  # "wait" | "release"
    verification_stage_done: int
    verification_timed_out_at: datetime | None  # the deadline passed and the plan went on waiting
    last_vetoed_at: datetime | None
    round_threshold: int | None  # the approvals this round needs, frozen when it started
    deadline_stage_done: int  # the owner's warnings before a releasing deadline, sent this round
    deadline_warned_at: datetime | None  # the final warning: the deadline is >= this + the interval
    deadline_warning_seconds: int  # PLAN_DEADLINE_WARNING_SECONDS when the round started
    allow_beneficiary_requests: bool  # an heir may ask for a verification
    # The round's reported reason (REPORT_REASONS): the first report that gave one; None if none did.
    report_reason: str | None
    objections: int  # guardians objecting in this round: while any does, the deadline cannot release
    deadline_chosen_at: datetime | None  # the owner set the deadline or its outcome (None: the default)
    notify_beneficiaries_on_activation: bool  # each heir gets their link early, once, while Active
    objection_due_at: datetime | None  # an objection's reminder to the owner or lapse falls due


def _plan(row: Mapping[str, Any]) -> Plan:
    return as_record(Plan, row=row)


def majority(*, guardian_count: int) -> int:
    return guardian_count // 2 + 1


# The guardians who count towards a majority: every one who has not declined (an invited
# guardian who has not answered yet still counts, so a plan cannot activate on one of four).
STANDING_GUARDIANS = "SELECT count(*) FROM guardians WHERE user_id = %s AND declined_at IS NULL"


def threshold(*, plan: Mapping[str, Any], standing: int) -> int:
    """The approvals needed now, the one rule every caller uses (activation, approvals, the
    guardian's list, the lost-wallet approvals): during a round (and after it released) the
    number frozen when it started; otherwise the owner's number, or a majority of the
    `standing` guardians (those who have not declined) when unset."""
    if plan["status"] in (PENDING, APPROVED, RELEASED) and plan["round_threshold"]:
        return int(plan["round_threshold"])
    return int(plan["guardian_threshold"] or majority(guardian_count=standing))


async def threshold_now(cur: Cursor, *, plan: Plan) -> int:
    """`threshold` with the standing guardians counted on the caller's cursor."""
    await cur.execute(STANDING_GUARDIANS.replace("count(*)", "count(*) AS n"), (plan["user_id"],))
    return threshold(plan=plan, standing=(await cur.fetchone())["n"])


async def acceptance(cur: Cursor, *, plan: Plan) -> tuple[int, int]:
    """(accepted guardians, approvals needed now): a decline or removal that leaves the first
    below the second is told to the owner (models.mail.emails, "guardian_declined",
    "guardians_short") and shown in readiness."""
    await cur.execute(
        "SELECT count(*) FILTER (WHERE accepted_at IS NOT NULL) AS accepted,"
        " count(*) FILTER (WHERE declined_at IS NULL) AS standing FROM guardians WHERE user_id = %s",
        (plan["user_id"],),
    )
    counts = await cur.fetchone()
    return counts["accepted"], threshold(plan=plan, standing=counts["standing"])


async def get(cur: Cursor, *, user_id: str, lock: bool = False) -> Plan | None:
    await cur.execute(
        f"SELECT {COLUMNS} FROM plans WHERE user_id = %s" + (" FOR UPDATE" if lock else ""), (user_id,)
    )
    row = await cur.fetchone()
    return None if row is None else _plan(row)


async def get_by_id(cur: Cursor, *, plan_id: str, lock: bool = False) -> Plan | None:
    await cur.execute(
        f"SELECT {COLUMNS} FROM plans WHERE id = %s" + (" FOR UPDATE" if lock else ""), (plan_id,)
    )
    row = await cur.fetchone()
    return None if row is None else _plan(row)


class NewPlan(TypedDict):
    """What a plan created now starts with, from the service's settings (`new_plan`)."""

    verification_timeout_seconds: int | None
    on_verification_timeout: str


def new_plan(*, default_timeout_seconds: int, contract_configured: bool) -> NewPlan:
    """A new plan's deadline (no release waits for ever): PLAN_DEFAULT_VERIFICATION_TIMEOUT_SECONDS,
    releasing then; with a contract, a release needs the guardians on-chain, so it waits."""
    return NewPlan(
        verification_timeout_seconds=default_timeout_seconds,
        on_verification_timeout="wait" if contract_configured else "release",
    )


async def get_or_create(
    cur: Cursor, *, user_id: str, lock: bool = False, defaults: NewPlan | None = None
) -> Plan:
    """The owner's plan, created in Draft the first time it is needed, with `defaults` (the
    service's, `new_plan`). Without them the table's own (no deadline, "wait"), which only
    callers that never commit a new plan may rely on (a check-in or deactivation of a plan that
    does not exist is refused, and its transaction rolled back)."""
    plan = await get(cur, user_id=user_id, lock=lock)
    if plan is not None:
        return plan
    if defaults is None:
        await cur.execute(
            "INSERT INTO plans (user_id) VALUES (%s) ON CONFLICT (user_id) DO NOTHING", (user_id,)
        )
    else:
        await cur.execute(
            "INSERT INTO plans (user_id, verification_timeout_seconds, on_verification_timeout)"
            " VALUES (%s, %s, %s) ON CONFLICT (user_id) DO NOTHING",
            (user_id, defaults["verification_timeout_seconds"], defaults["on_verification_timeout"]),
        )
    plan = await get(cur, user_id=user_id, lock=lock)
    assert plan is not None
    return plan


async def guard_contents(cur: Cursor, *, user_id: str) -> None:
    """409 unless the owner's plan contents may change now; call inside the mutation's transaction.

    FOR SHARE holds the plan row until COMMIT, so a transition (an UPDATE of that row) waits for
    the mutation, and a mutation that starts after a transition sees its new status: a release
    cannot race a change to what is released. Take it after the allocation lock when both are
    taken (activation takes them in that order too).
    """
    await cur.execute("SELECT status FROM plans WHERE user_id = %s FOR SHARE", (user_id,))
    row = await cur.fetchone()
    status = DRAFT if row is None else row["status"]
    if status in FROZEN:
        raise Conflict(
            "Check in first: guardians are verifying this plan, so its contents cannot change until "
            "you check in (POST /api/legacy/check-in).",
            details={"status": status},
        )
    if status == RELEASED:
        raise Conflict(
            "This plan has been released; its contents can no longer change.", details={"status": status}
        )


async def guard_removal(cur: Cursor, *, user_id: str, table: str) -> None:
    """409 if a removal just made (DELETE already run, same transaction) leaves an Active plan
    unable to release: no beneficiary, or fewer guardians than the approvals it asks for.

    The plan row is already held FOR SHARE by `guard_contents`. In Draft anything goes:
    activation checks readiness again.
    """
    await cur.execute("SELECT status, guardian_threshold FROM plans WHERE user_id = %s", (user_id,))
    row = await cur.fetchone()
    if row is None or row["status"] != ACTIVE:
        return
    await cur.execute(f"SELECT count(*) AS n FROM {table} WHERE user_id = %s", (user_id,))
    remaining = (await cur.fetchone())["n"]
    if table == "beneficiaries" and remaining < 1:
        raise Conflict(
            "An active plan needs at least one beneficiary: add another first, or deactivate the plan."
        )
    if table == "guardians" and remaining < (row["guardian_threshold"] or 1):
        raise Conflict(
            "An active plan needs at least as many guardians as the approvals it asks for: add another "
            "guardian or lower the threshold first, or deactivate the plan."
        )


def stage_times(*, plan: Plan) -> list[datetime | None]:
    """When each stage of the current cycle falls; None for a reminder that would precede the cycle."""
    start, due = plan["last_check_in_at"], plan["check_in_due_at"]
    if start is None or due is None:
        return []
    times: list[datetime | None] = [
        due - offset if due - offset >= start else None for offset in REMINDER_OFFSETS
    ]
    times.append(due)  # the grace notice
    times.append(due + timedelta(seconds=plan["grace_period_seconds"]))  # verification
    return times


def verification_stages(*, plan: Plan) -> list[tuple[str, datetime]]:
    """The stages of the current verification round in time order: ("3d" | "7d" | TIMEOUT, when).
    A reminder and the deadline at the same moment: the deadline comes last (it supersedes).
    Once the owner's final warning went out, the deadline is at least the warning interval
    after it (`verification_deadline`); it only ever moves later, past stages not yet done, so
    `verification_stage_done` still counts a prefix of this list."""
    start = plan["verification_started_at"]
    if start is None:
        return []
    stages = [(f"{offset.days}d", start + offset) for offset in VERIFICATION_REMINDERS]
    deadline = verification_deadline(plan=plan)
    if deadline is not None:
        stages.append((TIMEOUT, deadline))
    return sorted(stages, key=lambda stage: (stage[1], stage[0] == TIMEOUT))


def verification_deadline(*, plan: Plan) -> datetime | None:
    """When the round's deadline falls (None: no deadline): the owner's choice after the start,
    and never sooner than the warning interval after the final warning to the owner."""
    start, seconds = plan["verification_started_at"], plan["verification_timeout_seconds"]
    if start is None or seconds is None:
        return None
    deadline = start + timedelta(seconds=seconds)
    warned = plan["deadline_warned_at"]
    if warned is not None:
        deadline = max(deadline, warned + timedelta(seconds=plan["deadline_warning_seconds"]))
    return deadline


def owner_warnings(*, plan: Plan) -> list[tuple[str, datetime]]:
    """The owner's warnings before a deadline that releases, in order: HALFWAY (only where it
    falls before the final one) and FINAL_WARNING, `deadline_warning_seconds` before the
    deadline (at the start of the round for a deadline shorter than that: the deadline then
    moves to the warning interval after it). None for a deadline that waits, or no deadline."""
    start, seconds = plan["verification_started_at"], plan["verification_timeout_seconds"]
    if start is None or seconds is None or plan["on_verification_timeout"] != "release" or plan["objections"]:
        return []  # nothing to warn of: the deadline waits (an objection stands, or as the owner chose)
    final = max(start, start + timedelta(seconds=seconds - plan["deadline_warning_seconds"]))
    halfway = start + timedelta(seconds=seconds / 2)
    return ([(HALFWAY, halfway)] if start < halfway < final else []) + [(FINAL_WARNING, final)]


def next_due(*, plan: Plan) -> datetime | None:
    """When the scheduler next has something to do for this plan (None: nothing)."""
    if plan["status"] == ACTIVE:
        times = stage_times(plan=plan)
        for stage in range(plan["stage_done"], len(times)):
            if times[stage] is not None:
                return times[stage]
        return None
    if plan["status"] == PENDING:
        stages, done = verification_stages(plan=plan), plan["verification_stage_done"]
        warnings, warned = owner_warnings(plan=plan), plan["deadline_stage_done"]
        upcoming = [stages[done][1]] if done < len(stages) else []
        upcoming += [warnings[warned][1]] if warned < len(warnings) else []
        upcoming += [plan["objection_due_at"]] if plan["objection_due_at"] is not None else []
        return min(upcoming) if upcoming else None
    if plan["status"] == APPROVED:
        return plan["release_at"]
    return None


async def transition(
    cur: Cursor,
    *,
    plan_id: str,
    from_statuses: tuple[str, ...],
    to_status: str,
    now: datetime,
    actor: Actor,
    reason: str,
    actor_name: str | None = None,
    ring: KeyRing | None = None,
    values: Mapping[str, Any] | None = None,
) -> Plan | None:
    """Move the plan to `to_status` if it is still in one of `from_statuses`; None if it was not.

    The guard is in the UPDATE itself, so of two racing triggers exactly one gets the row back.
    `values` sets further columns (names are code, never request data); `next_due_at` is then
    recomputed from the new row. A transition row records who or what caused it; a guardian's
    name (`actor_name`) is sealed with `ring` (models/sealed_text.py).
    """
    sets = dict(values or {})
    unknown = set(sets) - set(COLUMNS.replace(" ", "").split(","))
    if unknown:
        raise ValueError(f"not plan columns: {sorted(unknown)}")
    assignments = "".join(f", {column} = %s" for column in sets)
    returning = ", ".join(f"plans.{column.strip()}" for column in COLUMNS.split(","))
    # The CTE locks the row and reads its latest committed status: the one this UPDATE replaces.
    await cur.execute(
        "WITH old AS (SELECT id, status FROM plans WHERE id = %s FOR UPDATE)"
        f" UPDATE plans SET status = %s{assignments}, updated_at = clock_timestamp() FROM old"
        f" WHERE plans.id = old.id AND old.status = ANY(%s) RETURNING {returning}, old.status AS previous",
        [plan_id, to_status, *sets.values(), list(from_statuses)],
    )
    row = await cur.fetchone()
    if row is None:
        return None
    previous = row.pop("previous")
    plan = _plan(row)
    due = next_due(plan=plan)
    if due != plan["next_due_at"]:
        await set_next_due(cur, plan_id=plan_id, due=due)
        plan["next_due_at"] = due
    transition_id = str(uuid.uuid4())
    sealed_name = None
    if actor_name is not None:
        if ring is None:
            raise ValueError("a transition naming its actor needs the key ring to seal the name")
        sealed_name = sealed_text.seal(
            ring, table="plan_transitions", column="actor_name", row_id=transition_id, text=actor_name
        )
    await cur.execute(
        "INSERT INTO plan_transitions (id, plan_id, from_status, to_status, actor, actor_name_sealed,"
        " reason, at)"
        " VALUES (%s, %s, %s, %s, %s, %s, %s, %s)",
        (transition_id, plan_id, previous, to_status, actor, sealed_name, reason, now),
    )
    return plan


async def set_next_due(cur: Cursor, *, plan_id: str, due: datetime | None) -> None:
    """When the scheduler should look at this plan again (the due-plans index reads it)."""
    await cur.execute("UPDATE plans SET next_due_at = %s WHERE id = %s", (due, plan_id))


async def note_report_reason(cur: Cursor, *, plan_id: str, reason: str) -> None:
    """The round's reason, from the first report that gives one (a veto clears it)."""
    await cur.execute(
        "UPDATE plans SET report_reason = %s WHERE id = %s AND report_reason IS NULL", (reason, plan_id)
    )


async def mark_ready(cur: Cursor, *, plan_id: str, now: datetime) -> bool:
    """Contract mode: the cancel window of an Approved plan is over (once per approval);
    False if it was already ready or is no longer Approved."""
    await cur.execute(
        "UPDATE plans SET ready_at = %s, updated_at = clock_timestamp()"
        " WHERE id = %s AND status = %s AND ready_at IS NULL RETURNING id",
        (now, plan_id, APPROVED),
    )
    return await cur.fetchone() is not None


async def update_schedule(cur: Cursor, *, plan_id: str, values: Mapping[str, Any]) -> Plan:
    """Write schedule columns without a status change (a check-in, a stage done) and recompute next_due_at."""
    allowed = {
        "last_check_in_at",
        "check_in_due_at",
        "stage_done",
        "release_at",
        "verification_stage_done",
        "verification_timed_out_at",
        "deadline_stage_done",
        "deadline_warned_at",
        "objections",
        "objection_due_at",
        "deadline_chosen_at",
        *SETTINGS_COLUMNS,
    }
    if not values or set(values) - allowed:
        raise ValueError(f"cannot update plan columns {sorted(set(values) - allowed) or '(none)'}")
    assignments = ", ".join(f"{column} = %s" for column in values)
    await cur.execute(
        f"UPDATE plans SET {assignments}, updated_at = clock_timestamp() WHERE id = %s RETURNING {COLUMNS}",
        [*values.values(), plan_id],
    )
    plan = _plan(await cur.fetchone())
    due = next_due(plan=plan)
    if due != plan["next_due_at"]:
        await set_next_due(cur, plan_id=plan_id, due=due)
        plan["next_due_at"] = due
    return plan
