"""`legacy-planning serve|worker|migrate|dev|keys check`: the one entry point for every process.

`serve` runs the API, `worker` the arq worker, `migrate` applies migrations (service.migrate),
`dev` is what `make run` calls (service.dev), `keys check` opens a sample of what the database
and the object store hold with the configured key ring (models/key_check.py; docs/operations.md).
api/ and workers/ are imported only by the command that runs them, so `migrate` does not load
the API.
"""

from __future__ import annotations

import argparse
import asyncio
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
    from models.delivery import mailbox

    _require_urls(settings)
    log.info(
        "api starting", extra={"host": settings.host, "port": settings.port, "env": settings.environment}
    )
    # Where a newcomer starts: the owner's sign-in page (the test wallet is offered in development).
    log.info("owners sign in at %s/sign-in", settings.public_base_url)
    if settings.dev_mailbox:
        log.info(
            "no email provider (EMAIL_PROVIDER_URL, EMAIL_PROVIDER_API_KEY): every email is kept in"
            " the development mailbox under %s; read them at http://localhost:%s/dev/mail"
            " (this machine only)",
            mailbox.folder(data_dir=settings.data_dir),
            settings.port,
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


def cmd_keys(settings: Settings, action: str | None, sample: int) -> None:
    """`keys check`: exit 0 when everything sampled opens, 1 naming what does not (never a
    plaintext), 2 for a configuration error (no key ring, no database)."""
    if action != "check":
        raise ConfigError("usage: legacy-planning keys check [--sample N]")
    if settings.encryption_keys is None:
        raise ConfigError(
            "ENCRYPTION_KEYS is not set: without the key ring nothing sealed can be opened. Set it to the "
            "escrowed value (docs/operations.md) and run `legacy-planning keys check` again"
        )
    if not settings.database_url:
        raise ConfigError("DATABASE_URL is required")
    problems = asyncio.run(_keys_check(settings, sample))
    raise SystemExit(1 if problems else 0)


async def _keys_check(settings: Settings, sample: int) -> int:
    from core import db
    from core.files.storage import open_configured_storage
    from models import key_check

    pool = await db.create_pool(settings.database_url, 2, settings.db_timeout_seconds)
    storage = await open_configured_storage(settings)
    try:
        report = await key_check.check(pool, settings.key_ring, storage, sample=sample)
    finally:
        if storage is not None:
            await storage.close()
        pool.close()
        await pool.wait_closed()
    print(f"key ring: {', '.join(settings.key_ring.key_ids)} (primary {settings.key_ring.primary_id})")
    for key_id, n in report["key_ids"].items():
        print(f"in use: key id {key_id}: {n} values and data keys")
    for what, n in sorted(report["checked"].items()):
        print(f"opened: {what}: {n}")
    for problem in report["problems"]:
        print(f"CANNOT OPEN: {problem['where']}: {problem['reason']}")
    count = len(report["problems"])
    print("keys check: OK" if not count else f"keys check: FAILED, {count} problems")
    return count


COMMANDS = {
    "serve": cmd_serve,
    "worker": cmd_worker,
    "migrate": cmd_migrate,
    "dev": cmd_dev,
    "keys": cmd_keys,
}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="legacy-planning", description=__doc__)
    parser.add_argument("command", choices=sorted(COMMANDS))
    parser.add_argument("action", nargs="?", help="keys: check")
    parser.add_argument("--sample", type=int, default=50, help="keys check: rows opened per column")
    args = parser.parse_args(argv)
    try:
        settings = load_settings()
    except ConfigError as exc:
        print(f"configuration error: {exc}", file=sys.stderr)
        raise SystemExit(2) from None
    app_logging.configure(settings.log_level)
    restore_aiohttp_readline()  # before the API or a worker reads anything (core/stellar/readline.py)
    try:
        if args.command == "keys":
            cmd_keys(settings, args.action, max(1, args.sample))
        else:
            COMMANDS[args.command](settings)  # type: ignore[operator]
    except ConfigError as exc:
        print(f"configuration error: {exc}", file=sys.stderr)
        raise SystemExit(2) from None


if __name__ == "__main__":
    main()
