"""GET /api/metrics: Prometheus text for the operator (METRICS_TOKEN; unset, the route is 404).

Requests are counted by route template (never the raw path: ids and claim tokens stay out of
label values and the series count stays bounded), method and status, with a latency
histogram. Job figures come from Redis (workers are other processes, see core.jobstats);
backlogs are counted at scrape time, in one query and two Redis calls.
"""

from __future__ import annotations

import asyncio
import hmac
import time
from collections.abc import Iterable, Iterator

from aiohttp import web
from aiohttp_apigami import docs
from arq.connections import ArqRedis
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
)
from prometheus_client.core import CounterMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.registry import Collector

from api.keys import CLOCK, DB, METRICS, REDIS, SETTINGS, context
from api.public import public
from api.schemas import error_responses
from core import jobstats, queue
from core.errors import NotFound, Unauthorized
from models import metrics
from models.archive import items, scrub

routes = web.RouteTableDef()

LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)


def _cumulative(bounds: Iterable[float], counts: Iterable[float]) -> list[tuple[str, float]]:
    """Prometheus histogram rows (`le` label, running total) from per-bucket counts, the last
    count being +Inf's."""
    rows, total = [], 0.0
    for label, count in zip((*map(str, bounds), "+Inf"), counts, strict=True):
        total += count
        rows.append((label, total))
    return rows


class _Jobs(Collector):
    """Job counters as read from Redis just before the scrape renders them."""

    def __init__(self) -> None:
        self.snapshot: dict[str, dict[str, float]] = {}

    def collect(self) -> Iterator[Metric]:
        runs = CounterMetricFamily("lps_job_runs", "Job runs (each try), by job name", labels=["job"])
        failures = CounterMetricFamily("lps_job_failures", "Job runs that raised", labels=["job"])
        durations = HistogramMetricFamily("lps_job_duration_seconds", "Job run time", labels=["job"])
        for name, stats in self.snapshot.items():
            runs.add_metric([name], stats.get("runs", 0.0))
            failures.add_metric([name], stats.get("failures", 0.0))
            counts = [stats.get(f"le:{bound}", 0.0) for bound in (*map(str, jobstats.BUCKETS), "+Inf")]
            buckets = _cumulative(jobstats.BUCKETS, counts)
            durations.add_metric([name], buckets, sum_value=stats.get("sum", 0.0))
        yield runs
        yield failures
        yield durations


class _EnqueueFailures(Collector):
    """Enqueues after a commit that failed in this process (core.queue.after_commit): the rows
    are committed and wait for their sweepers."""

    def collect(self) -> Iterator[Metric]:
        failures = CounterMetricFamily(
            "lps_enqueue_failures", "Enqueues after a commit that failed, by job name", labels=["job"]
        )
        for name, count in sorted(queue.ENQUEUE_FAILURES.items()):
            failures.add_metric([name], count)
        yield failures


class _Scrub(Collector):
    """The archive scrub's counters (core.jobstats, written by the workers)."""

    def __init__(self) -> None:
        self.snapshot: dict[str, float] = {}

    def collect(self) -> Iterator[Metric]:
        failures = CounterMetricFamily(
            "lps_archive_scrub_failures", "Stored files the scrub found damaged (each once)"
        )
        failures.add_metric([], self.snapshot.get("failures", 0.0))
        read = CounterMetricFamily("lps_archive_scrub_read_bytes", "Bytes the scrub read and authenticated")
        read.add_metric([], self.snapshot.get("bytes", 0.0))
        yield failures
        yield read


class Metrics:
    """One registry per app (tests build many apps in one process)."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        # prometheus_client's own Counter and Histogram: plain dicts turned into metric families
        # at scrape time saved too little per request to keep a restatement of them.
        self.requests = Counter(
            "lps_http_requests",
            "HTTP requests by route template, method and status",
            ["route", "method", "status"],
            registry=self.registry,
        )
        self.latency = Histogram(
            "lps_http_request_duration_seconds",
            "HTTP request latency by route template and method",
            ["route", "method"],
            buckets=LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.queue_depth = Gauge(
            "lps_queue_depth",
            "Jobs due in the arq queue (waiting for a worker, or running); runs scheduled for later, such as"
            " the crons arq queues a second ahead, are not counted",
            registry=self.registry,
        )
        self.outbox = Gauge("lps_outbox_backlog", "Emails pending delivery", registry=self.registry)
        self.transactions = Gauge(
            "lps_transactions_pending", "Soroban transactions not yet final", registry=self.registry
        )
        self.archive = Gauge(
            "lps_archive_items", "Archive items by status", ["status"], registry=self.registry
        )
        self.scrub_cycle = Gauge(
            "lps_archive_scrub_cycle_seconds",
            "Age of the oldest whole read of a stored file: about ARCHIVE_SCRUB_INTERVAL_SECONDS while the"
            " scrub keeps up; past it, the scrub runs continuously and this is how long a whole pass takes",
            registry=self.registry,
        )
        self.jobs = _Jobs()
        self.registry.register(self.jobs)
        self.scrub = _Scrub()
        self.registry.register(self.scrub)
        self.registry.register(_EnqueueFailures())
        self._scrape = asyncio.Lock()

    def observe(self, request: web.Request, status: int, seconds: float) -> None:
        resource = request.match_info.route.resource
        route = resource.canonical if resource is not None else "unmatched"
        self.requests.labels(route, request.method, str(status)).inc()
        self.latency.labels(route, request.method).observe(seconds)

    async def render(self, app: web.Application) -> bytes:
        async with self._scrape:
            backlog, depth, jobs, scrubbed, stalest = await asyncio.gather(
                metrics.backlog(app[DB]),
                due_jobs(app[REDIS], app[SETTINGS].arq_queue_name),
                jobstats.read(app[REDIS]),
                jobstats.read_counts(app[REDIS], scrub.METRICS),
                scrub.stalest_check(app[DB]),
            )
            self.scrub.snapshot = scrubbed
            now = app[CLOCK].now()
            self.scrub_cycle.set(0 if stalest is None else max(0.0, (now - stalest).total_seconds()))
            self.queue_depth.set(depth)
            self.outbox.set(backlog["outbox_pending"])
            self.transactions.set(backlog["transactions_pending"])
            for status in items.STATUSES:
                self.archive.labels(status).set(backlog["archive_items"].get(status, 0))
            self.jobs.snapshot = jobs
            return generate_latest(self.registry)


async def due_jobs(redis: ArqRedis, queue: str) -> int:
    """Jobs in the queue whose time has come. arq scores each job by when it may run (wall-clock
    milliseconds, as arq writes them) and queues every cron due within its next second ahead of
    time: counting the whole queue read 3 at idle with a one-second scan."""
    return int(await redis.zcount(queue, "-inf", int(time.time() * 1000)))


def _authorized(request: web.Request, expected: str) -> bool:
    header = request.headers.get("Authorization", "")
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not header.isascii():
        return False
    return hmac.compare_digest(token.strip().encode(), expected.encode())


@routes.get("/api/metrics")
@public  # not a session: its own bearer token, METRICS_TOKEN
@docs(
    tags=["operations"],
    summary="Prometheus metrics (for the operator's scraper)",
    description="`Authorization: Bearer $METRICS_TOKEN` (compared in constant time). 404 when "
    "METRICS_TOKEN is unset. Text exposition format; see README, Operations.",
    responses=error_responses(401, 404),
)
async def metrics_text(request: web.Request) -> web.Response:
    ctx = context(request)
    expected = ctx.settings.metrics_token
    if not expected:
        raise NotFound()
    if not _authorized(request, expected):
        raise Unauthorized("Missing or wrong metrics token", headers={"WWW-Authenticate": "Bearer"})
    body = await request.app[METRICS].render(request.app)
    return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE_LATEST})
