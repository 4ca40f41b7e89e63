"""A lost wallet (docs/soroban.md "A lost wallet"): an heir whose bound wallet is gone proves
another through their claim token (models.claim.heir_wallets); it waits as a request, the guardians
are asked (by email at most once a day per heir), and at the plan's threshold of guardian
approvals it replaces the one bound before. The one writer of `wallet_changes` and
`wallet_change_approvals`.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import TypedDict

from core.clock import wire_time
from core.db import Cursor, unless_duplicate
from core.errors import Conflict, NotFound
from core.files.crypto import KeyRing
from core.text.i18n import N_
from models import activity, plans, sealed_text
from models.claim.capsules import Capsule
from models.common import as_record
from models.contents import beneficiaries
from models.delivery.announce import Email, Entry, announce

TAKEN = "This wallet is already bound to another beneficiary of this plan"
# A waiting wallet change blocks another for this long, unless the guardians decide it first.
PENDING_FOR = timedelta(days=7)
# Guardians hear about one heir's wallet changes by email at most this often.
GUARDIAN_EMAIL_EVERY = timedelta(hours=24)


def short(*, address: str) -> str:
    """A wallet as people compare it: its last six characters."""
    return f"ending in {address[-6:]}"


class ChangeRequested(TypedDict):
    outbox: list[str]
    threshold: int


class WalletChange(TypedDict):
    """A wallet an heir proved in place of the one bound to them, awaiting the guardians."""

    id: str
    beneficiary_id: str
    name: str  # the heir's
    wallet_address: str
    requested_at: datetime
    approvals: int
    approved_by_me: bool


class ChangeStatus(TypedDict):
    status: str  # pending | applied
    approvals: int
    threshold: int


async def _threshold(cur: Cursor, plan_id: str) -> int:
    plan = await plans.get_by_id(cur, plan_id=plan_id)
    assert plan is not None
    return await plans.threshold_now(cur, plan=plan)


async def request(cur: Cursor, *, capsule: Capsule, wallet_address: str, now: datetime) -> ChangeRequested:
    """Keep the proven wallet as a request and ask every guardian (by email at most once a day per
    heir); 409 while another request of this heir waits (under PENDING_FOR), once the heir has
    claimed, or for a wallet bound to a sibling."""
    beneficiary_id = capsule["beneficiary_id"]
    await cur.execute(
        "SELECT EXISTS (SELECT 1 FROM transactions WHERE beneficiary_id = %(b)s AND function = 'claim_assets'"
        "   AND status = 'confirmed') AS claimed,"
        " EXISTS (SELECT 1 FROM beneficiaries WHERE user_id = %(owner)s AND wallet_address = %(w)s) AS taken,"
        " (SELECT id::text FROM plans WHERE user_id = %(owner)s) AS plan_id",
        {"b": beneficiary_id, "owner": capsule["owner_id"], "w": wallet_address},
    )
    facts = await cur.fetchone()
    if facts["claimed"]:
        raise Conflict(
            "You have already claimed your share with the wallet bound to you; it cannot change now."
        )
    if facts["taken"]:
        raise Conflict(TAKEN)
    plan_id = facts["plan_id"]
    await _refuse_while_pending(
        cur, plan_id=plan_id, beneficiary_id=beneficiary_id, wallet_address=wallet_address, now=now
    )
    await cur.execute(
        "INSERT INTO wallet_changes (beneficiary_id, plan_id, wallet_address, created_at)"
        " VALUES (%s, %s, %s, %s) RETURNING id::text AS id",
        (beneficiary_id, plan_id, wallet_address, now),
    )
    change_id = (await cur.fetchone())["id"]
    told_lately = await _guardians_told_lately(cur, plan_id=plan_id, beneficiary_id=beneficiary_id, now=now)
    row_ids = await announce(
        cur,
        plan_id=plan_id,
        owner_id=capsule["owner_id"],
        now=now,
        guardians=None
        if told_lately
        else Email(
            "wallet_change_requested",
            {"beneficiaryId": beneficiary_id, "walletEnd": wallet_address[-6:], "changeId": change_id},
        ),
        timeline=Entry(
            "beneficiary.wallet_change_requested",
            N_("A beneficiary proved a new wallet; the guardians were asked to approve it"),
            {"walletAddress": wallet_address},
            entity_id=beneficiary_id,
        ),
    )
    return {"outbox": row_ids, "threshold": await _threshold(cur, plan_id)}


async def _refuse_while_pending(
    cur: Cursor, *, plan_id: str, beneficiary_id: str, wallet_address: str, now: datetime
) -> None:
    """One request waits per heir: another proof while it is pending is 409 until the guardians
    decide it or it is PENDING_FOR old (then it lapses, `replaced`). A new proof never resets the
    approvals of the one waiting (a leaked link looping requests could otherwise keep the
    real heir's change from ever reaching the threshold)."""
    await cur.execute(
        "SELECT c.id, c.wallet_address, c.created_at,"
        " (SELECT count(*) FROM wallet_change_approvals a WHERE a.change_id = c.id) AS approvals"
        " FROM wallet_changes c WHERE c.beneficiary_id = %s AND c.status = 'pending' FOR UPDATE",
        (beneficiary_id,),
    )
    pending = await cur.fetchone()
    if pending is None:
        return
    lapses = pending["created_at"] + PENDING_FOR
    if lapses <= now:
        await cur.execute(
            "UPDATE wallet_changes SET status = 'replaced', decided_at = %s WHERE id = %s",
            (now, pending["id"]),
        )
        return
    threshold = await _threshold(cur, plan_id)
    waiting = (
        "This wallet"
        if pending["wallet_address"] == wallet_address
        else f"Another wallet ({short(address=pending['wallet_address'])})"
    )
    raise Conflict(
        f"{waiting} already waits for the guardians' approval"
        + f" ({pending['approvals']} of {threshold} so far). A different wallet can be asked for once they "
        f"have decided, or from {wire_time(lapses)}.",
        details={
            "walletChange": {
                "status": "pending",
                "walletAddress": pending["wallet_address"],
                "approvals": pending["approvals"],
                "threshold": threshold,
                "requestedAt": wire_time(pending["created_at"]),
                "lapsesAt": wire_time(lapses),
            }
        },
    )


async def _guardians_told_lately(cur: Cursor, *, plan_id: str, beneficiary_id: str, now: datetime) -> bool:
    """Were the guardians emailed about this heir's wallet within GUARDIAN_EMAIL_EVERY?"""
    await cur.execute(
        "SELECT EXISTS (SELECT 1 FROM outbox WHERE plan_id = %s AND kind = 'wallet_change_requested'"
        " AND context->>'beneficiaryId' = %s AND created_at > %s) AS told",
        (plan_id, beneficiary_id, now - GUARDIAN_EMAIL_EVERY),
    )
    return bool((await cur.fetchone())["told"])


async def pending_changes(
    cur: Cursor, ring: KeyRing, *, plan_ids: list[str], guardian_user_id: str
) -> dict[str, list[WalletChange]]:
    """The requests waiting in these plans, with their approvals so far and whether this
    guardian account approved."""
    if not plan_ids:
        return {}
    await cur.execute(
        "SELECT c.id::text AS id, c.plan_id::text AS plan_id, c.beneficiary_id::text AS beneficiary_id,"
        f" {sealed_text.select_list(table='beneficiaries', alias='b', columns=('name',))}, c.wallet_address,"
        " c.created_at AS requested_at,"
        " (SELECT count(*) FROM wallet_change_approvals a WHERE a.change_id = c.id) AS approvals,"
        " EXISTS (SELECT 1 FROM wallet_change_approvals a WHERE a.change_id = c.id"
        "   AND a.approver_user_id = %s) AS approved_by_me"
        " FROM wallet_changes c JOIN beneficiaries b ON b.id = c.beneficiary_id"
        " WHERE c.plan_id = ANY(%s::uuid[]) AND c.status = 'pending' ORDER BY c.created_at, c.id",
        (guardian_user_id, plan_ids),
    )
    result: dict[str, list[WalletChange]] = {}
    for sealed_row in await cur.fetchall():
        row = sealed_text.open_row(ring, table="beneficiaries", row=sealed_row, id_key="beneficiary_id")
        plan_id = row.pop("plan_id")
        result.setdefault(plan_id, []).append(as_record(WalletChange, row=row))
    return result


async def approve_change(
    cur: Cursor,
    *,
    plan_id: str,
    owner_id: str,
    change_id: str,
    guardian_id: str,
    approver_user_id: str,
    now: datetime,
) -> ChangeStatus:
    """One guardian's approval of a waiting request; at the plan's threshold the proven wallet
    is bound to the heir (`guardians`). Call with the plan row locked."""
    await cur.execute(
        "SELECT beneficiary_id::text AS beneficiary_id, wallet_address, status FROM wallet_changes"
        " WHERE id = %s AND plan_id = %s FOR UPDATE",
        (change_id, plan_id),
    )
    change = await cur.fetchone()
    if change is None:
        raise NotFound("Wallet change")
    if change["status"] != "pending":
        raise Conflict(
            "This request was already applied."
            if change["status"] == "applied"
            else "The heir proved another wallet since; approve that request instead."
        )
    approved = await unless_duplicate(
        cur,
        "INSERT INTO wallet_change_approvals (change_id, guardian_id, approver_user_id, created_at)"
        " VALUES (%s, %s, %s, %s)",
        (change_id, guardian_id, approver_user_id, now),
    )
    if not approved:
        raise Conflict("You have already approved this wallet.")
    await cur.execute("SELECT count(*) AS n FROM wallet_change_approvals WHERE change_id = %s", (change_id,))
    approvals = (await cur.fetchone())["n"]
    threshold = await _threshold(cur, plan_id)
    await activity.record(
        cur,
        user_id=owner_id,
        kind="beneficiary.wallet_change_approved",
        entity_id=change["beneficiary_id"],
        summary=N_("A guardian approved a beneficiary's new wallet"),
        metadata={"guardianId": guardian_id, "approvals": approvals, "threshold": threshold},
    )
    if approvals < threshold:
        return {"status": "pending", "approvals": approvals, "threshold": threshold}
    await cur.execute(
        "SELECT EXISTS (SELECT 1 FROM transactions WHERE beneficiary_id = %s AND function = 'claim_assets'"
        " AND status = 'confirmed') AS claimed",
        (change["beneficiary_id"],),
    )
    if (await cur.fetchone())["claimed"]:
        raise Conflict("This heir has already claimed with the wallet bound to them; it cannot change now.")
    bound = await beneficiaries.bind_wallet(
        cur,
        beneficiary_id=change["beneficiary_id"],
        wallet_address=change["wallet_address"],
        via="guardians",
        now=now,
    )
    if not bound:
        raise Conflict(TAKEN)
    await cur.execute(
        "UPDATE wallet_changes SET status = 'applied', decided_at = %s WHERE id = %s", (now, change_id)
    )
    await activity.record(
        cur,
        user_id=owner_id,
        kind="beneficiary.wallet_replaced",
        entity_id=change["beneficiary_id"],
        summary=N_("The guardians approved a beneficiary's new wallet; it replaces the one bound before"),
        metadata={"walletAddress": change["wallet_address"]},
    )
    return {"status": "applied", "approvals": approvals, "threshold": threshold}
