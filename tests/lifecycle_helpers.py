"""Drive a plan through its lifecycle over HTTP, as an owner and their guardians would.

`release_plan` is the shortcut other suites (capsule, Soroban) build on: it makes a plan
`Released` through the real routes and the real worker, moving the test clock instead of
sleeping.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from aiohttp.test_utils import TestClient
from stellar_sdk import Keypair

from core.clock import Clock
from tests.helpers import Session, sign, sign_in
from tests.plan_helpers import create, query

# The test settings lower PLAN_MIN_* to 60 s (tests/conftest.py).
SHORT = {"checkInIntervalSeconds": 3600, "gracePeriodSeconds": 600, "cancelWindowSeconds": 60}


@dataclass
class Guardian:
    keypair: Keypair
    row: dict[str, Any]
    session: Session | None = None


@dataclass
class PlanSetup:
    owner: Session
    beneficiaries: list[dict[str, Any]] = field(default_factory=list)  # as created (with claimToken)
    guardians: list[Guardian] = field(default_factory=list)
    overview: dict[str, Any] = field(default_factory=dict)

    @property
    def plan_id(self) -> str:
        return str(self.overview["id"])


async def get_overview(client: TestClient, owner: Session) -> dict[str, Any]:
    resp = await client.get("/api/legacy", headers=owner.headers)
    assert resp.status == 200, await resp.text()
    body: dict[str, Any] = await resp.json()
    return body


async def activate_plan(
    client: TestClient,
    owner: Session,
    *,
    allocations: tuple[int, ...] = (60, 40),
    guardians: int = 2,
    threshold: int | None = None,
    settings: dict[str, Any] | None = None,
    email: str = "owner@example.org",
    accepting: int | None = None,
) -> PlanSetup:
    """An Active plan: owner email, beneficiaries totalling 100, guardians with real keypairs
    who have accepted their invitations (the first `accepting` of them; default all)."""
    resp = await client.patch(
        "/api/users/me", json={"email": email, "name": "Olive Owner"}, headers=owner.headers
    )
    assert resp.status == 200, await resp.text()
    setup = PlanSetup(owner)
    for index, share in enumerate(allocations):
        setup.beneficiaries.append(
            await create(
                client,
                owner,
                "beneficiaries",
                name=f"Heir {index}",
                email=f"heir{index}@example.org",
                allocationPercentage=share,
            )
        )
    for index in range(guardians):
        keypair = Keypair.random()
        row = await create(
            client,
            owner,
            "guardians",
            name=f"Guardian {index}",
            email=f"guardian{index}@example.org",
            walletAddress=keypair.public_key,
        )
        setup.guardians.append(Guardian(keypair, row))
    plan_id = (await get_overview(client, owner))["id"]
    for guardian in setup.guardians[: guardians if accepting is None else accepting]:
        resp = await answer(client, guardian, owner_plan_id=plan_id)
        assert resp.status == 200, await resp.text()
    body = {**SHORT, **(settings or {})}
    if threshold is not None:
        body["guardianThreshold"] = threshold
    resp = await client.patch("/api/legacy", json=body, headers=owner.headers)
    assert resp.status == 200, await resp.text()
    resp = await client.post("/api/legacy/activate", headers=owner.headers)
    assert resp.status == 200, await resp.text()
    setup.overview = await resp.json()
    assert setup.overview["status"] == "Active"
    return setup


async def guardian_session(client: TestClient, guardian: Guardian) -> Session:
    if guardian.session is None:
        guardian.session = await sign_in(client, guardian.keypair)
    return guardian.session


async def answer(client: TestClient, guardian: Guardian, *, owner_plan_id: str, verb: str = "accept") -> Any:
    """The guardian signs in with the wallet the owner recorded and accepts (or declines)."""
    session = await guardian_session(client, guardian)
    return await client.post(f"/api/legacy/guardianships/{owner_plan_id}/{verb}", headers=session.headers)


async def report(client: TestClient, setup: PlanSetup, guardian: Guardian, note: str | None = None) -> Any:
    session = await guardian_session(client, guardian)
    return await client.post(
        f"/api/legacy/guardianships/{setup.plan_id}/report",
        json={"note": note} if note is not None else {},
        headers=session.headers,
    )


async def approve(client: TestClient, setup: PlanSetup, guardian: Guardian) -> Any:
    """Fetch the attestation, sign it with the guardian's wallet, post the signature."""
    session = await guardian_session(client, guardian)
    resp = await client.get(f"/api/legacy/guardianships/{setup.plan_id}/attestation", headers=session.headers)
    assert resp.status == 200, await resp.text()
    message = (await resp.json())["message"]
    return await client.post(
        f"/api/legacy/guardianships/{setup.plan_id}/approve",
        json={"signature": sign(guardian.keypair, message)},
        headers=session.headers,
    )


async def approve_plan(client: TestClient, setup: PlanSetup) -> None:
    """Report, then approve with as many guardians as the threshold asks: the plan is Approved."""
    resp = await report(client, setup, setup.guardians[0])
    assert resp.status == 200, await resp.text()
    needed = setup.overview["approvals"]["threshold"]
    for guardian in setup.guardians[:needed]:
        resp = await approve(client, setup, guardian)
        assert resp.status == 200, await resp.text()
    setup.overview = await get_overview(client, setup.owner)
    assert setup.overview["status"] == "Approved", setup.overview


async def release_plan(
    client: TestClient,
    owner_session: Session,
    clock: Clock,
    run_worker: Callable[..., Awaitable[Any]],
    **activate_options: Any,
) -> PlanSetup:
    """Draft → Released through HTTP and the worker's scan; returns the setup (plan id,
    beneficiaries with their claim tokens, guardians with their keypairs and sessions).

    `activate_options` go to `activate_plan` (allocations, guardians, threshold, settings).
    """
    setup = await activate_plan(client, owner_session, **activate_options)
    await approve_plan(client, setup)
    clock.advance(seconds=setup.overview["settings"]["cancelWindowSeconds"] + 1)
    await run_worker()
    setup.overview = await get_overview(client, owner_session)
    assert setup.overview["status"] == "Released", setup.overview
    return setup


# The owner's notices that `activate_plan` itself causes: one per guardian who accepts, and one for
# the activation (tests/test_guardian_invitations.py checks their words).
SETTING_UP_NOTICES = ("guardian_accepted", "plan_activated")


def past_setup(email_provider: Any, settings: Any, address: str = "owner@example.org") -> list[Any]:
    """The emails the provider received for `address`, less the notices of setting the plan up,
    told apart by their outbox row (each email's Idempotency-Key is its row's id)."""
    notices = query(
        settings,
        "SELECT id::text AS id FROM outbox WHERE kind = ANY(%s)",
        (list(SETTING_UP_NOTICES),),
    )
    ids = {row["id"] for row in notices}
    return [mail for mail in email_provider.to(address) if mail.headers["Idempotency-Key"] not in ids]
