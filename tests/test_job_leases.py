"""The lease every job family holds its work under (models/jobs/leases.py), its rules on the
real database: one live holder at a time, its own rerun takes it back, anyone once it lapsed,
only the holder renews or releases it. What a worker's death does with it:
tests/test_worker_kill.py."""

from __future__ import annotations

from datetime import timedelta

from api.keys import CLOCK, DB
from models.jobs import leases

LEASE = timedelta(seconds=30)
WORK = {"name": "verify_archive_item:i1", "job": "verify_archive_item", "args": ["i1"]}


async def test_one_live_holder_at_a_time(client):
    pool, now = client.app[DB], client.app[CLOCK].now()
    assert await leases.take(pool, **WORK, holder="a", now=now, lease=LEASE)
    assert not await leases.take(pool, **WORK, holder="b", now=now + LEASE / 2, lease=LEASE)
    assert await leases.take(pool, **WORK, holder="a", now=now + LEASE / 2, lease=LEASE)  # its rerun
    assert await leases.lapsed(pool, now=now + LEASE) == []  # renewed by the rerun
    later = now + LEASE * 2
    assert [w["holder"] for w in await leases.lapsed(pool, now=later)] == ["a"]
    assert await leases.take(pool, **WORK, holder="b", now=later, lease=LEASE)  # taken over


async def test_only_the_holder_renews_or_releases(client):
    pool, now = client.app[DB], client.app[CLOCK].now()
    assert await leases.take(pool, **WORK, holder="a", now=now, lease=LEASE)
    await leases.renew(pool, name=WORK["name"], holder="b", until=now + LEASE * 10)
    await leases.release(pool, name=WORK["name"], holder="b")
    assert [w["holder"] for w in await leases.lapsed(pool, now=now + LEASE)] == ["a"]
    await leases.renew(pool, name=WORK["name"], holder="a", until=now + LEASE * 10)
    assert await leases.lapsed(pool, now=now + LEASE) == []
    await leases.release(pool, name=WORK["name"], holder="a")
    assert await leases.take(pool, **WORK, holder="b", now=now, lease=LEASE)


def test_a_takeover_id_names_the_dead_holder():
    first = leases.takeover_suffix(holder="verify_archive_item:i1")
    assert first.startswith("~") and first == leases.takeover_suffix(holder="verify_archive_item:i1")
    assert first != leases.takeover_suffix(holder="verify_archive_item:i1~" + first)


async def test_the_sweep_takes_over_lapsed_work_and_drops_unknown_jobs(settings, clock):
    """The lease sweep enqueues lapsed work under an id naming the dead holder, and drops the
    work of a job no longer registered (renamed or removed since), which could only fail."""
    import workers.main  # noqa: F401  (registers the leased jobs)
    from core import redis as core_redis
    from workers import context
    from workers import leases as worker_leases

    redis = await core_redis.connect(settings.redis_url, settings.arq_queue_name)
    app = await context.open_context(settings, clock, redis)
    try:
        before = clock.now() - LEASE * 2
        await leases.take(app.db, **WORK, holder="dead", now=before, lease=LEASE)
        gone = {"name": "gone_job:x", "job": "gone_job", "args": ["x"]}
        await leases.take(app.db, **gone, holder="dead", now=before, lease=LEASE)
        assert await worker_leases.take_over({context.KEY: app}) == 1
        queued = await redis.zrange(settings.arq_queue_name, 0, -1)
        assert queued == [f"verify_archive_item:i1{leases.takeover_suffix(holder='dead')}".encode()]
        assert [w["name"] for w in await leases.lapsed(app.db, now=clock.now())] == [WORK["name"]]
    finally:
        await context.close_context(app)
        await redis.aclose()
