"""`/plan/archive`: the owner's documents from a browser. The upload is a plain multipart form,
streamed as the JSON route streams it (api/archive/routes.py `receive`: sealed as it arrives,
nothing held whole); its text fields and the form token come before the file and are read
before a byte of it. Each file's state in words, with what to do; the page refreshes itself while
a file is being sealed; a missing store is said, not a broken form. docs/pages.md.
"""

from __future__ import annotations

import base64
import hashlib
import json
from typing import Any

from aiohttp import web
from aiohttp_apigami import docs
from multidict import MultiDict

from api import html
from api.archive import routes as archive_routes
from api.archive.files import require_storage, send_file
from api.keys import context
from api.owner.contents import audience
from api.owner.forms import FormState, refused
from api.owner.plan_pages import DONE, done, owner_id, show
from api.owner.session import check_form_token, owner_page, owner_upload
from api.schemas import MAX_AUDIENCE
from core.errors import AppError, Conflict
from core.text import i18n
from core.text.i18n import N_, _
from models import plans
from models.archive import items, serving
from models.plan import contents_pages

routes = web.RouteTableDef()

ARCHIVE = "/plan/archive"
ITEM = "/plan/archive/{id}"
TOKEN = "formToken"  # noqa: S105 - the form field's name, not a secret
BACK = {"messages": "/plan/messages"}  # where an upload made from another page goes back to
FIELDS = ("title", "type", "category", "description", audience.ALL, audience.IDS, TOKEN, "back")
REFRESH_SECONDS = 10
TOO_LARGE = N_("This file is larger than the limit of {limit}: nothing of it was kept.")
STORE_DOWN = N_(
    "Your file could not be stored just now: the service's file storage is not set up or not reachable. "
    "Nothing was kept; please try again later."
)
REMOVED = N_("The file is deleted for good: your heirs will not receive it. This cannot be undone.")
DONE.update(
    {
        "uploaded": N_("Your file arrived. It is being sealed and stored: this page shows when it is ready."),
        "file-removed": N_("The file was deleted."),
        "file-in-use": N_(
            "This file goes with one of your letters: take it off the letter first, then delete it."
        ),
    }
)
STATES = {
    "pending": N_("Being sealed and stored. Nothing to do: this page refreshes itself until it is ready."),
    "available": N_("Sealed and stored: your heirs will be able to open it."),
    "failed": N_("It could not be stored. Delete it and upload the file again."),
    "damaged": N_(
        "Our regular check found the stored copy damaged: it can no longer be opened. Delete it and "
        "upload the file again."
    ),
}
TYPE_WORDS = {
    "document": N_("A document"),
    "photo": N_("A photo"),
    "video": N_("A video"),
    "voice": N_("A voice recording"),
    "other": N_("Something else"),
}
CATEGORY_WORDS = {
    "legal": N_("Legal (a will, a power of attorney)"),
    "financial": N_("Money and banks"),
    "medical": N_("Health"),
    "insurance": N_("Insurance"),
    "property": N_("Property and homes"),
    "digital_accounts": N_("Online accounts"),
    "personal": N_("Personal"),
    "other": N_("Other"),
}
# While a large file is sent, the form shows how much has gone: the service's own script,
# allowed by its hash alone. Without it the form posts as any form does.
PROGRESS_SCRIPT = (
    '(function(){var f=document.getElementById("upload");var p=document.getElementById("progress");'
    "if(!f||!p||!window.XMLHttpRequest||!window.FormData)return;"
    'f.addEventListener("submit",function(e){e.preventDefault();var x=new XMLHttpRequest();'
    'x.open("POST",f.action);p.hidden=false;'
    "x.upload.onprogress=function(v){if(v.lengthComputable){p.value=v.loaded;p.max=v.total;}};"
    "x.onload=function(){if(x.status<400){location.assign(x.responseURL);}"
    "else{document.open();document.write(x.responseText);document.close();}};"
    "x.onerror=function(){f.submit();};x.send(new FormData(f));});})();"
)
PROGRESS_HASH = "sha256-" + base64.b64encode(hashlib.sha256(PROGRESS_SCRIPT.encode()).digest()).decode()


def upload_limit(request: web.Request) -> str:
    """The size limit in words, said before the upload."""
    with html.speaking(request):
        return i18n.megabytes(context(request).settings.archive_max_bytes / 1_000_000)


def _choices(request: web.Request) -> dict[str, Any]:
    with html.speaking(request):
        return {
            "type_choices": [(value, _(words)) for value, words in TYPE_WORDS.items()],
            "category_choices": [(value, _(words)) for value, words in CATEGORY_WORDS.items()],
        }


async def _list(request: web.Request, form: FormState, *, status: int = 200) -> web.Response:
    ctx = context(request)
    view = await contents_pages.documents(ctx.pool, ctx.ring, user_id=owner_id(request))
    heirs = view["heirs"]
    with html.speaking(request):
        listed = [
            {
                "item": item,
                "state": _(STATES.get(item["status"], STATES["failed"])),
                "kind": _(TYPE_WORDS.get(item["type"], TYPE_WORDS["other"])),
                "size": i18n.megabytes(item["size_bytes"] / 1_000_000),
                "who": audience.words(item["audience"], heirs),
            }
            for item in view["documents"]
        ]
    response = show(
        request,
        "owner/archive.html",
        title=N_("Your documents"),
        status=status,
        listed=listed,
        heirs=heirs,
        stored=ctx.storage is not None,
        refresh=REFRESH_SECONDS if any(item["status"] == "pending" for item in view["documents"]) else None,
        open=view["status"] != plans.RELEASED,
        form=form,
        upload_limit=upload_limit(request),
        progress_script=PROGRESS_SCRIPT,
        **({"script": True} if ctx.storage is not None and view["status"] != plans.RELEASED else {}),
        **_choices(request),
    )
    return html.with_inline_script(response, digest=PROGRESS_HASH)


@routes.get(ARCHIVE)
@docs(tags=["pages"], summary="The owner's documents, and a form to upload one", produces=["text/html"])
@owner_page
async def archive_page(request: web.Request) -> web.Response:
    return await _list(request, FormState.of({audience.ALL: "true"}))


def _fields(request: web.Request, every: MultiDict[str]) -> dict[str, str]:
    """The fields sent before the file, as the JSON route reads them (`audience` a JSON text),
    once the form token is this session's: nothing of the file is read before."""
    check_form_token(request, every.get(TOKEN))
    request["back"] = BACK.get(every.get("back", ""), ARCHIVE)
    request["fields"] = every
    read = audience.chosen(every)
    values = {name: read[name] for name in ("title", "type", "category", "description") if name in read}
    ids = read.getall(audience.IDS, [])
    values["audience"] = json.dumps({"beneficiaryIds": ids} if ids else {"all": True})
    return values


@routes.post(ARCHIVE)
@docs(
    tags=["pages"], summary="Upload a document (the multipart form of /plan/archive)", produces=["text/html"]
)
@owner_upload
async def upload(request: web.Request) -> web.Response:
    try:
        await archive_routes.receive(
            request,
            user_id=owner_id(request),
            wanted=FIELDS,
            check=lambda every: _fields(request, every),
            max_parts=archive_routes.MAX_PARTS + MAX_AUDIENCE,
        )
    except AppError as error:
        if error.status not in (400, 409, 413, 503):
            raise
        return await _list(
            request, _refused(request, error), status=error.status if error.status != 400 else 422
        )
    done(request, request["back"], "uploaded")


def _refused(request: web.Request, error: AppError) -> FormState:
    """The upload form again with what refused it: a field's complaint beside it; the size limit
    and the store's absence or outage in words (the API's 413 and 503 are for programs)."""
    form = FormState(values=MultiDict(request.get("fields", MultiDict())))
    if error.status not in (413, 503):
        return refused(form, error)
    with html.speaking(request):
        if error.status == 413:
            return form.refuse({"file": [_(TOO_LARGE).format(limit=upload_limit(request))]})
        return form.refuse(_(STORE_DOWN))


@routes.get(ITEM + "/download")
@docs(tags=["pages"], summary="Download one of the owner's documents", produces=["application/octet-stream"])
@owner_page
async def download(request: web.Request) -> web.StreamResponse:
    """The owner's own download (GET /api/archive/:id/download): the same checks, the same stream."""
    ctx = context(request)
    storage = require_storage(request)
    item = await serving.get_sealed(
        ctx.pool, ctx.ring, user_id=owner_id(request), raw_id=request.match_info["id"], now=ctx.now()
    )
    serving.require_available(item=item)
    return await send_file(request, storage, item)


@routes.get(ITEM + "/remove")
@docs(tags=["pages"], summary="Confirm deleting a document", produces=["text/html"])
@owner_page
async def remove_page(request: web.Request) -> web.Response:
    """The confirmation step: a GET shows it and changes nothing."""
    ctx = context(request)
    item = await items.get(ctx.pool, ctx.ring, user_id=owner_id(request), raw_id=request.match_info["id"])
    return show(
        request,
        "owner/remove.html",
        title=N_("Delete a document"),
        name=item["title"],
        consequence=REMOVED,
        action=f"{ARCHIVE}/{item['id']}/remove",
        back=ARCHIVE,
        back_words=N_("Your documents"),
    )


@routes.post(ITEM + "/remove")
@docs(tags=["pages"], summary="Delete a document", produces=["text/html"])
@owner_page
async def remove(request: web.Request) -> web.Response:
    """DELETE /api/archive/:id from the page: the row, then the stored file (or the sweeper's)."""
    ctx = context(request)
    try:
        key = await items.delete(ctx.pool, user_id=owner_id(request), raw_id=request.match_info["id"])
    except Conflict:
        done(request, ARCHIVE, "file-in-use")
    if ctx.storage is not None:
        await items.remove_object(ctx.pool, ctx.storage, key=key)
    done(request, ARCHIVE, "file-removed")
