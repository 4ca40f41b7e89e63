"""/api/archive: encrypted files. Uploads are sealed as they stream in, a worker verifies them,
downloads are decrypted as they stream out.

Nothing here holds a whole file: the upload is read part by part from the socket, encrypted
in ~1 MiB chunks and put straight into object storage; the download is decrypted segment by
segment as it is sent. See docs/archive.md for the lifecycle, the formats and the operator's
side (keys, sweeper).
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import unicodedata
import uuid
from collections.abc import AsyncIterator
from contextlib import aclosing
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

from aiohttp import BodyPartReader, MultipartReader, web
from aiohttp.hdrs import CONTENT_TYPE
from aiohttp.http_exceptions import HttpProcessingError
from aiohttp_apigami import docs, request_schema, response_schema
from marshmallow import ValidationError, fields, validate
from redis.exceptions import RedisError

from api.common import json_response, list_response
from api.keys import DB, REDIS, SETTINGS, STORAGE, USER_ID
from api.schemas import AudienceSchema, BaseSchema, PageQuerySchema, Text, UtcDateTime, error_responses
from core.crypto import IntegrityError
from core.errors import AppError, BadRequest, PayloadTooLarge, ServiceUnavailable, validation_error
from core.logging import request_id_var
from core.storage import ObjectNotFound, Storage, StorageError
from models import archive

routes = web.RouteTableDef()
log = logging.getLogger(__name__)

TEXT_FIELDS = ("title", "type", "category", "description", "audience")
MAX_FIELD_BYTES = 16 * 1024
MAX_PARTS = 16
READ_SIZE = 256 * 1024  # socket reads; sealed in batches of about UPLOAD_CHUNK_SIZE
# The multipart body may exceed ARCHIVE_MAX_BYTES by this much: text fields and boundaries.
FORM_OVERHEAD = 64 * 1024
MULTIPART_ERRORS = (ValueError, RuntimeError, AssertionError)

LIFECYCLE = (
    "Files are encrypted at rest (AES-256-GCM streaming, a data key per file wrapped under "
    "ENCRYPTION_KEYS). `status`: `pending` (stored encrypted, being verified), `available` "
    "(downloadable), `failed` (see `failureReason`; delete and upload again)."
)


class JsonText(fields.Field):
    """A form field carrying JSON, loaded through a nested schema (e.g. `audience`)."""

    def __init__(self, schema: BaseSchema, **kwargs: Any) -> None:
        self.schema = schema
        super().__init__(**kwargs)

    def _deserialize(self, value: Any, attr: Any, data: Any, **kwargs: Any) -> Any:
        if not isinstance(value, str):
            raise ValidationError("Must be a JSON string.")
        try:
            parsed = json.loads(value)
        except ValueError:
            raise ValidationError("Not valid JSON.") from None
        try:
            return self.schema.load(parsed)
        except ValidationError as exc:
            # A whole-object rule reads better as the field's own message than as "field.body".
            messages = exc.messages
            if isinstance(messages, dict) and set(messages) == {"_schema"}:
                raise ValidationError(messages["_schema"]) from None
            raise


class UploadFieldsSchema(BaseSchema):
    """The text fields of the upload form (the file itself is streamed, not loaded here)."""

    title = Text(validate=validate.Length(min=1, max=200))
    type = fields.String(load_default="document", validate=validate.OneOf(archive.TYPES))
    category = fields.String(load_default="other", validate=validate.OneOf(archive.CATEGORIES))
    description = Text(validate=validate.Length(max=2000))
    audience = JsonText(AudienceSchema(), load_default={"all": True, "beneficiary_ids": []})


class ArchiveItemSchema(BaseSchema):
    id = fields.String(required=True)
    userId = fields.String(required=True, attribute="user_id")
    title = fields.String(required=True)
    type = fields.String(required=True, metadata={"enum": list(archive.TYPES)})
    category = fields.String(required=True, metadata={"enum": list(archive.CATEGORIES)})
    description = fields.String(required=True, allow_none=True)
    fileName = fields.String(required=True, attribute="file_name", metadata={"description": "Sanitised."})
    contentType = fields.String(required=True, attribute="content_type")
    size = fields.Integer(required=True, attribute="size_bytes", metadata={"description": "Bytes."})
    sha256 = fields.String(
        required=True,
        allow_none=True,
        metadata={"description": "Hex SHA-256 of the file as received (null: failed before it was known)."},
    )
    status = fields.String(required=True, metadata={"enum": list(archive.STATUSES)})
    failureReason = fields.String(required=True, allow_none=True, attribute="failure_reason")
    audience = fields.Method(
        "dump_audience",
        required=True,
        metadata={"type": "object", "description": '{"all": true} or {"beneficiaryIds": [...]}.'},
    )
    createdAt = UtcDateTime(required=True, attribute="created_at")
    updatedAt = UtcDateTime(required=True, attribute="updated_at")

    def dump_audience(self, record: dict[str, Any]) -> dict[str, Any]:
        audience = record["audience"]
        return {"all": True} if audience["all"] else {"beneficiaryIds": audience["beneficiary_ids"]}


item_schema = ArchiveItemSchema()
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
                    "type": {"type": "string", "enum": list(archive.TYPES), "default": "document"},
                    "category": {"type": "string", "enum": list(archive.CATEGORIES), "default": "other"},
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


def require_storage(request: web.Request) -> Storage:
    storage = request.app[STORAGE]
    if storage is None:
        raise ServiceUnavailable("Object storage is not configured (STORAGE_URL); archive files are off.")
    return storage


def _storage_down(what: str, where: dict[str, str], exc: StorageError) -> ServiceUnavailable:
    """Log an outage of the store (its error, never file content) and answer 503 for it."""
    log.warning(what, extra={**where, "error": str(exc)})
    return ServiceUnavailable("Object storage is unavailable; try again later.")


def _too_large(limit: int) -> PayloadTooLarge:
    return PayloadTooLarge(f"The file exceeds the upload limit of {limit} bytes.")


@dataclass
class _Form:
    values: dict[str, str] = field(default_factory=dict)
    file: dict[str, str] | None = None
    sealed: archive.Sealed | None = None  # the ciphertext is in storage: remove it on failure

    def validated(self) -> dict[str, Any]:
        """Fields + file metadata, checked together (a photo must be an image)."""
        try:
            data: dict[str, Any] = upload_fields.load(self.values)
        except ValidationError as exc:
            raise validation_error(exc.messages) from None
        if self.file is not None:
            data.update(self.file)
            archive.check_content_type(data["type"], self.file["content_type"])
        return data


async def _read_chunk(part: BodyPartReader, size: int) -> bytes:
    try:
        return await part.read_chunk(size)
    except MULTIPART_ERRORS:
        raise BadRequest("Malformed multipart body") from None
    except (ConnectionError, HttpProcessingError):
        # The client went away or the body ended early: a 400 in the access log, not a 500 trace.
        raise BadRequest("The upload was interrupted") from None


async def _next_part(reader: MultipartReader) -> Any:
    try:
        return await reader.next()
    except MULTIPART_ERRORS:
        raise BadRequest("Malformed multipart body") from None


async def _read_text(part: BodyPartReader, name: str) -> str:
    data = bytearray()
    while chunk := await _read_chunk(part, 8192):
        data += chunk
        if len(data) > MAX_FIELD_BYTES:
            raise validation_error({name: [f"Longer than {MAX_FIELD_BYTES} bytes."]})
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise validation_error({name: ["Not valid UTF-8."]}) from None


async def _file_batches(part: BodyPartReader, limit: int) -> AsyncIterator[list[bytes]]:
    """The file part as lists of socket reads of ~UPLOAD_CHUNK_SIZE together (no copying);
    413 past `limit` bytes, 400 if empty. Both are raised inside the storage write, which then
    discards what it wrote."""
    total = 0
    batch: list[bytes] = []
    batched = 0
    while data := await _read_chunk(part, READ_SIZE):
        total += len(data)
        if total > limit:
            raise _too_large(limit)
        batch.append(data)
        batched += len(data)
        if batched >= archive.UPLOAD_CHUNK_SIZE:
            yield batch
            batch, batched = [], 0
    if total == 0:
        raise validation_error({"file": ["The file is empty."]})
    if batch:
        yield batch


async def _seal_file(
    request: web.Request, storage: Storage, item_id: str, batches: AsyncIterator[list[bytes]]
) -> archive.Sealed:
    try:
        return await archive.seal_upload(
            storage, request.app[SETTINGS].key_ring, request[USER_ID], item_id, batches
        )
    except StorageError as exc:
        raise _storage_down("archive upload could not be stored", {"itemId": item_id}, exc) from None


async def _read_form(
    request: web.Request, form: _Form, storage: Storage, item_id: str, limit: int
) -> tuple[dict[str, Any], archive.Sealed]:
    """Stream the multipart body: text fields into memory (bounded), the file sealed into storage.

    Fields sent before the file are validated before a byte of it is read, so a client that
    puts them first learns of a mistake without uploading the file. Once the file is stored
    it is recorded in `form.sealed`, for the caller to remove if anything later fails.
    """
    if request.content_type != "multipart/form-data":
        raise BadRequest("Content-Type must be multipart/form-data")
    try:
        reader = await request.multipart()
    except MULTIPART_ERRORS:
        raise BadRequest("Malformed multipart body") from None
    for _ in range(MAX_PARTS + 1):
        part = await _next_part(reader)
        if part is None:
            break
        if not isinstance(part, BodyPartReader):
            raise BadRequest("Nested multipart bodies are not accepted")
        if part.name == "file":
            if form.file is not None:
                raise validation_error({"file": ["Send one file per upload."]})
            form.file = {
                "file_name": archive.sanitize_file_name(part.filename),
                "content_type": archive.normalize_content_type(part.headers.get(CONTENT_TYPE)),
            }
            form.validated()
            form.sealed = await _seal_file(request, storage, item_id, _file_batches(part, limit))
        else:
            text = await _read_text(part, part.name or "field")
            # HTML forms send every field, blank ones included: blank means "not given".
            if part.name in TEXT_FIELDS and text.strip():
                form.values[part.name] = text
    else:
        raise BadRequest(f"Too many form fields (at most {MAX_PARTS})")
    if form.sealed is None:
        raise validation_error({"file": ["Missing data for required field."]})
    return form.validated(), form.sealed


async def _enqueue(request: web.Request, item_id: str) -> None:
    """After COMMIT. If Redis is down the item stays pending and the sweeper queues it later."""
    try:
        await archive.enqueue_verify(request.app[REDIS], item_id)
    except (RedisError, OSError) as exc:
        log.warning(
            "archive enqueue failed; the sweeper will retry", extra={"itemId": item_id, "error": repr(exc)}
        )


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
    responses=error_responses(400, 401, 413, 503),
)
@response_schema(ArchiveItemSchema, 202)
async def upload(request: web.Request) -> web.Response:
    storage = require_storage(request)
    limit = request.app[SETTINGS].archive_max_bytes
    if (request.content_length or 0) > limit + FORM_OVERHEAD:
        raise _too_large(limit)
    form, item_id = _Form(), str(uuid.uuid4())
    try:
        data, sealed = await _read_form(request, form, storage, item_id, limit)
        item = await archive.create(request.app[DB], request[USER_ID], item_id, data, sealed)
    except BaseException:
        if form.sealed is not None:
            await asyncio.shield(archive.discard_upload(storage, form.sealed.storage_key))
        raise
    await _enqueue(request, item_id)
    return json_response(item_schema.dump(item), status=202)


# --------------------------------------------------------------------------------------------
# Read and delete
# --------------------------------------------------------------------------------------------


@routes.get("/api/archive")
@docs(
    tags=["archive"],
    summary="List archive items, newest first",
    description=LIFECYCLE,
    responses=error_responses(400, 401),
)
@request_schema(PageQuerySchema, location="querystring")
@response_schema(ArchiveItemSchema(many=True), 200)
async def list_items(request: web.Request) -> web.Response:
    page = await archive.list_page(request.app[DB], request[USER_ID], request["data"]["page"])
    return list_response(request, page, item_schema)


@routes.get("/api/archive/{id}")
@docs(
    tags=["archive"],
    summary="Get an archive item (poll `status` after an upload)",
    responses=error_responses(401, 404),
)
@response_schema(ArchiveItemSchema, 200)
async def get_item(request: web.Request) -> web.Response:
    item = await archive.get(request.app[DB], request[USER_ID], request.match_info["id"])
    return json_response(item_schema.dump(item))


@routes.delete("/api/archive/{id}")
@docs(
    tags=["archive"],
    summary="Delete an archive item and its stored file",
    description="The stored object is removed at once, or by the sweeper if storage is down. "
    "An item that is a message's media is refused (409, `messageIds`): detach it first.",
    responses={204: {"description": "Deleted"}, **error_responses(401, 404, 409)},
)
async def delete_item(request: web.Request) -> web.Response:
    pool = request.app[DB]
    key = await archive.delete(pool, request[USER_ID], request.match_info["id"])
    storage = request.app[STORAGE]
    if storage is not None:
        await archive.remove_object(pool, storage, key)
    return web.Response(status=204)


# --------------------------------------------------------------------------------------------
# Download
# --------------------------------------------------------------------------------------------


def content_disposition(file_name: str) -> str:
    """`attachment` with an ASCII fallback and the exact name as RFC 5987/6266 `filename*`."""
    fallback = unicodedata.normalize("NFKD", file_name).encode("ascii", "ignore").decode("ascii")
    fallback = re.sub(r'[^\x20-\x7e]|["\\%]', "_", fallback).strip() or "file"
    return f"attachment; filename=\"{fallback}\"; filename*=UTF-8''{quote(file_name, safe='')}"


async def send_item(request: web.Request, storage: Storage, item: dict[str, Any]) -> web.StreamResponse:
    """Stream an available item's plaintext to the client (owner and capsule downloads).

    Headers go out only with the first authenticated bytes, so damage found early (wrong
    key id, a flipped byte in the first segments) is an ordinary 500 error body. Damage found
    later aborts the connection: the client sees a response shorter than Content-Length,
    never bytes that failed authentication.
    """
    where = {"itemId": str(item["id"]), "keyId": item["key_id"]}
    async with aclosing(archive.plaintext(storage, request.app[SETTINGS].key_ring, item)) as chunks:
        try:
            first = await anext(chunks, b"")
        except IntegrityError as exc:
            log.error("archive integrity check failed; nothing sent", extra={**where, "error": str(exc)})
            raise AppError("The stored file failed its integrity check; nothing was sent.") from None
        except ObjectNotFound:
            log.error("archive object missing from storage", extra=where)
            raise AppError("The stored file is missing.") from None
        except StorageError as exc:
            raise _storage_down("archive storage read failed", where, exc) from None
        response = web.StreamResponse(
            headers={
                CONTENT_TYPE: item["content_type"],
                "Content-Disposition": content_disposition(item["file_name"]),
                "X-Content-Type-Options": "nosniff",
                "Cache-Control": "no-store",
                "Content-Security-Policy": "default-src 'none'; sandbox",
                "X-Request-Id": request_id_var.get(),
            }
        )
        response.content_length = item["size_bytes"]
        await response.prepare(request)
        if request.method == "HEAD":
            return response  # headers only: no need to read and decrypt the rest
        try:
            await response.write(first)
            async for chunk in chunks:
                await response.write(chunk)
        except (IntegrityError, StorageError) as exc:
            log.error("archive download aborted mid-stream", extra={**where, "error": str(exc)})
            if request.transport is not None:
                request.transport.abort()
            return response
        except ConnectionError:
            return response  # the client went away
    await response.write_eof()
    return response


@routes.get("/api/archive/{id}/download")
@docs(
    tags=["archive"],
    summary="Download and decrypt a file",
    description="Streams the plaintext with Content-Type from the upload, `Content-Disposition: "
    "attachment` (RFC 6266 `filename*`), `X-Content-Type-Options: nosniff`, `Cache-Control: "
    "no-store`. `pending` or `failed`: 409 with `itemStatus`. A failed integrity check before the "
    "first byte is a 500; later, the connection is cut short (never unauthenticated bytes).",
    produces=["application/octet-stream"],
    responses={200: {"description": "The file"}, **error_responses(401, 404, 409, 503)},
)
async def download(request: web.Request) -> web.StreamResponse:
    storage = require_storage(request)
    item = await archive.get(request.app[DB], request[USER_ID], request.match_info["id"], sealed=True)
    archive.require_available(item)
    return await send_item(request, storage, item)
