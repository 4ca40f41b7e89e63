"""A signed call from before a veto must not count after it: a finalize_release or an
approve_guardian that was pending when the owner checked in, confirmed once a new round of
verification has begun, changes nothing in that round (review findings)."""

from __future__ import annotations

from stellar_sdk import Keypair

from tests.lifecycle_helpers import get_overview, report
from tests.plan_helpers import query
from tests.soroban_helpers import contract_overrides, prove_wallet
from tests.support.onchain import approve_on_chain, approving, build_sign_submit, run


async def test_a_finalize_release_from_before_the_veto_does_not_release_in_the_next_round(
    onchain, soroban_rpc, clock, run_worker, settings
):
    setup = await approving(onchain, soroban_rpc, guardians=2, threshold=1)
    await approve_on_chain(onchain, soroban_rpc, setup, setup.guardians[0])
    await run(run_worker, soroban_rpc)
    overview = await get_overview(onchain, setup.owner)
    assert overview["status"] == "Approved"
    clock.advance(seconds=overview["settings"]["cancelWindowSeconds"] + 1)
    await run(run_worker, soroban_rpc)  # ready to finalise: the heirs' links go out

    heir = setup.beneficiaries[0]
    wallet = Keypair.random()
    soroban_rpc.fund(wallet.public_key)
    assert (await prove_wallet(onchain, heir["claimToken"], wallet)).status == 200
    release = await build_sign_submit(
        onchain,
        f"/api/claim/{heir['claimToken']}/release/build",
        f"/api/claim/{heir['claimToken']}/submit",
        wallet,
        soroban_rpc,
        json={"walletAddress": wallet.public_key},
    )
    # Before the network confirms it, the owner checks in: the release is stopped.
    resp = await onchain.post("/api/legacy/check-in", headers=setup.owner.headers)
    assert resp.status == 200, await resp.text()
    # A new verification round reaches Approved again: a fresh cancel window starts now.
    assert (await report(onchain, setup, setup.guardians[1])).status == 200
    await approve_on_chain(onchain, soroban_rpc, setup, setup.guardians[1])
    # The node asks to resend the old finalize_release later; the new approval confirms meanwhile.
    soroban_rpc.send_script = ["TRY_AGAIN_LATER"]
    await run_worker(settings=contract_overrides(soroban_rpc), max_jobs=1)

    overview = await get_overview(onchain, setup.owner)
    assert overview["status"] == "Approved", "released before the new cancel window ended"
    status = await onchain.get(f"/api/claim/{heir['claimToken']}/transactions/{release['id']}")
    assert (await status.json())["status"] == "confirmed"  # the chain's word stays recorded
    rows = query(
        settings,
        "SELECT summary FROM activity WHERE user_id = %s AND kind = 'transaction.not_applied'",
        (setup.owner.user["id"],),
    )
    assert len(rows) == 1 and "cancel window" in rows[0]["summary"]


async def test_an_approval_signed_before_the_veto_does_not_count_in_the_next_round(
    onchain, soroban_rpc, run_worker, settings
):
    setup = await approving(onchain, soroban_rpc, guardians=2, threshold=2)
    await approve_on_chain(onchain, soroban_rpc, setup, setup.guardians[0])  # round 1, pending
    resp = await onchain.post("/api/legacy/check-in", headers=setup.owner.headers)
    assert resp.status == 200, await resp.text()
    assert (await report(onchain, setup, setup.guardians[1])).status == 200  # round 2
    await run(run_worker, soroban_rpc)  # the round-1 approval confirms now

    overview = await get_overview(onchain, setup.owner)
    assert overview["status"] == "PendingVerification"
    assert overview["approvals"]["count"] == 0, "a round-1 approval counted in round 2"
    # The guardian who approved before the veto can approve again in this round.
    await approve_on_chain(onchain, soroban_rpc, setup, setup.guardians[0])
    await approve_on_chain(onchain, soroban_rpc, setup, setup.guardians[1])
    await run(run_worker, soroban_rpc)
    assert (await get_overview(onchain, setup.owner))["status"] == "Approved"
    rows = query(
        settings,
        "SELECT summary FROM activity WHERE user_id = %s AND kind = 'transaction.not_applied'",
        (setup.owner.user["id"],),
    )
    assert len(rows) == 1 and "earlier" in rows[0]["summary"]
