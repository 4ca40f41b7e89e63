"""The processes and datastores of a bench run: the real API, worker and ceiling started as
subprocesses (`Server`, `start_server`, `wait_ready`), the environment they run in
(`service_env`: production mode, generated secrets), and a database and Redis index of the
run's own (`fresh_database`, `fresh_redis`) so runs and test sessions on one machine never
touch each other's data. Used by bench/run.py, bench/fuzz.py and bench/soak.py.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import aiohttp
import psycopg2
import psycopg2.extensions
import redis as redis_sync
from stellar_sdk import Keypair

from core.files.crypto import KeyRing
from service.migrate import apply_migrations

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_DATABASE_URL = "postgresql://postgres@127.0.0.1:5432/postgres"
DEFAULT_REDIS_URL = "redis://127.0.0.1:6379/0"
# Per run: several people bench and fuzz on one machine, and each run drops its database at the end.
BENCH_DATABASE = f"lps_bench_{os.getpid()}"
# The test suite's claim on a Redis database index (tests/conftest.py): a bench run takes a free
# index the same way, so it never flushes a test session's (or another bench's) data.
REDIS_CLAIM_KEY = "legacy-planning:test-lock"


@dataclass
class Server:
    """A process started for the run, its log file and what /proc says about it."""

    name: str
    proc: subprocess.Popen[bytes]
    log_path: Path
    base_url: str = ""

    @property
    def pid(self) -> int:
        return self.proc.pid

    def status(self) -> dict[str, int]:
        """VmRSS and VmHWM (peak RSS) in KiB, from /proc/<pid>/status."""
        values = {}
        for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
            key, _, rest = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                values[key] = int(rest.split()[0])
        return values

    def reset_peak(self) -> None:
        """Reset VmHWM to the current RSS (Linux: write 5 to clear_refs), so a peak is per phase."""
        with contextlib.suppress(OSError):
            Path(f"/proc/{self.pid}/clear_refs").write_text("5")

    def cpu_seconds(self) -> float:
        fields_ = Path(f"/proc/{self.pid}/stat").read_text().rpartition(")")[2].split()
        return (int(fields_[11]) + int(fields_[12])) / os.sysconf("SC_CLK_TCK")

    def check_alive(self) -> None:
        if self.proc.poll() is not None:
            tail = self.log_path.read_text(errors="replace")[-3000:]
            raise RuntimeError(f"{self.name} exited with {self.proc.returncode}; log tail:\n{tail}")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def start_server(name: str, module_args: Sequence[str], env: dict[str, str], log_dir: Path) -> Server:
    log_path = log_dir / f"{name}.log"
    with log_path.open("wb") as log_file:
        proc = subprocess.Popen(
            [sys.executable, "-m", *module_args], cwd=ROOT, env=env, stdout=log_file, stderr=subprocess.STDOUT
        )
    return Server(name, proc, log_path)


async def wait_ready(server: Server, path: str, within: float = 60) -> None:
    deadline = time.monotonic() + within
    async with aiohttp.ClientSession() as session:
        while time.monotonic() < deadline:
            server.check_alive()
            with contextlib.suppress(aiohttp.ClientError, OSError):
                async with session.get(server.base_url + path) as resp:
                    if resp.status == 200:
                        return
            await asyncio.sleep(0.2)
    raise RuntimeError(f"{server.name} did not answer {path} within {within:.0f}s; see {server.log_path}")


def fresh_database(base_url: str) -> str:
    """Drop and recreate `lps_bench_<pid>` next to the base database, then apply every migration."""
    admin = psycopg2.connect(base_url)
    admin.autocommit = True
    with admin.cursor() as cur:
        cur.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
            " WHERE datname = %s AND pid <> pg_backend_pid()",
            (BENCH_DATABASE,),
        )
        cur.execute(f'DROP DATABASE IF EXISTS "{BENCH_DATABASE}"')
        cur.execute(f'CREATE DATABASE "{BENCH_DATABASE}"')
    admin.close()
    url = psycopg2.extensions.make_dsn(base_url, dbname=BENCH_DATABASE)
    apply_migrations(url)
    return url


def drop_database(base_url: str) -> None:
    admin = psycopg2.connect(base_url)
    admin.autocommit = True
    with admin.cursor() as cur:
        cur.execute(f'DROP DATABASE IF EXISTS "{BENCH_DATABASE}" WITH (FORCE)')
    admin.close()


def fresh_redis(base_url: str) -> str:
    """Claim a Redis database index nobody else uses (as the tests do), flushed for this run."""
    parts = urlsplit(base_url)
    for index in range(15, 0, -1):
        url = urlunsplit(parts._replace(path=f"/{index}"))
        client = redis_sync.Redis.from_url(url)
        try:
            if client.set(REDIS_CLAIM_KEY, f"bench-{os.getpid()}", nx=True, ex=3600):
                client.flushdb()
                client.set(REDIS_CLAIM_KEY, f"bench-{os.getpid()}", ex=3600)
                return url
        finally:
            client.close()
    raise RuntimeError("no free Redis database index for the bench")


def release_redis(url: str) -> None:
    client = redis_sync.Redis.from_url(url)
    client.flushdb()
    client.close()


def service_env(database_url: str, redis_url: str, storage: dict[str, str], port: int) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PG", "AWS_"))}
    env.update(storage)
    env.update(
        APP_ENV="production",
        HOST="127.0.0.1",
        PORT=str(port),
        DATABASE_URL=database_url,
        REDIS_URL=redis_url,
        JWT_SECRET=secrets.token_urlsafe(48),
        ENCRYPTION_KEYS=KeyRing.generate_entry("bench1"),
        # One client address sends every challenge here; the per-wallet limit stays as shipped.
        RATE_LIMIT_CHALLENGE_PER_IP="100000000",
        # Likewise every POST /api/claim/resend (the per-beneficiary limit stays as shipped).
        RATE_LIMIT_CLAIM_RESEND_PER_IP="100000000",
        ARCHIVE_MAX_BYTES=str(2 * 1024**3),
        # Required in production (links in emails, SEP-7 requests).
        PUBLIC_BASE_URL=f"http://127.0.0.1:{port}",
        URI_REQUEST_SIGNING_SEED=Keypair.random().secret,
        # Trees from before PUBLIC_BASE_URL required this one in production (bench/ab.py runs them).
        PUBLIC_APP_URL=f"http://127.0.0.1:{port}",
        # The lifecycle bench times the scan itself: the worker's own scan stays out of its way.
        LIFECYCLE_SCAN_SECONDS="3600",
        LOG_LEVEL="INFO",
        ARQ_QUEUE_NAME=f"bench-queue-{os.getpid()}",
        PYTHONUNBUFFERED="0",
    )
    return env
