"""/api/legacy/guardianships: what a guardian's own account sees and does.

A guardian signs in with the wallet the owner recorded for them. Only plans where one of the
account's wallets is a guardian are visible (Drafts too: the invitation is answered there);
any other plan id is 404. Nothing of a plan's contents is shown. A guardian reports or
approves only once they have accepted (403 before). Decisions: docs/lifecycle.md.
"""

from __future__ import annotations

from datetime import timedelta

from aiohttp import web
from aiohttp_apigami import docs, request_schema, response_schema
from marshmallow import fields, validate

from api.common import json_response
from api.keys import USER_ID, context
from api.schemas import BaseSchema, Text, UtcDateTime, error_responses
from models.flows import verification
from models.plan.guardianships import heirs, invitation, reconfirmation
from models.plans import REPORT_REASONS

routes = web.RouteTableDef()


class OwnerSchema(BaseSchema):
    name = fields.String(required=True, allow_none=True)
    walletAddress = fields.String(required=True)


class LinkDeliverySchema(BaseSchema):
    beneficiaryId = fields.String(required=True, attribute="beneficiary_id")
    name = fields.String(required=True)
    status = fields.String(
        required=True,
        metadata={
            "enum": ["none", "pending", "sent", "failed", "skipped"],
            "description": "How the latest email with their link ended (`none`: not sent yet).",
        },
    )
    at = UtcDateTime(
        required=True, allow_none=True, metadata={"description": "When it ended (or was queued, if pending)."}
    )


class WalletChangeSchema(BaseSchema):
    id = fields.String(required=True)
    beneficiaryId = fields.String(required=True, attribute="beneficiary_id")
    name = fields.String(required=True, metadata={"description": "The heir's name."})
    walletAddress = fields.String(
        required=True, attribute="wallet_address", metadata={"description": "The wallet they proved."}
    )
    requestedAt = UtcDateTime(required=True, attribute="requested_at")
    approvals = fields.Integer(required=True)
    approvedByMe = fields.Boolean(required=True, attribute="approved_by_me")


class WalletChangeStatusSchema(BaseSchema):
    status = fields.String(required=True, metadata={"enum": ["pending", "applied"]})
    approvals = fields.Integer(required=True)
    threshold = fields.Integer(required=True)


class GuardianshipSchema(BaseSchema):
    planId = fields.String(required=True)
    owner = fields.Nested(OwnerSchema, required=True)
    status = fields.String(required=True)
    threshold = fields.Integer(required=True, metadata={"description": "Approvals needed."})
    approvals = fields.Integer(
        required=True, metadata={"description": "Approvals so far in this verification."}
    )
    approvedByMe = fields.Boolean(required=True)
    reportedByMe = fields.Boolean(required=True)
    releaseAt = UtcDateTime(
        required=True, allow_none=True, metadata={"description": "When the owner's veto window ends."}
    )
    invitation = fields.String(
        required=True,
        validate=validate.OneOf(("pending", "accepted", "declined")),
        metadata={"description": "Your answer to the owner's invitation; you count once `accepted`."},
    )
    invitedAt = UtcDateTime(required=True, allow_none=True)
    acceptedAt = UtcDateTime(required=True, allow_none=True)
    declinedAt = UtcDateTime(required=True, allow_none=True)
    reconfirmedAt = UtcDateTime(
        required=True,
        allow_none=True,
        metadata={
            "description": "When you last confirmed that you can still act as this plan's guardian "
            "(POST /api/legacy/guardianships/{planId}/reconfirm). Null if you never have, and until you "
            "accept."
        },
    )
    reconfirmationAsked = fields.Boolean(
        required=True,
        metadata={
            "description": "Whether you are asked now to confirm that you can still act as this plan's "
            "guardian (an emailed request within its grace, or one gone unanswered: `unresponsiveSince`): "
            "confirm with POST /api/legacy/guardianships/{planId}/reconfirm. False until you accept and once "
            "the plan is released."
        },
    )
    reconfirmationAskedAt = UtcDateTime(
        required=True,
        allow_none=True,
        metadata={
            "description": "When the request to confirm was emailed, while within its grace "
            "(GUARDIAN_RECONFIRM_GRACE_SECONDS); past it, null and `unresponsiveSince` is set. Null until "
            "you accept."
        },
    )
    unresponsiveSince = UtcDateTime(
        required=True,
        allow_none=True,
        metadata={
            "description": "Since when a request to confirm went unanswered past its grace: the owner was "
            "told and sees it. Confirming clears it. Null otherwise, and until you accept."
        },
    )
    readySince = UtcDateTime(
        required=True,
        allow_none=True,
        metadata={
            "description": "With a contract: since when the plan is ready to finalise (its beneficiaries "
            "have their links; one of them releases it on-chain)."
        },
    )
    ownerKeyUsedAt = UtcDateTime(
        required=True,
        allow_none=True,
        metadata={
            "description": "When someone last signed in with the owner's wallet during this verification "
            "(the owner's timeline: `account.signed_in_during_verification`): someone holds the owner's key. "
            "Signing in does not stop the release; only an explicit check-in does. Null when nobody has "
            "since the verification started, when no verification runs (Active, Draft, Released) and "
            "until you accept."
        },
    )
    walletChanges = fields.List(
        fields.Nested(WalletChangeSchema),
        required=True,
        metadata={
            "description": "Wallets an heir proved in place of the one bound to them (e.g. the owner "
            "recorded one they lost), waiting for `threshold` guardians to approve: only approve after "
            "confirming with the heir themselves. Empty before the plan is released or ready."
        },
    )
    beneficiaries = fields.List(
        fields.Nested(LinkDeliverySchema),
        required=True,
        metadata={
            "description": "Once the plan is released or ready: each beneficiary's claim-link email, by "
            "name (never the address or the link). Empty before."
        },
    )


class AnswerSchema(BaseSchema):
    ok = fields.Boolean(required=True)
    invitation = fields.String(required=True, validate=validate.OneOf(("accepted", "declined")))
    status = fields.String(required=True, metadata={"description": "The plan's status."})


class ReportSchema(BaseSchema):
    reason = fields.String(
        allow_none=True,
        validate=validate.OneOf(REPORT_REASONS),
        metadata={
            "description": "Optional: why you report (`death`, `incapacity`, `unreachable`, `other`). The "
            "emails and the heirs' page choose their words by it: sympathy only when a death was reported."
        },
    )
    note = Text(
        multiline=True,
        validate=validate.Length(max=2000),
        allow_none=True,
        metadata={
            "description": "Optional words for the record; kept with the report, never in the timeline."
        },
    )


class AttestationSchema(BaseSchema):
    message = fields.String(
        required=True,
        metadata={
            "description": "Text to sign with your guardian wallet: names the service, the plan, the "
            "owner's and "
            'your wallets, the words "approve the release", a 256-bit nonce and the issue time. Single use, '
            "valid 10 minutes."
        },
    )


class ApproveSchema(BaseSchema):
    signature = fields.String(
        required=True,
        validate=validate.Length(min=1, max=200),
        metadata={
            "description": "ed25519 signature of the attestation message, base64 (88 chars) or hex "
            "(128 chars), "
            "over the raw message or its SEP-53 digest, exactly as sign-in accepts."
        },
    )


class GuardianActionSchema(BaseSchema):
    ok = fields.Boolean(required=True)
    status = fields.String(required=True, metadata={"description": "The plan's status afterwards."})


guardianship_schema = GuardianshipSchema()
link_delivery_schema = LinkDeliverySchema()


async def _status_of(request: web.Request, plan_id: str) -> web.Response:
    ctx = context(request)
    for item in await invitation.list_for(ctx.pool, ctx.ring, user_id=request[USER_ID]):
        if str(item["plan_id"]) == plan_id:
            return json_response({"ok": True, "status": item["status"]})
    return json_response({"ok": True, "status": "unknown"})


@routes.get("/api/legacy/guardianships")
@docs(
    tags=["guardianships"],
    summary="Plans I guard",
    description="Plans where one of your wallets is a guardian, with verification progress and your "
    "answer to the invitation (`invitation`: pending, accepted or declined; Drafts are listed so that "
    "you can answer before the plan starts). Nothing of the plans' contents. Until you accept (and after "
    "you decline) a plan shows only its owner, its status and your invitation: `beneficiaries` and "
    "`walletChanges` are empty, `approvals` 0, `reconfirmationAsked` false, `releaseAt`, `readySince`, "
    "`ownerKeyUsedAt`, `reconfirmedAt`, `reconfirmationAskedAt` and `unresponsiveSince` null.",
    responses=error_responses(401),
)
@response_schema(GuardianshipSchema(many=True), 200)
async def list_guardianships(request: web.Request) -> web.Response:
    ctx = context(request)
    items = await invitation.list_for(ctx.pool, ctx.ring, user_id=request[USER_ID])
    return json_response(
        [
            guardianship_schema.dump(
                {
                    "planId": str(g["plan_id"]),
                    "owner": {"name": g["owner_name"], "walletAddress": g["owner_wallet"]},
                    "status": g["status"],
                    "threshold": g["threshold"],
                    "approvals": g["approvals"],
                    "approvedByMe": g["approved_by_me"],
                    "reportedByMe": g["reported_by_me"],
                    "releaseAt": g["release_at"],
                    "invitation": g["invitation"],
                    "invitedAt": g["invited_at"],
                    "acceptedAt": g["accepted_at"],
                    "declinedAt": g["declined_at"],
                    "reconfirmedAt": g["reconfirmed_at"],
                    "reconfirmationAsked": g["reconfirmation_asked"],
                    "reconfirmationAskedAt": g["reconfirm_asked_at"],
                    "unresponsiveSince": g["unresponsive_since"],
                    "readySince": g["ready_at"],
                    "ownerKeyUsedAt": g["owner_key_used_at"],
                    "beneficiaries": g["beneficiaries"],
                    "walletChanges": g["wallet_changes"],
                }
            )
            for g in items
        ]
    )


async def _answer(request: web.Request, *, accept: bool) -> web.Response:
    ctx = context(request)
    result = await invitation.answer(
        ctx.pool,
        ctx.redis,
        ctx.ring,
        user_id=request[USER_ID],
        raw_plan_id=request.match_info["planId"],
        accept=accept,
        now=ctx.now(),
        reconfirm_after=timedelta(seconds=ctx.settings.guardian_reconfirm_interval_seconds),
    )
    return json_response({"ok": True, "invitation": result["invitation"], "status": result["status"]})


@routes.post("/api/legacy/guardianships/{planId}/accept")
@docs(
    tags=["guardianships"],
    summary="Accept to guard this plan",
    description="From the session of the wallet the owner recorded for you. From then on you count "
    "toward the approvals the plan needs, are told when it needs you, and may report and approve. "
    "Accepting again changes nothing; accepting after declining takes the refusal back. 409 once the "
    "plan is released; 404 for a plan you are not a guardian of.",
    responses=error_responses(401, 404, 409),
)
@response_schema(AnswerSchema, 200)
async def accept(request: web.Request) -> web.Response:
    return await _answer(request, accept=True)


class ReconfirmedSchema(BaseSchema):
    ok = fields.Boolean(required=True)
    reconfirmedAt = UtcDateTime(required=True, attribute="reconfirmed_at")
    nextAskAt = UtcDateTime(
        required=True,
        attribute="next_ask_at",
        metadata={"description": "When you will be asked again (GUARDIAN_RECONFIRM_INTERVAL_SECONDS)."},
    )


reconfirmed_schema = ReconfirmedSchema()


@routes.post("/api/legacy/guardianships/{planId}/reconfirm")
@docs(
    tags=["guardianships"],
    summary="Confirm you can still act as a guardian",
    description="Asked by email every GUARDIAN_RECONFIRM_INTERVAL_SECONDS (a year) after you accepted or "
    "last confirmed, while the plan is `Active` or in verification: any session of the wallet the owner "
    "recorded for you will do (signing in proved you hold its key). Clears `unresponsiveSince` on the "
    "owner's list. Allowed at any time before the release; 403 before you accepted, 404 for a plan you "
    "do not guard, 409 once it is released.",
    responses=error_responses(401, 403, 404, 409),
)
@response_schema(ReconfirmedSchema, 200)
async def reconfirm(request: web.Request) -> web.Response:
    ctx = context(request)
    settings = ctx.settings
    result = await reconfirmation.reconfirm(
        ctx.pool,
        settings.key_ring,
        user_id=request[USER_ID],
        raw_plan_id=request.match_info["planId"],
        now=ctx.now(),
        interval=timedelta(seconds=settings.guardian_reconfirm_interval_seconds),
    )
    return json_response(reconfirmed_schema.dump({"ok": True, **result}))


@routes.post("/api/legacy/guardianships/{planId}/decline")
@docs(
    tags=["guardianships"],
    summary="Decline to guard this plan",
    description="The owner is emailed that you declined, and you no longer count or hear about the "
    "plan. Allowed in `Draft` and `Active`; 409 while guardians verify the plan (do nothing instead: "
    "the plan waits) and once it is released. You may accept later after all.",
    responses=error_responses(401, 404, 409),
)
@response_schema(AnswerSchema, 200)
async def decline(request: web.Request) -> web.Response:
    return await _answer(request, accept=False)


@routes.post("/api/legacy/guardianships/{planId}/report")
@docs(
    tags=["guardianships"],
    summary="Report that the owner has died or cannot act",
    description="`Active` → `PendingVerification` at once: the owner is emailed that checking in "
    "stops it, and "
    "every accepted guardian is asked to verify. During verification the report is recorded without "
    "another transition. 403 until you have accepted to guard the plan; 409 in `Draft` and once "
    "released; 404 for a plan you do not guard. Within PLAN_REPORT_COOLDOWN_SECONDS (24 h) of the "
    "owner's last veto, 429 with `Retry-After`: the owner has just said they are well.",
    responses=error_responses(400, 401, 403, 404, 409, 429),
)
@request_schema(ReportSchema)
@response_schema(GuardianActionSchema, 200)
async def report(request: web.Request) -> web.Response:
    ctx = context(request)
    plan_id = request.match_info["planId"]
    await verification.report(
        ctx.pool,
        ctx.redis,
        ctx.settings,
        user_id=request[USER_ID],
        raw_plan_id=plan_id,
        note=(request.get("data") or {}).get("note") or None,
        now=ctx.now(),
        reason=(request.get("data") or {}).get("reason"),
    )
    return await _status_of(request, plan_id)


@routes.get("/api/legacy/guardianships/{planId}/attestation")
@docs(
    tags=["guardianships"],
    summary="Get the attestation to sign",
    description="Only while the plan is `PendingVerification` (409 otherwise) and once you have accepted "
    "to guard it (403 before). Each request replaces your "
    "previous attestation; each can be used once, within 10 minutes.",
    responses=error_responses(401, 403, 404, 409),
)
@response_schema(AttestationSchema, 200)
async def attestation(request: web.Request) -> web.Response:
    ctx = context(request)
    message = await verification.attestation(
        ctx.pool,
        ctx.redis,
        ctx.settings,
        user_id=request[USER_ID],
        raw_plan_id=request.match_info["planId"],
        now=ctx.now(),
    )
    return json_response({"message": message})


@routes.post("/api/legacy/guardianships/{planId}/approve")
@docs(
    tags=["guardianships"],
    summary="Approve the release with a signed attestation",
    description="Valid only in `PendingVerification`. The approval is kept with its message and signature as "
    "evidence. When approvals reach the threshold the plan becomes `Approved`: the owner has "
    "`cancelWindowSeconds` to veto, then the plan is released. 401 for a wrong, expired or reused "
    "attestation; 409 if you already approved or the plan is not being verified. With a Soroban contract "
    "configured (SERVICE_CONTRACT_ID) this route answers 409: approve on-chain instead. 403 until you "
    "have accepted to guard the plan.",
    responses=error_responses(400, 401, 403, 404, 409),
)
@request_schema(ApproveSchema, required=True)
@response_schema(GuardianActionSchema, 200)
async def approve(request: web.Request) -> web.Response:
    ctx = context(request)
    plan_id = request.match_info["planId"]
    await verification.approve(
        ctx.pool,
        ctx.redis,
        ctx.settings,
        user_id=request[USER_ID],
        raw_plan_id=plan_id,
        signature=request["data"]["signature"],
        now=ctx.now(),
    )
    return await _status_of(request, plan_id)


@routes.post("/api/legacy/guardianships/{planId}/beneficiaries/{beneficiaryId}/resend-link")
@docs(
    tags=["guardianships"],
    summary="Email a beneficiary their link again",
    description="To the address the owner registered for them, and only there (you never see it, nor the "
    "link). Once the plan is `Released` or ready to finalise (409 before). At most 3 resends a day per "
    "beneficiary by the guardians, an allowance of their own: the heir's public requests "
    "(`POST /api/claim/resend`) count apart, so a stranger cannot use it up (429 with Retry-After). "
    "202 with their link's delivery "
    "(`pending` until the email is sent).",
    responses=error_responses(401, 404, 409, 429),
)
@response_schema(LinkDeliverySchema, 202)
async def resend_link(request: web.Request) -> web.Response:
    ctx = context(request)
    delivery = await heirs.resend_link(
        ctx.pool,
        ctx.redis,
        ctx.ring,
        user_id=request[USER_ID],
        raw_plan_id=request.match_info["planId"],
        raw_beneficiary_id=request.match_info["beneficiaryId"],
        now=ctx.now(),
    )
    return json_response(link_delivery_schema.dump(delivery), status=202)


@routes.post("/api/legacy/guardianships/{planId}/wallet-changes/{changeId}/approve")
@docs(
    tags=["guardianships"],
    summary="Approve the wallet an heir proved in place of a lost one",
    description="When the plan's threshold of guardians has approved, the heir's bound wallet becomes "
    "this one (`boundVia: guardians`) and they can finalise and claim with it. Approve only after "
    "confirming with the heir themselves that this wallet is theirs. 409 before the plan is released "
    "(or ready to finalise), if you already approved, if the heir proved another wallet since, or "
    "once they have claimed; 404 for a request or plan that is not yours to see.",
    responses=error_responses(401, 404, 409),
)
@response_schema(WalletChangeStatusSchema, 200)
async def approve_wallet_change(request: web.Request) -> web.Response:
    ctx = context(request)
    status = await heirs.approve_wallet_change(
        ctx.pool,
        ctx.ring,
        user_id=request[USER_ID],
        raw_plan_id=request.match_info["planId"],
        raw_change_id=request.match_info["changeId"],
        now=ctx.now(),
    )
    return json_response(dict(status))
