"""POST /api/webhooks/email: the email provider's delivery events (Resend's shapes, Standard
Webhooks / Svix signatures). Public: the signature is the credential (models.delivery.events)."""

from __future__ import annotations

import asyncio

from aiohttp import web
from aiohttp_apigami import docs, response_schema

from api.common import json_response
from api.delivery.schemas import EventResultSchema, event_result_schema
from api.keys import context
from api.public import public
from api.schemas import error_responses
from core.errors import RequestTimeout
from models.delivery import events

routes = web.RouteTableDef()


@routes.post("/api/webhooks/email")
@public  # the Standard Webhooks signature is the credential
@docs(
    tags=["email"],
    summary="The email provider's delivery events",
    description="Resend's webhook events `email.delivered`, `email.bounced`, `email.complained` and "
    "`email.delivery_delayed` (`{type, created_at, data: {email_id, …}}`), signed the Standard Webhooks / "
    "Svix way: `svix-id`, `svix-timestamp`, `svix-signature` (or the `webhook-*` names), HMAC-SHA256 under "
    "EMAIL_WEBHOOK_SECRET. 401 for a missing or wrong signature or a timestamp more than 5 minutes "
    "off; 503 when EMAIL_WEBHOOK_SECRET is unset. A replayed message id, an email id the service never "
    "sent and other event types are 200 and change nothing. A bounced or complained claim link emails "
    "every accepted guardian of the plan (at most once a day per heir); a bounced guardian invitation "
    "emails the owner; a bounced owner address becomes a readiness problem; a bounced or complained "
    "confirmation of a corrected heir address ends that change at the next lifecycle scan, and every "
    "accepted guardian is told. See docs/capsule.md and docs/lifecycle.md.",
    responses={200: {"description": "Received"}, **error_responses(400, 401, 503)},
)
@response_schema(EventResultSchema, 200)
async def email_events(request: web.Request) -> web.Response:
    ctx = context(request)
    try:
        async with asyncio.timeout(ctx.settings.request_body_timeout_seconds):
            body = await request.read()
    except TimeoutError:
        raise RequestTimeout("The request body did not arrive in time") from None
    result = await events.receive(
        ctx.pool,
        ctx.redis,
        ctx.settings,
        body=body,
        headers=request.headers,
        now=ctx.now(),
    )
    return json_response(event_result_schema.dump({"result": result}))
