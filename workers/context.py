"""What every job finds in arq's ctx: one typed `Context` under one key, as the API keeps its
shared objects under `AppKey`s (api/keys.py).

`open_context` builds it once at worker start-up (`on_startup`), `close_context` releases it at
shutdown, and every job reads it with `context.get(ctx)`, so a job names `app.db` or
`app.clock` and mypy checks the rest. arq's own per-run keys (`job_try`, `job_id`) stay in
ctx where arq puts them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from arq.connections import ArqRedis

from core import db, mailer
from core.clock import Clock
from core.files.crypto import KeyRing
from core.files.storage import Storage, open_configured_storage
from core.settings import Settings
from core.stellar.soroban import SorobanGateway, open_soroban

KEY = "legacy_context"
# Requests the whole worker has at the email provider at once, shared by its jobs
# (core.mailer.Senders).
EMAIL_CONCURRENCY = 32


@dataclass(frozen=True)
class Context:
    settings: Settings
    clock: Clock
    db: db.Pool
    redis: ArqRedis  # arq's own pool, for enqueueing follow-up jobs
    key_ring: KeyRing
    # None when STORAGE_URL is unset: archive jobs then fail honestly instead of pretending.
    storage: Storage | None
    # None when SERVICE_CONTRACT_ID is unset: nothing is relayed, nothing pretends.
    soroban: SorobanGateway | None
    # The worker's email senders: one pooled session shared by every delivery job.
    senders: mailer.Senders


def get(ctx: dict[str, Any]) -> Context:
    """The worker's context, in a job (or in on_shutdown)."""
    value: Context = ctx[KEY]
    return value


async def open_context(
    settings: Settings, clock: Clock, redis: ArqRedis, *, pool_size: int | None = None
) -> Context:
    """Everything a job shares, opened once per worker process (arq hands each job a copy of
    ctx, so shared objects go in at start-up). The pool holds `pool_size` connections at most
    (workers.main.pool_size: the jobs it runs at once; DB_POOL_MAX when not given); its budget
    is logged."""
    size = settings.db_pool_max if pool_size is None else pool_size
    pool = await db.create_pool(settings.database_url, size, settings.db_timeout_seconds)
    await db.log_budget(pool, process="worker")
    return Context(
        settings=settings,
        clock=clock,
        db=pool,
        redis=redis,
        key_ring=settings.key_ring,
        storage=await open_configured_storage(settings),
        soroban=open_soroban(settings),
        senders=mailer.Senders(settings, EMAIL_CONCURRENCY),
    )


async def close_context(app: Context) -> None:
    await app.senders.close()
    if app.soroban is not None:
        await app.soroban.close()
    if app.storage is not None:
        await app.storage.close()
    app.db.close()
    await app.db.wait_closed()
