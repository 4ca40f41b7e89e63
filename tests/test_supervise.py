"""The dev stack's worker supervisor, with real child processes and a driven clock."""

from __future__ import annotations

import subprocess
import sys

from service.supervise import Restarting


def _spawner(code: str, spawned: list[subprocess.Popen[bytes]]):
    def spawn() -> subprocess.Popen[bytes]:
        process = subprocess.Popen([sys.executable, "-c", code])
        spawned.append(process)
        return process

    return spawn


def test_a_dying_worker_is_restarted_with_growing_backoff_up_to_the_cap():
    spawned: list[subprocess.Popen[bytes]] = []
    worker = Restarting("worker", _spawner("raise SystemExit(3)", spawned), max_delay=8.0)
    now = 0.0
    worker.poll(now)
    assert len(spawned) == 1
    for expected in (1.0, 2.0, 4.0, 8.0, 8.0):
        spawned[-1].wait()
        worker.poll(now)  # notices the exit, schedules the restart
        count = len(spawned)
        worker.poll(now + expected - 0.01)
        assert len(spawned) == count  # not before its time
        now += expected
        worker.poll(now)
        assert len(spawned) == count + 1
    assert worker.restarts == [1.0, 2.0, 4.0, 8.0, 8.0]
    spawned[-1].wait()


def test_a_run_that_lasted_resets_the_backoff_and_stop_ends_a_live_worker():
    spawned: list[subprocess.Popen[bytes]] = []
    worker = Restarting("worker", _spawner("raise SystemExit(1)", spawned), stable_after=60.0)
    worker.poll(0.0)
    spawned[-1].wait()
    worker.poll(0.0)
    worker.poll(1.0)  # restarted after 1 s
    spawned[-1].wait()
    worker.poll(1.5)
    worker.poll(3.5)  # second failure in a row: 2 s
    assert worker.restarts == [1.0, 2.0]
    spawned[-1].wait()
    worker.poll(3.5 + 61)  # this one ran "61 s" before dying: back to 1 s
    assert worker.restarts == [1.0, 2.0, 1.0]

    live = Restarting("worker", _spawner("import time; time.sleep(60)", spawned))
    live.poll(0.0)
    process = spawned[-1]
    live.poll(100.0)
    assert process.poll() is None and live.restarts == []  # a healthy worker is left alone
    live.stop(timeout=5)
    assert process.poll() is not None
