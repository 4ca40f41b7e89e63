"""What the owner's contents pages read (`/plan/assets`, `/plan/messages`, `/plan/archive`): the
same rows as the JSON routes' lists, with the heirs they are addressed to, in a number of
statements that does not grow with the plan (each list in one statement; docs/pages.md).

Read-only: the changes go through the JSON routes' own functions (models.contents.assets,
.messages, models.archive.items).
"""

from __future__ import annotations

from datetime import datetime
from typing import TypedDict

from core.db import Pool, autocommit
from core.files.crypto import KeyRing
from models import plans
from models.archive import items
from models.archive.items import ArchiveItem
from models.contents import assets, beneficiaries, messages
from models.contents.assets import Asset
from models.contents.beneficiaries import Beneficiary
from models.contents.messages import Message
from models.plan.owner_pages import EVERYONE


class Contents(TypedDict):
    status: str
    heirs: list[Beneficiary]  # in the order they were added (the capsule's "owner's order")
    assets: list[Asset]
    messages: list[Message]
    documents: list[ArchiveItem]


async def _status(pool: Pool, *, user_id: str) -> str:
    async with autocommit(pool) as cur:
        plan = await plans.get(cur, user_id=user_id)
    return plan["status"] if plan else plans.DRAFT


async def _heirs(pool: Pool, ring: KeyRing, *, user_id: str) -> list[Beneficiary]:
    listed = await beneficiaries.list_page(pool, ring, user_id=user_id, page=EVERYONE)
    return listed.items[::-1]


async def asset_list(pool: Pool, ring: KeyRing, *, user_id: str) -> Contents:
    """Every asset as GET /api/assets lists them, and every heir (for their shares)."""
    listed = await assets.list_page(pool, ring, user_id=user_id, page=EVERYONE)
    heirs = await _heirs(pool, ring, user_id=user_id)
    status = await _status(pool, user_id=user_id)
    return Contents(status=status, heirs=heirs, assets=listed.items, messages=[], documents=[])


async def letters(pool: Pool, ring: KeyRing, *, user_id: str, now: datetime) -> Contents:
    """Every letter as GET /api/messages gives them, every heir, and the files a letter may carry."""
    listed = await messages.list_for_owner(pool, ring, user_id=user_id, page=EVERYONE, now=now)
    heirs = await _heirs(pool, ring, user_id=user_id)
    files = await items.list_page(pool, ring, user_id=user_id, page=EVERYONE)
    status = await _status(pool, user_id=user_id)
    return Contents(status=status, heirs=heirs, assets=[], messages=listed.items, documents=files.items)


async def documents(pool: Pool, ring: KeyRing, *, user_id: str) -> Contents:
    """Every file as GET /api/archive lists them, and every heir (for their audiences)."""
    files = await items.list_page(pool, ring, user_id=user_id, page=EVERYONE)
    heirs = await _heirs(pool, ring, user_id=user_id)
    status = await _status(pool, user_id=user_id)
    return Contents(status=status, heirs=heirs, assets=[], messages=[], documents=files.items)
