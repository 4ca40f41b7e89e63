"""No release waits for ever (#24 section 1): new plans get a verification deadline that
releases, the owner is warned halfway and a last time before it, and after an outage the
deadline first warns and moves rather than release unannounced."""

from __future__ import annotations

import re
from datetime import datetime, timedelta

from stellar_sdk import StrKey

from tests.helpers import sign_in
from tests.lifecycle_helpers import activate_plan, get_overview, report
from tests.plan_helpers import query

DAY = 86400
LINK = re.compile(r"https://legacy\.example\.test/check-in/([0-9a-f]{64})")
CONTRACT_ID = StrKey.encode_contract(bytes(32))


def owner_mails(email_provider):
    return [m.body for m in email_provider.to("owner@example.org")]


def last_warning(email_provider):
    """The final warning (a run delivers its emails concurrently: found by subject, not order)."""
    [mail] = [m for m in owner_mails(email_provider) if m["subject"].startswith("Last warning")]
    return mail


def parse(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


async def test_the_default_deadline_releases_after_warning_the_owner(
    client, clock, run_worker, settings, email_provider
):
    owner = await sign_in(client)
    setup = await activate_plan(client, owner, guardians=2)
    assert setup.overview["settings"]["verificationTimeoutSeconds"] == 30 * DAY
    assert setup.overview["settings"]["onVerificationTimeout"] == "release"
    # The default deadline is no warning of its own; only what an heir's request could lead to.
    warnings = setup.overview["readiness"]["warnings"]
    assert [w for w in warnings if "deadline" in w] == [
        w for w in warnings if w.startswith("A beneficiary's request can lead to a release if nobody answers")
    ]
    work = email_provider.settings
    assert (await report(client, setup, setup.guardians[0])).status == 200  # 1 of 2; nobody answers
    await run_worker(settings=work)
    # This run also sends the activation's email; the worker takes them in either order.
    [started] = [m for m in owner_mails(email_provider) if "verify" in m["subject"]]
    assert LINK.search(started["text"])

    clock.advance(days=15, seconds=1)  # halfway
    await run_worker(settings=work)
    halfway = owner_mails(email_provider)[-1]
    assert halfway["subject"] == "Your plan will be released unless you check in"
    assert "warn you once more" in halfway["text"] and LINK.search(halfway["text"])

    clock.advance(days=14)  # day 29: one day before the deadline
    await run_worker(settings=work)
    final = owner_mails(email_provider)[-1]
    assert final["subject"].startswith("Last warning") and LINK.search(final["text"])
    assert (await get_overview(client, owner))["status"] == "PendingVerification"

    clock.advance(days=1)  # day 30 + 1 s: the deadline
    await run_worker(settings=work)
    overview = await get_overview(client, owner)
    assert overview["status"] == "Approved", overview
    transitions = query(settings, "SELECT actor, reason FROM plan_transitions WHERE to_status = 'Approved'")
    assert transitions == [{"actor": "scheduler", "reason": "verification_timeout"}]
    clock.advance(seconds=setup.overview["settings"]["cancelWindowSeconds"] + 1)
    await run_worker(settings=work)
    assert (await get_overview(client, owner))["status"] == "Released"
    assert email_provider.to("heir0@example.org") and email_provider.to("heir1@example.org")

    # The warnings came before the deadline, in order, each once.
    rows = query(
        settings,
        "SELECT kind, context->>'stage' AS stage, created_at FROM outbox WHERE recipient_type = 'owner'"
        " AND kind IN ('verification_started', 'deadline_warning', 'verification_timeout')"
        " ORDER BY created_at",
    )
    assert [(r["kind"], r["stage"]) for r in rows] == [
        ("verification_started", None),
        ("deadline_warning", "halfway"),
        ("deadline_warning", "final"),
        ("verification_timeout", None),
    ]
    assert rows[3]["created_at"] - rows[2]["created_at"] >= timedelta(days=1)


async def test_after_an_outage_the_deadline_warns_first_and_moves(
    client, clock, run_worker, settings, email_provider
):
    owner = await sign_in(client)
    setup = await activate_plan(client, owner, guardians=2)
    work = email_provider.settings
    assert (await report(client, setup, setup.guardians[0])).status == 200
    clock.advance(days=31)  # halfway, final warning and deadline all passed while no worker ran
    await run_worker(settings=work)
    await run_worker(settings=work)
    assert (await get_overview(client, owner))["status"] == "PendingVerification"  # not unannounced
    warnings = query(
        settings, "SELECT context->>'stage' AS stage FROM outbox WHERE kind = 'deadline_warning'"
    )
    assert warnings == [{"stage": "final"}]  # the latest due one only
    final = last_warning(email_provider)
    assert LINK.search(final["text"])
    journey = await (await client.get("/api/legacy/journey", headers=owner.headers)).json()
    deadline = parse(journey["verification"]["deadlineAt"])
    assert timedelta(hours=23) < deadline - clock.now() <= timedelta(days=1)  # moved by the interval
    clock.advance(hours=23)
    await run_worker(settings=work)
    assert (await get_overview(client, owner))["status"] == "PendingVerification"
    clock.advance(hours=1, seconds=1)
    await run_worker(settings=work)
    assert (await get_overview(client, owner))["status"] == "Approved"
    assert len(query(settings, "SELECT id FROM outbox WHERE kind = 'deadline_warning'")) == 1


async def test_a_short_deadline_is_warned_of_at_the_start_and_moves(
    client, clock, run_worker, settings, email_provider
):
    owner = await sign_in(client)
    setup = await activate_plan(client, owner, guardians=2, settings={"verificationTimeoutSeconds": 3600})
    work = email_provider.settings
    assert (await report(client, setup, setup.guardians[0])).status == 200
    await run_worker(settings=work)
    assert last_warning(email_provider)
    clock.advance(hours=2)
    await run_worker(settings=work)
    assert (await get_overview(client, owner))["status"] == "PendingVerification"  # a day after the warning
    clock.advance(hours=22, seconds=1)
    await run_worker(settings=work)
    assert (await get_overview(client, owner))["status"] == "Approved"


async def test_wait_or_no_deadline_is_a_readiness_warning(client, settings):
    owner = await sign_in(client)
    setup = await activate_plan(client, owner, guardians=1, settings={"onVerificationTimeout": "wait"})
    # (With one guardian, one silent guardian holds it for ever: that has its own warning.)
    [warning] = [w for w in setup.overview["readiness"]["warnings"] if "deadline" in w and "silent" not in w]
    assert "goes on waiting" in warning and "never released" in warning
    resp = await client.patch("/api/legacy", json={"verificationTimeoutSeconds": None}, headers=owner.headers)
    assert resp.status == 200
    warnings = (await resp.json())["readiness"]["warnings"]
    [warning] = [w for w in warnings if "deadline" in w and "silent" not in w]
    assert "no verification deadline" in warning and "waits for ever" in warning


async def test_existing_plans_keep_theirs_and_a_contract_defaults_to_wait(make_client, client, settings):
    # A plan created before #24 (the table's own defaults, as the migration leaves them).
    owner = await sign_in(client)
    query(settings, "INSERT INTO plans (user_id) VALUES (%s)", (owner.user["id"],))
    overview = await get_overview(client, owner)
    assert overview["settings"]["verificationTimeoutSeconds"] is None
    assert overview["settings"]["onVerificationTimeout"] == "wait"
    assert any("no verification deadline" in w for w in overview["readiness"]["warnings"])
    # With a contract configured, a release needs the guardians on-chain: the default waits.
    chain = await make_client(service_contract_id=CONTRACT_ID)
    other = await sign_in(chain)
    overview = await get_overview(chain, other)
    assert overview["settings"]["verificationTimeoutSeconds"] == 30 * DAY
    assert overview["settings"]["onVerificationTimeout"] == "wait"
