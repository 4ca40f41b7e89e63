"""Letters announce themselves: a letter that opens for an heir of a released plan after
the release itself (`on_date` after the release day, `after_release`) emails that heir once,
with their link: "A letter from <owner> opened today."

At the release (models.flows.release_path.release_in) each such letter gets a row in
`letter_openings` with the moment it opens (the capsule's rule: 00:00 UTC of its date, or N x 24 h
after the release). Contents are frozen from the approval on, so the moment never changes. The
lifecycle cron (`announce_due`, every LIFECYCLE_SCAN_SECONDS) walks the partial index of the
rows not yet announced whose moment has come: its cost follows the letters opening now, never
all messages. Each batch is one transaction under FOR UPDATE SKIP LOCKED (two workers never
announce a letter twice): the heirs' emails (one per heir per batch, however many of their
letters opened together), the Family Timeline entry per letter, and `announced_at`. The email
names no title and no content: only that a letter opened, and the heir's own link.
"""

from __future__ import annotations

from datetime import datetime

from core.db import Cursor, Pool, transaction
from core.text.i18n import N_
from models import activity
from models.delivery import outbox

KIND = "letter_opened"
BATCH = 200

# When each of the owner's letters opens, given the release moment: as the capsule decides
# (models.claim.capsules `OPENS_AT`, models.contents.messages.opens_at).
_OPENS_AT = (
    "CASE m.release_rule_kind"
    " WHEN 'on_date'"
    " THEN GREATEST(m.release_on_date::timestamp AT TIME ZONE 'UTC', %(released)s::timestamptz)"
    " WHEN 'after_release' THEN %(released)s::timestamptz + m.release_after_days * interval '24 hours'"
    " ELSE %(released)s::timestamptz END"
)


async def schedule(cur: Cursor, *, plan_id: str, owner_id: str, released_at: datetime) -> int:
    """At the release, in its transaction: one row per letter of the owner that opens later."""
    await cur.execute(
        "INSERT INTO letter_openings (message_id, plan_id, opens_at)"
        f" SELECT m.id, %(plan)s, {_OPENS_AT} FROM messages m WHERE m.user_id = %(owner)s"
        f" AND {_OPENS_AT} > %(released)s::timestamptz ON CONFLICT (message_id) DO NOTHING",
        {"plan": plan_id, "owner": owner_id, "released": released_at},
    )
    return int(cur.rowcount)


async def announce_due(pool: Pool, *, now: datetime) -> list[str]:
    """Announce every letter whose moment has come, in batches; returns outbox ids to enqueue
    after COMMIT (each batch has committed by then)."""
    row_ids: list[str] = []
    while True:
        batch, done = await _announce_batch(pool, now=now)
        row_ids += batch
        if done:
            return row_ids


async def _announce_batch(pool: Pool, *, now: datetime) -> tuple[list[str], bool]:
    async with transaction(pool) as cur:
        await cur.execute(
            "SELECT l.message_id::text AS message_id, l.plan_id::text AS plan_id, p.user_id::text AS owner_id"
            " FROM letter_openings l JOIN plans p ON p.id = l.plan_id"
            " WHERE l.announced_at IS NULL AND l.opens_at <= %s"
            " ORDER BY l.opens_at, l.message_id LIMIT %s FOR UPDATE OF l SKIP LOCKED",
            (now, BATCH),
        )
        due = await cur.fetchall()
        if not due:
            return [], True
        message_ids = [row["message_id"] for row in due]
        # Each letter's heirs: everyone when its audience is "all", else the ones it names.
        await cur.execute(
            "SELECT m.id::text AS message_id, b.id::text AS beneficiary_id FROM messages m"
            " JOIN beneficiaries b ON b.user_id = m.user_id"
            " WHERE m.id = ANY(%s::uuid[]) AND (m.audience_all OR EXISTS (SELECT 1 FROM message_audience a"
            "   WHERE a.message_id = m.id AND a.beneficiary_id = b.id))"
            " ORDER BY b.created_at, b.id",
            (message_ids,),
        )
        heirs_of: dict[str, list[str]] = {}
        for row in await cur.fetchall():
            heirs_of.setdefault(row["message_id"], []).append(row["beneficiary_id"])
        letters_for: dict[tuple[str, str], int] = {}  # (plan, heir) -> letters that opened
        for letter in due:
            for heir in heirs_of.get(letter["message_id"], []):
                key = (letter["plan_id"], heir)
                letters_for[key] = letters_for.get(key, 0) + 1
        row_ids = [
            await outbox.add(
                cur,
                kind=KIND,
                plan_id=plan_id,
                recipient_type="beneficiary",
                recipient_id=heir,
                now=now,
                context={"letters": count},
            )
            for (plan_id, heir), count in letters_for.items()
        ]
        for letter in due:
            await activity.record(
                cur,
                user_id=letter["owner_id"],
                kind="message.opened_to_heirs",
                entity_id=letter["message_id"],
                summary=N_("A letter opened to the people it is for; each was emailed their link"),
                metadata={"beneficiaries": len(heirs_of.get(letter["message_id"], []))},
            )
        await cur.execute(
            "UPDATE letter_openings SET announced_at = %s WHERE message_id = ANY(%s::uuid[])",
            (now, message_ids),
        )
    return row_ids, len(due) < BATCH
