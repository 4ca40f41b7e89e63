"""The relay job against the RPC emulator: real worker, real PostgreSQL and Redis, real keypairs.

Rows are stored with models.chain.transactions.insert from envelopes the service built and a wallet
key signed, as the submit routes do; the routes themselves are tested in test_onchain.py.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from arq import Retry

from core.text import i18n
from models.chain import transactions
from tests.helpers import until
from tests.i18n_helpers import PSEUDO, ascii_words, pseudo
from tests.plan_helpers import query
from tests.soroban_helpers import contract_overrides
from tests.support.onchain import claim_row, kinds, state
from workers import context
from workers.soroban import relay_transaction


async def test_the_submitted_entry_is_in_each_owner_s_language(
    client, settings, clock, soroban_rpc, relay_ctx
):
    """Its sentence is written in every language once per process, not per submit; SQL still
    picks each owner's, and a language added since (the pseudo-language here) is written anew."""

    def submitted(made: dict[str, Any]) -> str:
        rows = query(
            settings,
            "SELECT summary FROM activity WHERE user_id = %s AND kind = 'transaction.submitted'",
            (made["owner"].user["id"],),
        )
        return str(rows[0]["summary"])

    sentence = "A signed {what} ({function}) was sent to the network; waiting for it to be confirmed"
    english = await claim_row(client, settings, clock, soroban_rpc, relay_ctx)
    spanish = await claim_row(client, settings, clock, soroban_rpc, relay_ctx, locale="es")
    assert submitted(english) == sentence.format(what="claim", function="claim_assets")
    with i18n.speaking("es"):
        assert submitted(spanish) == i18n._(sentence).format(what=i18n._("claim"), function="claim_assets")
    assert submitted(spanish) != submitted(english)
    with pseudo():
        invented = await claim_row(client, settings, clock, soroban_rpc, relay_ctx, locale=PSEUDO)
        assert ascii_words(submitted(invented), allowed=["claim_assets"]) == []


async def test_try_again_later_then_success_confirms_and_applies_once(
    client, settings, clock, soroban_rpc, relay_ctx, run_worker
):
    made = await claim_row(client, settings, clock, soroban_rpc, relay_ctx)
    soroban_rpc.send_script = ["TRY_AGAIN_LATER"]
    soroban_rpc.not_found_polls = 2
    assert await transactions.enqueue_relay(context.get(relay_ctx).redis, tx_hash=made["row"]["hash"])
    await run_worker(settings=contract_overrides(soroban_rpc))

    row = state(settings, made["row"]["id"])
    assert row["status"] == "confirmed" and row["ledger"] == soroban_rpc.sent[row["hash"]].ledger
    assert row["confirmed_at"] is not None and row["contract_error_code"] is None
    sends = soroban_rpc.calls_to("sendTransaction")
    assert len(sends) == 2 and all(p["transaction"] == made["xdr"] for p in sends)
    bound = query(
        settings,
        "SELECT wallet_address, wallet_bound_via FROM beneficiaries WHERE id = %s",
        (made["beneficiary"]["id"],),
    )
    assert bound == [{"wallet_address": made["wallet"].public_key, "wallet_bound_via": "owner"}]
    owner_id = made["owner"].user["id"]
    timeline = kinds(settings, owner_id)
    assert [k for k in timeline if k.startswith(("transaction.", "beneficiary.claimed"))] == [
        "transaction.submitted",
        "transaction.accepted",
        "transaction.confirmed",
        "beneficiary.claimed",
    ]

    # A second relay of the same hash (double enqueue, re-drive) changes nothing.
    await transactions.enqueue_relay(context.get(relay_ctx).redis, tx_hash=made["row"]["hash"])
    await relay_transaction(relay_ctx, made["row"]["hash"])
    assert kinds(settings, owner_id) == timeline
    assert len(soroban_rpc.calls_to("sendTransaction")) == 2


async def test_contract_failure_carries_the_code_and_meaning(client, settings, clock, soroban_rpc, relay_ctx):
    made = await claim_row(client, settings, clock, soroban_rpc, relay_ctx)
    soroban_rpc.execution_errors["claim_assets"] = 10
    assert await relay_transaction(relay_ctx, made["row"]["hash"]) == "failed"
    row = state(settings, made["row"]["id"])
    assert row["status"] == "failed" and row["contract_error_code"] == 10
    assert "already claimed" in row["reason"] and "txFAILED" in row["reason"]
    assert "beneficiary.claimed" not in kinds(settings, made["owner"].user["id"])  # nothing applied


async def test_send_error_fails_with_the_decoded_result(client, settings, clock, soroban_rpc, relay_ctx):
    made = await claim_row(client, settings, clock, soroban_rpc, relay_ctx)
    soroban_rpc.send_script = ["ERROR"]
    assert await relay_transaction(relay_ctx, made["row"]["hash"]) == "rejected"
    row = state(settings, made["row"]["id"])
    assert row["status"] == "failed" and "txINTERNAL_ERROR" in row["reason"]


async def test_not_found_until_the_time_bound_then_expired(client, settings, clock, soroban_rpc, relay_ctx):
    made = await claim_row(client, settings, clock, soroban_rpc, relay_ctx)
    soroban_rpc.not_found_polls = 10**6  # accepted, never included
    with pytest.raises(Retry):
        await relay_transaction(relay_ctx, made["row"]["hash"])
    row = state(settings, made["row"]["id"])
    assert row["status"] == "pending" and row["accepted"]
    clock.advance(minutes=6)
    assert await relay_transaction(relay_ctx, made["row"]["hash"]) == "expired"
    row = state(settings, made["row"]["id"])
    assert row["status"] == "failed" and "Expired" in row["reason"] and row["ledger"] is None


async def test_never_accepted_and_past_its_bound_is_not_sent(client, settings, clock, soroban_rpc, relay_ctx):
    made = await claim_row(client, settings, clock, soroban_rpc, relay_ctx)
    clock.advance(minutes=6)
    assert await relay_transaction(relay_ctx, made["row"]["hash"]) == "expired"
    assert soroban_rpc.calls_to("sendTransaction") == []
    assert state(settings, made["row"]["id"])["status"] == "failed"


@pytest.mark.fault
async def test_rpc_down_at_relay_keeps_pending_then_confirms(
    client, settings, clock, soroban_rpc, relay_ctx, run_worker
):
    made = await claim_row(client, settings, clock, soroban_rpc, relay_ctx)
    for kind in ("http500", "garbage", "timeout"):
        soroban_rpc.timeout_seconds = 3  # past the 2 s client timeout
        soroban_rpc.fail_next(kind)
        with pytest.raises(Retry):
            await relay_transaction(relay_ctx, made["row"]["hash"])
        row = state(settings, made["row"]["id"])
        assert row["status"] == "pending" and row["reason"] is None
    await transactions.enqueue_relay(context.get(relay_ctx).redis, tx_hash=made["row"]["hash"])
    await run_worker(settings=contract_overrides(soroban_rpc))
    assert state(settings, made["row"]["id"])["status"] == "confirmed"


async def test_worker_killed_between_send_and_confirm_resumes_and_applies_once(
    client, settings, clock, soroban_rpc, relay_ctx, run_worker
):
    made = await claim_row(client, settings, clock, soroban_rpc, relay_ctx)
    soroban_rpc.timeout_seconds = 30
    soroban_rpc.fail_next("timeout", method="getTransaction")  # the first poll hangs ...
    run = asyncio.ensure_future(relay_transaction(relay_ctx, made["row"]["hash"]))
    await until(lambda: soroban_rpc.calls_to("getTransaction"), "the relay's first poll at the node")
    run.cancel()  # ... and the worker dies there: sent, accepted, not confirmed
    with pytest.raises(asyncio.CancelledError):
        await run
    assert made["row"]["hash"] in soroban_rpc.sent
    row = state(settings, made["row"]["id"])
    assert row["status"] == "pending" and row["accepted"]

    clock.advance(minutes=3)  # the sweeper sees a pending row nobody touched
    await run_worker(settings=contract_overrides(soroban_rpc))
    row = state(settings, made["row"]["id"])
    assert row["status"] == "confirmed"
    assert len(soroban_rpc.calls_to("sendTransaction")) == 1  # asked the node, did not resend
    await run_worker(settings=contract_overrides(soroban_rpc))
    timeline = kinds(settings, made["owner"].user["id"])
    assert timeline.count("transaction.confirmed") == 1 and timeline.count("beneficiary.claimed") == 1
