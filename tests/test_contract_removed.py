"""Configuring or removing the contract mid-plan never strands a plan (docs/soroban.md,
"Configuring or removing the contract"): an Approved plan left for finalize_release is released
off-chain if the operator then removes the contract, and a plan its guardians approved by
attestation is released by the scheduler even if a contract was configured since (the chain
never saw those approvals, so no finalize_release could succeed)."""

from __future__ import annotations

from tests.helpers import sign_in
from tests.lifecycle_helpers import activate_plan, approve_plan, get_overview
from tests.plan_helpers import query
from tests.soroban_helpers import contract_overrides
from tests.support.onchain import approve_on_chain, approving, run


def claim_link_stages(settings):
    rows = query(
        settings,
        "SELECT context->>'stage' AS stage FROM outbox WHERE kind = 'claim_link' ORDER BY created_at",
    )
    return [r["stage"] for r in rows]


async def test_contract_unset_after_approval_still_releases(
    onchain, soroban_rpc, clock, run_worker, settings
):
    setup = await approving(onchain, soroban_rpc, guardians=1, threshold=1)
    await approve_on_chain(onchain, soroban_rpc, setup, setup.guardians[0])
    await run(run_worker, soroban_rpc)
    overview = await get_overview(onchain, setup.owner)
    assert overview["status"] == "Approved"
    clock.advance(seconds=overview["settings"]["cancelWindowSeconds"] + 1)
    await run(run_worker, soroban_rpc)  # a contract decides: the scan makes it ready, not released
    overview = await get_overview(onchain, setup.owner)
    assert overview["status"] == "Approved" and overview["readyToFinalize"] is True
    assert claim_link_stages(settings) == ["ready", "ready"]

    # The operator unsets SERVICE_CONTRACT_ID; no finalize_release can come any more.
    clock.advance(hours=2)
    await run_worker()
    overview = await get_overview(onchain, setup.owner)
    assert overview["status"] == "Released" and overview["readyToFinalize"] is False
    # The heirs are told it is open now; the guardians that it was released.
    assert claim_link_stages(settings) == ["ready", "ready", "released", "released"]
    kinds = {r["kind"] for r in query(settings, "SELECT kind FROM outbox")}
    assert "plan_released_guardian" in kinds
    heir = setup.beneficiaries[0]
    assert (await (await onchain.get(f"/api/claim/{heir['claimToken']}")).json())["status"] == "released"


async def test_contract_set_after_offchain_approvals_releases_on_the_promised_date(
    client, soroban_rpc, clock, run_worker, settings
):
    owner = await sign_in(client)
    setup = await activate_plan(client, owner, guardians=1, threshold=1)
    await approve_plan(client, setup)  # attestations: no contract yet
    approved = query(settings, "SELECT context FROM outbox WHERE kind = 'plan_approved'")
    assert approved[0]["context"]["onchain"] is False  # the owner was told a date
    clock.advance(seconds=setup.overview["settings"]["cancelWindowSeconds"] - 5)
    await run_worker(settings=contract_overrides(soroban_rpc))  # the operator configures a contract
    assert (await get_overview(client, owner))["status"] == "Approved"
    clock.advance(seconds=6)
    await run_worker(settings=contract_overrides(soroban_rpc))
    overview = await get_overview(client, owner)
    assert overview["status"] == "Released" and overview["releasedAt"] is not None
    assert claim_link_stages(settings) == ["released", "released"]
    transitions = query(settings, "SELECT actor FROM plan_transitions WHERE to_status = 'Released'")
    assert [t["actor"] for t in transitions] == ["scheduler"]
