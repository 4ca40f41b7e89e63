"""Typed keys for what the app shares (pools, clients) and what a request carries."""

from __future__ import annotations

from typing import Any

from aiohttp import web
from arq.connections import ArqRedis

from core.clock import Clock
from core.db import Pool
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
