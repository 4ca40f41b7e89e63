"""/api/claim/:token: the beneficiary's capsule (no session: the token in the path is the key),
and /api/legacy/preview/:beneficiaryId, the owner's rehearsal of it.

Every `/api/claim/*` response, errors included, carries `Referrer-Policy: no-referrer`,
`Cache-Control: no-store` and `X-Robots-Tag: noindex, nofollow` (`capsule_headers`, run as
each response is prepared). Unknown tokens are rate limited per client IP; a valid token never
touches the limiter. Decisions (what a locked capsule shows, what goes on the owner's
timeline): docs/capsule.md.
"""

from __future__ import annotations

import logging
from typing import NoReturn

from aiohttp import web
from aiohttp_apigami import docs, response_schema
from marshmallow import fields
from redis.exceptions import RedisError

from api.archive.files import RANGE_NOTE, require_storage, send_file
from api.archive.ranges import ByteRange
from api.common import client_ip, dump_many, json_response
from api.contents.beneficiaries import Percentage
from api.keys import CLOCK, DB, REDIS, SETTINGS, USER_ID
from api.public import public
from api.schemas import BaseSchema, UtcDateTime, error_responses
from core import ratelimit
from core.errors import NotFound, TooManyRequests
from models.claim import capsule as capsules

routes = web.RouteTableDef()
log = logging.getLogger(__name__)

CLAIM_PREFIX = "/api/claim/"
CAPSULE_HEADERS = {
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
    "X-Robots-Tag": "noindex, nofollow",
}
MISS_WINDOW_SECONDS = 60

TOKEN_PARAM = {
    "in": "path",
    "name": "token",
    "required": True,
    "schema": {"type": "string", "pattern": "^[0-9a-f]{64}$"},
    "description": "The beneficiary's claim token (64 lowercase hex), from their link.",
}


async def capsule_headers(request: web.Request, response: web.StreamResponse) -> None:
    """on_response_prepare: the capsule's privacy headers on everything under /api/claim/."""
    if request.path.startswith(CLAIM_PREFIX):
        response.headers.update(CAPSULE_HEADERS)


# --------------------------------------------------------------------------------------------
# Schemas (the wire shape; docs/capsule.md explains each field's rule)
# --------------------------------------------------------------------------------------------


class CapsuleOwnerSchema(BaseSchema):
    name = fields.String(required=True, allow_none=True, metadata={"description": "null if never set."})


class CapsuleBeneficiarySchema(BaseSchema):
    name = fields.String(required=True)
    relationship = fields.String(required=True)
    allocationPercentage = Percentage(required=True, attribute="allocation_percentage")


class MediaSchema(BaseSchema):
    type = fields.String(required=True, metadata={"enum": ["photo", "video", "voice"]})
    contentType = fields.String(required=True, attribute="content_type")
    size = fields.Integer(required=True, metadata={"description": "Bytes."})


class CapsuleMessageSchema(BaseSchema):
    id = fields.String(required=True)
    title = fields.String(required=True, allow_none=True)
    content = fields.String(required=True)
    createdAt = UtcDateTime(required=True, attribute="created_at")
    media = fields.Nested(
        MediaSchema,
        required=True,
        allow_none=True,
        metadata={"description": "Play it from `GET /api/claim/{token}/messages/{id}/media`."},
    )


class SealedMessageSchema(BaseSchema):
    id = fields.String(required=True)
    title = fields.String(required=True, allow_none=True)
    opensAt = UtcDateTime(required=True, attribute="opens_at")


class CapsuleDocumentSchema(BaseSchema):
    id = fields.String(required=True)
    title = fields.String(required=True)
    type = fields.String(required=True)
    category = fields.String(required=True)
    fileName = fields.String(required=True, attribute="file_name")
    contentType = fields.String(required=True, attribute="content_type")
    size = fields.Integer(required=True, metadata={"description": "Bytes."})
    sha256 = fields.String(required=True, metadata={"description": "Hex SHA-256 of the file."})


class CapsuleSchema(BaseSchema):
    status = fields.String(
        required=True,
        metadata={"enum": ["locked", "released"], "description": "`locked`: no other field is present."},
    )
    releasedAt = UtcDateTime(attribute="released_at")
    owner = fields.Nested(CapsuleOwnerSchema)
    beneficiary = fields.Nested(CapsuleBeneficiarySchema)
    messages = fields.List(
        fields.Nested(CapsuleMessageSchema), metadata={"description": "Opened messages, oldest first."}
    )
    sealedMessages = fields.List(
        fields.Nested(SealedMessageSchema),
        attribute="sealed_messages",
        metadata={"description": "Addressed to this beneficiary, not open yet; soonest first."},
    )
    documents = fields.List(fields.Nested(CapsuleDocumentSchema), metadata={"description": "Oldest first."})


_owner = CapsuleOwnerSchema()
_beneficiary = CapsuleBeneficiarySchema()
_message = CapsuleMessageSchema()
_sealed = SealedMessageSchema()
_document = CapsuleDocumentSchema()


def released_body(contents: capsules.Contents) -> dict[str, object]:
    """The released capsule on the wire (lists dumped by `dump_many`, the schemas' fast path)."""
    return {
        "status": "released",
        "releasedAt": UtcDateTime.to_wire(contents["released_at"]),
        "owner": _owner.dump({"name": contents["owner_name"]}),
        "beneficiary": _beneficiary.dump(contents),
        "messages": dump_many(_message, contents["messages"]),
        "sealedMessages": dump_many(_sealed, contents["sealed_messages"]),
        "documents": dump_many(_document, contents["documents"]),
    }


# --------------------------------------------------------------------------------------------
# The token
# --------------------------------------------------------------------------------------------


async def open_capsule(request: web.Request) -> capsules.Capsule:
    """The capsule of the token in the path, in any plan state; 404 (or 429) for a miss.

    Only misses are counted, per client IP: a valid token is served without asking the
    limiter, so nobody's guesses (not even from the same address) can lock a beneficiary out.
    """
    capsule = await capsules.open_by_token(request.app[DB], request.match_info["token"])
    if capsule is not None:
        return capsule
    await refuse_miss(request)


async def refuse_miss(request: web.Request) -> NoReturn:
    """404 for a token that opens nothing, or 429 past the per-IP miss limit (shared by the
    routes that look the token up themselves, e.g. the on-chain ones)."""
    limit = request.app[SETTINGS].rate_limit_claim_misses_per_ip
    try:
        retry = await ratelimit.hit(
            request.app[REDIS], f"claim-miss:ip:{client_ip(request)}", limit, MISS_WINDOW_SECONDS
        )
    except (RedisError, OSError) as exc:
        # The limiter only quiets scanners (a token's 256 bits are what keep it secret):
        # with Redis down a miss is still a plain 404, never a 500.
        log.warning("claim miss limiter unavailable", extra={"error": repr(exc)})
        retry = 0
    if retry:
        raise TooManyRequests("Too many unknown claim links from this address; try again later.", retry)
    raise NotFound("Capsule")


# --------------------------------------------------------------------------------------------
# Routes
# --------------------------------------------------------------------------------------------


@routes.get("/api/claim/{token}")
@public
@docs(
    tags=["capsule"],
    summary="Open a beneficiary's capsule",
    description="No session: the claim token is the credential. Before the plan is `Released`: "
    '`{"status": "locked"}` and nothing else (not the owner, not a title, not the plan\'s state). '
    "After: the messages that have opened for this beneficiary (audience `all` or naming them; "
    "`on_release` at `releasedAt`, `on_date` from 00:00 UTC of that date but never before the "
    "release, `after_release` N days (N * 24 h) after it), announcements of those still sealed "
    "(`id`, `title`, `opensAt` only), and the documents addressed to them. An unknown or "
    "malformed token is 404; past RATE_LIMIT_CLAIM_MISSES_PER_IP misses a minute from one "
    "address, 429 with `Retry-After`.",
    parameters=[TOKEN_PARAM],
    responses=error_responses(404, 429),
)
@response_schema(CapsuleSchema, 200)
async def get_capsule(request: web.Request) -> web.Response:
    capsule = await open_capsule(request)
    if not capsules.is_released(capsule):
        return json_response({"status": "locked"})
    contents = await capsules.contents(
        request.app[DB],
        request.app[SETTINGS].key_ring,
        capsule=capsule,
        now=request.app[CLOCK].now(),
        opened=request.method != "HEAD",
    )
    return json_response(released_body(contents))


@routes.get("/api/claim/{token}/documents/{id}/download")
@public
@docs(
    tags=["capsule"],
    summary="Download one of the capsule's documents, decrypted",
    description="Only a document the capsule lists (404 otherwise, and while the plan is locked). "
    "`Content-Disposition: attachment`. Starting a download (no Range, or a range from byte 0) puts "
    "`capsule.document_downloaded` on the owner's timeline." + RANGE_NOTE,
    parameters=[TOKEN_PARAM],
    produces=["application/octet-stream"],
    responses={
        200: {"description": "The file"},
        206: {"description": "The range asked for"},
        **error_responses(404, 416, 429, 503),
    },
)
async def download_document(request: web.Request) -> web.StreamResponse:
    capsule = await open_capsule(request)
    storage = require_storage(request)
    item = await capsules.document_for_download(
        request.app[DB], request.app[SETTINGS].key_ring, capsule=capsule, raw_id=request.match_info["id"]
    )

    async def started(wanted: ByteRange | None) -> None:
        if wanted is None or wanted.start == 0:  # a resume or a seek is not a new download
            await capsules.record_download(request.app[DB], capsule=capsule, document_id=item["id"])

    return await send_file(request, storage, item, on_start=started)


@routes.get("/api/claim/{token}/messages/{id}/media")
@public
@docs(
    tags=["capsule"],
    summary="Play an opened message's photo, voice or video",
    description="`Content-Disposition: inline` with the media's own `Content-Type`, so a browser plays "
    "it in place. A sealed message's media, or one not addressed to this beneficiary, is 404." + RANGE_NOTE,
    parameters=[TOKEN_PARAM],
    produces=["image/*", "audio/*", "video/*"],
    responses={
        200: {"description": "The media"},
        206: {"description": "The range asked for"},
        **error_responses(404, 416, 429, 503),
    },
)
async def message_media(request: web.Request) -> web.StreamResponse:
    capsule = await open_capsule(request)
    storage = require_storage(request)
    item = await capsules.media_for_message(
        request.app[DB],
        request.app[SETTINGS].key_ring,
        capsule=capsule,
        raw_id=request.match_info["id"],
        now=request.app[CLOCK].now(),
    )
    return await send_file(request, storage, item, inline=True)


@routes.get("/api/legacy/preview/{beneficiaryId}")
@docs(
    tags=["capsule"],
    summary="Rehearse a beneficiary's capsule",
    description="Exactly what this beneficiary would receive if the plan were released now "
    "(`releasedAt` = now), in any plan state, without their token: which messages would be open, "
    "which sealed and until when, which documents they would see.",
    responses=error_responses(401, 404),
)
@response_schema(CapsuleSchema, 200)
async def preview(request: web.Request) -> web.Response:
    contents = await capsules.preview(
        request.app[DB],
        request.app[SETTINGS].key_ring,
        owner_id=request[USER_ID],
        raw_beneficiary_id=request.match_info["beneficiaryId"],
        now=request.app[CLOCK].now(),
    )
    return json_response(released_body(contents))
