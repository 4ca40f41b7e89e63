"""An heir can stop a change of their own address (docs/lifecycle.md "A corrected heir address"):
after the release, while a corrected address holds, the heir at their old address stops it with
one button (a GET changes nothing), until the new address confirms; the other heirs cannot, and
their "This looks wrong" tells the guardians and the heir concerned and extends the hold once."""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any

from tests.helpers import sign_in
from tests.lifecycle_helpers import release_plan
from tests.plan_helpers import activity_rows, query
from tests.support.plans import NEW, decide, propose
from tests.support.words import assert_marked

STOP = re.compile(r"https://legacy\.example\.test(/stop-address/[0-9a-f]{64})")
DOUBT = re.compile(r"https://legacy\.example\.test(/address-looks-wrong/[0-9a-f]{96})")


def mail(email_provider: Any, address: str, subject: str) -> list[dict[str, Any]]:
    return [m.body for m in email_provider.to(address) if m.body["subject"].startswith(subject)]


async def test_with_a_threshold_of_one_the_heir_stops_a_lone_guardians_change(
    client, clock, run_worker, email_provider, settings
):
    owner = await sign_in(client)
    work = email_provider.settings
    setup = await release_plan(client, owner, clock, lambda: run_worker(settings=work), guardians=1)
    assert setup.overview["approvals"]["threshold"] == 1
    heir, other = setup.beneficiaries
    # A single guardian proposes, and their proposal is the whole agreement: it holds at once.
    resp = await propose(client, setup, setup.guardians[0], heir)
    assert resp.status == 202, await resp.text()
    change = await resp.json()
    assert change["status"] == "holding"
    await run_worker(settings=work)

    # The old address: what the change would do, in one sentence, and its own "Stop".
    [told] = mail(email_provider, "heir0@example.org", "Your address for a legacy plan is about to change")
    assert "your link would go to a new address that the guardians chose" in told["text"]
    assert "it ends, your link stays at this address, and the guardians are told" in told["text"]
    path = STOP.search(told["text"])[1]
    # The token is not stored, only its digest.
    assert not query(
        settings, "SELECT 1 FROM address_changes WHERE stop_digest::text LIKE %s", (f"%{path[-64:]}%",)
    )
    assert query(settings, "SELECT stop_digest FROM address_changes")[0]["stop_digest"] is not None
    # The other heir: the same sentence about Heir 0, no stop, only "This looks wrong".
    [others] = mail(email_provider, "heir1@example.org", "Heir 0's address is about to change")
    assert "Heir 0's link would go to a new address that the guardians chose" in others["text"]
    assert DOUBT.search(others["text"]) and not STOP.search(others["text"])

    # Opening the page changes nothing; every word of it is marked for translation.
    await assert_marked(client, path)
    page = await client.get(path)
    assert page.status == 200 and "Stop: this address is still mine" in await page.text()
    assert query(settings, "SELECT status FROM address_changes")[0]["status"] == "holding"
    # A made-up token is the 404 page.
    assert (await client.get("/stop-address/" + "0" * 64)).status == 404

    done = await client.post(path, data={})
    assert done.status == 200 and "The change is stopped" in await done.text()
    assert (await client.post(path, data={})).status == 404  # nothing left to stop
    [row] = query(settings, "SELECT status, stopped_by_heir, stopped_by FROM address_changes")
    assert row == {"status": "stopped", "stopped_by_heir": True, "stopped_by": None}
    await run_worker(settings=work)
    [stopped] = mail(email_provider, "guardian0@example.org", "The new address for Heir 0 was stopped")
    assert "Heir 0 stopped the new email address proposed for them" in stopped["text"]
    entries = [
        e
        for e in activity_rows(settings, owner.user["id"])
        if e["kind"] == "beneficiary.address_change_stopped"
    ]
    assert entries and entries[0]["metadata"]["actor"] == "beneficiary"

    # Past the hold: the new address receives nothing, ever.
    clock.advance(days=8)
    await run_worker(settings=work)
    assert not email_provider.to(NEW)
    del other


async def test_another_heir_cannot_stop_it_but_can_say_it_looks_wrong_once(
    client, clock, run_worker, email_provider, settings
):
    owner = await sign_in(client)
    work = email_provider.settings
    setup = await release_plan(client, owner, clock, lambda: run_worker(settings=work), guardians=3)
    heir = setup.beneficiaries[0]
    change = await (await propose(client, setup, setup.guardians[0], heir)).json()
    resp = await decide(client, setup, setup.guardians[1], change["id"], "agree")
    hold_until = datetime.fromisoformat((await resp.json())["holdUntil"].replace("Z", "+00:00"))
    await run_worker(settings=work)
    [others] = mail(email_provider, "heir1@example.org", "Heir 0's address is about to change")
    path = DOUBT.search(others["text"])[1]
    # Another heir's link stops nothing: it has no stop, and a forged id is a miss.
    assert (await client.get(path[:-1] + ("0" if path[-1] != "0" else "1"))).status == 404
    await assert_marked(client, path)
    page = await client.get(path)
    assert page.status == 200 and "and the guardians can stop it" in await page.text()

    done = await client.post(path, data={})
    assert done.status == 200 and "have been told" in await done.text()
    [row] = query(settings, "SELECT status, hold_until, doubted_by::text AS by FROM address_changes")
    assert row["status"] == "holding" and row["by"] == setup.beneficiaries[1]["id"]
    assert (row["hold_until"] - hold_until).days == 7  # extended once
    again = await client.post(path, data={})
    assert again.status == 200 and "already said" in await again.text()
    [row] = query(settings, "SELECT hold_until FROM address_changes")
    assert (row["hold_until"] - hold_until).days == 7  # not again
    await run_worker(settings=work)
    # The guardians and the heir concerned are told (once); the heir can still stop it from there.
    for index in range(3):
        assert len(mail(email_provider, f"guardian{index}@example.org", "A beneficiary says Heir 0's")) == 1
    [concerned] = mail(email_provider, "heir0@example.org", "Your address for a legacy plan")[-1:]
    assert "looks wrong" in concerned["text"] and STOP.search(concerned["text"])
    # A guardian can still stop it, as before.
    resp = await decide(client, setup, setup.guardians[2], change["id"], "stop")
    assert resp.status == 200
    assert (await client.get(path)).status == 404  # no longer holding
    clock.advance(days=15)
    await run_worker(settings=work)
    assert not email_provider.to(NEW)


async def test_the_heirs_stop_works_until_the_new_address_confirms(
    client, clock, run_worker, email_provider, settings
):
    owner = await sign_in(client)
    work = email_provider.settings
    setup = await release_plan(client, owner, clock, lambda: run_worker(settings=work), guardians=1)
    heir = setup.beneficiaries[0]
    assert (await propose(client, setup, setup.guardians[0], heir)).status == 202
    await run_worker(settings=work)
    [told] = mail(email_provider, "heir0@example.org", "Your address for a legacy plan is about to change")
    path = STOP.search(told["text"])[1]
    clock.advance(days=7, seconds=1)  # the hold passed: the new address is asked to confirm
    await run_worker(settings=work)
    assert email_provider.to(NEW)
    assert query(settings, "SELECT status FROM address_changes")[0]["status"] == "confirming"
    assert (await client.get(path)).status == 200  # still stoppable
    assert (await client.post(path, data={})).status == 200
    from tests.support.plans import CONFIRM

    [ask] = email_provider.to(NEW)
    confirm = CONFIRM.search(ask.body["text"])[1]
    assert (await client.post(confirm, data={})).status == 404  # the stop ended it
    assert query(settings, "SELECT status FROM address_changes")[0]["status"] == "stopped"
