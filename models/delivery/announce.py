"""Telling a plan's people about an event: its email rows (to the owner, the guardians, the
beneficiaries) and its Family Timeline entry, written in one call on the caller's cursor.

Every transition and plan event does both, in the transaction of the change itself: the rows
and the entry commit with it or not at all, and the caller enqueues the returned outbox ids
after COMMIT (models.delivery.outbox.enqueue: once per row, the sweep catches a lost enqueue).
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from core.db import Cursor
from models import activity
from models.delivery import outbox


@dataclass(frozen=True)
class Email:
    """One kind of email to one group of recipients, and the facts its template reads."""

    kind: str
    context: dict[str, Any] | None = None
    # Guardians: leave these guardian ids out; with a round, only those with no standing approval in it.
    exclude: Collection[str] = ()
    not_approved_in: int | None = None
    # Beneficiaries: only this one, rather than every beneficiary of the owner.
    beneficiary_id: str | None = None


@dataclass(frozen=True)
class Entry:
    """The owner's Family Timeline entry (`kind` is `<entity>.<verb>`; the actor goes in metadata)."""

    kind: str
    summary: activity.Summary  # a marked sentence or a function writing it (models.activity.record)
    metadata: dict[str, Any] | None = None
    entity_id: str | None = None  # what it is about; the plan when unset
    count_as: str | None = None  # a metadata key that records how many emails went out


async def announce(
    cur: Cursor,
    *,
    plan_id: str,
    owner_id: str,
    now: datetime,
    timeline: Entry,
    beneficiaries: Email | None = None,
    owner: Email | None = None,
    guardians: Email | None = None,
) -> list[str]:
    """The event's emails (beneficiaries, then the owner, then each accepted guardian) and then
    its timeline entry. Returns the outbox row ids, to enqueue after COMMIT."""
    row_ids: list[str] = []
    if beneficiaries is not None:
        row_ids += await _to_beneficiaries(cur, beneficiaries, plan_id=plan_id, owner_id=owner_id, now=now)
    if owner is not None:
        row_ids.append(
            await outbox.add(
                cur,
                kind=owner.kind,
                plan_id=plan_id,
                recipient_type="owner",
                recipient_id=owner_id,
                now=now,
                context=owner.context,
            )
        )
    if guardians is not None:
        row_ids += await outbox.add_for_guardians(
            cur,
            kind=guardians.kind,
            plan_id=plan_id,
            owner_id=owner_id,
            now=now,
            context=guardians.context,
            exclude=guardians.exclude,
            not_approved_in=guardians.not_approved_in,
        )
    metadata = timeline.metadata
    if timeline.count_as is not None:
        metadata = {**(metadata or {}), timeline.count_as: len(row_ids)}
    await activity.record(
        cur,
        user_id=owner_id,
        kind=timeline.kind,
        entity_id=timeline.entity_id or plan_id,
        summary=timeline.summary,
        metadata=metadata,
    )
    return row_ids


async def _to_beneficiaries(
    cur: Cursor, email: Email, *, plan_id: str, owner_id: str, now: datetime
) -> list[str]:
    if email.beneficiary_id is None:
        return await outbox.add_for_beneficiaries(
            cur, kind=email.kind, plan_id=plan_id, owner_id=owner_id, now=now, context=email.context
        )
    row_id = await outbox.add(
        cur,
        kind=email.kind,
        plan_id=plan_id,
        recipient_type="beneficiary",
        recipient_id=email.beneficiary_id,
        now=now,
        context=email.context,
    )
    return [row_id]
