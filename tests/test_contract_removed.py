"""An Approved plan left for finalize_release is not stranded if the operator then removes the
contract: the scan comes back to it and releases it off-chain (review finding)."""

from __future__ import annotations

from tests.lifecycle_helpers import get_overview
from tests.test_onchain import approving, onchain, run
from tests.test_onchain_rounds import approve_on_chain

__all__ = ["onchain"]


async def test_contract_unset_after_approval_still_releases(onchain, soroban_rpc, clock, run_worker):
    setup = await approving(onchain, soroban_rpc, guardians=1, threshold=1)
    await approve_on_chain(onchain, soroban_rpc, setup, setup.guardians[0])
    await run(run_worker, soroban_rpc)
    overview = await get_overview(onchain, setup.owner)
    assert overview["status"] == "Approved"
    clock.advance(seconds=overview["settings"]["cancelWindowSeconds"] + 1)
    await run(run_worker, soroban_rpc)  # a contract decides: the scan leaves it
    assert (await get_overview(onchain, setup.owner))["status"] == "Approved"

    # The operator unsets SERVICE_CONTRACT_ID; no finalize_release can come any more.
    clock.advance(hours=2)
    await run_worker()
    assert (await get_overview(onchain, setup.owner))["status"] == "Released"
