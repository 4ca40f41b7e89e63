"""Apply `migrations/NNNN_name.sql` in order, once each, under an advisory lock.

The lock makes two instances starting together (e.g. two `release` phases) apply each file
exactly once: the second waits, then finds everything recorded in `schema_migrations`.
"""

from __future__ import annotations

import logging
import re
from pathlib import Path

import psycopg2

log = logging.getLogger(__name__)

MIGRATIONS_DIR = Path(__file__).resolve().parents[2] / "migrations"
LOCK_KEY = 727_001  # arbitrary, fixed: identifies "schema migration" among advisory locks
FILE_RE = re.compile(r"^(\d{4})_[a-z0-9_]+\.sql$")


def migration_files(directory: Path = MIGRATIONS_DIR) -> list[Path]:
    files = sorted(p for p in directory.iterdir() if p.suffix == ".sql")
    for path in files:
        if not FILE_RE.match(path.name):
            raise ValueError(f"migration file name must look like 0001_name.sql: {path.name}")
    return files


def apply_migrations(dsn: str, directory: Path = MIGRATIONS_DIR) -> list[str]:
    """Apply pending migrations; return the names applied (empty when up to date)."""
    applied: list[str] = []
    conn = psycopg2.connect(dsn)
    try:
        conn.autocommit = False
        with conn.cursor() as cur:
            cur.execute("SELECT pg_advisory_xact_lock(%s)", (LOCK_KEY,))
            cur.execute(
                "CREATE TABLE IF NOT EXISTS schema_migrations ("
                " name text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())"
            )
            cur.execute("SELECT name FROM schema_migrations")
            done = {row[0] for row in cur.fetchall()}
            for path in migration_files(directory):
                if path.name in done:
                    continue
                log.info("applying migration", extra={"migration": path.name})
                cur.execute(path.read_text())
                cur.execute("INSERT INTO schema_migrations (name) VALUES (%s)", (path.name,))
                applied.append(path.name)
        conn.commit()
    finally:
        conn.close()
    return applied
