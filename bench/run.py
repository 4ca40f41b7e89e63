"""Benchmarks of the running service against a bare-aiohttp ceiling, measured in the same run.

    .venv/bin/python bench/run.py [--only auth,beneficiaries,archive] [--duration 10]
                                  [--connections 32] [--big]

Starts a fresh `lps_bench_<pid>` database (migrated) and a free Redis db index (flushed) on
DATABASE_URL / REDIS_URL (default: this machine's), the real API (`python -m service.cli
serve`, production mode, generated secrets), the real worker when the archive runs, and the
ceiling (`python -m bench.ceiling`). Plain request scenarios use wrk when installed (else
bench/loadgen.py); sign-in always uses bench/loadgen.py since each challenge must be signed.
Prints a table and writes bench/results/bench-<time>.json. See bench/README.md.

This file is the command line and the order of a run; the processes and datastores are in
bench/processes.py, the measuring in bench/measure.py, the scenarios in bench/scenarios.py
and the modules named after them.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import shutil
import sys
import tempfile
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psycopg2

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench import archive, capsule, export, lifecycle, loadgen, plan_page, soroban, wrk  # noqa: E402
from bench.measure import Bench, machine, print_table, ratios  # noqa: E402
from bench.processes import (  # noqa: E402
    BENCH_DATABASE,
    DEFAULT_DATABASE_URL,
    DEFAULT_REDIS_URL,
    Server,
    drop_database,
    free_port,
    fresh_database,
    fresh_redis,
    release_redis,
    service_env,
    start_server,
    wait_ready,
)
from bench.scenarios import bench_auth, bench_beneficiaries, bench_messages  # noqa: E402
from core.files.crypto import KeyRing  # noqa: E402
from core.settings import load_settings  # noqa: E402
from testing.s3server import (  # noqa: E402
    TEST_ACCESS_KEY_ID,
    TEST_REGION,
    TEST_SECRET_ACCESS_KEY,
    create_bucket,
    start_moto_server,
)
from testing.soroban_rpc import SorobanRpcEmulator, random_contract_id  # noqa: E402

RESULTS_DIR = ROOT / "bench" / "results"
SCENARIOS = (
    "auth",
    "beneficiaries",
    "messages",
    "plan",
    "archive",
    "capsule",
    "soroban",
    "lifecycle",
    "export",
)


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--only",
        default=",".join(SCENARIOS),
        help="comma-separated: auth, beneficiaries, messages, archive, capsule, soroban, lifecycle, export"
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
        "--export-mib", type=int, default=1024, help="the owner's export: archive size in MiB (default 1024)"
    )
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
    export_results: dict[str, Any] | None = None
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
            email = start_server("email", ["testing.emailserver", str(email_port)], env, workdir)
            servers.append(email)
            env.update(
                EMAIL_PROVIDER_URL=f"http://127.0.0.1:{email_port}/emails",
                EMAIL_PROVIDER_API_KEY="bench-provider-key",
                EMAIL_FROM="bench@example.test",
            )
        api = start_server("service", ["service.cli", "serve"], env, workdir)
        api.base_url = f"http://127.0.0.1:{env['PORT']}"
        servers.append(api)
        ceiling_env = {**env, "PORT": str(free_port())}
        ceiling = start_server("ceiling", ["bench.ceiling"], ceiling_env, workdir)
        ceiling.base_url = f"http://127.0.0.1:{ceiling_env['PORT']}"
        servers.append(ceiling)
        worker = None
        if {"archive", "capsule", "lifecycle", "export"} & set(args.only):
            worker = start_server("worker", ["service.cli", "worker"], env, workdir)
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
        if "plan" in args.only:
            await plan_page.run(bench)
        if "archive" in args.only:
            assert worker is not None
            archive_results = await archive.run(bench, workdir, args.storage)
        if "capsule" in args.only:
            capsule_results = await capsule.run(bench, workdir)
        if "soroban" in args.only:

            def start_worker(name: str) -> Server:
                return start_server(name, ["service.cli", "worker"], env, workdir)

            soroban_results = await soroban.run(bench, workdir, start_worker)
        if "lifecycle" in args.only:
            lifecycle_results = await lifecycle.run(bench, load_settings(env))
        if "export" in args.only:
            export_results = await export.run(bench, workdir)
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
    print_table(results)
    if archive_results:
        archive.print_table(archive_results)
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
                "export": export_results,
            },
            indent=2,
            default=str,
        )
    )
    print(f"\nbench: results written to {out.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(asyncio.run(main()))
