"""One after-commit policy (core.queue.after_commit): when the enqueue after a commit fails, the
commit stands, the client gets the committed state (never a 503 for a stored row), the failure
is one log line and a metric, and the row's sweeper queues it later."""

from __future__ import annotations

import logging

import pytest

from core import queue
from tests.lifecycle_helpers import guardian_session
from tests.private_services import private_redis
from tests.soroban_helpers import contract_overrides, sign_xdr
from tests.support.onchain import approving, state

METRICS_TOKEN = "m" * 40


@pytest.fixture
def own_redis(tmp_path):
    with private_redis(tmp_path) as server:
        yield server


async def test_a_stored_transaction_is_202_pending_with_redis_down_and_the_sweep_relays_it(
    make_client, own_redis, soroban_rpc, run_worker, clock, settings, caplog
):
    client = await make_client(
        redis_url=own_redis.url,
        redis_timeout_seconds=1,
        metrics_token=METRICS_TOKEN,
        **contract_overrides(soroban_rpc),
    )
    setup = await approving(client, soroban_rpc)
    guardian = await guardian_session(client, setup.guardians[0])
    plan = setup.plan_id
    resp = await client.post(f"/api/legacy/guardianships/{plan}/approve/build", headers=guardian.headers)
    assert resp.status == 200, await resp.text()
    signed = sign_xdr((await resp.json())["xdr"], setup.guardians[0].keypair, soroban_rpc.passphrase)
    failures_before = queue.ENQUEUE_FAILURES["relay_transaction"]

    own_redis.stop()
    with caplog.at_level(logging.WARNING, logger="core.queue"):
        resp = await client.post(
            f"/api/legacy/guardianships/{plan}/submit", json={"signedXdr": signed}, headers=guardian.headers
        )
    assert resp.status == 202, await resp.text()
    tx = await resp.json()
    assert tx["status"] == "pending"
    assert state(settings, tx["id"])["status"] == "pending"  # committed
    lines = [r for r in caplog.records if r.name == "core.queue"]
    assert len(lines) == 1 and lines[0].job == "relay_transaction"  # type: ignore[attr-defined]
    assert signed not in lines[0].getMessage() and signed not in repr(lines[0].__dict__)
    assert queue.ENQUEUE_FAILURES["relay_transaction"] == failures_before + 1
    own_redis.start()
    scrape = await client.get("/api/metrics", headers={"Authorization": f"Bearer {METRICS_TOKEN}"})
    assert f'lps_enqueue_failures_total{{job="relay_transaction"}} {failures_before + 1}.0' in (
        await scrape.text()
    )

    # Nothing was queued for it: the relay sweep finds the pending row and the network confirms it.
    assert tx["hash"] not in soroban_rpc.sent
    clock.advance(minutes=3)
    await run_worker(settings=contract_overrides(soroban_rpc))
    assert state(settings, tx["id"])["status"] == "confirmed"


async def test_after_commit_uses_the_one_job_id_scheme_and_runs_a_row_once(settings):
    from core.redis import connect

    arq = await connect(settings.redis_url, settings.arq_queue_name)
    try:
        row = "3f0c5c9e-0000-4000-8000-000000000001"
        assert queue.job_id("verify_archive_item", row) == f"verify_archive_item:{row}"
        assert await queue.after_commit(arq, "verify_archive_item", row, row_id=row) is True
        assert await queue.after_commit(arq, "verify_archive_item", row, row_id=row) is False
        assert await arq.exists(f"arq:job:verify_archive_item:{row}")
    finally:
        await arq.delete(settings.arq_queue_name, f"arq:job:verify_archive_item:{row}")
        await arq.aclose()


async def test_an_unreachable_redis_is_logged_and_counted_not_raised(caplog, tmp_path):
    from core.redis import connect

    with private_redis(tmp_path) as server:
        arq = await connect(server.url, "arq:queue")
        server.stop()
        before = queue.ENQUEUE_FAILURES["deliver_email"]
        with caplog.at_level(logging.WARNING, logger="core.queue"):
            assert await queue.after_commit(arq, "deliver_email", ["r1"], row_id="r1") is False
        assert queue.ENQUEUE_FAILURES["deliver_email"] == before + 1
        assert [r.getMessage() for r in caplog.records if r.name == "core.queue"] == [
            "enqueue after commit failed; the sweeper will re-enqueue the row"
        ]
        await arq.aclose()
