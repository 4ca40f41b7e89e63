"""Before the release a guardian's page lists no heirs, yet any accepted guardian (with a wallet or
a passkey) can tell the owner that someone's address may be wrong: the person named as the
guardian knows them, the address, an optional note, proved like every answer from the page, sent
to the owner who decides. Nothing is matched against the heirs and nothing of them is shown."""

from __future__ import annotations

import html
import re
from typing import Any

from tests.helpers import sign_in
from tests.lifecycle_helpers import activate_plan, approve_plan, get_overview
from tests.plan_helpers import activity_rows, query
from tests.soft_passkey import ceremony_of
from tests.support.guardian_page import (
    accept_with_passkey,
    ask,
    page_link,
    plan_with_passkey_guardian,
    post_answer,
    post_ask,
    words,
)
from tests.support.plans import NEW
from tests.wallet_app import WalletApp

NOTE = "She moved last spring.\nThe old address was her work's."


def owner_mails(email_provider: Any) -> list[dict[str, Any]]:
    return [
        m.body
        for m in email_provider.to("owner@example.org")
        if "address in your plan may be wrong" in m.body["subject"]
    ]


async def test_a_passkey_guardian_tells_the_owner_from_their_page(
    client, run_worker, email_provider, settings
):
    _, sister = await plan_with_passkey_guardian(client, run_worker, email_provider)
    device = await accept_with_passkey(client, sister)
    shown = words(await (await client.get(sister)).text())
    assert 'value="suggest_address"' in shown and "name the person as you know them" in shown
    assert "Heir 0" not in shown and "Heir 1" not in shown  # no heir is listed before the release

    # Bad input is a 400 page in words, before any ceremony.
    for fields, why in (
        ({"email": NEW}, "Say whom the address is for"),
        ({"heirName": "Ada", "email": "nope"}, "does not look like an email address"),
        ({"heirName": "A" * 201, "email": NEW}, "longer than 200 characters"),
        ({"heirName": "Ada", "email": NEW, "note": "x" * 501}, "longer than 500 characters"),
    ):
        status, text = await post_ask(client, sister, action="suggest_address", **fields)
        assert status == 400 and why in text, (fields, status)

    status, page = await post_ask(
        client, sister, action="suggest_address", heirName="Ada", email=NEW, note=NOTE
    )
    assert status == 200, page
    assert "Ada" in page and NEW in page and "She moved last spring." in page  # shown as it will be sent
    action, options = ceremony_of(page)
    credential = device.get(options)
    # Another text posted with the same answer: refused, nothing sent.
    status, text = await post_answer(client, action, credential=credential, note="something else")
    assert status == 401
    carried = html.unescape(page.split('name="note" value="', 1)[1].split('"', 1)[0])
    assert await post_answer(client, action, credential=credential, note=carried) == (303, "")

    await run_worker(settings=email_provider.settings)
    [mail] = owner_mails(email_provider)
    assert mail["subject"] == "Sister says an address in your plan may be wrong"
    assert "the person they know as Ada may be wrong" in mail["text"] and NEW in mail["text"]
    assert 'They wrote: "She moved last spring.' in mail["text"]
    assert not email_provider.to(NEW)  # nothing to the address: the owner decides
    # Sealed wherever it is kept; the timeline names the guardian, never the texts.
    assert not query(settings, "SELECT 1 FROM outbox WHERE context::text LIKE %s", (f"%{NEW}%",))
    assert not query(settings, "SELECT 1 FROM outbox WHERE context::text LIKE %s", ("%Ada%",))
    owner_id = query(settings, "SELECT user_id::text AS id FROM plans")[0]["id"]
    [entry] = [r for r in activity_rows(settings, owner_id) if r["kind"] == "beneficiary.address_suggested"]
    sister_id = query(
        settings,
        "SELECT id::text AS id FROM guardians WHERE name_sealed IS NOT NULL AND wallet_address IS NULL",
    )[0]["id"]
    assert entry["metadata"]["guardianId"] == sister_id
    assert NEW not in str(entry) and "Ada" not in str(entry)
    assert not query(settings, "SELECT 1 FROM address_changes")  # nothing matched, nothing stored


async def test_a_wallet_guardian_tells_the_owner_and_not_once_the_heirs_hold_their_links(
    client, clock, run_worker, email_provider, settings
):
    owner = await sign_in(client)
    setup = await activate_plan(client, owner, guardians=3, accepting=2, threshold=2)
    await run_worker(settings=email_provider.settings)
    path = page_link(email_provider, "guardian0@example.org")
    uri = await ask(client, path, "suggest_address", heirName="Ada Lovelace", email=NEW)
    assert NEW not in uri  # the texts ride beside the request, sealed
    wallet = WalletApp(client, setup.guardians[0].keypair)
    assert (await wallet.open(uri)).msg == (
        "Tell Olive Owner of a new email address for Ada Lovelace, someone they chose"
    )
    resp = await wallet.approve(uri)
    assert resp.status == 200 and await resp.json() == {"status": "suggested"}
    await run_worker(settings=email_provider.settings)
    [mail] = owner_mails(email_provider)
    assert mail["subject"] == "Guardian 0 says an address in your plan may be wrong"
    assert "They wrote" not in mail["text"]
    # Each one is an email to the owner: five a day per guardian, the sixth is a 429 in words.
    for index in range(4):
        uri = await ask(client, path, "suggest_address", heirName=f"Ada {index}", email=NEW)
        assert (await wallet.approve(uri)).status == 200
    uri = await ask(client, path, "suggest_address", heirName="Ada 5", email=NEW)
    resp = await wallet.approve(uri)
    assert resp.status == 429 and "send the next one tomorrow" in await resp.text()
    await run_worker(settings=email_provider.settings)
    assert len(owner_mails(email_provider)) == 5
    # A guardian who has not accepted is asked nothing of the kind (409, not a form).
    waiting = page_link(email_provider, "guardian2@example.org")
    assert 'value="suggest_address"' not in await (await client.get(waiting)).text()
    data = {"action": "suggest_address", "heirName": "Ada", "email": NEW}
    assert (await client.post(f"{waiting}/ask", data=data)).status == 409

    await approve_plan(client, setup)
    clock.advance(seconds=setup.overview["settings"]["cancelWindowSeconds"] + 1)
    await run_worker(settings=email_provider.settings)
    assert (await get_overview(client, owner))["status"] == "Released"
    shown = await (await client.get(path)).text()
    assert 'value="suggest_address"' not in shown and 'value="propose_address"' in shown
    resp = await client.post(
        f"{path}/ask", data={"action": "suggest_address", "heirName": "Ada", "email": NEW}
    )
    assert resp.status == 409


def test_the_forms_words_are_marked_for_translation() -> None:
    """Rendered in the pseudo-language, the page's form and the passkey page's summary leave no
    plain word but the ones the guardian typed and the owner's name."""
    from api import html as pages
    from core.text import i18n
    from models.flows.answers import declared
    from models.plan.guardianships import address_suggestions
    from tests.i18n_helpers import PSEUDO, ascii_words, pseudo

    suggestion = address_suggestions.checked(heir="Ada Lovelace", email=NEW, note="She moved.")
    typed = ["Olive Owner", "Ada Lovelace", NEW, "She moved."]
    with pseudo(), i18n.speaking(PSEUDO, None):
        for template, context in (
            (
                "_address_suggestion.html",
                {"path": "/guardian/x", "owner": "Olive Owner", "link": str, "words": declared.BY_NAME},
            ),
            (
                "_address_suggestion_sent.html",
                {
                    "owner": "Olive Owner",
                    "ceremony": {"action": "suggest_address"},
                    "suggestion": suggestion,
                    "note": address_suggestions.packed(suggestion=suggestion),
                },
            ),
        ):
            shown = html.unescape(
                re.sub(r"<[^>]+>", " ", pages._TEMPLATES.get_template(template).render(**context))
            )
            assert not ascii_words(shown, allowed=typed), (template, shown)


async def test_a_refused_suggestion_reads_in_the_pages_language_with_its_limit(
    client, run_worker, email_provider, settings
):
    """The form's refusals that carry a number are written in the page's language: formatted in
    English before the error page translated them, they could match no catalog entry."""
    _, sister = await plan_with_passkey_guardian(client, run_worker, email_provider)
    await accept_with_passkey(client, sister)
    for fields, why in (
        ({"heirName": "A" * 201, "email": NEW}, "El nombre tiene más de 200 caracteres"),
        ({"heirName": "Ada", "email": NEW, "note": "x" * 501}, "La nota tiene más de 500 caracteres"),
        ({"email": NEW}, "Indique para quién es la dirección"),
    ):
        resp = await client.post(
            f"{sister}/ask?lang=es", data={"action": "suggest_address", **fields}, allow_redirects=False
        )
        text = html.unescape(await resp.text())
        assert resp.status == 400 and why in text, (fields, text)
