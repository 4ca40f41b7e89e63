"""What every job finds in arq's ctx: the same shared objects the API builds in cleanup_ctx."""

from __future__ import annotations

from typing import Any

from arq.connections import ArqRedis

from core.clock import Clock
from core.db import Pool
from core.files.crypto import KeyRing
from core.files.storage import Storage
from core.settings import Settings
from core.stellar.soroban import SorobanGateway

SETTINGS = "settings"
CLOCK = "clock"
DB = "db"
STORAGE = "storage"
KEY_RING = "key_ring"
SOROBAN = "soroban"
REDIS = "redis"  # set by arq itself: the worker's own pool, for enqueueing follow-up jobs


def settings(ctx: dict[str, Any]) -> Settings:
    value: Settings = ctx[SETTINGS]
    return value


def db(ctx: dict[str, Any]) -> Pool:
    value: Pool = ctx[DB]
    return value


def storage(ctx: dict[str, Any]) -> Storage | None:
    """None when STORAGE_URL is unset: archive jobs then fail honestly instead of pretending."""
    value: Storage | None = ctx.get(STORAGE)
    return value


def key_ring(ctx: dict[str, Any]) -> KeyRing:
    value: KeyRing = ctx[KEY_RING]
    return value


def redis(ctx: dict[str, Any]) -> ArqRedis:
    value: ArqRedis = ctx[REDIS]
    return value


def clock(ctx: dict[str, Any]) -> Clock:
    value: Clock = ctx[CLOCK]
    return value


def soroban(ctx: dict[str, Any]) -> SorobanGateway | None:
    """None when SERVICE_CONTRACT_ID is unset: nothing is relayed, nothing pretends."""
    value: SorobanGateway | None = ctx.get(SOROBAN)
    return value
