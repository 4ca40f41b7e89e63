"""`GET /api/legacy/export`: everything the owner entrusted, as one zip streamed as it is written,
and `send_zip`, which the heir's "download everything" (api/claim/heir_export.py) shares.

What goes in and under which path is the model's (models/flows/exports.py); this module turns
it into the wire shape (the same schemas as the JSON routes) and streams the archive
(core/files/zipstream.py): memory stays flat whatever the size.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator, Iterable
from datetime import datetime
from typing import Any

from aiohttp import web
from aiohttp.hdrs import CONTENT_TYPE
from aiohttp_apigami import docs

from api.account.schemas import user_schema
from api.activity import activity_schema
from api.archive import readme
from api.archive.files import content_disposition, require_storage
from api.archive.schemas import item_schema
from api.common import dump_many
from api.contents.schemas import BeneficiarySchema, asset_schema, guardian_schema, message_schema
from api.keys import USER_ID, context
from api.plan.schemas import settings_schema
from api.schemas import error_responses
from core.clock import wire_time
from core.files.crypto import IntegrityError, KeyRing
from core.files.sealed_files import open_plaintext
from core.files.storage import ObjectNotFound, Storage, StorageError
from core.files.zipstream import Member, Unreadable, in_memory, zip_stream
from core.logging import request_id_var
from core.text import i18n
from models.flows import exports

log = logging.getLogger(__name__)
routes = web.RouteTableDef()

# Through marshmallow itself, not dump_many: its per-class field plan would bring back the
# excluded claim token.
_beneficiary = BeneficiarySchema(exclude=("claimToken",))

ZIP_NOTE = (
    " Streamed as it is written (`Transfer-Encoding: chunked`, no `Content-Length`). `manifest.json`, the "
    "last entry, lists every other entry's `path`, `size` and `sha256`, and under `damaged` any file that "
    "could not be read whole (`included: false`: left out; `true`: cut short where the damage starts). "
    "A failure of the store itself mid-way cuts the connection: the zip is then incomplete and unreadable, "
    "never silently short."
)


def json_member(path: str, modified: datetime, value: Any) -> Member:
    """A JSON document of the export (deflated)."""
    data = json.dumps(value, indent=2, ensure_ascii=False).encode()
    return Member(path=path, modified=modified, open=in_memory(data), compress=True)


def file_members(
    storage: Storage, keys: KeyRing, files: Iterable[exports.ExportFile], texts: Iterable[exports.ExportText]
) -> list[Member]:
    """The letters (text, deflated) then the files (stored as they are, decrypted as they go)."""
    members = [
        Member(path=t["path"], modified=t["created_at"], open=in_memory(t["text"].encode()), compress=True)
        for t in texts
    ]
    for f in files:
        served = f["file"]

        async def source(served: Any = served) -> AsyncIterator[bytes]:
            where = {"itemId": served["id"], "keyId": served["key_id"]}
            try:
                async for chunk in open_plaintext(storage, keys, served):
                    yield chunk
            except ObjectNotFound:
                log.error("export: archive object missing from storage", extra=where)
                raise Unreadable("the stored file is missing") from None
            except IntegrityError as exc:
                log.error("export: archive integrity check failed", extra={**where, "error": str(exc)})
                raise Unreadable("the stored file failed its integrity check") from None

        members.append(
            Member(path=f["path"], modified=f["created_at"], open=source, size=served["size_bytes"])
        )
    return members


async def send_zip(
    request: web.Request, members: list[Member], *, file_name: str, manifest: dict[str, Any]
) -> web.StreamResponse:
    """Stream the zip of `members` and its manifest. A store that fails (not a damaged file,
    which the manifest names) aborts the connection: a zip cut short is unreadable, never
    mistaken for a whole one."""
    response = web.StreamResponse(
        headers={
            CONTENT_TYPE: "application/zip",
            "Content-Disposition": content_disposition(file_name),
            "X-Content-Type-Options": "nosniff",
            "Cache-Control": "no-store",
            "Content-Security-Policy": "default-src 'none'; sandbox",
            "X-Request-Id": request_id_var.get(),
        }
    )
    response.enable_chunked_encoding()
    await response.prepare(request)
    try:
        async for chunk in zip_stream(members, manifest_extra=manifest):
            await response.write(chunk)
    except ConnectionError:
        return response  # the client went away
    except StorageError as exc:
        log.error("export aborted: object storage failed mid-way", extra={"error": str(exc)})
        if request.transport is not None:
            request.transport.abort()
        return response
    await response.write_eof()
    return response


def plan_document(export: exports.OwnerExport) -> dict[str, Any]:
    """plan.json: the plan as the JSON routes show it (its settings through GET /api/legacy's own
    schema), claim tokens left out."""
    plan = export["plan"]
    return {
        "owner": user_schema.dump(export["user"]),
        "status": plan["status"] if plan else "Draft",
        "settings": None if plan is None else settings_schema.dump(plan),
        "beneficiaries": _beneficiary.dump(export["beneficiaries"], many=True),
        "guardians": dump_many(guardian_schema, export["guardians"]),
        "assets": [asset_schema.dump(a) for a in export["assets"]],
        "messages": [message_schema.dump(m) for m in export["messages"]],
        "archive": [item_schema.dump(i) for i in export["archive"]],
        "archiveNotIncluded": [
            {"id": i["id"], "title": i["title"], "status": i["status"]} for i in export["left_out"]
        ],
    }


def export_name(prefix: str, now: datetime) -> str:
    return f"{prefix}-{now:%Y-%m-%d}.zip"


@routes.get("/api/legacy/export", allow_head=False)  # a HEAD would read every file for nothing
@docs(
    tags=["legacy"],
    summary="Download everything you entrusted, as one zip",
    description="`README.txt` first (a plain note: whose plan, what each file and folder holds, what "
    "could not be included), `plan.json` (your profile, the plan's settings, beneficiaries without their "
    "claim links, "
    "guardians, assets, messages with their release rules and audiences, archive items), `timeline.json`, "
    "every letter as text and its photo, voice or video under `messages/`, every archive file decrypted "
    "under `archive/` with its name made safe, and `manifest.json`. Files not verified yet, failed or "
    "damaged are named in `plan.json` `archiveNotIncluded`. Until the plan is released (then 409: each heir "
    "downloads their own capsule); at most 3 an hour (429 with `Retry-After`); each one is on your "
    "timeline (`legacy.exported`). 503 when object storage is not configured." + ZIP_NOTE,
    produces=["application/zip"],
    responses={200: {"description": "The zip"}, **error_responses(401, 409, 429, 503)},
)
async def owner_export(request: web.Request) -> web.StreamResponse:
    ctx = context(request)
    storage = require_storage(request)
    keys = ctx.ring
    export = await exports.owner_export(ctx.pool, keys, ctx.redis, user_id=request[USER_ID])
    now = ctx.now()
    with i18n.speaking(export["user"]["locale"], export["user"]["time_zone"]):  # the owner's note
        note = readme.owner_readme(export, now=now)
    members = [
        readme.member(note, now=now),
        json_member("plan.json", now, plan_document(export)),
        json_member("timeline.json", now, dump_many(activity_schema, export["timeline"])),
        *file_members(storage, keys, export["files"], export["letters"]),
    ]
    return await send_zip(
        request, members, file_name=export_name("legacy-plan", now), manifest={"exportedAt": wire_time(now)}
    )
