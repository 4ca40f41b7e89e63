"""Capsule test harness: an owner with heirs, messages and documents, released through the
real lifecycle routes and worker, and a beneficiary's view of it through their token alone."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import aiohttp
import pytest_asyncio

from core.clock import Clock
from core.settings import Settings
from tests.archive_helpers import Archive, harness
from tests.lifecycle_helpers import PlanSetup, release_plan
from tests.plan_helpers import create, query

PRIVACY_HEADERS = {
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
    "X-Robots-Tag": "noindex, nofollow",
}


def assert_private(resp: aiohttp.ClientResponse) -> None:
    """Every /api/claim/* response carries the capsule's privacy headers, errors included."""
    for name, value in PRIVACY_HEADERS.items():
        assert resp.headers.get(name) == value, (resp.status, name, resp.headers.get(name))


@dataclass
class Family:
    """An owner (`vault.session`) with heirs, on one storage backend, with the test clock."""

    vault: Archive
    clock: Clock
    heirs: list[dict[str, Any]] = field(default_factory=list)  # as created, with claimToken

    @property
    def client(self) -> Any:
        return self.vault.client

    @property
    def owner(self) -> Any:
        return self.vault.session

    @property
    def settings(self) -> Settings:
        return self.vault.settings

    async def add_heir(self, name: str, share: int) -> dict[str, Any]:
        heir = await create(
            self.client,
            self.owner,
            "beneficiaries",
            name=name,
            email=f"{name.lower()}@example.org",
            allocationPercentage=share,
        )
        self.heirs.append(heir)
        return heir

    async def message(
        self, content: str, *, rule: tuple[str, Any] = ("on_release", None), to: Any = "all", **extra: Any
    ) -> dict[str, Any]:
        audience = {"all": True} if to == "all" else {"beneficiaryIds": [h["id"] for h in to]}
        return await create(
            self.client,
            self.owner,
            "messages",
            content=content,
            releaseRule={"kind": rule[0], "value": rule[1]},
            audience=audience,
            **extra,
        )

    async def document(self, data: bytes, *, to: Any = "all", **fields: str) -> dict[str, Any]:
        audience = {"all": True} if to == "all" else {"beneficiaryIds": [h["id"] for h in to]}
        return await self.vault.upload_ok(data, audience=json.dumps(audience), **fields)

    async def release(self) -> PlanSetup:
        """Released through the lifecycle routes (activation, guardian approvals, the cancel
        window on the test clock) and the real worker on this backend, which also verifies
        every upload still pending. The heirs are this family's own (allocations total 100)."""
        await self.vault.work()
        return await release_plan(self.client, self.owner, self.clock, self.vault.work, allocations=())

    async def open(self, token: str, path: str = "", **kwargs: Any) -> aiohttp.ClientResponse:
        resp = await self.client.get(f"/api/claim/{token}{path}", **kwargs)
        assert_private(resp)
        return resp

    async def capsule(self, heir: dict[str, Any]) -> dict[str, Any]:
        resp = await self.open(heir["claimToken"])
        body: dict[str, Any] = await resp.json()
        assert resp.status == 200, body
        return body

    async def preview(self, heir: dict[str, Any]) -> dict[str, Any]:
        resp = await self.client.get(f"/api/legacy/preview/{heir['id']}", headers=self.owner.headers)
        body: dict[str, Any] = await resp.json()
        assert resp.status == 200, body
        return body

    def timeline(self, kind_prefix: str = "capsule.") -> list[dict[str, Any]]:
        return query(
            self.settings,
            "SELECT kind, entity_type, entity_id, summary, metadata FROM activity"
            " WHERE user_id = %s AND kind LIKE %s ORDER BY created_at, id",
            (self.owner.user["id"], kind_prefix + "%"),
        )


async def family(
    make_client: Any,
    run_worker: Any,
    settings: Settings,
    backend: dict[str, Any],
    clock: Clock,
    **overrides: Any,
) -> Family:
    fam = Family(await harness(make_client, run_worker, settings, backend, **overrides), clock)
    # The name release_plan gives the owner, set from the start so a rehearsal shows it too.
    resp = await fam.client.patch("/api/users/me", json={"name": "Olive Owner"}, headers=fam.owner.headers)
    assert resp.status == 200, await resp.text()
    return fam


@pytest_asyncio.fixture
async def fam(
    make_client: Any, run_worker: Any, settings: Settings, file_backend: dict[str, Any], clock: Clock
) -> Family:
    """The usual family: file storage (tests of both backends build theirs with `family`)."""
    return await family(make_client, run_worker, settings, file_backend, clock)
