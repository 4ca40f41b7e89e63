"""On-chain journeys several suites share: the app pointed at the Soroban RPC emulator (the
`onchain` fixture), a transaction built, signed like a wallet and submitted, a plan brought to
PendingVerification, Approved or ready to release through guardians' signed calls, the claim
link an heir is emailed, and one relay job run in a context built as the worker builds it
(`relay_ctx`).

The on-chain tests, the pages that show a plan's chain state and the worker-kill tests all
start from these states; a pytest plugin (tests/conftest.py) so the fixtures reach every module
without one test file importing another.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio
from aiohttp.test_utils import TestClient
from stellar_sdk import Keypair, TransactionEnvelope

from core import db
from core import redis as core_redis
from core.clock import Clock
from core.settings import Settings
from models.chain import transactions
from testing.soroban_rpc import SorobanRpcEmulator
from tests.helpers import sign_in
from tests.lifecycle_helpers import PlanSetup, activate_plan, get_overview, guardian_session, report
from tests.plan_helpers import create, query
from tests.soroban_helpers import contract_overrides, sign_xdr, signed_call
from workers import context


@pytest.fixture
async def onchain(make_client: Any, soroban_rpc: SorobanRpcEmulator) -> TestClient:
    client: TestClient = await make_client(**contract_overrides(soroban_rpc))
    return client


async def run(run_worker: Any, rpc: SorobanRpcEmulator) -> None:
    await run_worker(settings=contract_overrides(rpc))


async def build_sign_submit(
    client: TestClient,
    build_path: str,
    submit_path: str,
    keypair: Keypair,
    rpc: SorobanRpcEmulator,
    **kwargs: Any,
) -> dict[str, Any]:
    resp = await client.post(build_path, **kwargs)
    assert resp.status == 200, await resp.text()
    built = await resp.json()
    assert built["networkPassphrase"] == rpc.passphrase and built["contractId"] == rpc.contract_id
    signed = sign_xdr(built["xdr"], keypair, rpc.passphrase)
    body = {"signedXdr": signed}
    headers = kwargs.get("headers")
    resp = await client.post(submit_path, json=body, headers=headers)
    assert resp.status == 202, await resp.text()
    tx: dict[str, Any] = await resp.json()
    assert tx["status"] == "pending" and tx["ledger"] is None and tx["confirmedAt"] is None
    assert tx["hash"] == TransactionEnvelope.from_xdr(signed, rpc.passphrase).hash_hex()
    tx["signedXdr"] = signed
    return tx


async def approving(client: TestClient, rpc: SorobanRpcEmulator, **options: Any) -> PlanSetup:
    """An Active plan whose guardian reported: PendingVerification, guardian wallets funded."""
    owner = await sign_in(client)
    setup = await activate_plan(client, owner, **options)
    for guardian in setup.guardians:
        rpc.fund(guardian.keypair.public_key)
    resp = await report(client, setup, setup.guardians[0])
    assert resp.status == 200, await resp.text()
    return setup


async def approve_on_chain(client, rpc, setup, guardian) -> dict:
    session = await guardian_session(client, guardian)
    plan = setup.plan_id
    return await build_sign_submit(
        client,
        f"/api/legacy/guardianships/{plan}/approve/build",
        f"/api/legacy/guardianships/{plan}/submit",
        guardian.keypair,
        rpc,
        headers=session.headers,
    )


CLAIM_LINK = re.compile(r"https://legacy\.example\.test/claim/([0-9a-f]{64})")


def worker_settings(rpc: Any, email_provider: Any) -> dict[str, Any]:
    return {"settings": {**contract_overrides(rpc), **email_provider.settings}}


async def approved_on_chain(client, rpc, run_worker, email_provider, **options: Any) -> PlanSetup:
    """Guardians approve on-chain (one is enough): Approved, its cancel window running."""
    setup = await approving(client, rpc, guardians=2, threshold=1, **options)
    await approve_on_chain(client, rpc, setup, setup.guardians[0])
    await run_worker(**worker_settings(rpc, email_provider))
    setup.overview = await get_overview(client, setup.owner)
    assert setup.overview["status"] == "Approved"
    return setup


async def ready(client, rpc, clock, run_worker, email_provider, **options: Any) -> PlanSetup:
    setup = await approved_on_chain(client, rpc, run_worker, email_provider, **options)
    clock.advance(seconds=setup.overview["settings"]["cancelWindowSeconds"] + 1)
    await run_worker(**worker_settings(rpc, email_provider))
    return setup


def emailed_token(email_provider: Any, address: str) -> str:
    """The claim token as the heir has it: from the link in the last email to their address."""
    found = [CLAIM_LINK.search(r.body["text"]) for r in email_provider.to(address)]
    tokens = [m.group(1) for m in found if m]
    assert tokens, f"no claim link was emailed to {address}"
    return tokens[-1]


@pytest_asyncio.fixture
async def relay_ctx(
    settings: Settings, clock: Clock, soroban_rpc: SorobanRpcEmulator
) -> AsyncIterator[dict[str, Any]]:
    """What arq hands the job, built as the worker builds it (workers.context.open_context) so
    a test can run (and kill) one relay run."""
    configured = dataclasses.replace(settings, **contract_overrides(soroban_rpc))
    redis = await core_redis.connect(settings.redis_url, settings.arq_queue_name)
    app = await context.open_context(configured, clock, redis)
    yield {context.KEY: app, "job_try": 1}
    await context.close_context(app)
    await redis.aclose()


async def claim_row(
    client: Any,
    settings: Settings,
    clock: Clock,
    rpc: SorobanRpcEmulator,
    relay_ctx: dict[str, Any],
    locale: str | None = None,
) -> dict[str, Any]:
    """An owner (reading `locale`) with a beneficiary whose wallet signed claim_assets; the row
    stored pending."""
    owner = await sign_in(client)
    query(settings, "UPDATE users SET locale = %s WHERE id = %s", (locale, owner.user["id"]))
    wallet = Keypair.random()
    # Recorded by the owner: a claim comes only from the wallet bound to the beneficiary.
    beneficiary = await create(client, owner, "beneficiaries", walletAddress=wallet.public_key)
    rpc.fund(wallet.public_key)
    xdr, checked = await signed_call(
        rpc, clock, function="claim_assets", owner=owner.keypair.public_key, signer=wallet
    )
    async with db.autocommit(context.get(relay_ctx).db) as cur:
        row, created = await transactions.insert(
            cur,
            checked=checked,
            xdr=xdr,
            owner_id=owner.user["id"],
            plan_id=None,
            beneficiary_id=beneficiary["id"],
            now=clock.now(),
        )
    assert created and row["status"] == "pending"
    return {"row": row, "owner": owner, "beneficiary": beneficiary, "wallet": wallet, "xdr": xdr}


def state(settings: Settings, tx_id: Any) -> dict[str, Any]:
    return query(settings, "SELECT * FROM transactions WHERE id = %s", (tx_id,))[0]


def kinds(settings: Settings, user_id: str) -> list[str]:
    rows = query(settings, "SELECT kind FROM activity WHERE user_id = %s ORDER BY created_at, id", (user_id,))
    return [r["kind"] for r in rows]
