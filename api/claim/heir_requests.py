"""`POST /api/claim/:token/request`: an heir asks the guardians to verify (#24 section 4).
Behind the claim gate (an unknown token is its 404); models.flows.heir_requests decides."""

from __future__ import annotations

from aiohttp import web
from aiohttp_apigami import docs, request_schema, response_schema

from api.claim.gate import claim_gate
from api.claim.schemas import HeirRequestedSchema, HeirRequestSchema, heir_requested_schema
from api.common import json_response
from api.keys import context
from api.schemas import error_responses
from models.claim import capsules
from models.flows import heir_requests

routes = web.RouteTableDef()


@routes.post("/api/claim/{token}/request")
@docs(
    tags=["capsule"],
    summary="Ask the guardians to verify",
    description="For an heir who believes the owner has died or can no longer act: on an `Active` plan "
    "this starts a verification, as a guardian's report does (actor `beneficiary`, reason "
    "`beneficiary_request`). The owner is emailed with a check-in link and told which heir asked, and can "
    "stop it at any time by checking in; the accepted guardians are emailed your name and note and asked "
    "to verify; the plan's verification deadline then applies. 409 with a plain sentence when the plan is "
    "not `Active`, when a verification already runs, or when the owner turned requests off "
    "(`allowBeneficiaryRequests`). Within PLAN_REPORT_COOLDOWN_SECONDS of the owner's last check-in that "
    "stopped a verification, 429 with `Retry-After`.",
    responses={202: {"description": "Requested"}, **error_responses(400, 409)},
)
@request_schema(HeirRequestSchema)
@response_schema(HeirRequestedSchema, 202)
@claim_gate
async def request_verification(request: web.Request, capsule: capsules.Capsule) -> web.Response:
    ctx = context(request)
    await heir_requests.request(
        ctx.pool,
        ctx.redis,
        ctx.settings,
        capsule=capsule,
        note=(request.get("data") or {}).get("note") or None,
        now=ctx.now(),
    )
    return json_response(heir_requested_schema.dump({"status": "requested"}), status=202)
