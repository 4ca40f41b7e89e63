"""Pages reached from an email speak their recipient's language (the one their emails are in,
whatever the browser says) and name the email they came from: "I don't know this person" names
the invitation or the heir's email it came in and whose plan sent it; the address confirmations
and the check-in say which email opened them."""

from __future__ import annotations

import re
from typing import Any

from tests.plan_helpers import create
from tests.support.mail import named_owner, stop_link
from tests.support.words import visible_text

FRENCH_BROWSER = {"Accept-Language": "fr-FR,fr;q=0.9"}


async def read(client: Any, path: str, method: str = "GET") -> str:
    resp = await client.request(method, path, headers=FRENCH_BROWSER)
    text = await resp.text()
    assert resp.status == 200, text
    return " ".join(visible_text(text).split())


async def test_the_stop_page_speaks_the_recipients_language_and_names_its_email(
    client, run_worker, email_provider
):
    owner = await named_owner(client)
    await create(client, owner, "guardians", name="Gus", email="gus@example.org", locale="es")
    heir = await create(
        client,
        owner,
        "beneficiaries",
        name="Ada",
        email="ada@example.org",
        allocationPercentage=100,
        locale="de",
    )
    resp = await client.post(f"/api/beneficiaries/{heir['id']}/confirm-email", headers=owner.headers)
    assert resp.status == 202
    await run_worker(settings=email_provider.settings)
    [invitation] = email_provider.to("gus@example.org")
    [confirmation] = email_provider.to("ada@example.org")

    page = await read(client, stop_link(invitation))
    assert 'lang="es"' in (await (await client.get(stop_link(invitation), headers=FRENCH_BROWSER)).text())
    assert (
        "Este enlace llegó en el correo en el que Olive Owner le pidió que formara parte de los guardianes"
        in page
    )
    assert "Si no conoce a Olive Owner" in page
    page = await read(client, stop_link(confirmation))
    assert "Dieser Link kam in der E-Mail, in der Sie gebeten wurden zu bestätigen" in page
    assert "Olive Owner hat Sie als begünstigte Person" in page

    # Its button's answer, and the page once the heir has confirmed, speak the same language.
    done = await read(client, stop_link(invitation), method="POST")
    assert "No llegará nada más de Olive Owner a esta dirección" in done
    confirm = "/confirm-email/" + confirmation.body["text"].split("/confirm-email/", 1)[1].split()[0]
    confirm_page = await read(client, confirm)
    assert "Diese Seite wurde aus unserer E-Mail geöffnet, in der Sie gebeten wurden" in confirm_page
    assert (await client.post(confirm)).status == 200
    answered = await read(client, stop_link(confirmation))
    assert "Dieser Link kam in einer E-Mail zum Nachlassplan von Olive Owner" in answered


async def test_the_english_pages_name_their_email(client, run_worker, email_provider):
    owner = await named_owner(client)
    await create(client, owner, "guardians", name="Gus", email="gus@example.org")
    await run_worker(settings=email_provider.settings)
    [invitation] = email_provider.to("gus@example.org")
    resp = await client.get(stop_link(invitation))
    page = " ".join(visible_text(await resp.text()).split())
    assert (
        "This link came in the email in which Olive Owner asked you to be a guardian of their legacy plan."
        in page
    )
    assert "or to confirm the address" not in page and "Someone used our service" not in page
    assert re.search(r"If you do not know Olive Owner, or this is not your address", page)
