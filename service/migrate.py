"""Apply `migrations/NNNN_name.sql` in order, once each, under an advisory lock.

The lock makes two instances starting together (e.g. two `release` phases) apply each file
exactly once: the second waits, then finds everything recorded in `schema_migrations`. Each
file commits on its own with its `schema_migrations` row, so a file that refuses leaves the
ones before it applied and itself not applied (and is retried by the next run).

A file whose first line is `RESEAL_FIRST` needs every private text sealed before it runs (it
drops plaintext columns): `before_reseal`, when given, is called just before it, after every
earlier file has committed. `legacy-planning migrate` and `dev` pass the reseal job there
(`reseal_hook`).
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Callable
from pathlib import Path

import psycopg2

from core.db import create_pool
from core.settings import Settings
from models import sealed_text

log = logging.getLogger(__name__)

MIGRATIONS_DIR = Path(__file__).resolve().parents[1] / "migrations"
LOCK_KEY = 727_001  # arbitrary, fixed: identifies "schema migration" among advisory locks
FILE_RE = re.compile(r"^(\d{4})_[a-z0-9_]+\.sql$")
RESEAL_FIRST = "-- legacy-planning: reseal first"


def migration_files(directory: Path = MIGRATIONS_DIR) -> list[Path]:
    files = sorted(p for p in directory.iterdir() if p.suffix == ".sql")
    numbers: dict[str, str] = {}
    for path in files:
        match = FILE_RE.match(path.name)
        if not match:
            raise ValueError(f"migration file name must look like 0001_name.sql: {path.name}")
        # Two engineers landing the same number would make the order depend on their names.
        if match.group(1) in numbers:
            raise ValueError(
                f"migration number {match.group(1)} is taken twice: {numbers[match.group(1)]}, {path.name}"
            )
        numbers[match.group(1)] = path.name
    return files


def apply_migrations(
    dsn: str, directory: Path = MIGRATIONS_DIR, *, before_reseal: Callable[[], object] | None = None
) -> list[str]:
    """Apply pending migrations; return the names applied (empty when up to date)."""
    applied: list[str] = []
    conn = psycopg2.connect(dsn)
    try:
        conn.autocommit = False
        with conn.cursor() as cur:
            # Session-level: held across the per-file commits, released when the connection closes.
            cur.execute("SELECT pg_advisory_lock(%s)", (LOCK_KEY,))
            cur.execute(
                "CREATE TABLE IF NOT EXISTS schema_migrations ("
                " name text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())"
            )
            conn.commit()
            cur.execute("SELECT name FROM schema_migrations")
            done = {row[0] for row in cur.fetchall()}
            conn.commit()
            for path in migration_files(directory):
                if path.name in done:
                    continue
                sql = path.read_text()
                if sql.startswith(RESEAL_FIRST) and before_reseal is not None:
                    log.info("sealing private texts before migration", extra={"migration": path.name})
                    before_reseal()
                log.info("applying migration", extra={"migration": path.name})
                try:
                    cur.execute(sql)
                    cur.execute("INSERT INTO schema_migrations (name) VALUES (%s)", (path.name,))
                    conn.commit()
                except Exception:
                    conn.rollback()
                    raise
                applied.append(path.name)
    finally:
        conn.close()
    return applied


def reseal_hook(settings: Settings, database_url: str) -> Callable[[], None] | None:
    """The reseal job (models.sealed_text.reseal) as `migrate` runs it before a migration that
    drops plaintext columns; None without ENCRYPTION_KEYS (that migration then refuses, naming
    what is left, and drops nothing)."""
    ring = settings.encryption_keys
    if ring is None:
        return None

    async def reseal() -> None:
        pool = await create_pool(database_url, 2)
        try:
            resealed, unopenable = await sealed_text.reseal(pool, ring)
        finally:
            pool.close()
            await pool.wait_closed()
        log.info("private texts sealed before migrating", extra={"count": resealed, "unopenable": unopenable})

    return lambda: asyncio.run(reseal())
