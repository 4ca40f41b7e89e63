"""/api/claim/:token: the beneficiary's capsule (no session: the token in the path is the key),
and /api/legacy/preview/:beneficiaryId, the owner's rehearsal of it.

Every claim route goes through `api.claim.gate` (token lookup, miss limit, privacy headers)
and receives the capsule its token opens. Decisions (what a locked capsule shows, what goes on
the owner's timeline): docs/capsule.md.
"""

from __future__ import annotations

from aiohttp import web
from aiohttp_apigami import docs, response_schema

from api.archive.files import RANGE_NOTE, require_storage, send_file
from api.archive.ranges import ByteRange
from api.claim.gate import claim_gate
from api.claim.schemas import (
    CapsuleAssetSchema,
    CapsuleBeneficiarySchema,
    CapsuleDocumentSchema,
    CapsuleMessageSchema,
    CapsuleOwnerSchema,
    CapsuleSchema,
    SealedMessageSchema,
    WalletBindingSchema,
    capsule_schema,
)
from api.common import dump_many, json_response
from api.keys import USER_ID, context
from api.schemas import UtcDateTime, error_responses
from models.claim import capsules, downloads

routes = web.RouteTableDef()

# --------------------------------------------------------------------------------------------
# Schemas (the wire shape; docs/capsule.md explains each field's rule)
# --------------------------------------------------------------------------------------------


_owner = CapsuleOwnerSchema()
_beneficiary = CapsuleBeneficiarySchema()
_message = CapsuleMessageSchema()
_sealed = SealedMessageSchema()
_document = CapsuleDocumentSchema()
_asset = CapsuleAssetSchema()
_wallet = WalletBindingSchema()


def wallet_body(binding: capsules.WalletBinding | None) -> dict[str, object] | None:
    return None if binding is None else _wallet.dump(binding)


def ready_body(ready: capsules.Ready) -> dict[str, object]:
    """A ready capsule: whose plan, for whom, the wallet; nothing of the contents."""
    return {
        "status": "ready",
        "readySince": UtcDateTime.to_wire(ready["ready_since"]),
        "owner": _owner.dump({"name": ready["owner_name"]}),
        "beneficiary": {"name": ready["name"]},
        "wallet": wallet_body(ready["wallet"]),
    }


def released_body(contents: capsules.Contents) -> dict[str, object]:
    """The released capsule on the wire (lists dumped by `dump_many`, the schemas' fast path)."""
    return {
        "status": "released",
        "releasedAt": UtcDateTime.to_wire(contents["released_at"]),
        "owner": _owner.dump({"name": contents["owner_name"]}),
        "beneficiary": _beneficiary.dump(contents),
        "wallet": wallet_body(contents["wallet"]),
        "messages": dump_many(_message, contents["messages"]),
        "sealedMessages": dump_many(_sealed, contents["sealed_messages"]),
        "documents": dump_many(_document, contents["documents"]),
        "assets": dump_many(_asset, contents["assets"]),
    }


# --------------------------------------------------------------------------------------------
# Routes
# --------------------------------------------------------------------------------------------


@routes.get("/api/claim/{token}")
@docs(
    tags=["capsule"],
    summary="Open a beneficiary's capsule",
    description="No session: the claim token is the credential. Before the plan is `Released`: "
    '`{"status": "locked"}` and nothing else (not the owner, not a title, not the plan\'s state); '
    "with a contract configured, once the owner's cancel window is over, `ready` (`readySince`, the "
    "owner's and your name, your wallet; none of the contents): prove your wallet and build "
    "`finalize_release` (`/release/build`) to release it. "
    "Once `Released`: the messages that have opened for this beneficiary (audience `all` or naming them; "
    "`on_release` at `releasedAt`, `on_date` from 00:00 UTC of that date but never before the "
    "release, `after_release` N days (N * 24 h) after it), announcements of those still sealed "
    "(`id`, `title`, `opensAt` only), and the documents addressed to them. An unknown or "
    "malformed token is 404; past RATE_LIMIT_CLAIM_MISSES_PER_IP misses a minute from one "
    "address, 429 with `Retry-After`.",
    responses=error_responses(404, 429),
)
@response_schema(CapsuleSchema, 200)
@claim_gate
async def get_capsule(request: web.Request, capsule: capsules.Capsule) -> web.Response:
    ctx = context(request)
    shown = await capsules.view(
        ctx.pool,
        ctx.ring,
        capsule=capsule,
        now=ctx.now(),
        opened=request.method != "HEAD",
    )
    if shown["ready"] is not None:
        return json_response(ready_body(shown["ready"]))
    if shown["contents"] is not None:
        return json_response(released_body(shown["contents"]))
    return json_response(capsule_schema.dump({"status": "locked"}))


@routes.get("/api/claim/{token}/documents/{id}/download")
@docs(
    tags=["capsule"],
    summary="Download one of the capsule's documents, decrypted",
    description="Only a document the capsule lists (404 otherwise, and while the plan is locked). "
    "`Content-Disposition: attachment`. Starting a download (no Range, or a range from byte 0) puts "
    "`capsule.document_downloaded` on the owner's timeline." + RANGE_NOTE,
    produces=["application/octet-stream"],
    responses={
        200: {"description": "The file"},
        206: {"description": "The range asked for"},
        **error_responses(404, 416, 429, 503),
    },
)
@claim_gate
async def download_document(request: web.Request, capsule: capsules.Capsule) -> web.StreamResponse:
    ctx = context(request)
    storage = require_storage(request)
    item = await downloads.document_for_download(
        ctx.pool, ctx.ring, capsule=capsule, raw_id=request.match_info["id"]
    )

    async def started(wanted: ByteRange | None) -> None:
        if wanted is None or wanted.start == 0:  # a resume or a seek is not a new download
            await downloads.record_download(ctx.pool, capsule=capsule, document_id=item["id"])

    return await send_file(request, storage, item, on_start=started)


@routes.get("/api/claim/{token}/messages/{id}/media")
@docs(
    tags=["capsule"],
    summary="Play an opened message's photo, voice or video",
    description="`Content-Disposition: inline` with the media's own `Content-Type`, so a browser plays "
    "it in place. A sealed message's media, or one not addressed to this beneficiary, is 404." + RANGE_NOTE,
    produces=["image/*", "audio/*", "video/*"],
    responses={
        200: {"description": "The media"},
        206: {"description": "The range asked for"},
        **error_responses(404, 416, 429, 503),
    },
)
@claim_gate
async def message_media(request: web.Request, capsule: capsules.Capsule) -> web.StreamResponse:
    ctx = context(request)
    storage = require_storage(request)
    item = await downloads.media_for_message(
        ctx.pool,
        ctx.ring,
        capsule=capsule,
        raw_id=request.match_info["id"],
        now=ctx.now(),
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
    ctx = context(request)
    contents = await capsules.preview(
        ctx.pool,
        ctx.ring,
        owner_id=request[USER_ID],
        raw_beneficiary_id=request.match_info["beneficiaryId"],
        now=ctx.now(),
    )
    return json_response(released_body(contents))
