"""GET /api/metrics: guarded by METRICS_TOKEN, counts by route template, jobs and backlogs."""

from __future__ import annotations

import re
import uuid

from api.keys import REDIS
from tests.archive_helpers import harness
from tests.helpers import assert_error, sign_in

TOKEN = "m" * 20 + "etrics-token"


def _value(text: str, name: str, **labels: str) -> float | None:
    """The sample `name{labels}` in Prometheus text, whatever the label order."""
    for line in text.splitlines():
        if not line.startswith(name + "{") and line.split(" ")[0] != name:
            continue
        found = dict(re.findall(r'(\w+)="([^"]*)"', line.split(" ")[0]))
        if all(found.get(k) == v for k, v in labels.items()):
            return float(line.rsplit(" ", 1)[1])
    return None


async def test_metrics_is_404_when_no_token_is_configured(client):
    resp = await client.get("/api/metrics", headers={"Authorization": f"Bearer {TOKEN}"})
    assert resp.status == 404
    assert_error(await resp.json(), 404)


async def test_metrics_needs_the_exact_token(make_client):
    client = await make_client(metrics_token=TOKEN)
    for header in (None, "Bearer", f"Bearer {TOKEN[:-1]}", f"Bearer {TOKEN}x", f"Basic {TOKEN}"):
        resp = await client.get("/api/metrics", headers={"Authorization": header} if header else {})
        assert resp.status == 401, header
        assert_error(await resp.json(), 401)
    session = await sign_in(client)  # a session token is not the metrics token
    assert (await client.get("/api/metrics", headers=session.headers)).status == 401
    resp = await client.get("/api/metrics", headers={"Authorization": f"Bearer {TOKEN}"})
    assert resp.status == 200
    assert resp.content_type == "text/plain"


async def test_requests_are_counted_by_route_template_method_and_status(make_client):
    client = await make_client(metrics_token=TOKEN)
    session = await sign_in(client)
    missing = uuid.uuid4()
    for _ in range(3):
        assert (await client.get(f"/api/assets/{missing}", headers=session.headers)).status == 404
    assert (await client.get("/api/assets", headers=session.headers)).status == 200
    assert (await client.get("/api/assets")).status == 401
    text = await (await client.get("/api/metrics", headers={"Authorization": f"Bearer {TOKEN}"})).text()
    count = _value(text, "lps_http_requests_total", route="/api/assets/{id}", method="GET", status="404")
    assert count == 3
    assert _value(text, "lps_http_requests_total", route="/api/assets", method="GET", status="200") == 1
    assert _value(text, "lps_http_requests_total", route="/api/assets", method="GET", status="401") == 1
    assert (
        _value(text, "lps_http_request_duration_seconds_count", route="/api/assets/{id}", method="GET") == 3
    )
    assert str(missing) not in text and session.token not in text  # templates, never raw paths


async def test_jobs_queue_depth_and_archive_backlog(make_client, run_worker, settings, file_backend):
    vault = await harness(make_client, run_worker, settings, {**file_backend, "metrics_token": TOKEN})
    auth = {"Authorization": f"Bearer {TOKEN}"}
    await vault.upload_ok(b"counted")
    text = await (await vault.client.get("/api/metrics", headers=auth)).text()
    assert _value(text, "lps_archive_items", status="pending") == 1
    assert _value(text, "lps_archive_items", status="available") == 0
    assert _value(text, "lps_queue_depth") == 1
    assert _value(text, "lps_outbox_backlog") == 0
    assert _value(text, "lps_transactions_pending") == 0

    await vault.work()
    text = await (await vault.client.get("/api/metrics", headers=auth)).text()
    assert _value(text, "lps_archive_items", status="available") == 1
    assert _value(text, "lps_queue_depth") == 0
    assert _value(text, "lps_job_runs_total", job="verify_archive_item") == 1
    assert _value(text, "lps_job_failures_total", job="verify_archive_item") == 0
    assert _value(text, "lps_job_duration_seconds_count", job="verify_archive_item") == 1
    assert (_value(text, "lps_job_runs_total", job="cron:heartbeat") or 0) >= 1

    # A run scheduled for later (as arq queues every cron a second ahead) is not waiting.
    redis = vault.client.app[REDIS]
    await redis.enqueue_job("heartbeat", _job_id=f"later-{uuid.uuid4()}", _defer_by=3600)
    await redis.enqueue_job("heartbeat", _job_id=f"later-{uuid.uuid4()}", _defer_by=2)
    assert await redis.zcard(settings.arq_queue_name) == 2
    text = await (await vault.client.get("/api/metrics", headers=auth)).text()
    assert _value(text, "lps_queue_depth") == 0


def test_latency_buckets_are_cumulative_and_a_bound_counts_in_its_own_bucket():
    from prometheus_client import generate_latest

    from api.metrics import Metrics

    metrics = Metrics()
    for status, seconds in ((200, 0.001), (200, 0.005), (200, 0.0051), (200, 0.3), (200, 31.0), (404, 0.002)):
        metrics.requests.labels("/api/x", "GET", str(status)).inc()
        metrics.latency.labels("/api/x", "GET").observe(seconds)
    text = generate_latest(metrics.registry).decode()
    series = {"route": "/api/x", "method": "GET"}
    assert _value(text, "lps_http_requests_total", status="200", **series) == 5
    assert _value(text, "lps_http_requests_total", status="404", **series) == 1
    expected = {"0.005": 3, "0.01": 4, "0.25": 4, "0.5": 5, "30.0": 5, "+Inf": 6}
    for bound, count in expected.items():
        assert _value(text, "lps_http_request_duration_seconds_bucket", le=bound, **series) == count, bound
    assert _value(text, "lps_http_request_duration_seconds_count", **series) == 6
    total = 0.001 + 0.005 + 0.0051 + 0.3 + 31.0 + 0.002
    assert _value(text, "lps_http_request_duration_seconds_sum", **series) == total
