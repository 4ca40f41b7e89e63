"""The heirs' side of a corrected address after the release (docs/lifecycle.md "A corrected heir
address"): the heir at their old address stops a change of their own address with one button,
and every other heir can say "This looks wrong", which stops nothing.

Why the difference: the heir concerned is the one person the change is about, and their old
address still reaching them is the proof that it is wrong; another heir stopping it would let a
hostile sibling hold an heir's link back for ever. Their doubt tells the guardians and the heir
concerned, and extends the hold once (address_changes `doubted_in`), so someone who can stop it
has the time to. Also the confirmation page's read (`reader_if_live`). The writes are
models.plan.guardianships.address_changes's.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal, TypedDict

from arq.connections import ArqRedis

from core.db import Pool, transaction
from core.files.crypto import KeyRing
from core.text.i18n import N_
from models import sealed_text
from models.account.users import known_as
from models.address_links import TOKEN_RE, change_id_of, digest, doubt_ids
from models.common import Recorded
from models.delivery import outbox
from models.delivery.announce import Email, Entry, announce
from models.plan.guardianships import address_changes


class HeirView(TypedDict):
    """What the heir's one-button page says (never the address)."""

    change_id: str
    beneficiary_id: str  # the heir the change is about
    plan_id: str
    owner_id: str
    heir_name: str | None
    owner: str  # the owner as heirs know them (models.account.users.known_as)
    status: str
    hold_until: datetime | None
    doubted: bool  # another heir already said it looks wrong
    reader: Recorded  # the language and zone of the heir who opened it


_VIEW = (
    "SELECT c.id::text AS change_id, c.beneficiary_id::text AS beneficiary_id, c.plan_id::text AS plan_id,"
    " p.user_id::text AS owner_id, c.status, c.hold_until, c.doubted_at IS NOT NULL AS doubted,"
    " b.id AS b_id, {heir}, {owner}, o.wallet_address AS owner_wallet, r.locale, r.time_zone"
    " FROM address_changes c JOIN plans p ON p.id = c.plan_id JOIN users o ON o.id = p.user_id"
    " JOIN beneficiaries b ON b.id = c.beneficiary_id JOIN beneficiaries r ON r.id = {reader}"
    " WHERE {where} AND r.user_id = p.user_id"
)


async def _view(
    pool: Pool, ring: KeyRing, *, reader: str, where: str, params: tuple[object, ...]
) -> HeirView | None:
    """`reader`: who opened the link, as SQL (the heir concerned, for their "Stop"; another heir's
    id, for "This looks wrong"), whose language and zone the page speaks in."""
    heir = sealed_text.select_list(table="beneficiaries", alias="b", columns=("name",), prefix="b_")
    owner = sealed_text.select_list(table="users", alias="o", columns=("name",), prefix="owner_")
    async with transaction(pool) as cur:
        await cur.execute(_VIEW.format(heir=heir, owner=owner, reader=reader, where=where), params)
        row = await cur.fetchone()
    if row is None:
        return None
    row = sealed_text.open_row(ring, table="beneficiaries", row=row, id_key="b_id", prefix="b_")
    row = sealed_text.open_row(ring, table="users", row=row, id_key="owner_id", prefix="owner_")
    return HeirView(
        change_id=row["change_id"],
        beneficiary_id=row["beneficiary_id"],
        plan_id=row["plan_id"],
        owner_id=row["owner_id"],
        heir_name=row["b_name"],
        owner=known_as(name=row["owner_name"], wallet=row["owner_wallet"]),
        status=row["status"],
        hold_until=row["hold_until"],
        doubted=bool(row["doubted"]),
        reader=Recorded(locale=row["locale"], time_zone=row["time_zone"]),
    )


async def stop_view(pool: Pool, ring: KeyRing, *, token: str) -> HeirView | None:
    """The change the heir's "Stop" link names, while it can still be stopped (until the new
    address confirms); None for every miss. A read: the page's GET changes nothing."""
    if not TOKEN_RE.fullmatch(token):
        return None
    return await _view(
        pool,
        ring,
        reader="c.beneficiary_id",
        where="c.stop_digest = %s AND c.status = ANY(ARRAY['holding', 'confirming'])",
        params=(digest(token=token),),
    )


async def stop(pool: Pool, redis: ArqRedis, ring: KeyRing, *, token: str, now: datetime) -> HeirView | None:
    """The heir stops the change of their own address: it ends (nothing changes, their link stays
    at this address), the guardians are told. None for every miss (unknown, decided, confirmed)."""
    view = await stop_view(pool, ring, token=token)
    if view is None:
        return None
    async with transaction(pool) as cur:
        if not await address_changes.heir_stopped_in(cur, change_id=view["change_id"], now=now):
            return None
        row_ids = await announce(
            cur,
            plan_id=view["plan_id"],
            owner_id=view["owner_id"],
            now=now,
            guardians=Email(
                "address_change_stopped", {"beneficiaryId": view["beneficiary_id"], "byHeir": True}
            ),
            timeline=Entry(
                "beneficiary.address_change_stopped",
                N_("A beneficiary stopped the new email address proposed for them; nothing changed"),
                {"actor": "beneficiary", "byHeir": True},
                entity_id=view["beneficiary_id"],
            ),
        )
    await outbox.enqueue(redis, row_ids=row_ids)
    return view


async def doubt_view(pool: Pool, ring: KeyRing, *, token: str) -> HeirView | None:
    """The change another heir's "This looks wrong" names, while it holds; None otherwise."""
    ids = doubt_ids(ring, token=token)
    if ids is None:
        return None
    change_id, reader_id = ids
    view = await _view(
        pool, ring, reader="%s", where="c.id = %s AND c.status = 'holding'", params=(reader_id, change_id)
    )
    return None if view is None or view["beneficiary_id"] == reader_id else view


Doubt = Literal["told", "already"]


async def doubt(pool: Pool, redis: ArqRedis, ring: KeyRing, *, token: str, now: datetime) -> Doubt | None:
    """Another heir says it looks wrong: the first time, the guardians and the heir concerned are
    told and the hold is extended once ("told"); later, nothing more ("already"). None: a miss."""
    view = await doubt_view(pool, ring, token=token)
    ids = doubt_ids(ring, token=token)
    if view is None or ids is None:
        return None
    async with transaction(pool) as cur:
        until = await address_changes.doubted_in(
            cur, change_id=view["change_id"], beneficiary_id=ids[1], now=now
        )
        if until is None:
            return "already"
        context = {
            "beneficiaryId": view["beneficiary_id"],
            "changeId": view["change_id"],
            "holdUntil": until.isoformat(),
        }
        await cur.execute("SELECT stop_key_id FROM address_changes WHERE id = %s", (view["change_id"],))
        context["stopKeyId"] = (await cur.fetchone())["stop_key_id"]
        row_ids = await announce(
            cur,
            plan_id=view["plan_id"],
            owner_id=view["owner_id"],
            now=now,
            beneficiaries=Email("address_change_doubted", context, beneficiary_id=view["beneficiary_id"]),
            guardians=Email("address_change_doubted", context),
            timeline=Entry(
                "beneficiary.address_change_doubted",
                N_(
                    "Another beneficiary said a beneficiary's new email address looks wrong: the guardians "
                    "and that beneficiary were told, and it waits 7 days longer"
                ),
                {"actor": "beneficiary", "holdUntil": until.isoformat()},
                entity_id=view["beneficiary_id"],
            ),
        )
    await outbox.enqueue(redis, row_ids=row_ids)
    return "told"


async def reader_if_live(pool: Pool, ring: KeyRing, *, token: str) -> Recorded | None:
    """The confirmation link's heir: their recorded language and zone if it would confirm now,
    else None (a read)."""
    change_id = change_id_of(ring, token=token)
    if change_id is None:
        return None
    async with transaction(pool) as cur:
        await cur.execute(
            "SELECT b.locale, b.time_zone FROM address_changes c"
            " JOIN beneficiaries b ON b.id = c.beneficiary_id WHERE c.id = %s AND c.status = 'confirming'",
            (change_id,),
        )
        row = await cur.fetchone()
    return None if row is None else Recorded(locale=row["locale"], time_zone=row["time_zone"])
