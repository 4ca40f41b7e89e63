"""Guardians reconfirm (#24 section 3): an interval after accepting (or last confirming) a
guardian is asked by email to confirm they can still act; one who does not within the grace is
unresponsive, the owner is emailed once naming them and readiness warns; at most one request
per guardian per interval, whatever the workers and scans."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

import psycopg2

from models.contents.guardians import DUE_FOR_RECONFIRM
from tests.helpers import sign_in
from tests.lifecycle_helpers import activate_plan, get_overview, guardian_session
from tests.plan_helpers import activity_rows, query

INTERVAL, GRACE = 1800, 600  # the plan's check-in interval in these tests is an hour
RECONFIRM = {"guardian_reconfirm_interval_seconds": INTERVAL, "guardian_reconfirm_grace_seconds": GRACE}


def asks(settings):
    return query(
        settings,
        "SELECT recipient_id::text AS guardian FROM outbox WHERE kind = 'guardian_reconfirm'"
        " ORDER BY created_at",
    )


async def guardian_rows(client, owner):
    rows = await (await client.get("/api/guardians", headers=owner.headers)).json()
    return {r["name"]: r for r in rows}


async def my_reconfirmation(client, guardian, plan_id):
    """The guardian's own view of their reconfirmation in GET /api/legacy/guardianships."""
    session = await guardian_session(client, guardian)
    resp = await client.get("/api/legacy/guardianships", headers=session.headers)
    assert resp.status == 200
    [item] = [g for g in await resp.json() if g["planId"] == plan_id]
    keys = (
        "invitation",
        "reconfirmedAt",
        "reconfirmationAsked",
        "reconfirmationAskedAt",
        "unresponsiveSince",
    )
    return {key: item[key] for key in keys}


async def test_reconfirmation_asks_marks_unresponsive_and_tells_the_owner_once(
    make_client, clock, run_worker, settings, email_provider
):
    client = await make_client(**RECONFIRM)
    work = {**email_provider.settings, **RECONFIRM}
    owner = await sign_in(client)
    setup = await activate_plan(client, owner, guardians=2)
    first, second = setup.guardians
    rows = await guardian_rows(client, owner)
    assert {(r["reconfirmedAt"], r["unresponsiveSince"]) for r in rows.values()} == {(None, None)}
    assert await my_reconfirmation(client, first, setup.plan_id) == {
        "invitation": "accepted",
        "reconfirmedAt": None,
        "reconfirmationAsked": False,
        "reconfirmationAskedAt": None,
        "unresponsiveSince": None,
    }

    clock.advance(seconds=INTERVAL + 1)
    await asyncio.gather(run_worker(settings=work), run_worker(settings=work))  # two workers at once
    await run_worker(settings=work)  # and another scan
    assert sorted(a["guardian"] for a in asks(settings)) == sorted([first.row["id"], second.row["id"]])
    for index in range(2):
        [mail] = [
            m.body
            for m in email_provider.to(f"guardian{index}@example.org")
            if "still able" in m.body["subject"]
        ]
        assert "Olive Owner" in mail["text"] and "confirm" in mail["text"].lower()
        assert setup.guardians[index].keypair.public_key in mail["text"]
    mine = await my_reconfirmation(client, first, setup.plan_id)
    assert mine["reconfirmationAsked"] is True and mine["reconfirmationAskedAt"]
    assert mine["reconfirmedAt"] is None and mine["unresponsiveSince"] is None

    # The first confirms from a session of the recorded wallet.
    session = await guardian_session(client, first)
    resp = await client.post(f"/api/legacy/guardianships/{setup.plan_id}/reconfirm", headers=session.headers)
    assert resp.status == 200, await resp.text()
    body = await resp.json()
    assert body["ok"] is True and body["reconfirmedAt"] and body["nextAskAt"]
    mine = await my_reconfirmation(client, first, setup.plan_id)
    assert mine["reconfirmedAt"] == body["reconfirmedAt"]
    assert not mine["reconfirmationAsked"]
    assert mine["reconfirmationAskedAt"] is None and mine["unresponsiveSince"] is None

    # The grace passes: the second is unresponsive; the owner hears once, by name.
    clock.advance(seconds=GRACE + 1)
    await asyncio.gather(run_worker(settings=work), run_worker(settings=work))
    clock.advance(seconds=60)
    await run_worker(settings=work)
    rows = await guardian_rows(client, owner)
    assert rows["Guardian 0"]["reconfirmedAt"] and rows["Guardian 0"]["unresponsiveSince"] is None
    assert rows["Guardian 1"]["reconfirmedAt"] is None and rows["Guardian 1"]["unresponsiveSince"]
    told = [m.body for m in email_provider.to("owner@example.org") if "not confirmed" in m.body["subject"]]
    assert len(told) == 1 and "Guardian 1" in told[0]["subject"] and "Guardian 1" in told[0]["text"]
    mine = await my_reconfirmation(client, second, setup.plan_id)
    assert mine["unresponsiveSince"] == rows["Guardian 1"]["unresponsiveSince"]
    assert mine["reconfirmationAsked"] is True and mine["reconfirmedAt"] is None
    overview = await get_overview(client, owner)
    assert overview["status"] == "Active"
    [warning] = [w for w in overview["readiness"]["warnings"] if "can still act" in w]
    assert "Guardian 1" in warning and "Guardian 0" not in warning
    kinds = [r["kind"] for r in activity_rows(settings, owner.user["id"])]
    assert kinds.count("guardian.unresponsive") == 1 and kinds.count("guardian.reconfirmed") == 1
    assert len(asks(settings)) == 2  # no second request within the interval

    # The second confirms at last: no longer unresponsive, no warning.
    session = await guardian_session(client, second)
    resp = await client.post(f"/api/legacy/guardianships/{setup.plan_id}/reconfirm", headers=session.headers)
    assert resp.status == 200
    rows = await guardian_rows(client, owner)
    assert rows["Guardian 1"]["unresponsiveSince"] is None and rows["Guardian 1"]["reconfirmedAt"]
    overview = await get_overview(client, owner)
    assert not [w for w in overview["readiness"]["warnings"] if "can still act" in w]
    mine = await my_reconfirmation(client, second, setup.plan_id)
    assert mine["reconfirmedAt"] and (mine["reconfirmationAsked"], mine["unresponsiveSince"]) == (False, None)

    # A guardian who steps down sees only their invitation again (#28 F4), not their reconfirmation.
    session = await guardian_session(client, first)
    resp = await client.post(f"/api/legacy/guardianships/{setup.plan_id}/decline", headers=session.headers)
    assert resp.status == 200, await resp.text()
    assert await my_reconfirmation(client, first, setup.plan_id) == {
        "invitation": "declined",
        "reconfirmedAt": None,
        "reconfirmationAsked": False,
        "reconfirmationAskedAt": None,
        "unresponsiveSince": None,
    }


async def test_reconfirm_is_for_accepted_guardians_of_the_plan(make_client, settings):
    client = await make_client(**RECONFIRM)
    owner = await sign_in(client)
    setup = await activate_plan(client, owner, guardians=2, threshold=1, accepting=1)
    url = f"/api/legacy/guardianships/{setup.plan_id}/reconfirm"
    session = await guardian_session(client, setup.guardians[1])
    resp = await client.post(url, headers=session.headers)
    assert resp.status == 403 and "accept" in (await resp.json())["message"]
    stranger = await sign_in(client)
    assert (await client.post(url, headers=stranger.headers)).status == 404
    assert (await client.post(url, headers=owner.headers)).status == 404
    assert (await client.post(url)).status == 401
    resp = await client.post("/api/legacy/guardianships/not-a-uuid/reconfirm", headers=session.headers)
    assert resp.status == 404


def test_the_sweep_has_its_due_index(settings):
    """The sweep's query (models.contents.guardians.due_for_reconfirm) ranges over this partial
    index on the due time, so its cost follows the due guardians, not all of them."""
    assert query(
        settings, "SELECT indexdef FROM pg_indexes WHERE indexname = 'guardians_reconfirm_due_idx'"
    ) == [
        {
            "indexdef": "CREATE INDEX guardians_reconfirm_due_idx ON public.guardians USING btree "
            "(reconfirm_due_at) WHERE (reconfirm_due_at IS NOT NULL)"
        }
    ]


def test_the_sweeps_query_reads_its_index_not_the_guardians(settings):
    """The sweep's own query (models.contents.guardians.DUE_FOR_RECONFIRM), planned over 20 000
    accepted guardians of whom 10 are due, with fresh statistics: the planner, left to choose,
    ranges over the due index and never reads the table through. Rolled back afterwards."""
    with psycopg2.connect(settings.database_url) as conn, conn.cursor() as cur:
        cur.execute("INSERT INTO users (wallet_address) VALUES ('GOWNER') RETURNING id")
        [owner] = cur.fetchone()
        cur.execute("INSERT INTO plans (user_id, status) VALUES (%s, 'Active')", (owner,))
        cur.execute(
            "INSERT INTO guardians (user_id, wallet_address, name_sealed, email_sealed, accepted_at,"
            " reconfirm_due_at) SELECT %s, 'G' || n, 'x', 'x', now(),"
            " now() + CASE WHEN n <= 10 THEN interval '-1 day' ELSE n * interval '1 hour' END"
            " FROM generate_series(1, 20000) AS n",
            (owner,),
        )
        cur.execute("ANALYZE guardians")
        cur.execute("ANALYZE plans")
        cur.execute("EXPLAIN " + DUE_FOR_RECONFIRM, (datetime.now(UTC), 500))
        plan = "\n".join(row[0] for row in cur.fetchall())
        conn.rollback()
    conn.close()
    assert "guardians_reconfirm_due_idx" in plan, plan
    assert "Seq Scan on guardians" not in plan, plan
