"""A newcomer's first minute: `serve` logs where owners sign in, and with no web client
(PUBLIC_APP_URL unset) the owner's emails that say where to sign in name this service's own
`/sign-in`; a sign-in from the pages is a line of the owner's account-changes digest."""

from __future__ import annotations

import dataclasses
import logging

from api import server
from core.settings import Settings
from models.mail import emails
from service import cli
from tests.support.emails import RING, delivery


def test_serve_logs_the_sign_in_address(monkeypatch, caplog, settings: Settings) -> None:
    monkeypatch.setattr(server, "run", lambda *args, **kwargs: None)
    dev = dataclasses.replace(settings, public_base_url="http://localhost:8080")
    with caplog.at_level(logging.INFO):
        cli.cmd_serve(dev)
    assert any(
        record.getMessage() == "owners sign in at http://localhost:8080/sign-in" for record in caplog.records
    )


def test_owner_emails_name_the_sign_in_page_when_there_is_no_web_client() -> None:
    change = {"what": "signed_in_wallet", "at": "2026-11-28T10:00:00.000Z", "name": "GABC"}
    row = delivery("account_changes", "owner", context={"changes": [change]})
    email = emails.render(d=row, ring=RING, base_url="https://legacy.example", app_url="")
    assert "sign in at https://legacy.example/sign-in" in email.text.replace("\n", " ") or (
        "https://legacy.example/sign-in" in email.text
    )
    assert "signed in to your plan's pages with the wallet GABC" in email.text
    with_client = emails.render(
        d=row, ring=RING, base_url="https://legacy.example", app_url="https://app.example"
    )
    assert "https://app.example" in with_client.text and "/sign-in" not in with_client.text
    # A guardian's email names no sign-in page of the owner's.
    invitation = delivery("guardian_invitation", "guardian")
    text = emails.render(d=invitation, ring=RING, base_url="https://legacy.example", app_url="").text
    assert "/sign-in" not in text


async def test_a_page_sign_in_checks_in_while_active_and_is_told_in_the_digest(
    client, clock, settings
) -> None:
    from stellar_sdk import Keypair

    from tests.helpers import sign_in
    from tests.lifecycle_helpers import activate_plan, get_overview
    from tests.plan_helpers import query
    from tests.support.owner import sign_in_page

    keypair = Keypair.random()
    owner = await sign_in(client, keypair)
    await activate_plan(client, owner)
    before = (await get_overview(client, owner))["lastCheckInAt"]
    clock.advance(days=3)
    await sign_in_page(client, keypair)
    after = (await get_overview(client, owner))["lastCheckInAt"]
    assert after > before  # counted as a check-in, through the API's own function
    rows = query(settings, "SELECT context FROM outbox WHERE kind = 'account_changes'")
    changes = [change["what"] for row in rows for change in row["context"]["changes"]]
    assert "signed_in_wallet" in changes
