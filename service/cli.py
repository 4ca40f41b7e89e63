"""`legacy-planning serve|worker|migrate|dev`: the one entry point for every process.

`serve` runs the API, `worker` the arq worker, `migrate` applies migrations (service.migrate),
`dev` is what `make run` calls (service.dev). api/ and workers/ are imported only by the
command that runs them, so `migrate` does not load the API.
"""

from __future__ import annotations

import argparse
import logging
import sys

from core import logging as app_logging
from core.settings import ConfigError, Settings, load_settings
from core.stellar.readline import restore_aiohttp_readline
from service.migrate import apply_migrations, reseal_hook

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


def cmd_migrate(settings: Settings) -> None:
    if not settings.database_url:
        raise ConfigError("DATABASE_URL is required")
    applied = apply_migrations(
        settings.database_url, before_reseal=reseal_hook(settings, settings.database_url)
    )
    log.info("migrations applied" if applied else "database up to date", extra={"applied": applied})


def cmd_dev(settings: Settings) -> None:
    from service.dev import run

    run(settings)


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
