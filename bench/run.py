"""Benchmarks of the running service against a bare-aiohttp ceiling, measured in the same run.

    .venv/bin/python bench/run.py [--only auth,beneficiaries,archive] [--duration 10]
                                  [--connections 32] [--big]

Starts a fresh `lps_bench_<pid>` database (migrated) and a free Redis db index (flushed) on
DATABASE_URL / REDIS_URL (default: this machine's), the real API (`python -m core.process.cli
serve`, production mode, generated secrets), the real worker when the archive runs, and the
ceiling (`python -m bench.ceiling`). Plain request scenarios use wrk when installed (else
bench/loadgen.py); sign-in always uses bench/loadgen.py since each challenge must be signed.
Prints a table and writes bench/results/bench-<time>.json. See bench/README.md.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import platform
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import aiohttp
import psycopg2
import psycopg2.extensions
import psycopg2.extras
import redis as redis_sync

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench import archive, capsule, lifecycle, loadgen, soroban, wrk  # noqa: E402
from core.files.crypto import KeyRing  # noqa: E402
from core.process.migrate import apply_migrations  # noqa: E402
from core.settings import load_settings  # noqa: E402
from tests.s3server import (  # noqa: E402
    TEST_ACCESS_KEY_ID,
    TEST_REGION,
    TEST_SECRET_ACCESS_KEY,
    create_bucket,
    start_moto_server,
)
from tests.soroban_rpc import SorobanRpcEmulator, random_contract_id  # noqa: E402

DEFAULT_DATABASE_URL = "postgresql://postgres@127.0.0.1:5432/postgres"
DEFAULT_REDIS_URL = "redis://127.0.0.1:6379/0"
# Per run: several people bench and fuzz on one machine, and each run drops its database at the end.
BENCH_DATABASE = f"lps_bench_{os.getpid()}"
# The test suite's claim on a Redis database index (tests/conftest.py): a bench run takes a free
# index the same way, so it never flushes a test session's (or another bench's) data.
REDIS_CLAIM_KEY = "legacy-planning:test-lock"
RESULTS_DIR = ROOT / "bench" / "results"
SCENARIOS = ("auth", "beneficiaries", "messages", "archive", "capsule", "soroban", "lifecycle")
# Sign-in wallets, used round-robin: each stays below 10 challenges a minute (sign_in_wallets).
SIGN_IN_WALLETS = 4096
SIGN_IN_RATE_BOUND = 2000
# Creates spread over this many owners at 0.01 % each: 10,000 creates per owner fit in 100 %.
CREATE_OWNERS = 32
CREATE_ALLOCATION = "0.01"
LIST_ROWS = 50
BENEFICIARY = {"name": "Bench Beneficiary", "relationship": "sibling", "email": "bench@example.com"}


# --------------------------------------------------------------------------------------------
# Processes
# --------------------------------------------------------------------------------------------


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


# --------------------------------------------------------------------------------------------
# Datastores
# --------------------------------------------------------------------------------------------


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


def add_users(database_url: str, addresses: Sequence[str]) -> None:
    """Accounts for returning-user sign-ins, inserted directly (what a first sign-in creates)."""
    conn = psycopg2.connect(database_url)
    with conn, conn.cursor() as cur:
        psycopg2.extras.execute_values(
            cur,
            "WITH u AS (INSERT INTO users (wallet_address) VALUES %s RETURNING id, wallet_address)"
            " INSERT INTO user_wallets (wallet_address, user_id) SELECT wallet_address, id FROM u",
            [(a,) for a in addresses],
            page_size=1000,
        )
    conn.close()


# --------------------------------------------------------------------------------------------
# Measuring
# --------------------------------------------------------------------------------------------


# One timed load of a fixed number of seconds against one server; returns its summary.
Runner = Callable[[float], Awaitable[dict[str, Any]]]


@dataclass
class Bench:
    args: argparse.Namespace
    api: Server
    ceiling: Server
    worker: Server | None = None
    database_url: str = ""
    redis_url: str = ""
    soroban_rpc: SorobanRpcEmulator | None = None
    ring: KeyRing | None = None  # the service's ENCRYPTION_KEYS, to seal rows inserted in SQL
    results: list[dict[str, Any]] = field(default_factory=list)

    @property
    def key_ring(self) -> KeyRing:
        if self.ring is None:
            raise RuntimeError("this bench was started without the service's key ring")
        return self.ring

    @property
    def use_wrk(self) -> bool:
        return not self.args.python_loadgen and wrk.available() is not None

    def http_load(self, target: Server, requests: Sequence[wrk.Request], expect: int) -> Runner:
        """Prepared requests, cycled: wrk when installed, else the Python generator."""
        if not self.use_wrk:
            return self.scripted_load(target, loadgen.http_operation(requests, expect))

        async def run(seconds: float) -> dict[str, Any]:
            return await asyncio.to_thread(
                wrk.measure, target.base_url, requests, connections=self.args.connections, duration=seconds
            )

        return run

    def scripted_load(self, target: Server, operation: loadgen.Operation) -> Runner:
        """A scripted operation (e.g. sign-in) from the Python generator."""

        async def run(seconds: float) -> dict[str, Any]:
            result = await loadgen.run_load(
                target.base_url, operation, connections=self.args.connections, duration=seconds
            )
            summary = result.summary()
            summary.update(
                tool="python-asyncio", connections=self.args.connections, duration_s=round(result.duration, 2)
            )
            return summary

        return run

    async def compare(self, scenario: str, service: Runner, ceiling: Runner) -> None:
        """Warm both up, then alternate service and ceiling runs; keep each one's median round.

        Alternating rounds spread any outside load on the machine over both targets alike.
        """
        targets = ((self.api, service), (self.ceiling, ceiling))
        if self.args.warmup > 0:
            for server, run in targets:
                server.check_alive()
                await run(self.args.warmup)
        rounds: dict[str, list[dict[str, Any]]] = {server.name: [] for server, _ in targets}
        for _ in range(self.args.rounds):
            for server, run in targets:
                rounds[server.name].append(await self._timed(server, run))
        for server, _ in targets:
            runs = sorted(rounds[server.name], key=lambda r: r["rps"])
            summary = dict(runs[len(runs) // 2])
            summary.update(
                scenario=scenario,
                target=server.name,
                rounds=len(runs),
                rounds_rps=[round(r["rps"], 1) for r in rounds[server.name]],
                rounds_cpu_us_per_req=[r["server_cpu_us_per_req"] for r in rounds[server.name]],
            )
            self.results.append(summary)
            per_round = ", ".join(f"{r:.0f}" for r in summary["rounds_rps"])
            print(
                f"  {scenario:<34} {server.name:<8} {summary['rps']:9.1f} req/s"
                f"  p50 {summary['p50_ms']:7.2f} ms  p99 {summary['p99_ms']:7.2f} ms"
                f"  errors {summary['errors']}  ({summary['tool']}; rounds {per_round})",
                flush=True,
            )

    async def _timed(self, target: Server, run: Runner) -> dict[str, Any]:
        """One timed run plus the server's CPU use (percent of a core, µs per successful request)."""
        target.check_alive()
        cpu_before, wall_before = target.cpu_seconds(), time.monotonic()
        summary = await run(self.args.duration)
        cpu, wall = target.cpu_seconds() - cpu_before, time.monotonic() - wall_before
        ok = summary["requests"] - summary["errors"]
        summary["server_cpu_pct"] = round(100 * cpu / wall, 1)
        summary["server_cpu_us_per_req"] = round(cpu / ok * 1e6, 1) if ok else None
        return summary


# --------------------------------------------------------------------------------------------
# Scenarios
# --------------------------------------------------------------------------------------------


async def bench_auth(bench: Bench) -> None:
    """GET /api/auth/me (JWT + account) and the full wallet sign-in (challenge + verify)."""
    async with aiohttp.ClientSession() as session:
        owner = await loadgen.sign_in(session, bench.api.base_url, loadgen.wallets(1)[0])
    token, user_id = owner["token"], owner["user"]["id"]
    auth = {"Authorization": f"Bearer {token}"}
    await bench.compare(
        "GET /api/auth/me",
        bench.http_load(bench.api, [("GET", "/api/auth/me", auth, None)], 200),
        bench.http_load(bench.ceiling, [("GET", f"/me/{user_id}", auth, None)], 200),
    )

    keypairs = loadgen.wallets(sign_in_wallets(bench.args))
    add_users(bench.database_url, [k.public_key for k in keypairs])
    await bench.compare(
        "sign-in (challenge + verify)",
        bench.scripted_load(
            bench.api,
            loadgen.sign_in_operation(keypairs, "/api/auth/wallet/challenge", "/api/auth/wallet/verify"),
        ),
        bench.scripted_load(bench.ceiling, loadgen.sign_in_operation(keypairs, "/challenge", "/verify")),
    )


def sign_in_wallets(args: argparse.Namespace) -> int:
    """Enough wallets that none asks for 8 challenges within the 10-per-minute window.

    Sized for up to SIGN_IN_RATE_BOUND sign-ins a second over the whole (warm-up + rounds) load.
    """
    seconds = args.warmup + args.rounds * args.duration
    return max(SIGN_IN_WALLETS, int(SIGN_IN_RATE_BOUND * min(seconds, 60) / 8) + 1)


async def bench_beneficiaries(bench: Bench) -> None:
    """GET /api/beneficiaries (one owner, 50 rows) and POST /api/beneficiaries.

    Creates go round-robin over CREATE_OWNERS owners at 0.01 % each, so the 100 % allocation
    cap is never reached (10,000 creates per owner); the ceiling writes for its own owners.
    """
    base = bench.api.base_url
    async with aiohttp.ClientSession() as session:
        owners = [await loadgen.sign_in(session, base, k) for k in loadgen.wallets(1 + 2 * CREATE_OWNERS)]
        lister = owners[0]
        headers = {"Authorization": f"Bearer {lister['token']}"}
        async with session.get(f"{base}/api/beneficiaries", headers=headers) as resp:
            if resp.status == 404:
                print("  beneficiaries: /api/beneficiaries is not served by this build; skipped", flush=True)
                return
        for n in range(LIST_ROWS):
            row = {**BENEFICIARY, "name": f"Beneficiary {n}", "allocationPercentage": 1}
            async with session.post(f"{base}/api/beneficiaries", json=row, headers=headers) as resp:
                if resp.status != 201:
                    raise RuntimeError(f"POST /api/beneficiaries answered {resp.status}: {await resp.text()}")
        async with session.get(f"{base}/api/beneficiaries", headers=headers) as resp:
            listed = await resp.json()
            if resp.status != 200 or len(listed) != LIST_ROWS:
                raise RuntimeError(f"GET /api/beneficiaries answered {resp.status} with {len(listed)} rows")

    user_id = lister["user"]["id"]
    await bench.compare(
        "GET /api/beneficiaries (50 rows)",
        bench.http_load(bench.api, [("GET", "/api/beneficiaries", headers, None)], 200),
        bench.http_load(bench.ceiling, [("GET", f"/beneficiaries/{user_id}", headers, None)], 200),
    )

    body = json.dumps({**BENEFICIARY, "allocationPercentage": float(CREATE_ALLOCATION)}).encode()
    service_owners, ceiling_owners = owners[1 : 1 + CREATE_OWNERS], owners[1 + CREATE_OWNERS :]

    def create(path: str, owner: dict[str, Any]) -> wrk.Request:
        return (
            "POST",
            path,
            {"Content-Type": "application/json", "Authorization": f"Bearer {owner['token']}"},
            body,
        )

    await bench.compare(
        "POST /api/beneficiaries",
        bench.http_load(bench.api, [create("/api/beneficiaries", o) for o in service_owners], 201),
        bench.http_load(
            bench.ceiling, [create(f"/beneficiaries/{o['user']['id']}", o) for o in ceiling_owners], 201
        ),
    )


async def bench_messages(bench: Bench) -> None:
    """GET /api/messages: one owner, 50 letters of ~1 KB with a title each (sealed at rest
    since #12 item 8, so the service opens 100 texts per page; the ceiling returns them as stored)."""
    base = bench.api.base_url
    async with aiohttp.ClientSession() as session:
        (owner,) = [await loadgen.sign_in(session, base, k) for k in loadgen.wallets(1)]
        headers = {"Authorization": f"Bearer {owner['token']}"}
        for n in range(LIST_ROWS):
            row = {
                "title": f"Letter {n}",
                "content": f"Letter number {n}. " * 60,
                "releaseRule": {"kind": "on_release", "value": None},
                "audience": {"all": True},
            }
            async with session.post(f"{base}/api/messages", json=row, headers=headers) as resp:
                if resp.status != 201:
                    raise RuntimeError(f"POST /api/messages answered {resp.status}: {await resp.text()}")
    await bench.compare(
        "GET /api/messages (50 rows)",
        bench.http_load(bench.api, [("GET", "/api/messages", headers, None)], 200),
        bench.http_load(bench.ceiling, [("GET", f"/messages/{owner['user']['id']}", headers, None)], 200),
    )


# --------------------------------------------------------------------------------------------
# Report
# --------------------------------------------------------------------------------------------


def ratios(results: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    """Per scenario: service/ceiling req/s, and ceiling/service server CPU per request.

    The CPU ratio is the steadier one on a shared machine: outside load slows both the
    client and the server, but changes little how much CPU one request costs.
    """
    by_key = {(r["scenario"], r["target"]): r for r in results}
    out = {}
    for (scenario, target), row in by_key.items():
        ceiling = by_key.get((scenario, "ceiling"))
        if target != "service" or not ceiling or not ceiling["rps"]:
            continue
        out[scenario] = {"rps": row["rps"] / ceiling["rps"]}
        if row["server_cpu_us_per_req"] and ceiling["server_cpu_us_per_req"]:
            out[scenario]["cpu"] = ceiling["server_cpu_us_per_req"] / row["server_cpu_us_per_req"]
    return out


def print_table(results: list[dict[str, Any]], archive_results: dict[str, Any] | None) -> None:
    if results:
        print()
        header = (
            f"{'scenario':<34} {'target':<8} {'req/s':>9} {'p50 ms':>8} {'p99 ms':>8}"
            f" {'errors':>7} {'CPU %':>6} {'CPU µs/req':>11}"
        )
        print(header)
        print("-" * len(header))
        ratio = ratios(results)
        for row in results:
            print(
                f"{row['scenario']:<34} {row['target']:<8} {row['rps']:>9.1f} {row['p50_ms']:>8.2f}"
                f" {row['p99_ms']:>8.2f} {row['errors']:>7} {row['server_cpu_pct']:>6.0f}"
                f" {row['server_cpu_us_per_req'] or 0:>11.0f}"
            )
            if row["target"] == "ceiling" and row["scenario"] in ratio:
                r = ratio[row["scenario"]]
                cpu = f"{r['cpu']:.2f}" if "cpu" in r else "-"
                print(
                    f"{'':<34} {'ratio':<8} {r['rps']:>9.2f}  (req/s service/ceiling; CPU per request {cpu})"
                )
    if archive_results:
        archive.print_table(archive_results)


def machine() -> dict[str, Any]:
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=False
    ).stdout.strip()
    return {
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "commit": commit,
        "wrk": shutil.which("wrk"),
        # Other work on the machine skews throughput; the load average says how much there was.
        "loadavg_at_end": os.getloadavg(),
    }


# --------------------------------------------------------------------------------------------
# Main
# --------------------------------------------------------------------------------------------


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--only",
        default=",".join(SCENARIOS),
        help="comma-separated: auth, beneficiaries, messages, archive, capsule, soroban, lifecycle"
        " (default: all)",
    )
    parser.add_argument("--duration", type=float, default=5, help="seconds per timed run (default 5)")
    parser.add_argument(
        "--rounds",
        type=int,
        default=3,
        help="timed runs per target, alternating; the median is kept (default 3)",
    )
    parser.add_argument(
        "--warmup", type=float, default=2, help="unmeasured seconds before each run (default 2)"
    )
    parser.add_argument("--connections", type=int, default=32, help="concurrent connections (default 32)")
    parser.add_argument("--size-mib", type=int, default=100, help="archive file size in MiB (default 100)")
    parser.add_argument("--big", action="store_true", help="also run the archive with a 1 GiB file")
    parser.add_argument(
        "--storage",
        choices=("file", "s3"),
        default="file",
        help="archive storage: a directory (default) or S3 on a moto server started for the run",
    )
    parser.add_argument(
        "--python-loadgen", action="store_true", help="use bench/loadgen.py even if wrk exists"
    )
    parser.add_argument("--keep", action="store_true", help="keep the bench database and work directory")
    args = parser.parse_args(argv)
    args.only = [s.strip() for s in args.only.split(",") if s.strip()]
    unknown = set(args.only) - set(SCENARIOS)
    if unknown:
        parser.error(f"unknown scenario(s): {', '.join(sorted(unknown))}; choose from {', '.join(SCENARIOS)}")
    if not 1 <= args.connections <= 256 or not 1 <= args.duration <= 300 or not 1 <= args.rounds <= 9:
        parser.error("--connections must be 1..256, --duration 1..300 seconds and --rounds 1..9")
    return args


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
        # Required in production (claim links in emails).
        ARCHIVE_MAX_BYTES=str(2 * 1024**3),
        PUBLIC_APP_URL="http://127.0.0.1:5173",
        # The lifecycle bench times the scan itself: the worker's own scan stays out of its way.
        LIFECYCLE_SCAN_SECONDS="3600",
        LOG_LEVEL="INFO",
        ARQ_QUEUE_NAME=f"bench-queue-{os.getpid()}",
        PYTHONUNBUFFERED="0",
    )
    return env


async def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    started_at = datetime.now(UTC)
    base_db = os.environ.get("DATABASE_URL") or DEFAULT_DATABASE_URL
    base_redis = os.environ.get("REDIS_URL") or DEFAULT_REDIS_URL
    loadgen.require_loopback(base_db.replace("postgresql://", "http://", 1))
    print(f"bench: load average before the run {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(
        f"bench: {', '.join(args.only)}; {args.connections} connections; {args.rounds} alternating"
        f" rounds of {args.duration:g}s per target after {args.warmup:g}s warm-up;"
        f" load tool: {'wrk' if wrk.available() and not args.python_loadgen else 'python'}"
    )
    if not wrk.available():
        print("bench: wrk not found (apt-get install -y wrk); falling back to bench/loadgen.py")
    print("bench: RATE_LIMIT_CHALLENGE_PER_IP raised to 1e8 for the API (all load comes from one address)")

    database_url = fresh_database(base_db)
    redis_url = fresh_redis(base_redis)
    workdir = Path(tempfile.mkdtemp(prefix="lps-bench-"))
    servers: list[Server] = []
    bench: Bench | None = None
    archive_results: dict[str, Any] | None = None
    capsule_results: dict[str, Any] | None = None
    soroban_results: dict[str, Any] | None = None
    soroban_rpc: SorobanRpcEmulator | None = None
    lifecycle_results: dict[str, Any] | None = None
    stop_moto = None
    try:
        if args.storage == "s3":
            endpoint, stop_moto = start_moto_server()
            await create_bucket(endpoint, "lps-bench")
            storage = {
                "STORAGE_URL": "s3://lps-bench",
                "S3_ENDPOINT_URL": endpoint,
                "AWS_REGION": TEST_REGION,
                "AWS_ACCESS_KEY_ID": TEST_ACCESS_KEY_ID,
                "AWS_SECRET_ACCESS_KEY": TEST_SECRET_ACCESS_KEY,
            }
        else:
            storage = {"STORAGE_URL": (workdir / "objects").as_uri()}
        env = service_env(database_url, redis_url, storage, free_port())
        if "soroban" in args.only:
            # The RPC node is the emulator from tests/, served from this process on loopback.
            soroban_rpc = SorobanRpcEmulator(contract_id=random_contract_id())
            await soroban_rpc.start()
            env.update(SERVICE_CONTRACT_ID=str(soroban_rpc.contract_id), SOROBAN_RPC_URL=soroban_rpc.url)
        if "lifecycle" in args.only:  # a local stand-in for the email provider
            email_port = free_port()
            email = start_server("email", ["tests.emailserver", str(email_port)], env, workdir)
            servers.append(email)
            env.update(
                EMAIL_PROVIDER_URL=f"http://127.0.0.1:{email_port}/emails",
                EMAIL_PROVIDER_API_KEY="bench-provider-key",
                EMAIL_FROM="bench@example.test",
            )
        api = start_server("service", ["core.process.cli", "serve"], env, workdir)
        api.base_url = f"http://127.0.0.1:{env['PORT']}"
        servers.append(api)
        ceiling_env = {**env, "PORT": str(free_port())}
        ceiling = start_server("ceiling", ["bench.ceiling"], ceiling_env, workdir)
        ceiling.base_url = f"http://127.0.0.1:{ceiling_env['PORT']}"
        servers.append(ceiling)
        worker = None
        if {"archive", "capsule", "lifecycle"} & set(args.only):
            worker = start_server("worker", ["core.process.cli", "worker"], env, workdir)
            servers.append(worker)
        await wait_ready(api, "/api/health")
        await wait_ready(ceiling, "/health")
        bench = Bench(
            args,
            api,
            ceiling,
            worker,
            database_url,
            redis_url,
            soroban_rpc,
            KeyRing.parse(env["ENCRYPTION_KEYS"]),
        )
        if "auth" in args.only:
            await bench_auth(bench)
        if "beneficiaries" in args.only:
            await bench_beneficiaries(bench)
        if "messages" in args.only:
            await bench_messages(bench)
        if "archive" in args.only:
            assert worker is not None
            archive_results = await archive.run(bench, workdir, args.storage)
        if "capsule" in args.only:
            capsule_results = await capsule.run(bench, workdir)
        if "soroban" in args.only:

            def start_worker(name: str) -> Server:
                return start_server(name, ["core.process.cli", "worker"], env, workdir)

            soroban_results = await soroban.run(bench, workdir, start_worker)
        if "lifecycle" in args.only:
            lifecycle_results = await lifecycle.run(bench, load_settings(env))
        for server in servers:
            server.check_alive()
    finally:
        for server in servers:
            server.stop()
        if stop_moto is not None:
            stop_moto()
        if soroban_rpc is not None:
            await soroban_rpc.stop()
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)
            with contextlib.suppress(psycopg2.Error):
                drop_database(base_db)
            release_redis(redis_url)
        else:
            print(f"bench: kept {workdir} and database {BENCH_DATABASE}")

    results = bench.results if bench else []
    print_table(results, archive_results)
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    out = RESULTS_DIR / f"bench-{started_at.strftime('%Y%m%dT%H%M%SZ')}.json"
    out.write_text(
        json.dumps(
            {
                "started_at": started_at.isoformat(),
                "command": " ".join([Path(sys.executable).name, "bench/run.py", *sys.argv[1:]]),
                "machine": machine(),
                "settings": {k: v for k, v in vars(args).items()},
                "requests": results,
                "ratios": ratios(results),
                "archive": archive_results,
                "capsule": capsule_results,
                "soroban": soroban_results,
                "lifecycle": lifecycle_results,
            },
            indent=2,
            default=str,
        )
    )
    print(f"\nbench: results written to {out.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(asyncio.run(main()))
