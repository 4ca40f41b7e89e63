"""An objection from the guardian's page (docs/pages.md "The guardian's page"): the form posts
`action=object` with a note, the wallet signs the SEP-7 request, and the note, kept sealed
beside the request meanwhile, reaches the owner and the other guardians; the page then shows
the objection and offers to withdraw it, the same way. A report's note from the page is no
longer dropped."""

from __future__ import annotations

from typing import Any

from tests.helpers import sign_in
from tests.lifecycle_helpers import activate_plan, get_overview, report
from tests.support.guardian_page import ask, page_link, words
from tests.wallet_app import WalletApp

NOTE = "She called me this morning; she is travelling."


async def _page(client: Any, path: str) -> str:
    resp = await client.get(path)
    assert resp.status == 200
    return words(await resp.text())


async def test_a_guardian_objects_and_withdraws_from_their_page(client, run_worker, email_provider, settings):
    owner = await sign_in(client)
    setup = await activate_plan(client, owner, guardians=2)
    first, second = setup.guardians
    work = email_provider.settings
    assert (await report(client, setup, first)).status == 200
    await run_worker(settings=work)
    path = page_link(email_provider, "guardian1@example.org")
    page = await _page(client, path)
    assert "This is a mistake: I know they are alive or able to act" in page and 'value="object"' in page

    uri = await ask(client, path, "object", note=NOTE)
    wallet = WalletApp(client, second.keypair)
    assert (await wallet.open(uri)).msg.startswith("Say the verification of Olive Owner's plan is a mistake")
    resp = await wallet.approve(uri)
    assert resp.status == 200, await resp.text()
    assert await resp.json() == {"status": "objected"}
    await run_worker(settings=work)
    [told] = [m.body for m in email_provider.to("owner@example.org") if "mistake" in m.body["subject"]]
    assert NOTE in told["text"] and "Guardian 1" in told["text"]
    assert (await get_overview(client, owner))["approvals"]["objections"] == 1

    page = await _page(client, path)
    assert "You said on" in page and NOTE in page and 'value="withdraw_objection"' in page
    assert 'value="object"' not in page  # one answer per round
    others = await _page(client, page_link(email_provider, "guardian0@example.org"))
    assert "Guardian 1 said on" in others and NOTE in others
    assert "while a guardian objects, it waits, but only until that objection lapses" in others

    uri = await ask(client, path, "withdraw_objection")
    resp = await wallet.approve(uri)
    assert await resp.json() == {"status": "withdrawn"}
    assert (await get_overview(client, owner))["approvals"]["objections"] == 0
    page = await _page(client, path)
    assert "You said on" not in page and 'value="object"' in page
    # Not asked now: refused in words.
    resp = await client.post(f"{path}/ask", data={"action": "withdraw_objection"})
    assert resp.status == 409


async def test_a_report_from_the_page_keeps_its_note(client, run_worker, email_provider, settings):
    owner = await sign_in(client)
    setup = await activate_plan(client, owner, guardians=2)
    work = email_provider.settings
    await run_worker(settings=work)
    path = page_link(email_provider, "guardian0@example.org")
    uri = await ask(client, path, "report", reason="incapacity", note="He is in hospital since Monday.")
    resp = await WalletApp(client, setup.guardians[0].keypair).approve(uri)
    assert await resp.json() == {"status": "reported"}
    assert (await get_overview(client, owner))["status"] == "PendingVerification"
    await run_worker(settings=work)
    others = await _page(client, page_link(email_provider, "guardian1@example.org"))
    assert "He is in hospital since Monday." in others and "with no note" not in others
    # Too long a note is refused in words, before anything is asked of the wallet.
    resp = await client.post(f"{path}/ask", data={"action": "object", "note": "x" * 2001})
    assert resp.status == 400
