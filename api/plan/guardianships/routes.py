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

from api.common import json_response
from api.keys import USER_ID, context
from api.plan.guardianships.schemas import (
    AnswerSchema,
    ApproveSchema,
    AttestationSchema,
    GuardianActionSchema,
    GuardianshipSchema,
    LinkDeliverySchema,
    ObjectedSchema,
    ObjectSchema,
    ReconfirmedSchema,
    ReportSchema,
    WalletChangeStatusSchema,
    action_schema,
    answer_schema,
    attestation_schema,
    guardianship_schema,
    link_delivery_schema,
    objected_schema,
    reconfirmed_schema,
    wallet_change_status_schema,
)
from api.schemas import error_responses
from models.flows import verification
from models.flows.answers import objections
from models.plan.guardianships import heirs, invitation, membership, reconfirmation

routes = web.RouteTableDef()


async def _status_of(request: web.Request, plan_id: str) -> web.Response:
    ctx = context(request)
    status = await membership.plan_status(ctx.pool, user_id=request[USER_ID], raw_plan_id=plan_id)
    return json_response(action_schema.dump({"ok": True, "status": status}))


@routes.get("/api/legacy/guardianships")
@docs(
    tags=["guardianships"],
    summary="Plans I guard",
    description="Plans where one of your wallets is a guardian, with verification progress and your "
    "answer to the invitation (`invitation`: pending, accepted or declined; Drafts are listed so that "
    "you can answer before the plan starts). Nothing of the plans' contents. Until you accept (and after "
    "you decline) a plan shows only its owner, its status and your invitation: `beneficiaries`, "
    "`walletChanges` and `addressChanges` are empty, `approvals` 0, `reconfirmationAsked` false, "
    "`releaseAt`, `readySince`, "
    "`ownerKeyUsedAt`, `reconfirmedAt`, `reconfirmationAskedAt` and `unresponsiveSince` null.",
    responses=error_responses(401),
)
@response_schema(GuardianshipSchema(many=True), 200)
async def list_guardianships(request: web.Request) -> web.Response:
    ctx = context(request)
    items = await invitation.list_for(ctx.pool, ctx.ring, user_id=request[USER_ID])
    return json_response(guardianship_schema.dump(items, many=True))


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
    return json_response(answer_schema.dump({"ok": True, **result}))


@routes.post("/api/legacy/guardianships/{planId}/accept")
@docs(
    tags=["guardianships"],
    summary="Accept to guard this plan",
    description="From the session of the wallet the owner recorded for you. From then on you count "
    "toward the approvals the plan needs, are told when it needs you, and may report and approve. "
    "Accepting again changes nothing; accepting after declining takes the refusal back. 409 while the "
    "plan is being verified or approved (a guardian who had not accepted when the round began does not "
    "answer in it: accept once it ends) and once it is released; 404 for a plan you are not a guardian of.",
    responses=error_responses(401, 404, 409),
)
@response_schema(AnswerSchema, 200)
async def accept(request: web.Request) -> web.Response:
    return await _answer(request, accept=True)


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


@routes.post("/api/legacy/guardianships/{planId}/object")
@docs(
    tags=["guardianships"],
    summary="Say the verification is a mistake: you know the owner is alive or able to act",
    description="Only while the plan is `PendingVerification` (409 otherwise: once enough guardians "
    "approved, only the owner's check-in stops the release). One answer per guardian and round: objecting "
    "takes back your approval (409 for one signed on-chain, which cannot be taken back), approving takes "
    "back your objection. While an objection stands the deadline does not release the plan: it waits, as "
    'with `onVerificationTimeout: "wait"`, until enough guardians approve, the owner checks in, or the '
    "objection lapses: at `objectionLapsesAt` in the answer, PLAN_OBJECTION_CHECK_IN_SECONDS (14 days) "
    "after your first objection in this verification (withdrawing and objecting again does not move it). "
    "The owner is emailed at once (with a check-in link, your note and that date) and reminded halfway, "
    "and the other accepted guardians are told, with your name and note. If the owner has not checked in "
    "by then, the objection lapses: everyone is told, and the deadline applies again as after a "
    "withdrawal. 409 if you already object, or once your objection in this verification lapsed; 403 until "
    "you accepted; 404 for a plan you do not guard.",
    responses=error_responses(400, 401, 403, 404, 409),
)
@request_schema(ObjectSchema)
@response_schema(ObjectedSchema, 200)
async def object_to(request: web.Request) -> web.Response:
    ctx = context(request)
    plan_id = request.match_info["planId"]
    lapses_at = await objections.object_to(
        ctx.pool,
        ctx.redis,
        ctx.settings,
        user_id=request[USER_ID],
        raw_plan_id=plan_id,
        note=(request.get("data") or {}).get("note") or None,
        now=ctx.now(),
    )
    status = await membership.plan_status(ctx.pool, user_id=request[USER_ID], raw_plan_id=plan_id)
    return json_response(
        objected_schema.dump({"ok": True, "status": status, "objection_lapses_at": lapses_at})
    )


@routes.delete("/api/legacy/guardianships/{planId}/object")
@docs(
    tags=["guardianships"],
    summary="Withdraw your objection",
    description="The owner and the other accepted guardians are told, as they were of the objection. When "
    "no objection stands any more, the deadline applies again; if it passed while the objection stood and "
    "it releases, the owner is sent a final warning and the deadline becomes "
    "PLAN_DEADLINE_WARNING_SECONDS from now. 409 if you have no objection standing in this verification.",
    responses=error_responses(401, 403, 404, 409),
)
@response_schema(GuardianActionSchema, 200)
async def withdraw_objection(request: web.Request) -> web.Response:
    ctx = context(request)
    plan_id = request.match_info["planId"]
    await objections.withdraw(
        ctx.pool, ctx.redis, ctx.settings, user_id=request[USER_ID], raw_plan_id=plan_id, now=ctx.now()
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
    return json_response(attestation_schema.dump({"message": message}))


@routes.post("/api/legacy/guardianships/{planId}/approve")
@docs(
    tags=["guardianships"],
    summary="Approve the release with a signed attestation",
    description="Valid only in `PendingVerification`. The approval is kept with its message and signature as "
    "evidence. When approvals reach the threshold the plan becomes `Approved`: the owner has "
    "`cancelWindowSeconds` to veto, then the plan is released. 401 for a wrong, expired or reused "
    "attestation; 409 if you already approved or the plan is not being verified. With a Soroban contract "
    "configured (SERVICE_CONTRACT_ID) this route answers 409: approve on-chain instead. 403 until you "
    "have accepted to guard the plan. One answer per guardian and round: approving takes back your "
    "objection, if you made one (`…/object`).",
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
    return json_response(wallet_change_status_schema.dump(status))
