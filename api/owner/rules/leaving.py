"""The data's way out, from the account page: the owner's zip (the handler of `GET
/api/legacy/export`, for the session's account, behind a POST: it is counted and put on the
timeline) and account deletion (`DELETE /api/users/me`'s `deletion.start`), whose second page
says what is deleted and which links stop, the API's `confirm` chosen from the owner's wallets.
docs/pages.md.
"""

from __future__ import annotations

from aiohttp import web
from aiohttp_apigami import docs

from api import html
from api.archive import owner_export
from api.keys import USER_ID, context
from api.owner import session
from api.owner.plan_pages import owner_id, posted, show
from api.owner.session import owner_page
from core.errors import BadRequest, Conflict
from core.text.i18n import N_, _
from models import plans
from models.account import users
from models.flows import deletion

routes = web.RouteTableDef()

ACCOUNT = "/plan/account"
DELETE = ACCOUNT + "/delete"
# The API's 409s (models/flows/deletion.py), as the owner reads them.
REFUSED = {
    plans.PENDING: N_(
        "Your guardians are being asked about your plan right now, so your account cannot be deleted. "
        "Check in first: that stops the verification. Then you can delete your account."
    ),
    plans.APPROVED: N_(
        "Your guardians approved the release of your plan, so your account cannot be deleted: your heirs' "
        "links must not vanish in the middle of a release. Check in first to stop the release."
    ),
    plans.RELEASED: N_(
        "Your plan has been released to your heirs: it is theirs now, and your account cannot be deleted."
    ),
}
_BY_MESSAGE = {message: REFUSED[status] for status, message in deletion.REFUSED.items()}


@routes.post(ACCOUNT + "/export")
@docs(
    tags=["pages"],
    summary="Download everything as one zip (GET /api/legacy/export)",
    produces=["application/zip"],
)
@owner_page
async def export(request: web.Request) -> web.StreamResponse:
    """The JSON route's own handler, for the session's account: the same zip, limit and entry."""
    request[USER_ID] = owner_id(request)
    return await owner_export.owner_export(request)


async def _confirm_page(
    request: web.Request, *, refusal: str | None = None, status: int = 200
) -> web.Response:
    ctx = context(request)
    user = await users.get_with_wallets(ctx.pool, ctx.ring, user_id=owner_id(request))
    return show(
        request,
        "owner/delete_account.html",
        title=N_("Delete your account"),
        status=status,
        wallets=user["wallets"],
        refusal=refusal,
    )


@routes.get(DELETE)
@docs(
    tags=["pages"],
    summary="What deleting the account does, and its confirmation",
    produces=["text/html"],
)
@owner_page
async def delete_page(request: web.Request) -> web.Response:
    return await _confirm_page(request)


@routes.post(DELETE)
@docs(
    tags=["pages"],
    summary="Delete the account (DELETE /api/users/me)",
    produces=["text/html"],
)
@owner_page
async def delete_account(request: web.Request) -> web.Response:
    ctx = context(request)
    form = await posted(request)
    try:
        await deletion.start(
            ctx.pool,
            ctx.redis,
            check=ctx.accounts,
            user_id=owner_id(request),
            confirm=(form.get("confirm") or "").strip(),
            now=ctx.now(),
        )
    except Conflict as error:
        with html.speaking(request):
            said = _(_BY_MESSAGE.get(str(error.message), REFUSED[plans.RELEASED]))
        return await _confirm_page(request, refusal=said, status=409)
    except BadRequest:
        with html.speaking(request):
            said = _("Choose one of your wallets below to confirm.")
        return await _confirm_page(request, refusal=said, status=422)
    with html.speaking(request):
        response = html.render("owner/deleted.html", reader=request, title=_("Your account is being deleted"))
    session.clear_cookie(response, ctx.settings, base=session.SESSION_COOKIE)
    return response
