"""The owner's view of the on-chain side: each beneficiary's claim, the release, the approvals.

Read from the `transactions` rows the relay keeps honest: a claim is `confirmed` only once the
network said so. For each beneficiary (and each guardian) the confirmed transaction wins over
later attempts; otherwise the latest attempt is shown, so a failure is visible with its code.
"""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal
from typing import Any, TypedDict

from core.db import Pool, autocommit
from core.files.crypto import KeyRing
from models import sealed_text
from models.claim.capsules import WalletBinding


class OnChain(TypedDict):
    status: str  # none | pending | confirmed | failed
    hash: str | None
    confirmed_at: datetime | None
    contract_error_code: int | None


class BeneficiaryClaim(TypedDict):
    beneficiary_id: str
    name: str
    allocation_percentage: Decimal
    wallet_address: str | None
    wallet: WalletBinding | None  # the same, with how and when it was bound
    capsule_opened_at: datetime | None
    claim: OnChain


class GuardianApproval(OnChain):
    guardian_id: str
    guardian_name: str | None


class ClaimsOverview(TypedDict):
    claims: list[BeneficiaryClaim]
    release: OnChain
    approvals: list[GuardianApproval]


_BEST = "ORDER BY (t.status = 'confirmed') DESC, t.created_at DESC, t.id LIMIT 1"


def _on_chain(row: dict[str, Any] | None) -> OnChain:
    if row is None or row["tx_status"] is None:
        return {"status": "none", "hash": None, "confirmed_at": None, "contract_error_code": None}
    return {
        "status": row["tx_status"],
        "hash": row["hash"],
        "confirmed_at": row["confirmed_at"],
        "contract_error_code": row["contract_error_code"],
    }


async def overview(pool: Pool, ring: KeyRing, *, user_id: str) -> ClaimsOverview:
    async with autocommit(pool) as cur:
        await cur.execute(
            f"SELECT b.id, {sealed_text.select_list(table='beneficiaries', alias='b', columns=('name',))},"
            " b.allocation_percentage,"
            " b.wallet_address, b.wallet_bound_via, b.wallet_bound_at,"
            " (SELECT max(a.created_at) FROM activity a WHERE a.user_id = b.user_id"
            "   AND a.kind = 'capsule.opened' AND a.entity_id = b.id::text) AS capsule_opened_at,"
            " t.status AS tx_status, t.hash, t.confirmed_at, t.contract_error_code"
            " FROM beneficiaries b LEFT JOIN LATERAL (SELECT * FROM transactions t"
            f"   WHERE t.beneficiary_id = b.id AND t.function = 'claim_assets' {_BEST}) t ON true"
            " WHERE b.user_id = %s ORDER BY b.created_at, b.id",
            (user_id,),
        )
        opened = [sealed_text.open_row(ring, table="beneficiaries", row=row) for row in await cur.fetchall()]
        claims: list[BeneficiaryClaim] = [
            {
                "beneficiary_id": row["id"],
                "name": row["name"],
                "allocation_percentage": row["allocation_percentage"],
                "wallet_address": row["wallet_address"],
                "wallet": None
                if row["wallet_address"] is None
                else {
                    "address": row["wallet_address"],
                    "bound_via": row["wallet_bound_via"],
                    "bound_at": row["wallet_bound_at"],
                },
                "capsule_opened_at": row["capsule_opened_at"],
                "claim": _on_chain(row),
            }
            for row in opened
        ]
        await cur.execute(
            "SELECT t.status AS tx_status, t.hash, t.confirmed_at, t.contract_error_code FROM transactions t"
            f" WHERE t.user_id = %s AND t.function = 'finalize_release' {_BEST}",
            (user_id,),
        )
        release = await cur.fetchone()
        await cur.execute(
            "SELECT g.id AS guardian_id,"
            f" {sealed_text.select_list(table='guardians', alias='g', columns=('name',), prefix='guardian_')}"
            ","
            " t.status AS tx_status, t.hash,"
            " t.confirmed_at, t.contract_error_code FROM guardians g"
            " JOIN LATERAL (SELECT * FROM transactions t"
            f"   WHERE t.guardian_id = g.id AND t.function = 'approve_guardian' {_BEST}) t ON true"
            " WHERE g.user_id = %s ORDER BY g.created_at, g.id",
            (user_id,),
        )
        approvals: list[GuardianApproval] = [
            {"guardian_id": row["guardian_id"], "guardian_name": row["guardian_name"], **_on_chain(row)}
            for row in (
                sealed_text.open_row(ring, table="guardians", row=r, id_key="guardian_id", prefix="guardian_")
                for r in await cur.fetchall()
            )
        ]
    return {"claims": claims, "release": _on_chain(release), "approvals": approvals}
