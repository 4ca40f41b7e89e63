"""`legacy-planning dev` (what `make run` calls): the whole service on one machine.

Starts embedded PostgreSQL/Redis when DATABASE_URL / REDIS_URL are unset (service.embedded),
file storage under DATA_DIR when STORAGE_URL is unset, migrates, then runs one API and one
worker process until Ctrl-C; a worker that exits is restarted with backoff
(service.supervise) while the API stays up.
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from core.settings import GENERATED_IN_DEV, SECRETS_GENERATED_IN_DEV, Settings
from service.embedded import start_postgres, start_redis
from service.migrate import apply_migrations, reseal_hook
from service.supervise import Restarting

log = logging.getLogger("legacy_planning")


def log_generated_secrets(settings: Settings, env: dict[str, str]) -> None:
    """Say where each dev secret came from (their names, never their values)."""
    where = Path(settings.data_dir, "dev-secrets.json")
    generated = sorted(GENERATED_IN_DEV)
    kept = [name for name in SECRETS_GENERATED_IN_DEV if not env.get(name) and name not in GENERATED_IN_DEV]
    if generated:
        log.info("%s unset: generated into %s (mode 0600), kept for restarts", ", ".join(generated), where)
    if kept:
        log.info("%s unset: using the ones generated earlier in %s", ", ".join(kept), where)


def run(settings: Settings) -> None:
    env = dict(os.environ)
    stops: list[Callable[[], None]] = []
    if not settings.database_url:
        url, stop = start_postgres(settings.data_dir)
        env["DATABASE_URL"] = url
        stops.append(stop)
        log.info("DATABASE_URL unset: using embedded PostgreSQL under %s", settings.data_dir)
    if not settings.redis_url:
        url, stop = start_redis(settings.data_dir)
        env["REDIS_URL"] = url
        stops.append(stop)
        log.info("REDIS_URL unset: using embedded Redis under %s", settings.data_dir)
    if not env.get("STORAGE_URL"):
        env["STORAGE_URL"] = Path(settings.data_dir, "objects").resolve().as_uri()
        log.info("STORAGE_URL unset: storing archive objects under %s", env["STORAGE_URL"])
    log_generated_secrets(settings, env)
    apply_migrations(env["DATABASE_URL"], before_reseal=reseal_hook(settings, env["DATABASE_URL"]))

    def spawn(name: str) -> subprocess.Popen[bytes]:
        return subprocess.Popen([sys.executable, "-m", "service.cli", name], env=env)  # noqa: S603

    api = spawn("serve")
    worker = Restarting("worker", lambda: spawn("worker"))
    stopping = False

    def stop_all(*_: object) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGINT, stop_all)
    signal.signal(signal.SIGTERM, stop_all)
    try:
        # The API is the service: if it exits, dev stops. The worker is restarted with backoff.
        while not stopping and api.poll() is None:
            worker.poll(time.monotonic())
            time.sleep(0.2)
    finally:
        if api.poll() is None:
            api.send_signal(signal.SIGINT)
        worker.stop()
        try:
            api.wait(timeout=15)
        except subprocess.TimeoutExpired:
            api.kill()
        for stop in reversed(stops):
            stop()
        log.info("stopped")
