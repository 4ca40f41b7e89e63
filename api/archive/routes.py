"""/api/archive: encrypted files. Uploads are sealed as they stream in, a worker verifies them,
downloads are decrypted as they stream out.

Nothing here holds a whole file: the upload is read part by part from the socket, encrypted
in ~1 MiB chunks and put straight into object storage; the download is decrypted segment by
segment as it is sent. See docs/archive.md for the lifecycle, the formats and the operator's
side (keys, sweeper).
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable, Collection
from typing import Any

from aiohttp import BodyPartReader, web
from aiohttp.hdrs import CONTENT_TYPE
from aiohttp_apigami import docs, response_schema
from marshmallow import ValidationError
from multidict import MultiDict

from api.archive import multipart
from api.archive.files import RANGE_NOTE, require_storage, send_file, storage_down
from api.archive.schemas import ArchiveItemSchema, UploadFieldsSchema, item_schema
from api.common import Doc, Owned, json_response
from api.keys import USER_ID, Context, context
from api.schemas import error_responses
from core.errors import validation_error
from core.files import sealed_files
from core.files.storage import StorageError
from models.archive import items, serving
from models.archive.upload_rules import check_content_type, normalize_content_type, sanitize_file_name
from models.pagination import Page, PageRequest

routes = web.RouteTableDef()

TEXT_FIELDS = ("title", "type", "category", "description", "audience")
MAX_PARTS = 16
# The multipart body may exceed ARCHIVE_MAX_BYTES by this much: text fields and boundaries.
FORM_OVERHEAD = 64 * 1024

LIFECYCLE = (
    "Files are encrypted at rest (AES-256-GCM streaming, a data key per file wrapped under "
    "ENCRYPTION_KEYS). `status`: `pending` (stored encrypted, being verified), `available` "
    "(downloadable), `failed` (see `failureReason`; delete and upload again), `damaged` (the regular "
    "check found the stored file damaged: `damagedAt`; delete and upload again)."
)


upload_fields = UploadFieldsSchema()

UPLOAD_BODY = {
    "required": True,
    "content": {
        "multipart/form-data": {
            "schema": {
                "type": "object",
                "required": ["file"],
                "properties": {
                    "file": {"type": "string", "format": "binary", "description": "The file; not empty."},
                    "title": {"type": "string", "maxLength": 200, "description": "Default: the file name."},
                    "type": {"type": "string", "enum": list(items.TYPES), "default": "document"},
                    "category": {"type": "string", "enum": list(items.CATEGORIES), "default": "other"},
                    "description": {"type": "string", "maxLength": 2000},
                    "audience": {
                        "type": "string",
                        "description": 'JSON: {"all": true} (default) or {"beneficiaryIds": [...]}.',
                    },
                },
            },
            "encoding": {"file": {"contentType": "*/*"}},
        }
    },
}


# --------------------------------------------------------------------------------------------
# Upload
# --------------------------------------------------------------------------------------------


def _validated(values: dict[str, str], file: dict[str, str]) -> dict[str, Any]:
    """The text fields and the file's name and type, checked together (a photo must be an image)."""
    try:
        data: dict[str, Any] = upload_fields.load(values)
    except ValidationError as exc:
        raise validation_error(exc.messages) from None
    check_content_type(item_type=data["type"], content_type=file["content_type"])
    return {**data, **file}


def _file_metadata(part: BodyPartReader) -> dict[str, str]:
    return {
        "file_name": sanitize_file_name(raw=part.filename),
        "content_type": normalize_content_type(raw=part.headers.get(CONTENT_TYPE)),
    }


@routes.post("/api/archive")
@docs(
    tags=["archive"],
    summary="Upload a file (multipart/form-data); it is encrypted as it arrives, then verified",
    description=LIFECYCLE
    + " Returns 202 with the item in status `pending` once the encrypted file is stored; a worker"
    " then verifies it and makes it `available`. Limit: ARCHIVE_MAX_BYTES (default 100 MiB),"
    " checked against Content-Length before the body is read and while it streams (413). Send the"
    " text fields before `file` so that mistakes are reported before the upload. `photo` needs an"
    " image/*, `video` a video/* and `voice` an audio/* content type. Storage not configured or"
    " unreachable: 503.",
    requestBody=UPLOAD_BODY,
    responses=error_responses(400, 401, 409, 413, 503),
)
@response_schema(ArchiveItemSchema, 202)
async def upload(request: web.Request) -> web.Response:
    """Read the fields sent before the file and check them; seal the file into storage as it
    streams in; read the fields after it; commit the item; enqueue its verification."""
    item = await receive(request, user_id=request[USER_ID])
    return json_response(item_schema.dump(item), status=202)


Check = Callable[[MultiDict[str]], dict[str, str]]


async def receive(
    request: web.Request,
    *,
    user_id: str,
    wanted: Collection[str] = TEXT_FIELDS,
    check: Check | None = None,
    max_parts: int = MAX_PARTS,
) -> items.ArchiveItem:
    """One upload, streamed (the JSON route's and the owner's page's): `check`, when given, reads
    every wanted field sent before the file (repeats kept) and gives the API's text fields, before
    a byte of the file is read."""
    ctx = context(request)
    storage = require_storage(request)
    limit = ctx.settings.archive_max_bytes
    form = await multipart.StreamingForm.open(
        request, max_body=limit + FORM_OVERHEAD, file_limit=limit, max_parts=max_parts
    )
    every: MultiDict[str] = MultiDict()
    values, part = await form.read_fields(wanted, every=every)
    if check is not None:
        values = check(every)
    if part is None:
        raise validation_error({"file": ["Missing data for required field."]})
    file = _file_metadata(part)
    _validated(values, file)  # before a byte of the file is read
    item_id = str(uuid.uuid4())
    try:
        sealed = await sealed_files.seal(
            storage,
            ctx.ring,
            user_id=user_id,
            item_id=item_id,
            batches=multipart.file_batches(part, limit),
        )
    except StorageError as exc:
        raise storage_down("archive upload could not be stored", {"itemId": item_id}, exc) from None
    try:  # from here on the stored file is removed if anything fails
        later, _ = await form.read_fields(TEXT_FIELDS if check is None else ())  # a second file part is a 400
        data = _validated({**values, **later}, file)
        item = await items.create(
            ctx.pool,
            ctx.ring,
            user_id=user_id,
            item_id=item_id,
            data=data,
            sealed=sealed,
        )
    except BaseException:
        await asyncio.shield(sealed_files.discard(storage, sealed.storage_key))
        raise
    await items.enqueue_verify(ctx.redis, item_id=item_id)
    return item


# --------------------------------------------------------------------------------------------
# Read and delete
# --------------------------------------------------------------------------------------------


class ArchiveItems(Owned):
    path = "/api/archive"
    tag = "archive"
    schema = ArchiveItemSchema
    docs = {
        "list": Doc("List archive items, newest first", LIFECYCLE),
        "get": Doc("Get an archive item (poll `status` after an upload)"),
        "delete": Doc(
            "Delete an archive item and its stored file",
            "The stored object is removed at once, or by the sweeper if storage is down. "
            "An item that is a message's media is refused (409, `messageIds`): detach it first.",
        ),
    }

    async def list(self, ctx: Context, request: web.Request, *, user_id: str, page: PageRequest) -> Page[Any]:
        return await items.list_page(ctx.pool, ctx.ring, user_id=user_id, page=page)

    async def get(
        self, ctx: Context, request: web.Request, *, user_id: str, raw_id: str
    ) -> items.ArchiveItem:
        return await items.get(ctx.pool, ctx.ring, user_id=user_id, raw_id=raw_id)

    async def delete(self, ctx: Context, request: web.Request, *, user_id: str, raw_id: str) -> None:
        key = await items.delete(ctx.pool, user_id=user_id, raw_id=raw_id)
        if ctx.storage is not None:
            await items.remove_object(ctx.pool, ctx.storage, key=key)


ArchiveItems().register(routes)


# --------------------------------------------------------------------------------------------
# Download
# --------------------------------------------------------------------------------------------


@routes.get("/api/archive/{id}/download")
@docs(
    tags=["archive"],
    summary="Download and decrypt a file",
    description="Streams the plaintext with Content-Type from the upload, `Content-Disposition: "
    "attachment` (RFC 6266 `filename*`), `X-Content-Type-Options: nosniff`, `Cache-Control: "
    "no-store`. `pending` or `failed`: 409 with `itemStatus`. Once the plan is released, 409 for the "
    "media of a letter that has not yet opened to its heirs (`details.opensAt`). A failed integrity "
    "check before the first byte is a 500; later, the connection is cut short (never unauthenticated bytes)."
    + RANGE_NOTE,
    produces=["application/octet-stream"],
    responses={
        200: {"description": "The file"},
        206: {"description": "The range asked for"},
        **error_responses(401, 404, 409, 416, 503),
    },
)
async def download(request: web.Request) -> web.StreamResponse:
    ctx = context(request)
    storage = require_storage(request)
    item = await serving.get_sealed(
        ctx.pool,
        ctx.ring,
        user_id=request[USER_ID],
        raw_id=request.match_info["id"],
        now=ctx.now(),
    )
    serving.require_available(item=item)
    return await send_file(request, storage, item)
