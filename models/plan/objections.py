"""Guardians' objections to a release ("This is a mistake: I know they are alive or able to
act"), one row per guardian and verification round: the one module that writes
`plan_objections` and keeps `plans.objections`, the round's standing count, with them (on the
locked plan). What an objection does is models.flows.answers.objections; docs/lifecycle.md "Objections".
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import TypedDict

from core.db import Cursor
from core.files.crypto import KeyRing
from models import sealed_text
from models.plans import Plan, update_schedule


class Objection(TypedDict):
    guardian_id: str
    guardian_name: str | None
    note: str | None
    created_at: datetime


async def record(
    cur: Cursor, ring: KeyRing, *, plan: Plan, guardian_id: str, note: str | None, now: datetime
) -> bool:
    """This guardian's objection in the plan's round, with its note; False (nothing changed)
    when one already stands. One withdrawn earlier in the round is brought back."""
    await cur.execute(
        "SELECT id::text AS id, withdrawn_at FROM plan_objections WHERE plan_id = %s AND round = %s"
        " AND guardian_id = %s",
        (plan["id"], plan["verification_round"], guardian_id),
    )
    row = await cur.fetchone()
    if row is not None and row["withdrawn_at"] is None:
        return False
    row_id = str(uuid.uuid4()) if row is None else row["id"]
    sealed = sealed_text.sealed_values(ring, table="plan_objections", row_id=row_id, values={"note": note})
    if row is None:
        await cur.execute(
            "INSERT INTO plan_objections (id, plan_id, round, guardian_id, note_sealed, created_at)"
            " VALUES (%s, %s, %s, %s, %s, %s)",
            (row_id, plan["id"], plan["verification_round"], guardian_id, sealed["note_sealed"], now),
        )
    else:
        await cur.execute(
            "UPDATE plan_objections SET note_sealed = %s, created_at = %s, withdrawn_at = NULL WHERE id = %s",
            (sealed["note_sealed"], now, row_id),
        )
    return True


async def withdraw(cur: Cursor, *, plan: Plan, guardian_id: str, now: datetime) -> bool:
    """This guardian's standing objection in the plan's round withdrawn; False if none stood."""
    await cur.execute(
        "UPDATE plan_objections SET withdrawn_at = %s WHERE plan_id = %s AND round = %s"
        " AND guardian_id = %s AND withdrawn_at IS NULL RETURNING id",
        (now, plan["id"], plan["verification_round"], guardian_id),
    )
    return await cur.fetchone() is not None


async def recount(cur: Cursor, *, plan: Plan) -> Plan:
    """`plans.objections` set to the round's standing objections (the schedule follows: while
    one stands, no warning of a releasing deadline is due)."""
    await cur.execute(
        "SELECT count(*) AS n FROM plan_objections"
        " WHERE plan_id = %s AND round = %s AND withdrawn_at IS NULL",
        (plan["id"], plan["verification_round"]),
    )
    return await update_schedule(cur, plan_id=plan["id"], values={"objections": (await cur.fetchone())["n"]})


async def shown(cur: Cursor, ring: KeyRing, *, plan: Plan) -> list[Objection]:
    """The standing objections of the plan's round (oldest first): who, their note, since when."""
    await cur.execute(
        "SELECT o.id, o.guardian_id::text AS guardian_id,"
        f" {sealed_text.select_list(table='plan_objections', alias='o')}, o.created_at, g.id AS g_id,"
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
            )
        )
    return found
