"""The plan lifecycle end to end through HTTP, with the real worker and a test clock."""

from __future__ import annotations

from tests.helpers import assert_error, sign_in
from tests.lifecycle_helpers import get_overview, release_plan
from tests.plan_helpers import activity_rows, query


async def test_a_new_plan_is_a_draft_that_says_what_blocks_activation(client):
    owner = await sign_in(client)
    body = await get_overview(client, owner)
    assert body["status"] == "Draft"
    assert body["settings"] == {
        "checkInIntervalSeconds": 90 * 86400,
        "gracePeriodSeconds": 14 * 86400,
        "cancelWindowSeconds": 72 * 3600,
        "guardianThreshold": None,
    }
    assert body["readiness"]["ready"] is False
    assert len(body["readiness"]["problems"]) == 3  # beneficiaries, guardians, email
    resp = await client.post("/api/legacy/activate", headers=owner.headers)
    assert resp.status == 409
    error = await resp.json()
    assert_error(error, 409)
    assert error["details"]["readiness"]["problems"] == body["readiness"]["problems"]


async def test_release_plan_reaches_released_through_http(client, clock, run_worker, settings):
    owner = await sign_in(client)
    setup = await release_plan(client, owner, clock, run_worker)
    assert setup.overview["releasedAt"] is not None
    kinds = [
        row["kind"]
        for row in activity_rows(settings, owner.user["id"])
        if row["entity_type"] in ("plan", "guardian")
    ]
    assert "plan.activated" in kinds and "plan.released" in kinds and kinds.count("guardian.approved") == 2
    claim_rows = query(settings, "SELECT status FROM outbox WHERE kind = 'claim_link'")
    assert [r["status"] for r in claim_rows] == ["skipped", "skipped"]  # no provider configured
