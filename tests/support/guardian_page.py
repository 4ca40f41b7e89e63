"""A guardian's own page as the guardian reaches it: the page's link in their last email
(`page_link`), its words read for machine words, an answer asked for (a SEP-7 request for a
wallet guardian; a passkey ceremony for one without a wallet, `accept_with_passkey`), and the
plans that put guardians there: a Draft whose guardians are invited but have not answered, an
Active plan with a guardian by name and email only.

The guardian page's own tests, the address, objection, error, language and browser suites all
open this page; one copy of the way in keeps them reading the same page the same way.
"""

from __future__ import annotations

import re
from typing import Any

from stellar_sdk import Keypair

from tests.helpers import sign_in
from tests.lifecycle_helpers import Guardian, PlanSetup, activate_plan, get_overview
from tests.plan_helpers import create
from tests.soft_passkey import SoftPasskey, ceremony_of
from tests.support.words import assert_plain, page_words
from tests.wallet_app import request_uri

PAGE_RE = re.compile(r"https://legacy\.example\.test(/guardian/([0-9a-f]{64}))")


def words(page: str) -> str:
    """A page's words, without the <bdi> that isolates each name (read for machine words too)."""
    assert_plain(page_words(page), "the guardian's page")
    return re.sub(r"</?bdi>", "", page)


def page_link(email_provider: Any, address: str) -> str:
    """The guardian page's path from the last email to this address (text and HTML agree)."""
    mail = email_provider.to(address)[-1].body
    found = PAGE_RE.findall(mail["text"])
    assert found, f"no guardian page link in the email to {address}"
    assert f'href="https://legacy.example.test{found[-1][0]}"' in mail["html"]
    return str(found[-1][0])


async def ask(client: Any, path: str, action: str, **fields: str) -> str:
    resp = await client.post(f"{path}/ask", data={"action": action, **fields})
    assert resp.status == 200, await resp.text()
    assert_plain(page_words(await resp.text()), f"the guardian's {action} page")
    return request_uri(await resp.text())


async def draft_with_guardians(client, owner, count=2):
    """A Draft plan ready in every way except the guardians' answers."""
    resp = await client.patch(
        "/api/users/me", json={"email": "owner@example.org", "name": "Olive Owner"}, headers=owner.headers
    )
    assert resp.status == 200
    await create(client, owner, "beneficiaries", allocationPercentage=100)
    guardians = []
    for index in range(count):
        keypair = Keypair.random()
        row = await create(
            client,
            owner,
            "guardians",
            name=f"Guardian {index}",
            email=f"guardian{index}@example.org",
            walletAddress=keypair.public_key,
        )
        guardians.append(Guardian(keypair, row))
    plan_id = (await get_overview(client, owner))["id"]
    return plan_id, guardians


# A guardian without a wallet answers with a passkey, bound to the page's origin.
ORIGIN = "https://legacy.example.test"


async def plan_with_passkey_guardian(
    client: Any, run_worker: Any, email_provider: Any
) -> tuple[PlanSetup, str]:
    """An Active plan: two wallet guardians who accepted, a third who has not, and a guardian
    by name and email (no wallet, no passkey yet); the last one's page path."""
    owner = await sign_in(client)
    setup = await activate_plan(client, owner, guardians=3, accepting=2, threshold=2)
    resp = await client.post(
        "/api/guardians", json={"name": "Sister", "email": "sister@example.org"}, headers=owner.headers
    )
    assert resp.status == 201, await resp.text()
    await run_worker(settings=email_provider.settings)
    return setup, page_link(email_provider, "sister@example.org")


async def post_ask(client: Any, path: str, **fields: str) -> tuple[int, str]:
    resp = await client.post(f"{path}/ask", data=fields, allow_redirects=False)
    return resp.status, await resp.text()


async def post_answer(client: Any, action: str, **fields: str) -> tuple[int, str]:
    resp = await client.post(action, data=fields, allow_redirects=False)
    return resp.status, await resp.text()


async def accept_with_passkey(client: Any, path: str) -> SoftPasskey:
    """The guardian accepts from their page by creating a passkey."""
    device = SoftPasskey(ORIGIN)
    status, page = await post_ask(client, path, action="accept")
    assert status == 200, page
    action, options = ceremony_of(page)
    assert await post_answer(client, action, credential=device.create(options)) == (303, "")
    return device
