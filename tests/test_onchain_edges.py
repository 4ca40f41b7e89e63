"""On-chain edge cases: the chain and the plan disagree, the contract refuses at relay time."""

from __future__ import annotations

from tests.lifecycle_helpers import get_overview, guardian_session
from tests.plan_helpers import query
from tests.support.onchain import approving, build_sign_submit, run


async def test_confirmed_after_a_veto_stays_confirmed_and_says_why_nothing_moved(
    onchain, soroban_rpc, run_worker, settings
):
    setup = await approving(onchain, soroban_rpc, guardians=2, threshold=1)
    guardian = setup.guardians[0]
    session = await guardian_session(onchain, guardian)
    plan = setup.plan_id
    tx = await build_sign_submit(
        onchain,
        f"/api/legacy/guardianships/{plan}/approve/build",
        f"/api/legacy/guardianships/{plan}/submit",
        guardian.keypair,
        soroban_rpc,
        headers=session.headers,
    )
    # The owner checks in before the network confirms: a false alarm, the plan is Active again.
    resp = await onchain.post("/api/legacy/check-in", headers=setup.owner.headers)
    assert resp.status == 200, await resp.text()
    await run(run_worker, soroban_rpc)

    status = await onchain.get(
        f"/api/legacy/guardianships/{plan}/transactions/{tx['id']}", headers=session.headers
    )
    assert (await status.json())["status"] == "confirmed"  # the network said SUCCESS
    overview = await get_overview(onchain, setup.owner)
    assert overview["status"] == "Active" and overview["approvals"]["count"] == 0
    rows = query(
        settings,
        "SELECT kind, summary FROM activity WHERE user_id = %s AND kind LIKE 'transaction.%%'",
        (setup.owner.user["id"],),
    )
    not_applied = [r for r in rows if r["kind"] == "transaction.not_applied"]
    assert len(not_applied) == 1 and "being verified" in not_applied[0]["summary"]


async def test_contract_refusal_at_relay_is_failed_with_its_code_everywhere(onchain, soroban_rpc, run_worker):
    setup = await approving(onchain, soroban_rpc, guardians=2, threshold=2)
    guardian = setup.guardians[1]
    session = await guardian_session(onchain, guardian)
    plan = setup.plan_id
    soroban_rpc.execution_errors["approve_guardian"] = 4
    tx = await build_sign_submit(
        onchain,
        f"/api/legacy/guardianships/{plan}/approve/build",
        f"/api/legacy/guardianships/{plan}/submit",
        guardian.keypair,
        soroban_rpc,
        headers=session.headers,
    )
    await run(run_worker, soroban_rpc)
    resp = await onchain.get(
        f"/api/legacy/guardianships/{plan}/transactions/{tx['id']}", headers=session.headers
    )
    body = await resp.json()
    assert body["status"] == "failed" and body["contractErrorCode"] == 4
    assert "already approved" in body["reason"] and body["confirmedAt"] is None
    claims = await (await onchain.get("/api/legacy/claims", headers=setup.owner.headers)).json()
    [approval] = claims["approvals"]
    assert approval["guardianId"] == guardian.row["id"]
    assert (
        approval["status"] == "failed"
        and approval["contractErrorCode"] == 4
        and approval["hash"] == tx["hash"]
    )
    assert (await get_overview(onchain, setup.owner))["approvals"]["count"] == 0
    # A malformed or unknown transaction id is a plain 404.
    for bad in ("not-a-uuid", "00000000-0000-4000-8000-000000000000"):
        resp = await onchain.get(
            f"/api/legacy/guardianships/{plan}/transactions/{bad}", headers=session.headers
        )
        assert resp.status == 404
