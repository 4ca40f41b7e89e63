"""What every job finds in arq's ctx: the same shared objects the API builds in cleanup_ctx."""

from __future__ import annotations

from typing import Any

from core.db import Pool
from core.settings import Settings

SETTINGS = "settings"
DB = "db"


def settings(ctx: dict[str, Any]) -> Settings:
    value: Settings = ctx[SETTINGS]
    return value


def db(ctx: dict[str, Any]) -> Pool:
    value: Pool = ctx[DB]
    return value
