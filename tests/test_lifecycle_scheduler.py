"""The scheduler and racing triggers: each stage and each transition fires once, however many
scans, workers or simultaneous requests."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

import psycopg2
from stellar_sdk import StrKey

from models.flows import scheduler
from tests.helpers import sign, sign_in
from tests.lifecycle_helpers import (
    activate_plan,
    approve,
    approve_plan,
    get_overview,
    guardian_session,
    report,
)
from tests.plan_helpers import query

DAY = 86400
CONTRACT_ID = StrKey.encode_contract(bytes(32))


def reminders(settings):
    return query(
        settings,
        "SELECT kind, context->>'daysBefore' AS days FROM outbox WHERE recipient_type = 'owner'"
        " AND kind IN ('check_in_reminder', 'grace_started') ORDER BY created_at",
    )


async def test_reminders_once_per_stage_across_scans_and_two_workers(client, clock, run_worker, settings):
    owner = await sign_in(client)
    await activate_plan(
        client, owner, settings={"checkInIntervalSeconds": 20 * DAY, "gracePeriodSeconds": DAY}
    )
    expected = []
    for advance, stage in (
        (6, ("check_in_reminder", "14")),
        (11, ("check_in_reminder", "3")),
        (2, ("check_in_reminder", "1")),
        (1, ("grace_started", None)),
    ):
        clock.advance(days=advance, seconds=1)
        await asyncio.gather(run_worker(), run_worker())
        await run_worker()
        expected.append(stage)
        assert [(r["kind"], r["days"]) for r in reminders(settings)] == expected
    assert (await get_overview(client, owner))["status"] == "Active"
    clock.advance(days=1)
    await asyncio.gather(run_worker(), run_worker())
    assert (
        query(settings, "SELECT count(*) AS n FROM plan_transitions WHERE to_status = 'PendingVerification'")[
            0
        ]["n"]
        == 1
    )


async def test_after_an_outage_only_the_current_reminder_is_sent(client, clock, run_worker, settings):
    owner = await sign_in(client)
    await activate_plan(
        client, owner, settings={"checkInIntervalSeconds": 20 * DAY, "gracePeriodSeconds": DAY}
    )
    clock.advance(days=19, hours=12)  # the 14-day and 3-day stages passed while no worker ran
    await run_worker()
    assert [(r["kind"], r["days"]) for r in reminders(settings)] == [("check_in_reminder", "1")]


async def test_a_check_in_starts_the_reminders_over(client, clock, run_worker, settings):
    owner = await sign_in(client)
    await activate_plan(
        client, owner, settings={"checkInIntervalSeconds": 20 * DAY, "gracePeriodSeconds": DAY}
    )
    clock.advance(days=6, seconds=1)
    await run_worker()
    resp = await client.post("/api/legacy/check-in", headers=owner.headers)
    assert resp.status == 200
    clock.advance(days=6, seconds=1)
    await run_worker()
    assert [(r["kind"], r["days"]) for r in reminders(settings)] == [("check_in_reminder", "14")] * 2


async def approve_at_once(client, setup):
    """Every guardian fetches and signs an attestation; then all approvals are posted at once."""
    bodies = []
    for guardian in setup.guardians:
        session = await guardian_session(client, guardian)
        resp = await client.get(
            f"/api/legacy/guardianships/{setup.plan_id}/attestation", headers=session.headers
        )
        bodies.append((session, {"signature": sign(guardian.keypair, (await resp.json())["message"])}))
    return await asyncio.gather(
        *(
            client.post(
                f"/api/legacy/guardianships/{setup.plan_id}/approve", json=body, headers=session.headers
            )
            for session, body in bodies
        )
    )


async def test_two_guardians_approving_at_once_approve_once(client, settings):
    owner = await sign_in(client)
    setup = await activate_plan(client, owner, guardians=2)  # majority of 2: both needed
    assert (await report(client, setup, setup.guardians[0])).status == 200
    results = await approve_at_once(client, setup)
    assert [r.status for r in results] == [200, 200]
    assert (await get_overview(client, owner))["status"] == "Approved"
    assert (
        query(settings, "SELECT count(*) AS n FROM plan_transitions WHERE to_status = 'Approved'")[0]["n"]
        == 1
    )
    assert query(settings, "SELECT count(*) AS n FROM outbox WHERE kind = 'plan_approved'")[0]["n"] == 1


async def test_one_approval_needed_and_two_at_once(client, settings):
    owner = await sign_in(client)
    setup = await activate_plan(client, owner, guardians=2, threshold=1)
    assert (await report(client, setup, setup.guardians[0])).status == 200
    results = await approve_at_once(client, setup)
    assert sorted(r.status for r in results) == [200, 409]
    assert query(settings, "SELECT count(*) AS n FROM plan_approvals")[0]["n"] == 1


async def test_two_reports_at_once_start_verification_once(client, settings):
    owner = await sign_in(client)
    setup = await activate_plan(client, owner, guardians=2)
    for guardian in setup.guardians:
        await guardian_session(client, guardian)
    results = await asyncio.gather(*(report(client, setup, g) for g in setup.guardians))
    assert [r.status for r in results] == [200, 200]
    assert query(settings, "SELECT count(*) AS n FROM plan_reports")[0]["n"] == 2
    n = query(settings, "SELECT count(*) AS n FROM plan_transitions WHERE to_status = 'PendingVerification'")
    assert n[0]["n"] == 1
    assert (
        query(settings, "SELECT count(*) AS n FROM outbox WHERE kind = 'verification_started'")[0]["n"] == 1
    )


async def test_a_check_in_racing_the_release_fires_one_of_them(client, clock, run_worker, settings):
    owner = await sign_in(client)
    setup = await activate_plan(client, owner)
    await approve_plan(client, setup)
    clock.advance(seconds=61)
    resp, _ = await asyncio.gather(client.post("/api/legacy/check-in", headers=owner.headers), run_worker())
    status = (await get_overview(client, owner))["status"]
    claims = query(settings, "SELECT count(*) AS n FROM outbox WHERE kind = 'claim_link'")[0]["n"]
    if resp.status == 200:  # the veto won: nothing released, and the scan cannot release later
        assert status == "Active" and claims == 0
        await run_worker()
        assert (await get_overview(client, owner))["status"] == "Active"
    else:  # the release won: the check-in is refused, the links went out once
        assert resp.status == 409 and status == "Released" and claims == 2
    transitions = query(settings, "SELECT to_status FROM plan_transitions ORDER BY seq")
    assert [t["to_status"] for t in transitions][-1] == status


async def test_with_a_contract_release_and_off_chain_approval_are_not_ours(
    make_client, clock, run_worker, settings
):
    client = await make_client(service_contract_id=CONTRACT_ID)
    owner = await sign_in(client)
    setup = await activate_plan(client, owner, threshold=1)
    assert (await report(client, setup, setup.guardians[0])).status == 200
    session = await guardian_session(client, setup.guardians[0])
    resp = await client.post(
        f"/api/legacy/guardianships/{setup.plan_id}/approve",
        json={"signature": "00" * 64},
        headers=session.headers,
    )
    assert resp.status == 409 and "approve_guardian" in (await resp.json())["message"]  # on the network
    # A round approved by attestation (before the contract was configured) is not the contract's:
    # the chain never saw it, so the scheduler releases it when its window ends (docs/soroban.md,
    # "Configuring or removing the contract"); a round approved on-chain waits for
    # finalize_release instead (tests/test_contract_removed.py, tests/test_heirs_onchain.py).
    plain = await make_client()
    assert (await approve(plain, setup, setup.guardians[0])).status == 200
    clock.advance(seconds=61)
    await run_worker(settings={"service_contract_id": CONTRACT_ID})
    assert (await get_overview(client, owner))["status"] == "Released"


def test_the_scans_query_reads_its_index_not_the_plans(settings):
    """The scan's own query (models.flows.scheduler.DUE_SQL and its keyset continuation), planned
    over 20 000 plans of which 10 are due, with fresh statistics: the planner, left to choose,
    ranges over plans_next_due_idx and never reads the table through. Rolled back afterwards."""
    now = datetime.now(UTC)
    with psycopg2.connect(settings.database_url) as conn, conn.cursor() as cur:
        cur.execute(
            "WITH owners AS (INSERT INTO users (wallet_address)"
            " SELECT 'G' || n FROM generate_series(1, 20000) AS n RETURNING id, wallet_address)"
            " INSERT INTO plans (user_id, status, next_due_at) SELECT id, 'Active',"
            " now() + CASE WHEN substr(wallet_address, 2)::int <= 10 THEN interval '-1 day'"
            " ELSE substr(wallet_address, 2)::int * interval '1 hour' END FROM owners"
        )
        cur.execute("ANALYZE plans")
        plans = []
        for sql, params in (
            (scheduler.DUE_SQL + scheduler.DUE_ORDER_SQL, (now, scheduler.BATCH)),
            (
                scheduler.DUE_SQL + scheduler.DUE_AFTER_SQL + scheduler.DUE_ORDER_SQL,
                (now, now - timedelta(days=2), "00000000-0000-0000-0000-000000000000", scheduler.BATCH),
            ),
        ):
            cur.execute("EXPLAIN " + sql, params)
            plans.append("\n".join(row[0] for row in cur.fetchall()))
        conn.rollback()
    conn.close()
    for plan in plans:
        assert "plans_next_due_idx" in plan, plan
        assert "Seq Scan on plans" not in plan, plan
