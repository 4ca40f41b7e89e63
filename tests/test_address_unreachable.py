"""A corrected heir address whose confirmation link reaches nobody who can press it ends: after the
provider's bounce (the real webhook route, signed) or "I don't know this person" (its real page),
the lifecycle scan moves the change to `undeliverable`, tells every accepted guardian once in the
guardian page's words, shows it on their page and list, and a new proposal for that heir is
allowed. The address reaches no guardian and no timeline entry."""

from __future__ import annotations

from typing import Any

from tests.helpers import sign_in
from tests.lifecycle_helpers import release_plan
from tests.plan_helpers import activity_rows, query
from tests.support.guardian_page import PAGE_RE, words
from tests.support.mail import SECRET, event, post, provider_id, stop_link
from tests.support.plans import CONFIRM, NEW, decide, listed, propose
from tests.support.words import assert_marked

SUBJECT = "The new address for Heir 0 could not be reached"
SAID = (
    "The new email address proposed for Heir 0 could not be reached, so nothing changed. If you know "
    "another address that reaches them, you may propose it."
)


async def confirming(client: Any, clock: Any, run_worker: Any, email_provider: Any) -> tuple[Any, Any, Any]:
    """A released plan (three guardians, two to agree) whose Heir 0's new address was sent its link."""
    owner = await sign_in(client)
    setup = await release_plan(
        client, owner, clock, lambda: run_worker(settings=email_provider.settings), guardians=3
    )
    heir = setup.beneficiaries[0]
    change = await (await propose(client, setup, setup.guardians[0], heir)).json()
    assert (await decide(client, setup, setup.guardians[1], change["id"], "agree")).status == 200
    clock.advance(days=7, seconds=1)
    await run_worker(settings=email_provider.settings)
    [ask] = email_provider.to(NEW)
    assert CONFIRM.search(ask.body["text"])
    return owner, setup, ask


def told(email_provider: Any, index: int) -> list[dict[str, Any]]:
    return [m.body for m in email_provider.to(f"guardian{index}@example.org") if m.body["subject"] == SUBJECT]


async def ended_honestly(client: Any, settings: Any, email_provider: Any, owner: Any, setup: Any) -> str:
    """The change ended, each accepted guardian told once in the page's words, the page and list
    say so, and nowhere the address; returns the page path of guardian 2."""
    [row] = query(settings, "SELECT status, decided_at FROM address_changes")
    assert row["status"] == "undeliverable" and row["decided_at"] is not None
    for index in range(3):
        [mail] = told(email_provider, index)
        assert SAID in mail["text"] and NEW not in mail["text"] and NEW not in mail["html"]
    entries = [
        r
        for r in activity_rows(settings, owner.user["id"])
        if r["kind"] == "beneficiary.address_change_undeliverable"
    ]
    assert len(entries) == 1 and NEW not in str(entries)
    [shown] = await listed(client, setup, setup.guardians[2])
    assert shown["status"] == "undeliverable" and shown["beneficiaryId"] == setup.beneficiaries[0]["id"]
    assert NEW not in str(shown)
    path = PAGE_RE.findall(told(email_provider, 2)[0]["text"])[-1][0]
    page = words(await (await client.get(path)).text()).replace("&#39;", "'")
    assert SAID in page and NEW not in page
    assert "Stop this new address" not in page and 'value="propose_address"' in page
    await assert_marked(client, path)  # the ended change, in the page's words
    return path


async def test_a_bounced_confirmation_ends_the_change_and_tells_the_guardians_once(
    make_client, clock, run_worker, email_provider, settings
):
    client = await make_client(email_webhook_secret=SECRET)
    owner, setup, ask = await confirming(client, clock, run_worker, email_provider)
    path = CONFIRM.search(ask.body["text"])[1]
    email_id = provider_id(settings, "address_confirmation", "beneficiary")
    resp = await post(client, event("email.bounced", email_id), msg_id="msg_bounce")
    assert resp.status == 200 and await resp.json() == {"result": "applied"}
    # The same event again (replayed), a second bounce and a complaint: nobody is told twice.
    assert await (await post(client, event("email.bounced", email_id), msg_id="msg_bounce")).json() == {
        "result": "replayed"
    }
    assert (await post(client, event("email.bounced", email_id))).status == 200
    assert (await post(client, event("email.complained", email_id))).status == 200
    await run_worker(settings=email_provider.settings)
    page = await ended_honestly(client, settings, email_provider, owner, setup)
    # Nobody can confirm it now; stopping it is not asked; another address can be proposed.
    assert (await client.get(path)).status == 404
    assert (await client.post(path, data={})).status == 404
    change_id = query(settings, "SELECT id::text AS id FROM address_changes")[0]["id"]
    assert (await decide(client, setup, setup.guardians[2], change_id, "stop")).status == 409
    resp = await client.post(f"{page}/ask", data={"action": "stop_address", "changeId": change_id})
    assert resp.status == 409
    heir = setup.beneficiaries[0]
    again = await propose(client, setup, setup.guardians[2], heir, "ada.right@example.org")
    assert again.status == 202, await again.text()
    [running] = await listed(client, setup, setup.guardians[0])
    assert running["status"] == "pending" and running["id"] == (await again.json())["id"]
    await run_worker(settings=email_provider.settings)
    assert all(len(told(email_provider, index)) == 1 for index in range(3))


async def test_i_dont_know_this_person_at_the_new_address_ends_the_change(
    client, clock, run_worker, email_provider, settings
):
    owner, setup, ask = await confirming(client, clock, run_worker, email_provider)
    link = stop_link(ask)
    page = await client.get(link)
    assert page.status == 200 and "Do you know this person" in await page.text()
    assert query(settings, "SELECT status FROM address_changes")[0]["status"] == "confirming"  # GET: nothing
    assert (await client.post(link, data={})).status == 200
    assert (await client.post(link, data={})).status == 200  # pressed again: nothing more
    await run_worker(settings=email_provider.settings)
    await ended_honestly(client, settings, email_provider, owner, setup)
    # The owner named nobody at that address: they are not told a beneficiary refused them.
    assert not query(settings, "SELECT 1 FROM outbox WHERE kind = 'recipient_unknown'")
    [entry] = [
        r
        for r in activity_rows(settings, owner.user["id"])
        if r["kind"] == "beneficiary.address_change_undeliverable"
    ]
    assert entry["metadata"]["outcome"] == "refused"
    heir = setup.beneficiaries[0]
    assert (await propose(client, setup, setup.guardians[1], heir, "ada.right@example.org")).status == 202
