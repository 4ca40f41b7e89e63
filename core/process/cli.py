"""`legacy-planning serve|worker|migrate|dev`: the one entry point for every process.

`dev` is what `make run` calls: it starts embedded PostgreSQL/Redis when DATABASE_URL /
REDIS_URL are unset, migrates, then runs one API and one worker process until Ctrl-C; a worker
that exits is restarted with backoff (core.process.supervise) while the API stays up.
(This module imports api/workers lazily: it is the composition root, not a shared library.)
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from core import logging as app_logging
from core.process.supervise import Restarting
from core.settings import ConfigError, Settings, load_settings
from core.stellar.readline import restore_aiohttp_readline

log = logging.getLogger("legacy_planning")


def _require_urls(settings: Settings) -> None:
    for name, value in (("DATABASE_URL", settings.database_url), ("REDIS_URL", settings.redis_url)):
        if not value:
            raise ConfigError(f"{name} is required (or use `legacy-planning dev` for embedded services)")


def cmd_serve(settings: Settings) -> None:
    from api.app import create_app
    from api.server import run

    _require_urls(settings)
    log.info(
        "api starting", extra={"host": settings.host, "port": settings.port, "env": settings.environment}
    )
    run(create_app(settings), host=settings.host, port=settings.port)


def cmd_worker(settings: Settings) -> None:
    from workers.main import run

    _require_urls(settings)
    run(settings)


def reseal_hook(settings: Settings, database_url: str) -> Callable[[], None] | None:
    """The reseal job (models.sealed_text.reseal) as `migrate` runs it before a migration that
    drops plaintext columns; None without ENCRYPTION_KEYS (that migration then refuses, naming
    what is left, and drops nothing)."""
    ring = settings.encryption_keys
    if ring is None:
        return None

    async def reseal() -> None:
        from core.db import create_pool
        from models import sealed_text

        pool = await create_pool(database_url, 2)
        try:
            resealed, unopenable = await sealed_text.reseal(pool, ring)
        finally:
            pool.close()
            await pool.wait_closed()
        log.info("private texts sealed before migrating", extra={"count": resealed, "unopenable": unopenable})

    return lambda: asyncio.run(reseal())


def cmd_migrate(settings: Settings) -> None:
    from core.process.migrate import apply_migrations

    if not settings.database_url:
        raise ConfigError("DATABASE_URL is required")
    applied = apply_migrations(
        settings.database_url, before_reseal=reseal_hook(settings, settings.database_url)
    )
    log.info("migrations applied" if applied else "database up to date", extra={"applied": applied})


def cmd_dev(settings: Settings) -> None:
    from core.process.embedded import start_postgres, start_redis
    from core.process.migrate import apply_migrations

    env = dict(os.environ)
    stops = []
    if not settings.database_url:
        url, stop = start_postgres(settings.data_dir)
        env["DATABASE_URL"] = url
        stops.append(stop)
        log.info("DATABASE_URL unset: using embedded PostgreSQL under %s", settings.data_dir)
    if not settings.redis_url:
        url, stop = start_redis(settings.data_dir)
        env["REDIS_URL"] = url
        stops.append(stop)
        log.info("REDIS_URL unset: using embedded Redis under %s", settings.data_dir)
    if not env.get("STORAGE_URL"):
        env["STORAGE_URL"] = Path(settings.data_dir, "objects").resolve().as_uri()
        log.info("STORAGE_URL unset: storing archive objects under %s", env["STORAGE_URL"])
    apply_migrations(env["DATABASE_URL"], before_reseal=reseal_hook(settings, env["DATABASE_URL"]))

    def spawn(name: str) -> subprocess.Popen[bytes]:
        return subprocess.Popen([sys.executable, "-m", "core.process.cli", name], env=env)  # noqa: S603

    api = spawn("serve")
    worker = Restarting("worker", lambda: spawn("worker"))
    stopping = False

    def stop_all(*_: object) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGINT, stop_all)
    signal.signal(signal.SIGTERM, stop_all)
    try:
        # The API is the service: if it exits, dev stops. The worker is restarted with backoff.
        while not stopping and api.poll() is None:
            worker.poll(time.monotonic())
            time.sleep(0.2)
    finally:
        if api.poll() is None:
            api.send_signal(signal.SIGINT)
        worker.stop()
        try:
            api.wait(timeout=15)
        except subprocess.TimeoutExpired:
            api.kill()
        for stop in reversed(stops):
            stop()
        log.info("stopped")


COMMANDS = {"serve": cmd_serve, "worker": cmd_worker, "migrate": cmd_migrate, "dev": cmd_dev}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="legacy-planning", description=__doc__)
    parser.add_argument("command", choices=sorted(COMMANDS))
    args = parser.parse_args(argv)
    try:
        settings = load_settings()
    except ConfigError as exc:
        print(f"configuration error: {exc}", file=sys.stderr)
        raise SystemExit(2) from None
    app_logging.configure(settings.log_level)
    restore_aiohttp_readline()  # before the API or a worker reads anything (core/stellar/readline.py)
    try:
        COMMANDS[args.command](settings)
    except ConfigError as exc:
        print(f"configuration error: {exc}", file=sys.stderr)
        raise SystemExit(2) from None


if __name__ == "__main__":
    main()
