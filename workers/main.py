"""arq worker: `legacy-planning worker`. Jobs are registered here, one module per job family."""

from __future__ import annotations

import logging
from typing import Any

from arq import cron
from arq.worker import Worker

from core import db
from core import logging as app_logging
from core.redis import deserialize, redis_settings, serialize
from core.settings import Settings
from workers import context
from workers.heartbeat import heartbeat

log = logging.getLogger(__name__)

FUNCTIONS: list[Any] = []
CRON_JOBS = [cron(heartbeat, second=0, run_at_startup=True)]


async def startup(ctx: dict[str, Any]) -> None:
    settings = context.settings(ctx)
    ctx[context.DB] = await db.create_pool(settings.database_url, settings.db_pool_max)


async def shutdown(ctx: dict[str, Any]) -> None:
    pool = ctx.get(context.DB)
    if pool is not None:
        pool.close()
        await pool.wait_closed()


def create_worker(settings: Settings, **overrides: Any) -> Worker:
    """Build a Worker bound to these settings; tests pass burst=True to drain the queue and stop."""
    options: dict[str, Any] = {
        "functions": FUNCTIONS,
        "cron_jobs": CRON_JOBS,
        "on_startup": startup,
        "on_shutdown": shutdown,
        "redis_settings": redis_settings(settings.redis_url),
        "queue_name": settings.arq_queue_name,
        "job_serializer": serialize,
        "job_deserializer": deserialize,
        "ctx": {context.SETTINGS: settings},
        "max_jobs": 4,
        "job_timeout": 3600,
        "keep_result": 60,
        "handle_signals": True,
    }
    options.update(overrides)
    return Worker(**options)


def run(settings: Settings) -> None:
    app_logging.configure(settings.log_level)
    log.info("worker starting", extra={"queue": settings.arq_queue_name})
    create_worker(settings).run()
