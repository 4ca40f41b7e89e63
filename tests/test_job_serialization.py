"""arq jobs travel as msgpack, never pickle: whoever can write to Redis must not be able to run
code in the worker. The real worker reads what the API's pool wrote."""

from __future__ import annotations

import pickle
import uuid

import msgpack
import pytest
from arq.constants import job_key_prefix
from arq.jobs import Job

from core import redis as core_redis


async def test_jobs_are_msgpack_and_the_worker_reads_them(settings, run_worker):
    pool = await core_redis.connect(settings.redis_url, settings.arq_queue_name)
    try:
        item_id = str(uuid.uuid4())  # no such item: the job must run and say so
        job = await pool.enqueue_job("verify_archive_item", item_id, _job_id="serialization-test")
        assert job is not None
        raw = await pool.get(job_key_prefix + "serialization-test")
        assert not raw.startswith(b"\x80")  # every pickle protocol >= 2 starts with 0x80
        payload = msgpack.unpackb(raw, timestamp=3)
        assert payload["f"] == "verify_archive_item"
        assert payload["a"] == [item_id]

        await run_worker()
        done = Job(
            "serialization-test",
            pool,
            _queue_name=settings.arq_queue_name,
            _deserializer=core_redis.deserialize,
        )
        assert await done.result(timeout=5) == "not pending"
    finally:
        await pool.aclose()


def test_a_pickled_job_is_refused():
    raw = pickle.dumps({"f": "verify_archive_item", "a": ["x"]})
    with pytest.raises(ValueError):  # msgpack's ExtraData/UnpackValueError: never a job
        core_redis.deserialize(raw)
