"""Steps on a plan over the JSON API that several suites take beyond tests/lifecycle_helpers.py:
the owner asks an heir to confirm their address, a guardian objects or withdraws the
objection, a guardian proposes a corrected heir address and the others agree or stop it.

The objection and address-change suites test these steps; the pages, languages and browser
suites start from the states they leave.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any

from tests.lifecycle_helpers import Guardian, PlanSetup, guardian_session
from tests.plan_helpers import create


async def ask_to_confirm(client, owner, heir) -> dict:
    resp = await client.post(f"/api/beneficiaries/{heir['id']}/confirm-email", headers=owner.headers)
    body = await resp.json()
    assert resp.status == 202, body
    return body


async def heir_of(client, owner, **overrides) -> dict:
    return await create(client, owner, "beneficiaries", email="ada@example.org", **overrides)


NOTE = "I had lunch with her today; she is fine."


async def objecting(client: Any, setup: PlanSetup, guardian: Guardian, note: str | None = NOTE) -> Any:
    session = await guardian_session(client, guardian)
    return await client.post(
        f"/api/legacy/guardianships/{setup.plan_id}/object",
        json={"note": note} if note is not None else {},
        headers=session.headers,
    )


async def withdrawing(client: Any, setup: PlanSetup, guardian: Guardian) -> Any:
    session = await guardian_session(client, guardian)
    return await client.delete(f"/api/legacy/guardianships/{setup.plan_id}/object", headers=session.headers)


def parse(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


# A corrected heir address, and the link in the email that confirms it.
NEW = "ada.new@example.org"
CONFIRM = re.compile(r"https://legacy\.example\.test(/confirm-address/[0-9a-f]{64})")


async def propose(client: Any, setup: Any, guardian: Any, heir: dict[str, Any], email: str = NEW) -> Any:
    session = await guardian_session(client, guardian)
    return await client.post(
        f"/api/legacy/guardianships/{setup.plan_id}/beneficiaries/{heir['id']}/address",
        json={"email": email},
        headers=session.headers,
    )


async def decide(client: Any, setup: Any, guardian: Any, change_id: str, verb: str) -> Any:
    session = await guardian_session(client, guardian)
    return await client.post(
        f"/api/legacy/guardianships/{setup.plan_id}/address-changes/{change_id}/{verb}",
        headers=session.headers,
    )


async def listed(client: Any, setup: Any, guardian: Any) -> list[dict[str, Any]]:
    session = await guardian_session(client, guardian)
    resp = await client.get("/api/legacy/guardianships", headers=session.headers)
    assert resp.status == 200, await resp.text()
    [plan] = [p for p in await resp.json() if p["planId"] == setup.plan_id]
    return plan["addressChanges"]
