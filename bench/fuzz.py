"""Property-based fuzzing of every documented route with schemathesis, against a real server.

Not a benchmark: it lives here because it reuses the bench's process and datastore helpers.
`make fuzz` installs schemathesis into the venv, starts the API on a fresh `lps_bench_<pid>`
database and a free Redis db index (so it can run beside `make bench`), signs in a wallet, and fails if any
generated request gets a 5xx. It found the NUL-character, time-zone and multipart-header
500s fixed on 2026-11-25.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from xml.etree import ElementTree

import aiohttp
from stellar_sdk import Keypair

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.processes import (
    DEFAULT_DATABASE_URL,
    DEFAULT_REDIS_URL,
    drop_database,
    free_port,
    fresh_database,
    fresh_redis,
    release_redis,
    service_env,
    start_server,
    wait_ready,
)
from testing.soroban_rpc import SorobanRpcEmulator, random_contract_id

CONTRACT_ROUTES = r"(/transactions/|/build$|/submit$)"


def verdict(returncode: int, junit: Path) -> int:
    """Fail on any check failure (a 5xx). Schemathesis' own internal errors (seen: hypothesis'
    "AST constructor recursion depth mismatch" on Python 3.11) are reported, not counted: they
    say nothing about the server, which check_alive has already seen answering."""
    if returncode == 0 or not junit.exists():
        return returncode
    suites = ElementTree.parse(junit).getroot()
    failures = sum(int(s.get("failures", 0)) for s in suites.iter("testsuite"))
    errors = sum(int(s.get("errors", 0)) for s in suites.iter("testsuite"))
    if failures == 0 and errors > 0:
        print(f"fuzz: no server errors; {errors} operation(s) hit a schemathesis internal error (see above)")
        return 0
    return returncode


async def session_token(base_url: str) -> str:
    keypair = Keypair.random()
    async with aiohttp.ClientSession(base_url) as http:
        resp = await http.post("/api/auth/wallet/challenge", json={"walletAddress": keypair.public_key})
        message = (await resp.json())["message"]
        signature = base64.b64encode(keypair.sign(message.encode())).decode()
        body = {"walletAddress": keypair.public_key, "signature": signature}
        resp = await http.post("/api/auth/wallet/verify", json=body)
        token: str = (await resp.json())["token"]
        return token


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-examples", type=int, default=100, help="per operation")
    parser.add_argument("--max-time", type=int, default=0, help="seconds for the whole run (0: no bound)")
    args = parser.parse_args()
    schemathesis = shutil.which("schemathesis", path=str(Path(sys.executable).parent))
    if schemathesis is None:
        print("fuzz: schemathesis is not installed in this venv (make fuzz installs it)", file=sys.stderr)
        return 2
    base_db = os.environ.get("DATABASE_URL") or DEFAULT_DATABASE_URL
    database_url = fresh_database(base_db)
    workdir = Path(tempfile.mkdtemp(prefix="lps-fuzz-"))
    redis_url = fresh_redis(os.environ.get("REDIS_URL") or DEFAULT_REDIS_URL)
    env = service_env(
        database_url,
        redis_url,
        {"STORAGE_URL": (workdir / "objects").as_uri()},
        free_port(),
    )
    # The contract routes talk to the RPC emulator, so they are fuzzed past their 503.
    soroban_rpc = SorobanRpcEmulator(contract_id=random_contract_id())
    await soroban_rpc.start()
    env.update(SERVICE_CONTRACT_ID=str(soroban_rpc.contract_id), SOROBAN_RPC_URL=soroban_rpc.url)
    # The email webhook is fuzzed past its honest 503 too: with a secret, every unsigned or
    # forged delivery event must be a 4xx (schemathesis counts any 5xx as a failure).
    env.update(EMAIL_WEBHOOK_SECRET="whsec_" + base64.b64encode(secrets.token_bytes(24)).decode())
    api = start_server("service", ["service.cli", "serve"], env, workdir)
    api.base_url = f"http://127.0.0.1:{env['PORT']}"
    try:
        await wait_ready(api, "/api/health")
        token = await session_token(api.base_url)
        result = await asyncio.to_thread(
            subprocess.run,
            [
                schemathesis,
                "run",
                f"{api.base_url}/api/docs/openapi.json",
                "-H",
                f"Authorization: Bearer {token}",
                "--checks",
                "not_a_server_error",
                "--max-examples",
                str(args.max_examples),
                "--workers",
                "2",
                # This server runs without SERVICE_CONTRACT_ID, so the contract routes answer
                # their documented 503 to everything valid; their validation is tested in
                # tests/test_soroban*.py against the RPC emulator.
                "--exclude-path-regex",
                CONTRACT_ROUTES,
                *(["--max-time", str(args.max_time)] if args.max_time else []),
                "--report-junit-path",
                str(workdir / "junit.xml"),
            ],
            check=False,
        )
        api.check_alive()
        return verdict(result.returncode, workdir / "junit.xml")
    finally:
        api.stop()
        await soroban_rpc.stop()
        drop_database(base_db)
        release_redis(redis_url)
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(asyncio.run(main()))
