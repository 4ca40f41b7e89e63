"""Guardians' objections to a release ("This is a mistake: I know they are alive or able to
act"), one row per guardian and verification round: the one module that writes
`plan_objections` and keeps `plans.objections`, the round's standing count, with them (on the
locked plan). What an objection does is models.flows.answers.objections; docs/lifecycle.md "Objections".

Each objection holds the deadline back only for a window that runs from the guardian's first
objection in the round (`lapses_at`, never moved): the owner is the one person who can show
they are alive, and is asked to; an objection they do not confirm lapses
(models.flows.scheduler `objections_due_in`), and that guardian cannot object again in the round.
"""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta
from typing import TypedDict

from core.db import Cursor
from core.errors import Conflict
from core.files.crypto import KeyRing
from core.text.i18n import N_
from models import sealed_text
from models.plans import Plan, update_schedule


class Objection(TypedDict):
    guardian_id: str
    guardian_name: str | None
    note: str | None
    created_at: datetime
    lapses_at: datetime  # unless the owner checks in first, it stops counting then


class Due(TypedDict):
    id: str
    guardian_id: str
    lapses_at: datetime
    lapsing: bool  # its window is over (else: the owner's halfway reminder is due)


LAPSED = N_(
    "Your objection in this verification lapsed because the owner did not check in: you cannot object "
    "again in it. You can still approve the release, or do nothing."
)


async def record(
    cur: Cursor,
    ring: KeyRing,
    *,
    plan: Plan,
    guardian_id: str,
    note: str | None,
    now: datetime,
    window_seconds: int,
) -> datetime | None:
    """This guardian's objection in the plan's round, with its note; returns when it lapses, or
    None (nothing changed) when one already stands. One withdrawn earlier in the round is brought
    back with the window of the first (`window_seconds`, PLAN_OBJECTION_CHECK_IN_SECONDS, counts
    from that one); 409 once it has lapsed."""
    await cur.execute(
        "SELECT id::text AS id, withdrawn_at, lapsed_at, lapses_at, remind_at FROM plan_objections"
        " WHERE plan_id = %s AND round = %s AND guardian_id = %s",
        (plan["id"], plan["verification_round"], guardian_id),
    )
    row = await cur.fetchone()
    if row is not None and (row["lapsed_at"] is not None or row["lapses_at"] <= now):
        raise Conflict(LAPSED)
    if row is not None and row["withdrawn_at"] is None:
        return None
    row_id = str(uuid.uuid4()) if row is None else row["id"]
    sealed = sealed_text.sealed_values(ring, table="plan_objections", row_id=row_id, values={"note": note})
    if row is None:
        lapses_at = now + timedelta(seconds=window_seconds)
        await cur.execute(
            "INSERT INTO plan_objections (id, plan_id, round, guardian_id, note_sealed, created_at,"
            " lapses_at, remind_at) VALUES (%s, %s, %s, %s, %s, %s, %s, %s)",
            (
                row_id,
                plan["id"],
                plan["verification_round"],
                guardian_id,
                sealed["note_sealed"],
                now,
                lapses_at,
                now + timedelta(seconds=window_seconds / 2),
            ),
        )
        return lapses_at
    # Objecting again: the owner's email about it gives the date, so a halfway reminder already
    # past is not sent on top of it.
    await cur.execute(
        "UPDATE plan_objections SET note_sealed = %s, created_at = %s, withdrawn_at = NULL,"
        " remind_at = CASE WHEN remind_at <= %s THEN NULL ELSE remind_at END WHERE id = %s",
        (sealed["note_sealed"], now, now, row_id),
    )
    lapses: datetime = row["lapses_at"]
    return lapses


async def withdraw(cur: Cursor, *, plan: Plan, guardian_id: str, now: datetime) -> bool:
    """This guardian's standing objection in the plan's round withdrawn; False if none stood."""
    await cur.execute(
        "UPDATE plan_objections SET withdrawn_at = %s WHERE plan_id = %s AND round = %s"
        " AND guardian_id = %s AND withdrawn_at IS NULL RETURNING id",
        (now, plan["id"], plan["verification_round"], guardian_id),
    )
    return await cur.fetchone() is not None


async def recount(cur: Cursor, *, plan: Plan) -> Plan:
    """`plans.objections` set to the round's standing objections, and `plans.objection_due_at` to
    when one of them next needs the scheduler (a reminder or a lapse). The schedule follows: while
    one stands, no warning of a releasing deadline is due, and the scan comes for the lapse."""
    await cur.execute(
        "SELECT count(*) AS n, min(least(coalesce(remind_at, lapses_at), lapses_at)) AS due"
        " FROM plan_objections WHERE plan_id = %s AND round = %s AND withdrawn_at IS NULL",
        (plan["id"], plan["verification_round"]),
    )
    row = await cur.fetchone()
    return await update_schedule(
        cur, plan_id=plan["id"], values={"objections": row["n"], "objection_due_at": row["due"]}
    )


async def holds_until(cur: Cursor, *, plan: Plan) -> datetime | None:
    """When the last standing objection of the round lapses (None: none stands): until then, unless
    the owner checks in, the deadline cannot release."""
    await cur.execute(
        "SELECT max(lapses_at) AS until FROM plan_objections WHERE plan_id = %s AND round = %s"
        " AND withdrawn_at IS NULL",
        (plan["id"], plan["verification_round"]),
    )
    until: datetime | None = (await cur.fetchone())["until"]
    return until


async def window_of(cur: Cursor, *, plan: Plan, guardian_id: str) -> datetime | None:
    """When this guardian's objection in the plan's round lapses or lapsed, standing or withdrawn
    (None: they have not objected in it). From then on `record` refuses them in the round."""
    await cur.execute(
        "SELECT lapses_at FROM plan_objections WHERE plan_id = %s AND round = %s AND guardian_id = %s",
        (plan["id"], plan["verification_round"], guardian_id),
    )
    row = await cur.fetchone()
    lapses: datetime | None = None if row is None else row["lapses_at"]
    return lapses


async def due(cur: Cursor, *, plan: Plan, now: datetime) -> list[Due]:
    """The round's standing objections with something due at `now`: lapsed, or the owner's
    halfway reminder (oldest first)."""
    await cur.execute(
        "SELECT id::text AS id, guardian_id::text AS guardian_id, lapses_at, lapses_at <= %s AS lapsing"
        " FROM plan_objections WHERE plan_id = %s AND round = %s AND withdrawn_at IS NULL"
        " AND (lapses_at <= %s OR remind_at <= %s) ORDER BY lapses_at, id",
        (now, plan["id"], plan["verification_round"], now, now),
    )
    return [Due(**row) for row in await cur.fetchall()]  # type: ignore[typeddict-item]


async def reminded(cur: Cursor, *, objection_id: str) -> None:
    """The owner's halfway reminder about this objection went out (once)."""
    await cur.execute("UPDATE plan_objections SET remind_at = NULL WHERE id = %s", (objection_id,))


async def lapse(cur: Cursor, *, objection_id: str, now: datetime) -> None:
    """The objection's window ended without the owner's check-in: it no longer stands (for every
    reader, `withdrawn_at` too), and marks the guardian as unable to object again this round."""
    await cur.execute(
        "UPDATE plan_objections SET withdrawn_at = %s, lapsed_at = %s, remind_at = NULL WHERE id = %s",
        (now, now, objection_id),
    )


async def shown(cur: Cursor, ring: KeyRing, *, plan: Plan) -> list[Objection]:
    """The standing objections of the plan's round (oldest first): who, their note, since when."""
    await cur.execute(
        "SELECT o.id, o.guardian_id::text AS guardian_id,"
        f" {sealed_text.select_list(table='plan_objections', alias='o')}, o.created_at, o.lapses_at,"
        " g.id AS g_id,"
        f" {sealed_text.select_list(table='guardians', alias='g', columns=('name',), prefix='g_')}"
        " FROM plan_objections o JOIN guardians g ON g.id = o.guardian_id"
        " WHERE o.plan_id = %s AND o.round = %s AND o.withdrawn_at IS NULL ORDER BY o.created_at, o.id",
        (plan["id"], plan["verification_round"]),
    )
    found = []
    for row in await cur.fetchall():
        opened = sealed_text.open_row(ring, table="plan_objections", row=row)
        opened = sealed_text.open_row(ring, table="guardians", row=opened, id_key="g_id", prefix="g_")
        found.append(
            Objection(
                guardian_id=row["guardian_id"],
                guardian_name=opened["g_name"],
                note=opened["note"],
                created_at=row["created_at"],
                lapses_at=row["lapses_at"],
            )
        )
    return found
