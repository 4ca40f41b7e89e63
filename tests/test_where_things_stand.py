"""Pages and emails say where things stand (docs/pages.md "The guardian's page", docs/lifecycle.md
"Whose deadline it is"): "You accepted on <date>" with Decline still possible, no empty heading
after the release, the heir who started a verification named with their note, the deadline's
sentence (what happens then, the owner's choice or the default), "you told us" to the reporter,
the true reason after a check-in, and threshold changes said out loud."""

from __future__ import annotations

import re
from typing import Any

from tests.helpers import sign_in
from tests.lifecycle_helpers import activate_plan, answer, get_overview, release_plan, report
from tests.plan_helpers import create
from tests.support.guardian_page import PAGE_RE, draft_with_guardians, page_link, words

ASKED = "What is asked of you now"


def mails(email_provider: Any, address: str, subject: str) -> list[dict[str, Any]]:
    return [m.body for m in email_provider.to(address) if subject in m.body["subject"]]


async def _page(client: Any, path: str) -> str:
    resp = await client.get(path)
    assert resp.status == 200
    return words(await resp.text())


async def test_accepted_in_draft_says_so_and_decline_stays(client, run_worker, email_provider):
    owner = await sign_in(client)
    _, guardians = await draft_with_guardians(client, owner, count=2)
    await run_worker(settings=email_provider.settings)
    path = page_link(email_provider, "guardian0@example.org")
    plan_id = (await get_overview(client, owner))["id"]
    assert (await answer(client, guardians[0], owner_plan_id=plan_id)).status == 200
    page = await _page(client, path)
    assert "You accepted on" in page and "You can still decline below" in page
    assert 'value="decline"' in page and 'value="accept"' not in page


async def test_after_the_release_no_empty_heading(client, clock, run_worker, email_provider):
    owner = await sign_in(client)
    work = email_provider.settings
    setup = await release_plan(client, owner, clock, lambda: run_worker(settings=work))
    [released] = mails(email_provider, "guardian0@example.org", "has been released")
    path = PAGE_RE.findall(released["text"])[-1][0]
    page = await _page(client, path)
    assert "has been released" in page and ASKED not in page
    assert "link again" in page  # the heirs' links section stays
    assert setup.plan_id


async def test_the_verification_says_who_started_it_and_what_the_deadline_does(
    client, run_worker, email_provider
):
    owner = await sign_in(client)
    setup = await activate_plan(client, owner, guardians=2)
    heir = setup.beneficiaries[0]
    note = "Mum has not answered her phone for a month."
    resp = await client.post(f"/api/claim/{heir['claimToken']}/request", json={"note": note})
    assert resp.status == 202
    await run_worker(settings=email_provider.settings)
    page = await _page(client, page_link(email_provider, "guardian0@example.org"))
    assert "because Heir 0, one of the people Olive Owner named in their plan, asked us" in page
    assert note in page and "a guardian reported it" not in page
    assert "will be released then all the same, unless Olive Owner checks in or a guardian objects" in page
    assert "This is the service\u2019s usual deadline, which Olive Owner has not changed" in page
    assert "asked for an answer by" not in page


async def test_a_deadline_the_owner_chose_is_theirs_and_the_reporter_reads_you_told_us(
    client, run_worker, email_provider
):
    owner = await sign_in(client)
    setup = await activate_plan(
        client, owner, guardians=2, settings={"verificationTimeoutSeconds": 10 * 86400}
    )
    resp = await report(client, setup, setup.guardians[0])
    assert resp.status == 200
    await run_worker(settings=email_provider.settings)
    [own] = [
        m.body for m in email_provider.to("guardian0@example.org") if "help is needed" in m.body["subject"]
    ]
    assert "You told us that Olive Owner may have died" in own["text"]
    assert "Olive Owner chose this deadline" in own["text"]
    [other] = [
        m.body for m in email_provider.to("guardian1@example.org") if "help is needed" in m.body["subject"]
    ]
    assert "You told us" not in other["text"] and "has told us" not in other["text"]
    page = await _page(client, page_link(email_provider, "guardian1@example.org"))
    assert "Olive Owner chose this deadline" in page


async def test_after_a_check_in_the_page_says_when_a_report_is_possible_again(
    make_client, run_worker, email_provider
):
    client = await make_client(plan_report_cooldown_seconds=24 * 3600)
    owner = await sign_in(client)
    setup = await activate_plan(client, owner, guardians=2)
    assert (await report(client, setup, setup.guardians[0])).status == 200
    assert (await client.post("/api/legacy/check-in", headers=owner.headers)).status == 200
    await run_worker(settings=email_provider.settings)
    path = page_link(email_provider, "guardian0@example.org")
    page = await _page(client, path)
    assert "Olive Owner checked in on" in page and "a new report is possible from" in page
    assert 'value="report"' not in page
    resp = await client.post(f"{path}/ask", data={"action": "report"})
    assert resp.status == 409  # not asked now: the page says why
    resp = await report(client, setup, setup.guardians[0])
    assert resp.status == 429
    message = (await resp.json())["message"]
    assert "checked in on" in message and not re.search(r"\d{4}-\d{2}-\d{2}T", message)


async def test_threshold_changes_are_said_out_loud(client, run_worker, email_provider):
    owner = await sign_in(client)
    setup = await activate_plan(client, owner, guardians=3, accepting=3)  # a majority: 2 of 3
    # A decline that leaves every remaining guardian needed is a warning naming it.
    resp = await answer(client, setup.guardians[2], owner_plan_id=setup.plan_id, verb="decline")
    assert resp.status == 200, await resp.text()
    overview = await get_overview(client, owner)
    [warning] = [w for w in overview["readiness"]["warnings"] if "declined" in w]
    assert "Since Guardian 2 declined" in warning and "every remaining guardian (2 of 2)" in warning
    # A declined guardian is not listed among the approvals.
    assert [g["name"] for g in overview["approvals"]["guardians"]] == ["Guardian 0", "Guardian 1"]

    # Adding guardians raises the majority above those who accepted; the owner is told.
    await create(client, owner, "guardians", name="Guardian 3", email="guardian3@example.org")
    await create(client, owner, "guardians", name="Guardian 4", email="guardian4@example.org")
    await run_worker(settings=email_provider.settings)
    short = [
        m.body for m in email_provider.to("owner@example.org") if "needs more guardians" in m.body["subject"]
    ]
    assert len(short) == 1  # told once, when it fell short
    assert (
        "You added a guardian" in short[0]["text"]
        and "only 2 of your guardians have accepted" in short[0]["text"]
    )
