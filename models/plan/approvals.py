"""Guardians' approvals of a release, one row per guardian and verification round: the one
module that writes `plan_approvals` (the attestation route and the on-chain path record them
through models.flows.verification; a veto voids the round's through models.flows.lifecycle)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime

from core.db import Cursor, unless_duplicate
from core.errors import Conflict
from core.files.crypto import KeyRing
from core.text.i18n import N_
from models import sealed_text
from models.plans import PENDING, Plan

# The plan states in which a guardian's approval counts: the page offers it and every proof
# records it only then.
VERIFYING = (PENDING,)
# With a contract configured, an approval is the guardian wallet's approve_guardian
# transaction, on chain: no attestation signed off chain, and no passkey, can stand for it.
ON_CHAIN = N_(
    "This service approves releases on the Stellar network, which needs a Stellar wallet: approve "
    "with the approve_guardian transaction signed by your guardian wallet (from your guardian page, "
    "or POST /api/legacy/guardianships/:planId/approve/build, then /submit). Without one, ask the "
    "owner to record one for you as your guardian wallet."
)


def require_verifying(*, status: str) -> None:
    """409 unless the plan is where an approval counts (VERIFYING)."""
    if status not in VERIFYING:
        raise Conflict(f"Approvals are accepted only while the plan is being verified; it is {status}.")


def require_off_chain(*, contract_id: str | None) -> None:
    """409 for an approval proved off chain while a contract is configured (ON_CHAIN)."""
    if contract_id:
        raise Conflict(ON_CHAIN)


@dataclass(frozen=True)
class Approval:
    """One guardian's approval as the attestation route and the on-chain path give it: who, how
    (`source`), and the evidence (the signed attestation, or the contract call's hash)."""

    guardian_id: str
    guardian_name: str
    wallet_address: str | None
    approver_user_id: str | None
    source: str = "attestation"
    message: str | None = None
    signature: str | None = None
    tx_hash: str | None = None


async def record(
    cur: Cursor, ring: KeyRing, *, plan_id: str, round_number: int, approval: Approval, now: datetime
) -> None:
    """One guardian's approval of this round; 409 if they already gave it."""
    approval_id = str(uuid.uuid4())
    name = sealed_text.seal(
        ring, table="plan_approvals", column="guardian_name", row_id=approval_id, text=approval.guardian_name
    )
    recorded = await unless_duplicate(
        cur,
        "INSERT INTO plan_approvals (id, plan_id, round, guardian_id, guardian_name_sealed,"
        " wallet_address, approver_user_id, source, message, signature, tx_hash, created_at)"
        " VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
        (
            approval_id,
            plan_id,
            round_number,
            approval.guardian_id,
            name,
            approval.wallet_address,
            approval.approver_user_id,
            approval.source,
            approval.message,
            approval.signature,
            approval.tx_hash,
            now,
        ),
    )
    if not recorded:
        raise Conflict("You have already approved this release.")


async def void_round(cur: Cursor, *, plan_id: str, round_number: int, now: datetime) -> None:
    """A veto ends the round: its approvals no longer count (they stay, voided, for the record)."""
    await cur.execute(
        "UPDATE plan_approvals SET voided_at = %s WHERE plan_id = %s AND round = %s AND voided_at IS NULL",
        (now, plan_id, round_number),
    )


async def approved_on_chain(cur: Cursor, *, plan: Plan) -> bool:
    """Whether this round's approvals were all given on-chain: only then can the contract, which
    knows only those, finalise the release. A round approved by attestations is released by the
    scheduler even if a contract was configured since (docs/soroban.md, "Configuring or removing
    the contract")."""
    await cur.execute(
        "SELECT count(*) AS total, count(*) FILTER (WHERE source = 'onchain') AS onchain"
        " FROM plan_approvals WHERE plan_id = %s AND round = %s AND voided_at IS NULL",
        (plan["id"], plan["verification_round"]),
    )
    counts = await cur.fetchone()
    return bool(counts["total"]) and counts["onchain"] == counts["total"]


async def withdraw(cur: Cursor, *, plan: Plan, guardian_id: str) -> bool:
    """This guardian's approval of the round taken back (their objection replaces it): the row
    goes, since it no longer approves anything (the timeline keeps that it was given and
    taken back); False if they had none. 409 for one given on-chain: the contract counts it,
    and nothing here can take it back."""
    await cur.execute(
        "SELECT id, source FROM plan_approvals WHERE plan_id = %s AND round = %s AND guardian_id = %s"
        " AND voided_at IS NULL",
        (plan["id"], plan["verification_round"], guardian_id),
    )
    row = await cur.fetchone()
    if row is None:
        return False
    if row["source"] == "onchain":
        raise Conflict(
            "Your approval was signed on the Stellar network, where it cannot be taken back: only the "
            "owner's check-in can stop this release now. Please tell them, or the other guardians, at once."
        )
    await cur.execute("DELETE FROM plan_approvals WHERE id = %s", (row["id"],))
    return True
