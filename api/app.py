"""The aiohttp application: shared resources, middlewares, routes, OpenAPI."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from urllib.parse import urlsplit

from aiohttp import web
from aiohttp_apigami.constants import APISPEC_PARSER  # not exported: docs/conventions.md, Library internals

from api import activity, headers, health, html, metrics, middleware
from api.account import auth, users
from api.archive import owner_export
from api.archive import routes as archive
from api.chain import claims, onchain
from api.claim import (
    capsule,
    capsule_page,
    capsule_page_wallet,
    claim_links,
    gate,
    heir_export,
    heir_requests,
    heir_wallet,
)
from api.common import RequestParser
from api.contents import assets, beneficiaries, email_confirmations, guardians, messages
from api.delivery import dev_mail, email_webhooks, stop_emails
from api.keys import (
    ACCOUNTS,
    CLOCK,
    CORS_ORIGINS,
    DB,
    METRICS,
    REDIS,
    SETTINGS,
    SOROBAN,
    STORAGE,
    build_context,
)
from api.owner import account as owner_account
from api.owner import dev_owner as owner_test_wallet
from api.owner import guardians as owner_guardians
from api.owner import heirs as owner_heirs
from api.owner import home as owner_home
from api.owner import sign_in as owner_sign_in
from api.owner.contents import archive as owner_archive
from api.owner.contents import assets as owner_assets
from api.owner.contents import messages as owner_messages
from api.owner.rules import activation as owner_activation
from api.owner.rules import leaving as owner_leaving
from api.owner.rules import preview as owner_preview
from api.owner.rules import settings as owner_settings
from api.owner.rules import timeline as owner_timeline
from api.plan import check_in_link, check_in_page, guardian_page, legacy
from api.plan.guardianships import addresses as guardian_addresses
from api.plan.guardianships import routes as guardianships
from api.public import collect_public_routes
from api.schemas import MediaTypes, OpenApiDocument
from api.sep import stellar_toml
from core import db, redis
from core.clock import Clock
from core.files.storage import open_configured_storage
from core.settings import Settings
from core.stellar.soroban import open_soroban
from core.text import i18n
from models.account.users import AccountCheck
from models.proofs import passkey

ROUTE_MODULES = (
    health,
    auth,
    users,
    beneficiaries,
    guardians,
    assets,
    messages,
    activity,
    archive,
    owner_export,
    legacy,
    check_in_link,
    guardianships,
    guardian_addresses,
    capsule,
    heir_export,
    heir_requests,
    claim_links,
    heir_wallet,
    onchain,
    claims,
    metrics,
    html,
    capsule_page,
    capsule_page_wallet,
    check_in_page,
    guardian_page,
    stellar_toml,
    email_webhooks,
    email_confirmations,
    stop_emails,
    owner_sign_in,
    owner_home,
    owner_heirs,
    owner_guardians,
    owner_assets,
    owner_messages,
    owner_archive,
    owner_account,
    owner_settings,
    owner_activation,
    owner_timeline,
    owner_preview,
    owner_leaving,
)
OPENAPI_DESCRIPTION = """Back end of a digital legacy and inheritance planning service.

Every error is `{statusCode, error, message, details?}`. Lists are bare JSON arrays, newest
first, paged with `?limit=` (default 50, max 200) and the opaque `?cursor=` given in the
`Link: <...>; rel="next"` header. Authenticate with `Authorization: Bearer <jwt>` from
`POST /api/auth/wallet/verify`."""


async def _database(app: web.Application) -> AsyncIterator[None]:
    settings = app[SETTINGS]
    app[DB] = await db.create_pool(settings.database_url, settings.db_pool_max, settings.db_timeout_seconds)
    await db.log_budget(app[DB], process="api")
    yield
    app[DB].close()
    await app[DB].wait_closed()


async def _redis(app: web.Application) -> AsyncIterator[None]:
    settings = app[SETTINGS]
    app[REDIS] = await redis.connect(
        settings.redis_url, settings.arq_queue_name, command_timeout=settings.redis_timeout_seconds
    )
    yield
    await app[REDIS].aclose()


async def _storage(app: web.Application) -> AsyncIterator[None]:
    """None when STORAGE_URL is unset (archive routes answer 503); nothing is contacted yet."""
    settings = app[SETTINGS]
    storage = await open_configured_storage(settings)
    app[STORAGE] = storage
    yield
    if storage is not None:
        await storage.close()


async def _soroban(app: web.Application) -> AsyncIterator[None]:
    """None when no contract is configured; the RPC node is contacted only when a route needs it."""
    gateway = open_soroban(app[SETTINGS])
    app[SOROBAN] = gateway
    yield
    if gateway is not None:
        await gateway.close()


def create_app(settings: Settings, clock: Clock | None = None) -> web.Application:
    host = urlsplit(settings.public_base_url).hostname or ""
    if passkey.is_ip(host=host):
        logging.getLogger(__name__).warning(
            "PUBLIC_BASE_URL's host %s is an IP address, which cannot be a passkey's relying party (a "
            "WebAuthn RP ID is a host name): guardians without a Stellar wallet cannot create or use "
            "passkeys until PUBLIC_BASE_URL names a host",
            host,
        )
    i18n.configure(settings.languages.split(","))
    origins = headers.allowed_origins(settings)
    app = web.Application(
        middlewares=[
            middleware.request_context,
            # Preflights only matter when some origin is allowed; otherwise OPTIONS is a 405.
            *([headers.cors_preflight] if origins else []),
            middleware.guard_and_map_errors,
        ],
        client_max_size=middleware.MAX_BODY,
    )
    app[SETTINGS] = settings
    app[CLOCK] = clock or Clock()
    app.cleanup_ctx.extend([_database, _redis, _storage, _soroban, build_context])
    for module in ROUTE_MODULES:
        app.router.add_routes(module.routes)
    if settings.dev_mailbox:  # development without an email provider only: 404 everywhere else
        app.router.add_routes(dev_mail.routes)
    if settings.environment == "development":  # the test owner: 404 in production and tests
        app.router.add_routes(owner_test_wallet.routes)
    app.on_response_prepare.append(gate.capsule_headers)
    app.on_response_prepare.append(html.page_headers)
    app.on_response_prepare.append(headers.response_headers)
    app[CORS_ORIGINS] = origins
    app[METRICS] = metrics.Metrics()
    app[ACCOUNTS] = AccountCheck()  # per process: see models.account.users.ACCOUNT_CHECK_SECONDS
    before = set(app.router.routes())
    openapi = OpenApiDocument(
        app=app,
        title="Legacy Planning Service API",
        version="0.1.0",
        openapi_version="3.0.3",
        url="/api/docs/openapi.json",
        swagger_path="/api/docs",
        static_path="/api/docs/static",
        info={"description": OPENAPI_DESCRIPTION},
        components={
            "securitySchemes": {"bearerAuth": {"type": "http", "scheme": "bearer", "bearerFormat": "JWT"}}
        },
        security=[{"bearerAuth": []}],
    )
    # The document is built at startup; the plugin must be there before (docs/conventions.md,
    # Library internals: `AiohttpApiSpec.spec`).
    media_types = MediaTypes()
    media_types.init_spec(openapi.spec)
    openapi.spec.plugins = (*openapi.spec.plugins, media_types)
    app[APISPEC_PARSER] = RequestParser()
    # The OpenAPI document and its UI are public; every other route needs a session unless
    # its handler is declared @public.
    collect_public_routes(app, extra=set(app.router.routes()) - before)
    return app
