"""`/plan` until the owner's home page lands (api/owner/home.py): where sign-in leads."""

from __future__ import annotations

from aiohttp import web
from aiohttp_apigami import docs

from api.owner import session as owner
from core.text.i18n import _

routes = web.RouteTableDef()


@routes.get(owner.HOME_PATH)
@docs(tags=["pages"], summary="The owner's plan", produces=["text/html"])
@owner.owner_page
async def home(request: web.Request) -> web.Response:
    return owner.render("owner/placeholder.html", request=request, title=_("Your legacy plan"))
