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
