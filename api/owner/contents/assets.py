"""`/plan/assets`: what the owner leaves, each change the JSON route's own model call
(`/api/assets`: add, change, remove), the form read by the route's schema; each asset shown with
every heir's share in the very words that heir's capsule will say (models.claim.shares).
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from aiohttp import web
from aiohttp_apigami import docs

from api import html
from api.contents.schemas import AssetCreateSchema
from api.keys import context
from api.owner.contents import audience
from api.owner.forms import FormState, load, refused
from api.owner.plan_pages import DONE, done, owner_id, posted, show
from api.owner.session import owner_page
from core.errors import BadRequest, Conflict
from core.text.i18n import N_
from models import plans
from models.claim import shares
from models.contents import assets
from models.contents.assets import Asset
from models.contents.beneficiaries import Beneficiary
from models.plan import contents_pages

routes = web.RouteTableDef()

ASSETS = "/plan/assets"
ASSET = "/plan/assets/{id}"
REMOVED = N_("Your heirs will no longer see it in what you leave them. This cannot be undone.")
DONE.update(
    {
        "asset-added": N_("It was added to what you leave."),
        "asset-saved": N_("Your changes were saved."),
        "asset-removed": N_("It was removed from what you leave."),
    }
)


def heir_lines(asset: Asset, heirs: list[Beneficiary]) -> list[tuple[str, str]]:
    """(heir's name, their line) for each heir it is for: the capsule's own sentence, from the
    same arithmetic (each heir's allocation weighed among the heirs it is for)."""
    members = audience.members(asset["audience"], heirs)
    ids = None if asset["audience"]["all"] else [heir["id"] for heir in members]
    lines = []
    for heir in members:
        if asset["amount"] is None:
            others = [other["name"] for other in members if other["id"] != heir["id"]]
            words = shares.thing_words(shared_with=others)
        else:
            mine = shares.HeirShares(
                beneficiary_id=heir["id"],
                heirs=[(h["id"], Decimal(h["allocation_percentage"])) for h in heirs],
            )
            share = mine.share_among(amount=asset["amount"], audience=ids)
            words = shares.share_words(amount=asset["amount"], asset_code=asset["asset_code"], share=share)
        lines.append((heir["name"], words))
    return lines


def _wire(asset: Asset) -> dict[str, Any]:
    return {
        "label": asset["label"],
        "amount": None if asset["amount"] is None else format(asset["amount"], "f"),
        "assetCode": asset["asset_code"],
        "description": asset["description"],
        **audience.wire(asset["audience"]),
    }


async def _list(request: web.Request, form: FormState, *, status: int = 200) -> web.Response:
    ctx = context(request)
    view = await contents_pages.asset_list(ctx.pool, ctx.ring, user_id=owner_id(request))
    heirs = view["heirs"]
    with html.speaking(request):
        listed = [
            {
                "asset": asset,
                "what": shares.amount_words(amount=asset["amount"], asset_code=asset["asset_code"])
                if asset["amount"] is not None
                else None,
                "who": audience.words(asset["audience"], heirs),
                "lines": heir_lines(asset, heirs),
            }
            for asset in view["assets"][::-1]
        ]
    return show(
        request,
        "owner/assets.html",
        title=N_("What you leave"),
        status=status,
        listed=listed,
        heirs=heirs,
        open=view["status"] != plans.RELEASED,
        form=form,
    )


@routes.get(ASSETS)
@docs(tags=["pages"], summary="What the owner leaves, and a form to add to it", produces=["text/html"])
@owner_page
async def assets_page(request: web.Request) -> web.Response:
    return await _list(request, FormState.of({audience.ALL: "true"}))


@routes.post(ASSETS)
@docs(tags=["pages"], summary="Add an asset (the form of /plan/assets)", produces=["text/html"])
@owner_page
async def add_asset(request: web.Request) -> web.Response:
    ctx = context(request)
    data, form = load(AssetCreateSchema(), audience.chosen(await posted(request)))
    if data is not None:
        try:
            await assets.create(ctx.pool, ctx.ring, user_id=owner_id(request), data=data)
        except (BadRequest, Conflict) as error:
            refused(form, error)
        else:
            done(request, ASSETS, "asset-added")
    return await _list(request, form, status=422)


async def _edit(request: web.Request, form: FormState | None, *, status: int = 200) -> web.Response:
    ctx = context(request)
    asset = await assets.get(ctx.pool, ctx.ring, user_id=owner_id(request), raw_id=request.match_info["id"])
    view = await contents_pages.asset_list(ctx.pool, ctx.ring, user_id=owner_id(request))
    return show(
        request,
        "owner/asset_edit.html",
        title=N_("Change what you leave"),
        status=status,
        asset=asset,
        heirs=view["heirs"],
        form=form if form is not None else FormState.of(_wire(asset)),
    )


@routes.get(ASSET)
@docs(tags=["pages"], summary="Change an asset", produces=["text/html"])
@owner_page
async def asset_page(request: web.Request) -> web.Response:
    return await _edit(request, None)


@routes.post(ASSET)
@docs(tags=["pages"], summary="Save an asset", produces=["text/html"])
@owner_page
async def change_asset(request: web.Request) -> web.Response:
    """Every field is on the form, so it is read as a whole asset (the create schema); the
    model changes only what differs, as a PATCH."""
    ctx = context(request)
    changes, form = load(AssetCreateSchema(), audience.chosen(await posted(request)))
    if changes is not None:
        try:
            await assets.update(
                ctx.pool,
                ctx.ring,
                user_id=owner_id(request),
                raw_id=request.match_info["id"],
                changes=changes,
            )
        except (BadRequest, Conflict) as error:
            refused(form, error)
        else:
            done(request, ASSETS, "asset-saved")
    return await _edit(request, form, status=422)


@routes.get(ASSET + "/remove")
@docs(tags=["pages"], summary="Confirm removing an asset", produces=["text/html"])
@owner_page
async def remove_asset_page(request: web.Request) -> web.Response:
    """The confirmation step: a GET shows it and changes nothing."""
    ctx = context(request)
    asset = await assets.get(ctx.pool, ctx.ring, user_id=owner_id(request), raw_id=request.match_info["id"])
    return show(
        request,
        "owner/remove.html",
        title=N_("Remove from what you leave"),
        name=asset["label"],
        consequence=REMOVED,
        action=f"{ASSETS}/{asset['id']}/remove",
        back=ASSETS,
        back_words=N_("What you leave"),
    )


@routes.post(ASSET + "/remove")
@docs(tags=["pages"], summary="Remove an asset", produces=["text/html"])
@owner_page
async def remove_asset(request: web.Request) -> web.Response:
    ctx = context(request)
    await assets.delete(ctx.pool, user_id=owner_id(request), raw_id=request.match_info["id"])
    done(request, ASSETS, "asset-removed")
