"""What the owner's own pages read (`/plan`, `/plan/heirs`, `/plan/guardians`): the same rows
and sentences as the JSON routes, read in a number of statements that does not grow with the
plan (every heir and guardian in one statement each; docs/pages.md "The owner's pages").

Read-only. The changes the pages make go through the JSON routes' own functions
(models.contents.beneficiaries, .guardians, .email_confirmations, models.flows.lifecycle).
"""

from __future__ import annotations

from typing import TypedDict

from core.db import Pool, autocommit
from core.files.crypto import KeyRing
from models import plans
from models.contents import beneficiaries, guardians
from models.contents.beneficiaries import Beneficiary
from models.contents.guardians import Guardian
from models.pagination import MAX_LIMIT, PageRequest
from models.plan import journey
from models.plan.journey import Overview

# Every row of a list on one page: an owner's heirs and guardians are a family, not a feed.
EVERYONE = PageRequest(limit=MAX_LIMIT)


class Home(TypedDict):
    overview: Overview
    guardians: list[Guardian]


class Heirs(TypedDict):
    status: str
    heirs: list[Beneficiary]


class Guardians(TypedDict):
    plan: plans.Plan | None
    guardians: list[Guardian]


async def home(
    pool: Pool, ring: KeyRing, *, user_id: str, defaults: plans.NewPlan | None, contract: bool
) -> Home:
    """The overview of GET /api/legacy (the plan created in Draft on a first visit, as there),
    with every guardian's answer."""
    view = await journey.overview(pool, ring, user_id=user_id, defaults=defaults, contract=contract)
    listed = await guardians.list_page(pool, ring, user_id=user_id, page=EVERYONE)
    return Home(overview=view, guardians=listed.items)


async def heirs(pool: Pool, ring: KeyRing, *, user_id: str) -> Heirs:
    """Every heir as GET /api/beneficiaries lists them, and where the plan stands."""
    listed = await beneficiaries.list_page(pool, ring, user_id=user_id, page=EVERYONE)
    async with autocommit(pool) as cur:
        plan = await plans.get(cur, user_id=user_id)
    return Heirs(status=plan["status"] if plan else plans.DRAFT, heirs=listed.items)


async def guardian_list(pool: Pool, ring: KeyRing, *, user_id: str) -> Guardians:
    """Every guardian as GET /api/guardians lists them, and the plan (for its threshold)."""
    listed = await guardians.list_page(pool, ring, user_id=user_id, page=EVERYONE)
    async with autocommit(pool) as cur:
        plan = await plans.get(cur, user_id=user_id)
    return Guardians(plan=plan, guardians=listed.items)
