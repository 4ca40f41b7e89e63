"""/api/beneficiaries: who receives a share of the plan, and their capsule claim tokens."""

from __future__ import annotations

from typing import Any

from aiohttp import web
from aiohttp_apigami import docs, response_schema

from api.common import Doc, Owned, email_budget, json_response
from api.contents.schemas import (
    CLAIM_LINK_NOTE,
    BeneficiaryCreateSchema,
    BeneficiaryPatchSchema,
    BeneficiarySchema,
    beneficiary_schema,
)
from api.keys import USER_ID, Context, context
from api.schemas import (
    error_responses,
)
from models.contents import beneficiaries
from models.contents.beneficiaries import Beneficiary
from models.pagination import Page, PageRequest

routes = web.RouteTableDef()


class Beneficiaries(Owned):
    path = "/api/beneficiaries"
    tag = "beneficiaries"
    schema = BeneficiarySchema
    create_schema = BeneficiaryCreateSchema
    patch_schema = BeneficiaryPatchSchema
    docs = {
        "list": Doc("List beneficiaries, newest first"),
        "create": Doc(
            "Add a beneficiary",
            "The total `allocationPercentage` over your beneficiaries may not exceed 100 "
            "(400 naming the current total). " + CLAIM_LINK_NOTE,
        ),
        "get": Doc("Get a beneficiary"),
        "patch": Doc(
            "Change a beneficiary",
            "Validated like create, for the fields given; an empty body is a 400. "
            "A `claimToken` in the body is ignored: use the rotate route. A new `email` on an Active "
            "plan whose owner chose to tell heirs early (`notifyBeneficiariesOnActivation`) sends the "
            "heir's link again, to the new address (the same link; the old email's keeps working).",
        ),
        "delete": Doc(
            "Remove a beneficiary",
            "Also removes them from every message audience; a message left with no recipient "
            "stays, addressed to nobody, until you re-address it. Their claim link stops working.",
        ),
    }

    async def list(self, ctx: Context, request: web.Request, *, user_id: str, page: PageRequest) -> Page[Any]:
        return await beneficiaries.list_page(ctx.pool, ctx.ring, user_id=user_id, page=page)

    async def create(
        self, ctx: Context, request: web.Request, *, user_id: str, data: dict[str, Any]
    ) -> Beneficiary:
        return await beneficiaries.create(
            ctx.pool,
            ctx.ring,
            ctx.redis,
            user_id=user_id,
            data=data,
            now=ctx.now(),
            budget=email_budget(request),
        )

    async def get(self, ctx: Context, request: web.Request, *, user_id: str, raw_id: str) -> Beneficiary:
        return await beneficiaries.get(ctx.pool, ctx.ring, user_id=user_id, raw_id=raw_id)

    async def update(
        self, ctx: Context, request: web.Request, *, user_id: str, raw_id: str, changes: dict[str, Any]
    ) -> Beneficiary:
        return await beneficiaries.update(
            ctx.pool,
            ctx.ring,
            ctx.redis,
            user_id=user_id,
            raw_id=raw_id,
            changes=changes,
            now=ctx.now(),
            budget=email_budget(request),
        )

    async def delete(self, ctx: Context, request: web.Request, *, user_id: str, raw_id: str) -> None:
        await beneficiaries.delete(ctx.pool, ctx.ring, user_id=user_id, raw_id=raw_id, now=ctx.now())


Beneficiaries().register(routes)


@routes.post("/api/beneficiaries/{id}/claim-token/rotate")
@docs(
    tags=["beneficiaries"],
    summary="Issue a new claim token",
    description="The previous token stops opening the capsule at once; share the new one.",
    responses=error_responses(401, 404, 409),
)
@response_schema(BeneficiarySchema, 200)
async def rotate_claim_token(request: web.Request) -> web.Response:
    ctx = context(request)
    row = await beneficiaries.rotate_claim_token(
        ctx.pool, ctx.ring, user_id=request[USER_ID], raw_id=request.match_info["id"]
    )
    return json_response(beneficiary_schema.dump(row))
