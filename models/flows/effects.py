"""What a confirmed contract call means for the plan, applied in the confirmation's transaction.

`confirm` flips a row `pending -> confirmed` (models.chain.transactions.confirm_in) and calls
`apply` on the same cursor, so the effect commits with the confirmation or not at all, and a
second relay of the same hash (whose guarded UPDATE finds nothing pending) never applies it again.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from core.db import Cursor, Pool, transaction
from core.errors import Conflict
from core.files.crypto import KeyRing
from core.text.i18n import N_, _
from models import activity, plans, sealed_text
from models.chain import transactions
from models.chain.transactions import RelayRow
from models.flows import release_path, verification
from models.plan import approvals


async def confirm(
    pool: Pool, ring: KeyRing, *, row: RelayRow, ledger: int, closed_at: datetime | None, now: datetime
) -> list[str] | None:
    """pending → confirmed and its effect, in one transaction; None if it was not pending.

    Returns the outbox row ids the effect wrote (emails), to enqueue after COMMIT.
    """
    async with transaction(pool) as cur:
        if not await transactions.confirm_in(cur, row=row, ledger=ledger, closed_at=closed_at, now=now):
            return None
        return await apply(cur, ring, row=row, now=now)


async def apply(cur: Cursor, ring: KeyRing, *, row: RelayRow, now: datetime) -> list[str]:
    """What a confirmed call means for the plan. The chain has spoken, so a plan whose state
    disagrees (e.g. the owner checked in meanwhile) keeps the confirmation and records why the
    effect was not applied, instead of rolling the confirmation back."""
    await cur.execute("SAVEPOINT effect")
    try:
        outbox_ids = await EFFECTS[row["function"]](cur, ring, row, now)
    except Conflict as exc:
        await cur.execute("ROLLBACK TO SAVEPOINT effect")
        reason = exc.message
        await activity.record(
            cur,
            user_id=row["user_id"],
            kind="transaction.not_applied",
            entity_id=row["id"],
            # The reason is an API error message: English, as every error body.
            summary=lambda: _("Confirmed on-chain, but not applied to the plan: {reason}").format(
                reason=reason
            ),
            metadata={"function": row["function"], "hash": row["hash"]},
        )
        return []
    await cur.execute("RELEASE SAVEPOINT effect")
    return outbox_ids


async def _claim_recorded(cur: Cursor, ring: KeyRing, row: RelayRow, now: datetime) -> list[str]:
    """The beneficiary's claim is the confirmed row itself. It binds nothing: submit took only
    the wallet already bound to this beneficiary (models.claim.heir_wallets)."""
    await activity.record(
        cur,
        user_id=row["user_id"],
        kind="beneficiary.claimed",
        entity_id=row["beneficiary_id"],
        summary=N_("A beneficiary claimed their share on-chain"),
        metadata={"hash": row["hash"]},
    )
    return []


async def _approval_counted(cur: Cursor, ring: KeyRing, row: RelayRow, now: datetime) -> list[str]:
    """The guardian's on-chain approval counts like an attested one (threshold → Approved)."""
    plan_id, guardian_id = row["plan_id"], row["guardian_id"]
    if plan_id is None or guardian_id is None:  # the owner's plan or the guardian was deleted
        raise Conflict("the plan or the guardian no longer exists")
    plan = await plans.get_by_id(cur, plan_id=plan_id, lock=True)
    await cur.execute(
        f"SELECT g.id, {sealed_text.select_list(table='guardians', alias='g', columns=('name',))}"
        " FROM guardians g WHERE g.id = %s",
        (guardian_id,),
    )
    found = await cur.fetchone()
    guardian = None if found is None else sealed_text.open_row(ring, table="guardians", row=found)
    if plan is None or guardian is None:
        raise Conflict("the plan or the guardian no longer exists")
    started = plan["verification_started_at"]
    if started is not None and row["created_at"] < started:
        # Signed in a round the owner's check-in ended: a veto voids it, however late it lands.
        raise Conflict("it was signed for an earlier verification, which the owner's check-in stopped")
    approval = approvals.Approval(
        guardian_id=guardian_id,
        guardian_name=guardian["name"],
        wallet_address=row["signer"],
        approver_user_id=row["signer_user_id"],
        source="onchain",
        tx_hash=row["hash"],
    )
    return await verification.record_approval(cur, ring, plan=plan, approval=approval, now=now)


async def _plan_released(cur: Cursor, ring: KeyRing, row: RelayRow, now: datetime) -> list[str]:
    """Released, with the claim-link emails: only ever from a confirmed finalize_release, and
    only one submitted after the current approval once its cancel window has passed (a call
    from before a veto can be confirmed minutes later, in a new round whose window is open)."""
    plan_id = row["plan_id"]
    if plan_id is None:
        raise Conflict("the plan is gone, not Approved")
    plan = await plans.get_by_id(cur, plan_id=plan_id, lock=True)
    if plan is not None and plan["status"] == plans.APPROVED:
        approved_at, release_at = plan["approved_at"], plan["release_at"]
        if release_at is None or release_at > now:
            raise Conflict("the owner's cancel window is still open")
        if approved_at is not None and row["created_at"] < approved_at:
            raise Conflict("it was signed before the current approval, after the owner's check-in")
    outbox_ids = await release_path.release_in(cur, plan_id=plan_id, now=now, actor="contract")
    if outbox_ids is None:
        plan = await plans.get_by_id(cur, plan_id=plan_id)
        raise Conflict(f"the plan is {plan['status'] if plan else 'gone'}, not Approved")
    return outbox_ids


EFFECTS: dict[str, Any] = {
    "approve_guardian": _approval_counted,
    "finalize_release": _plan_released,
    "claim_assets": _claim_recorded,
}
