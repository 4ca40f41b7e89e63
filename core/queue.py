"""Enqueueing a job once per row: the one place that knows how arq keeps job ids and results.

Conventions (docs/conventions.md): the row commits first, then its job is enqueued under an
id derived from the row, so a double enqueue runs once and a sweeper can re-enqueue what was
lost. arq refuses an id while that job is queued or running, which is the point, but also while
it keeps the result of a finished run (`keep_result`), which would stop a sweeper from
re-enqueueing a row whose job died before finishing its bookkeeping.
"""

from __future__ import annotations

from typing import Any

from arq.connections import ArqRedis
from arq.constants import result_key_prefix
from arq.jobs import Job, JobStatus


def result_key(job_id: str) -> str:
    """Where arq keeps a finished job's result. arq has no public call to drop one, so its key
    layout is known here and nowhere else (tests/test_library_seams.py pins it)."""
    return result_key_prefix + job_id


async def enqueue_once(redis: ArqRedis, function: str, *args: Any, job_id: str) -> bool:
    """Queue `function(*args)` under `job_id` unless it is queued or running; True if queued.

    Call this only while the row still needs the job (e.g. it is still pending): a finished
    result arq still keeps for this id is then stale, so it is dropped and the job queued
    again. Queued, deferred and running jobs are never disturbed.
    """
    if await redis.enqueue_job(function, *args, _job_id=job_id) is not None:
        return True
    status = await Job(job_id, redis, _queue_name=redis.default_queue_name).status()
    if status is not JobStatus.complete:
        return False
    await redis.delete(result_key(job_id))
    return await redis.enqueue_job(function, *args, _job_id=job_id) is not None
