"""arq worker: `legacy-planning worker`. Jobs are registered here, one module per job family."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

import arq.worker
from arq import cron, func
from arq.worker import Function
from redis.exceptions import RedisError

from core import jobstats
from core import logging as app_logging
from core.clock import Clock
from core.redis import deserialize, redis_settings, serialize
from core.settings import Settings
from core.text import i18n
from workers import account, archive, context, email, keys, lifecycle, scrub, soroban
from workers.heartbeat import heartbeat

log = logging.getLogger(__name__)

# Timeouts fit each job's real cost, and they matter beyond cancelling a stuck run: arq (0.26)
# marks a started job in progress for one lease, the LONGEST timeout of any job or cron this
# worker runs + 10 s, and while that mark stands nobody reruns the job. A worker SIGKILLed
# mid-job therefore delays that job by up to JOB_TIMEOUT_SECONDS + 10 s (5 min), after which
# any worker picks it up again (it never left the queue); the sweepers re-enqueue what did
# leave it. Raising one timeout raises that delay for every job (tests/test_worker_kill.py).
# Email does not wait for it: the outbox sweep sends the rows of a delivery job whose lease
# lapsed in a job of its own (models/delivery/outbox.py enqueue_due).
JOB_TIMEOUT_SECONDS = 300

FUNCTIONS: list[Any] = [
    # Reads a header and the final segment (milliseconds); 60 s covers a slow storage call.
    # One spare try: a run killed mid-attempt still counts in the item's own attempt counter.
    func(archive.verify_archive_item, max_tries=archive.MAX_ATTEMPTS + 1, timeout=60),
    # A batch of up to 64 rows (models.delivery.outbox.BATCH) sent by the worker's 32 senders
    # (workers.context.EMAIL_CONCURRENCY), each request bounded at 20 s (core.mailer.TIMEOUT):
    # two waves at worst, plus two small queries.
    # Retries are new attempts scheduled on the outbox row (workers/email.py), not arq retries;
    # the spare tries cover a run killed mid-attempt.
    func(email.deliver_email, max_tries=3, timeout=60),
    # One address looked up, a few rows written: milliseconds.
    func(email.resend_claim_link, max_tries=3, timeout=60),
    # A few queries and one object removal per file (the rest is retried by sweep_archive).
    func(account.delete_account, max_tries=3, timeout=120),
    # A few RPC calls of at most SOROBAN_RPC_TIMEOUT_SECONDS each; longer waits are deferrals.
    func(soroban.relay_transaction, max_tries=soroban.MAX_TRIES, timeout=60),
]
CRON_JOBS = [
    cron(heartbeat, second=0, run_at_startup=True),
    cron(archive.sweep_archive, minute=set(range(0, 60, 5)), second=30, run_at_startup=True),
    cron(archive.sweep_archive_orphans, minute=17, second=45),
    cron(archive.sweep_partial_uploads, minute=set(range(3, 60, 10)), second=50, run_at_startup=True),
    cron(archive.rewrap_archive_keys, minute=47, second=15),
    # Every minute; each run reads for at most scrub.RUN_SECONDS at the configured byte rate.
    cron(scrub.scrub_archive, second=20, run_at_startup=True),
    cron(account.sweep_account_deletions, second=35, run_at_startup=True),
    cron(account.purge_owner_sessions, minute=23, second=25),
    cron(keys.reseal_claim_tokens, minute=52, second=15),
    # At startup too: it seals the plaintext rows written before migration 0012.
    cron(keys.reseal_private_texts, minute=57, second=15, run_at_startup=True),
    cron(soroban.sweep_transactions, second={10, 40}, run_at_startup=True),
]


# Jobs one worker runs at once. arq (0.26) starts at most this many per poll of the queue, so
# it also caps throughput at MAX_JOBS / poll_delay jobs a second: with 4, a release emailing
# many heirs went out at that cap however fast the provider answered (bench/README.md).
MAX_JOBS = 16
# Connections a worker's pool may open: one per job it runs at once (crons count as jobs), plus
# two spare, rather than the API's DB_POOL_MAX; never more than DB_POOL_MAX, which an operator
# lowers to fit many processes on one server (docs/operations.md).
POOL_SPARE = 2


def pool_size(settings: Settings) -> int:
    return min(settings.db_pool_max, MAX_JOBS + POOL_SPARE)


def every(seconds: int) -> dict[str, Any]:
    """arq cron fields for "every N seconds" (N < 60 steps through each minute; N >= 60 by minutes)."""
    if seconds < 60:
        return {"second": set(range(0, 60, seconds))}
    return {"minute": set(range(0, 60, max(1, seconds // 60))), "second": 0}


def lifecycle_cron_jobs(settings: Settings) -> list[Any]:
    """The scheduler's crons, every LIFECYCLE_SCAN_SECONDS; both safe with several workers."""
    period = every(settings.lifecycle_scan_seconds)
    # At least once per delivery lease too: a killed job's rows wait one lease and one sweep.
    outbox_period = every(min(settings.lifecycle_scan_seconds, settings.email_delivery_lease_seconds))
    return [
        cron(lifecycle.scan_plans, run_at_startup=True, **period),
        cron(email.sweep_outbox, run_at_startup=True, **outbox_period),
        cron(email.sweep_claim_link_requests, run_at_startup=True, **period),
    ]


def on_startup(settings: Settings, clock: Clock) -> Callable[[dict[str, Any]], Awaitable[None]]:
    """arq's on_startup: the worker's `Context`, under its one key, before any job runs."""

    async def startup(ctx: dict[str, Any]) -> None:
        i18n.configure(settings.languages.split(","))
        ctx[context.KEY] = await context.open_context(
            settings, clock, ctx["redis"], pool_size=pool_size(settings)
        )

    return startup


async def shutdown(ctx: dict[str, Any]) -> None:
    if context.KEY in ctx:  # start-up may have failed before it was built
        await context.close_context(context.get(ctx))


# How often a worker that cannot reach Redis tries again.
REDIS_RETRY_SECONDS = 1.0


class Worker(arq.worker.Worker):
    """arq's worker, made to outlive a Redis outage. arq (0.26) lets a poll that fails end the
    process, so a Redis restart stopped every worker until something restarted it (bench/chaos.py
    found it); this one logs the outage once, tries again every REDIS_RETRY_SECONDS, and carries
    on when Redis answers, its running jobs untouched. What an emptied Redis lost, the sweepers
    queue again from the rows.

    arq's `start_jobs` takes a job slot (`job_counter` and a semaphore permit) before its Redis
    pipeline and gives it back only on a ResponseError or WatchError: each poll that failed with
    the connection down would leak one, and after MAX_JOBS such polls the worker, still beating,
    would never take a job again. So jobs start one id at a time, and a Redis or socket error
    before the job started gives its slot back."""

    _redis_down_since: float | None = None

    async def start_jobs(self, job_ids: list[bytes]) -> None:
        for job_id in job_ids:
            try:
                await super().start_jobs([job_id])
            except (RedisError, OSError):
                # Raised only after arq took the slot and before it created the job's task.
                self.job_counter -= 1
                self.sem.release()
                raise
            if self.job_counter >= self.max_jobs:
                return

    async def _poll_iteration(self) -> None:
        try:
            await super()._poll_iteration()
        except (RedisError, OSError) as exc:
            if self._redis_down_since is None:
                self._redis_down_since = time.monotonic()
                log.warning("Redis unreachable: the worker waits for it", extra={"error": type(exc).__name__})
            await asyncio.sleep(REDIS_RETRY_SECONDS)
            return
        if self._redis_down_since is not None:
            down = time.monotonic() - self._redis_down_since
            self._redis_down_since = None
            log.warning("Redis answers again: the worker carries on", extra={"downSeconds": round(down, 1)})


def create_worker(settings: Settings, clock: Clock | None = None, **overrides: Any) -> Worker:
    """Build a Worker bound to these settings; tests pass burst=True to drain the queue and stop,
    and the clock they move forward."""
    options: dict[str, Any] = {
        "functions": FUNCTIONS,
        # Fresh copies: arq keeps each cron job's next run on the object, so a second Worker in
        # one process (the tests) would otherwise never honour run_at_startup.
        "cron_jobs": [
            dataclasses.replace(job, next_run=None) for job in [*CRON_JOBS, *lifecycle_cron_jobs(settings)]
        ],
        "on_startup": on_startup(settings, clock or Clock()),
        "on_shutdown": shutdown,
        "redis_settings": redis_settings(settings.redis_url),
        "queue_name": settings.arq_queue_name,
        "job_serializer": serialize,
        "job_deserializer": deserialize,
        "max_jobs": MAX_JOBS,
        # How often an idle worker asks Redis for jobs (arq's default is 0.5 s). Verifying an
        # upload takes milliseconds, so the pickup delay is most of the time an owner waits for
        # `available`; twenty cheap ZRANGEBYSCOREs a second per idle worker is a fair price.
        "poll_delay": 0.05,
        # Crons without their own timeout (scans, sweeps, re-wraps) get this; each commits its
        # work in small steps, so a run cut short leaves the rest to the next one.
        "job_timeout": JOB_TIMEOUT_SECONDS,
        "keep_result": 60,
        "handle_signals": True,
    }
    options.update(overrides)
    options["functions"] = [_counted(f) for f in options["functions"]]
    options["cron_jobs"] = [
        dataclasses.replace(job, coroutine=jobstats.instrument(job.name, job.coroutine))
        for job in options["cron_jobs"] or []
    ]
    return Worker(**options)


def _counted(function: Any) -> Any:
    """Every job's runs, failures and durations go to /api/metrics (core.jobstats)."""
    if isinstance(function, Function):
        return dataclasses.replace(function, coroutine=jobstats.instrument(function.name, function.coroutine))
    return func(jobstats.instrument(function.__qualname__, function), name=function.__qualname__)


def run(settings: Settings) -> None:
    app_logging.configure(settings.log_level)
    log.info("worker starting", extra={"queue": settings.arq_queue_name})
    create_worker(settings).run()
