"""Typed keys for what the app shares (pools, clients) and what a request carries, and the one
typed context a handler reads them from: `ctx = context(request)`.

The context is built once when the app starts (after the pool, Redis, storage and the Soroban
gateway are open) and stored under one AppKey, so a handler reads `ctx.pool`, `ctx.ring`,
`ctx.now()` instead of looking each shared object up in `request.app` by its own key.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from aiohttp import web
from arq.connections import ArqRedis

from core.clock import Clock
from core.db import Pool
from core.files.crypto import KeyRing
from core.files.storage import Storage
from core.settings import Settings
from core.stellar.soroban import SorobanGateway
from models.account.users import AccountCheck

SETTINGS = web.AppKey("settings", Settings)
CLOCK = web.AppKey("clock", Clock)
DB = web.AppKey("db", Pool)
REDIS = web.AppKey("redis", ArqRedis)
# None when STORAGE_URL is unset: archive upload and download then answer 503.
STORAGE: web.AppKey[Storage | None] = web.AppKey("storage")
# Routes reachable without a session, collected at startup (see api/public.py).
# Prometheus registry and request counters (api/metrics.py); typed loosely to keep keys import-light.
METRICS: web.AppKey[Any] = web.AppKey("metrics")
# Exact origins CORS allows (CORS_ALLOWED_ORIGINS), parsed once.
CORS_ORIGINS: web.AppKey[frozenset[str]] = web.AppKey("cors_origins")
PUBLIC_ROUTES: web.AppKey[set[web.AbstractRoute]] = web.AppKey("public_routes")
# None when SERVICE_CONTRACT_ID is unset: build, submit and status routes then answer 503.
SOROBAN: web.AppKey[SorobanGateway | None] = web.AppKey("soroban")
# This process's memory of which accounts exist and their session generation (models.account.users).
ACCOUNTS = web.AppKey("accounts", AccountCheck)

USER_ID = web.RequestKey("user_id", str)


@dataclass(frozen=True, slots=True)
class Context:
    settings: Settings
    clock: Clock
    pool: Pool
    redis: ArqRedis
    storage: Storage | None  # None when STORAGE_URL is unset: archive routes answer 503
    soroban: SorobanGateway | None  # None when SERVICE_CONTRACT_ID is unset: chain routes answer 503
    accounts: AccountCheck

    @property
    def ring(self) -> KeyRing:
        """The key ring; read when used, so an unconfigured ring fails only the routes that need it."""
        return self.settings.key_ring

    def now(self) -> datetime:
        return self.clock.now()


CONTEXT = web.AppKey("context", Context)


def context(request: web.Request) -> Context:
    return request.app[CONTEXT]


async def build_context(app: web.Application) -> AsyncIterator[None]:
    """The last of the app's cleanup contexts: every shared object it carries is open by then."""
    app[CONTEXT] = Context(
        settings=app[SETTINGS],
        clock=app[CLOCK],
        pool=app[DB],
        redis=app[REDIS],
        storage=app[STORAGE],
        soroban=app[SOROBAN],
        accounts=app[ACCOUNTS],
    )
    yield
