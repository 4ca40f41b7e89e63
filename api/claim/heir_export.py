"""`GET /api/claim/:token/export`: an heir's "download everything", one zip of what their
capsule shows (the heir's page links to it). Behind the claim gate like every claim route, so
the capsule's privacy headers apply; what goes in: models/flows/exports.py `heir_export`."""

from __future__ import annotations

from aiohttp import web
from aiohttp_apigami import docs

from api import html
from api.archive import readme
from api.archive.files import require_storage
from api.archive.owner_export import ZIP_NOTE, export_name, file_members, json_member, send_zip
from api.claim.capsule import released_body
from api.claim.gate import claim_gate
from api.keys import context
from api.schemas import error_responses
from core.clock import wire_time
from models.account import users
from models.claim import capsules
from models.flows import exports

routes = web.RouteTableDef()


@routes.get("/api/claim/{token}/export", allow_head=False)  # a HEAD would read every file for nothing
@docs(
    tags=["capsule"],
    summary="Download everything in the capsule, as one zip",
    description="Once the plan is released (409 before): `README.txt` first (a plain note: from whom, "
    "what you were left with your share of each asset in words, what each folder holds, the letters still "
    "to come), `capsule.json` (what `GET /api/claim/{token}` "
    "shows, the assets addressed to you included), every letter open to you as text with its date under "
    "`letters/` with its photo, voice or video, every document under `documents/`, and `manifest.json`. "
    "Nothing still sealed and nothing addressed only to someone else. At most 10 an hour per link (429 with "
    "`Retry-After`); the owner's timeline records it (`capsule.exported`). 503 when object storage is not "
    "configured." + ZIP_NOTE,
    produces=["application/zip"],
    responses={200: {"description": "The zip"}, **error_responses(409, 503)},
)
@claim_gate
async def heir_export(request: web.Request, capsule: capsules.Capsule) -> web.StreamResponse:
    ctx = context(request)
    storage = require_storage(request)
    keys = ctx.ring
    now = ctx.now()
    owner = users.known_as(name=capsule["owner_name"], wallet=capsule["owner_wallet"])
    # Every text file of the zip (the note, the letters) in the heir's page's language and zone
    # (their choice on it, else the one recorded for them).
    with html.speaking(request, locale=capsule["locale"], time_zone=capsule["time_zone"]):
        export = await exports.heir_export(ctx.pool, keys, ctx.redis, capsule=capsule, now=now)
        note = readme.heir_readme(export, owner=owner, now=now)
    members = [
        readme.member(note, now=now),
        json_member("capsule.json", now, released_body(export["contents"])),
        *file_members(storage, keys, export["files"], export["letters"]),
    ]
    return await send_zip(
        request,
        members,
        file_name=export_name("capsule", now),
        manifest={"exportedAt": wire_time(now), "notIncluded": export["damaged"]},
    )
