"""/api/users/me: the owner's profile."""

from __future__ import annotations

from aiohttp import web
from aiohttp_apigami import docs, request_schema, response_schema
from marshmallow import fields, validate

from api.account import auth
from api.account.auth import UserSchema, user_schema
from api.common import json_response
from api.keys import DB, SETTINGS, USER_ID
from api.schemas import PatchSchema, Text, error_responses
from models.account import users

routes = web.RouteTableDef()


class ProfileUpdateSchema(PatchSchema):
    name = Text(allow_none=True, validate=validate.Length(min=1, max=120))
    email = fields.Email(allow_none=True, validate=validate.Length(max=254))


# The same handler as /api/auth/me: the web client reads the profile from either path.
routes.get("/api/users/me")(auth.me)


@routes.patch("/api/users/me")
@docs(
    tags=["users"],
    summary="Update name and/or email",
    description="null clears a field. The timeline records which fields changed, not their values.",
    responses=error_responses(400, 401),
)
@request_schema(ProfileUpdateSchema)
@response_schema(UserSchema, 200)
async def patch_me(request: web.Request) -> web.Response:
    user = await users.update_profile(
        request.app[DB], request.app[SETTINGS].key_ring, user_id=request[USER_ID], changes=request["data"]
    )
    return json_response(user_schema.dump(user))
