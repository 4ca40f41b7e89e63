"""Typed keys for what the app shares (pools, clients) and what a request carries."""

from __future__ import annotations

from arq.connections import ArqRedis
from aiohttp import web

from core.db import Pool
from core.settings import Settings

SETTINGS = web.AppKey("settings", Settings)
DB = web.AppKey("db", Pool)
REDIS = web.AppKey("redis", ArqRedis)

USER_ID = web.RequestKey("user_id", str)
