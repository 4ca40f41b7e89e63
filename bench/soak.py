"""Load and soak: 64 concurrent clients on a mixed owner workload plus capsule reads.

Each client signs in with its own wallet, then loops over a mix of owner reads and writes
(profile, assets, beneficiaries, messages, the timeline) and capsule reads by claim token,
against the real API started as in `bench/run.py` (production settings, JSON access log to a
file, a fresh database and Redis index). Reports requests, errors (anything but the expected
status, or a transport failure), p50/p99 latency, and the API's RSS sampled every second over
the soak, so a leak shows as a slope. One process generates the load on the same two cores
as the API, PostgreSQL and Redis: figures are for this machine, read them as such.

A worker (`service.cli worker`, production settings, its cron jobs at their shipped
intervals) runs beside the API, and both RSS are sampled every `--sample-seconds` (default 60)
with the requests served so far; each sample is printed as a JSON line when taken (a run cut
short still says what it saw), and the summary gives the slope of each half of the run.

    .venv/bin/python bench/soak.py --clients 64 --load-seconds 60 --soak-seconds 600
    nice -n 19 .venv/bin/python bench/soak.py --load-seconds 0 --soak-seconds 3600   # an hour
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import aiohttp
from stellar_sdk import Keypair

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.processes import (
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


class Client:
    """One owner: a session, a beneficiary (for its claim token) and a step counter."""

    def __init__(self, http: aiohttp.ClientSession) -> None:
        self.http = http
        self.headers: dict[str, str] = {}
        self.claim_token = ""
        self.step = 0

    async def sign_in(self) -> None:
        keypair = Keypair.random()
        resp = await self.http.post("/api/auth/wallet/challenge", json={"walletAddress": keypair.public_key})
        message = (await resp.json())["message"]
        signature = base64.b64encode(keypair.sign(message.encode())).decode()
        resp = await self.http.post(
            "/api/auth/wallet/verify", json={"walletAddress": keypair.public_key, "signature": signature}
        )
        self.headers = {"Authorization": f"Bearer {(await resp.json())['token']}"}
        resp = await self.http.post(
            "/api/beneficiaries",
            headers=self.headers,
            json={
                "name": "Ada",
                "relationship": "daughter",
                "email": "ada@example.org",
                "allocationPercentage": 10,
            },
        )
        self.claim_token = (await resp.json())["claimToken"]

    def next_request(self) -> tuple[str, str, dict[str, Any], set[int]]:
        """The mix, in a fixed rotation: 7 owner reads, 3 owner writes, 2 capsule reads per 12."""
        self.step += 1
        n = self.step % 12
        h = self.headers
        if n in (0, 6):
            return "GET", "/api/auth/me", {"headers": h}, {200}
        if n in (1, 7):
            return "GET", "/api/assets?limit=20", {"headers": h}, {200}
        if n == 2:
            return (
                "POST",
                "/api/assets",
                {"headers": h, "json": {"label": "Savings", "amount": "12.5"}},
                {201},
            )
        if n == 3:
            return "GET", "/api/beneficiaries", {"headers": h}, {200}
        if n == 4:
            body = {
                "title": "For you",
                "content": "Dear Ada, ...",
                "releaseRule": {"kind": "on_release", "value": None},
                "audience": {"all": True},
            }
            return "POST", "/api/messages", {"headers": h, "json": body}, {201}
        if n == 5:
            return "GET", "/api/messages?limit=20", {"headers": h}, {200}
        if n == 8:
            return "PATCH", "/api/users/me", {"headers": h, "json": {"name": f"Owner {self.step}"}}, {200}
        if n == 9:
            return "GET", "/api/activity?limit=20", {"headers": h}, {200}
        return "GET", f"/api/claim/{self.claim_token}", {}, {200}


async def client_loop(client: Client, until: float, samples: list[float], errors: list[str]) -> None:
    while time.monotonic() < until:
        method, path, kwargs, expected = client.next_request()
        started = time.perf_counter()
        try:
            async with client.http.request(method, path, **kwargs) as resp:
                await resp.read()
                status = resp.status
        except (TimeoutError, aiohttp.ClientError) as exc:
            errors.append(f"{method} {path.split('?')[0]}: {type(exc).__name__}")
            continue
        samples.append(time.perf_counter() - started)
        if status not in expected:
            errors.append(f"{method} {path.split('?')[0]}: {status}")


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(p / 100 * len(ordered)))] * 1000 if ordered else 0.0


def sample(phase: str, began: float, served: int, errors: int, processes: list[Server]) -> dict[str, Any]:
    row: dict[str, Any] = {"phase": phase, "t_s": round(time.monotonic() - began, 1)}
    row["requests"] = served
    row["errors"] = errors
    for process in processes:
        process.check_alive()
        row[f"{process.name}_rss_kib"] = process.status()["VmRSS"]
    print(json.dumps(row), flush=True)
    return row


async def run(
    base_url: str,
    processes: list[Server],
    clients: int,
    load_seconds: float,
    soak_seconds: float,
    every: float,
) -> dict[str, Any]:
    connector = aiohttp.TCPConnector(limit=clients)
    timeout = aiohttp.ClientTimeout(total=30)
    async with aiohttp.ClientSession(base_url, connector=connector, timeout=timeout) as http:
        owners = [Client(http) for _ in range(clients)]
        for start in range(0, clients, 8):  # sign in in small groups (a challenge and a verify each)
            await asyncio.gather(*(o.sign_in() for o in owners[start : start + 8]))
        phases = {}
        for name, seconds in (("load", load_seconds), ("soak", soak_seconds)):
            if seconds <= 0:
                continue
            samples: list[float] = []
            errors: list[str] = []
            began = time.monotonic()
            until = began + seconds
            tasks = [asyncio.create_task(client_loop(o, until, samples, errors)) for o in owners]
            rows = [sample(name, began, 0, 0, processes)]
            while (left := until - time.monotonic()) > 0:
                await asyncio.sleep(min(every, left))
                rows.append(sample(name, began, len(samples), len(errors), processes))
            await asyncio.gather(*tasks)
            elapsed = time.monotonic() - began
            phases[name] = {
                "seconds": round(elapsed, 1),
                "requests": len(samples),
                "rps": round(len(samples) / elapsed, 1),
                "errors": len(errors),
                "error_kinds": sorted(set(errors))[:10],
                "p50_ms": round(percentile(samples, 50), 2),
                "p99_ms": round(percentile(samples, 99), 2),
                "mean_ms": round(statistics.fmean(samples) * 1000, 2) if samples else 0.0,
            }
            for process in processes:
                key = f"{process.name}_rss_kib"
                phases[name][key] = rss_summary([(r["t_s"], r[key]) for r in rows])
            phases[name]["samples"] = rows
        return phases


def slope_per_minute(points: list[tuple[float, int]]) -> float:
    """Least-squares slope of (seconds, KiB) points, in KiB per minute."""
    xs = [t for t, _ in points]
    mean_x, mean_y = statistics.fmean(xs), statistics.fmean(v for _, v in points)
    spread = sum((x - mean_x) ** 2 for x in xs)
    return 60 * sum((x - mean_x) * (y - mean_y) for x, y in points) / spread if spread else 0.0


def rss_summary(rss: list[tuple[float, int]]) -> dict[str, Any]:
    """First and last sample, peak, and the slope over the whole run and over each half: a
    curve that levels off has a second-half slope near zero, a leak keeps its slope."""
    if len(rss) < 4:
        return {"samples": rss}
    half = len(rss) // 2
    ys = [v for _, v in rss]
    return {
        "first": ys[0],
        "last": ys[-1],
        "max": max(ys),
        "slope_kib_per_min": round(slope_per_minute(rss), 1),
        "first_half_slope_kib_per_min": round(slope_per_minute(rss[: half + 1]), 1),
        "second_half_slope_kib_per_min": round(slope_per_minute(rss[half:]), 1),
    }


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=64)
    parser.add_argument("--load-seconds", type=float, default=60)
    parser.add_argument("--soak-seconds", type=float, default=600)
    parser.add_argument("--sample-seconds", type=float, default=60, help="RSS and request count sampling")
    args = parser.parse_args()
    base_db = os.environ.get("DATABASE_URL") or DEFAULT_DATABASE_URL
    database_url = fresh_database(base_db)
    redis_url = fresh_redis(os.environ.get("REDIS_URL") or DEFAULT_REDIS_URL)
    workdir = Path(tempfile.mkdtemp(prefix="lps-soak-"))
    env = service_env(database_url, redis_url, {"STORAGE_URL": (workdir / "objects").as_uri()}, free_port())
    env["DB_POOL_MAX"] = "20"
    env.pop("LIFECYCLE_SCAN_SECONDS")  # the worker's crons at their shipped intervals
    api = start_server("api", ["service.cli", "serve"], env, workdir)
    api.base_url = f"http://127.0.0.1:{env['PORT']}"
    worker = start_server("worker", ["service.cli", "worker"], env, workdir)
    try:
        await wait_ready(api, "/api/health")
        phases = await run(
            api.base_url,
            [api, worker],
            args.clients,
            args.load_seconds,
            args.soak_seconds,
            args.sample_seconds,
        )
        report = {"clients": args.clients, "cpus": os.cpu_count(), "phases": phases}
        print(json.dumps(report, indent=2))
        failed = any(p["errors"] for p in phases.values())
        return 1 if failed else 0
    finally:
        worker.stop()
        api.stop()
        drop_database(base_db)
        release_redis(redis_url)
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(asyncio.run(main()))
