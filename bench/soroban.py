"""On-chain submit and relay against the Soroban RPC emulator (testing/soroban_rpc.py).

Set up in SQL (the lifecycle and capsule are measured elsewhere): owners with `Released`
plans, beneficiaries with known claim tokens, one wallet each; envelopes are built and signed
here as a wallet would (claim_assets(owner, wallet), resources as simulation gives them).
Measured in the same run:

- `POST /api/claim/:token/submit` under load vs the ceiling's `/soroban/submit`, which decodes
  the same XDR with stellar-sdk and inserts the same row (no checks, no timeline, no job).
  Every request carries an envelope never sent before (distinct sequence numbers), so each is
  a real insert on both sides.
- Relay latency, submit → `confirmed`, one transaction at a time with one worker and the
  emulator confirming at once: p50/p99 of (confirmed row's updated_at - created_at).
- Relay throughput: RELAY_BURST envelopes submitted at once, confirmed by one worker, then by
  two: transactions per second from the first commit to the last confirmation.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import secrets
import statistics
import time
import uuid
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import aiohttp
import psycopg2
import psycopg2.extras
import redis as redis_sync
from stellar_sdk import Account, Keypair, SorobanDataBuilder, TransactionBuilder, scval

from bench.loadgen import percentile
from core.files.crypto import KeyRing
from models import sealed_text

if TYPE_CHECKING:
    from bench.measure import Bench
    from bench.processes import Server

SUBMIT_WALLETS = 50  # beneficiaries per target in the submit scenario
SUBMIT_BATCH = 5_000  # distinct envelopes per timed run (warm-up and each round get their own)
LATENCY_SAMPLES = 60
RELAY_BURST = 240
# Scale-out: the same burst against a node that takes this long to answer each call, so that a
# worker's job slots (arq max_jobs), not the machine's two shared cores, bound its rate.
RELAY_NETWORK_LATENCY = float(os.environ.get("BENCH_RELAY_LATENCY", "0.5"))
RESOURCE_FEE = 94_321
SEQUENCE_BASE = 4_294_967_296 * 7
SCENARIO = "POST /api/claim/:token/submit"


def _sealed_heir(ring: KeyRing, beneficiary_id: Any) -> tuple[Any, ...]:
    """Name, relationship, email (sealed, as the service stores them) and the email's index."""
    texts = {"name": "Heir", "relationship": "child", "email": "heir@example.org"}
    sealed = sealed_text.sealed_values(ring, table="beneficiaries", row_id=beneficiary_id, values=texts)
    return sealed["name_sealed"], sealed["relationship_sealed"], sealed["email_sealed"], sealed["email_bidx"]


def make_beneficiaries(database_url: str, ring: KeyRing, count: int) -> list[dict[str, Any]]:
    """One owner with a Released plan and `count` beneficiaries, each with a token and a wallet."""
    owner = Keypair.random()
    owner_id = str(uuid.uuid4())
    rows: list[dict[str, Any]] = []
    for _ in range(count):
        token = secrets.token_bytes(32).hex()
        rows.append(
            {
                "id": str(uuid.uuid4()),
                "token": token,
                "wallet": Keypair.random(),
                "owner_id": owner_id,
                "owner_wallet": owner.public_key,
            }
        )
    conn = psycopg2.connect(database_url)
    with conn, conn.cursor() as cur:
        cur.execute("INSERT INTO users (id, wallet_address) VALUES (%s, %s)", (owner_id, owner.public_key))
        cur.execute(
            "INSERT INTO user_wallets (wallet_address, user_id) VALUES (%s, %s)", (owner.public_key, owner_id)
        )
        cur.execute(
            "INSERT INTO plans (user_id, status, approved_at, released_at)"
            " VALUES (%s, 'Released', now(), now())",
            (owner_id,),
        )
        psycopg2.extras.execute_values(
            cur,
            "INSERT INTO beneficiaries (id, user_id, name_sealed, relationship_sealed, email_sealed,"
            " email_bidx, allocation_percentage, claim_token_hash, claim_token_sealed, wallet_address,"
            " wallet_bound_via, wallet_bound_at) VALUES %s",
            [
                (
                    r["id"],
                    owner_id,
                    *_sealed_heir(ring, r["id"]),
                    1,
                    hashlib.sha256(str(r["token"]).encode()).digest(),
                    "-",
                    r["wallet"].public_key,  # recorded by the owner: claims come only from it
                    "owner",
                    datetime.now(UTC),
                )
                for r in rows
            ],
        )
    conn.close()
    return rows


def envelope(contract_id: str, passphrase: str, heir: dict[str, Any], sequence: int) -> str:
    """claim_assets(owner, wallet) as build returns it, signed by the wallet."""
    wallet: Keypair = heir["wallet"]
    data = SorobanDataBuilder().set_resources(2_000_000, 3_000, 400).set_resource_fee(RESOURCE_FEE).build()
    tx = (
        TransactionBuilder(Account(wallet.public_key, sequence - 1), passphrase, base_fee=100)
        .append_invoke_contract_function_op(
            contract_id,
            "claim_assets",
            [scval.to_address(heir["owner_wallet"]), scval.to_address(wallet.public_key)],
        )
        .add_time_bounds(0, int(time.time()) + 280)
        .build()
    )
    tx.transaction.soroban_data = data
    tx.transaction.fee += RESOURCE_FEE
    tx.sign(wallet)
    return tx.to_xdr()


def submit_requests(
    bench: Bench, heirs: Sequence[dict[str, Any]], target: str, batch: int
) -> list[tuple[str, str, dict[str, str], bytes | None]]:
    rpc = bench.soroban_rpc
    assert rpc is not None and rpc.contract_id is not None
    headers = {"Content-Type": "application/json"}
    requests: list[tuple[str, str, dict[str, str], bytes | None]] = []
    per_wallet = SUBMIT_BATCH // len(heirs)
    first = 1 + batch * per_wallet
    for n in range(first, first + per_wallet):  # sequence-major: consecutive requests differ in wallet
        for heir in heirs:
            body = json.dumps(
                {"signedXdr": envelope(rpc.contract_id, rpc.passphrase, heir, SEQUENCE_BASE + n)}
            )
            path = (
                f"/api/claim/{heir['token']}/submit"
                if target == "service"
                else f"/soroban/submit/{heir['owner_id']}/{heir['id']}"
            )
            requests.append(("POST", path, headers, body.encode()))
    return requests


async def submit_all(
    session: aiohttp.ClientSession, base: str, heirs: Sequence[dict[str, Any]], xdrs: list[str]
) -> None:
    async def one(heir: dict[str, Any], xdr: str) -> None:
        async with session.post(f"{base}/api/claim/{heir['token']}/submit", json={"signedXdr": xdr}) as resp:
            if resp.status != 202:
                raise RuntimeError(f"submit answered {resp.status}: {await resp.text()}")

    await asyncio.gather(*(one(h, x) for h, x in zip(heirs, xdrs, strict=True)))


def confirmed(database_url: str) -> list[tuple[float, float]]:
    conn = psycopg2.connect(database_url)
    with conn, conn.cursor() as cur:
        cur.execute(
            "SELECT extract(epoch FROM created_at), extract(epoch FROM updated_at) FROM transactions"
            " WHERE status = 'confirmed'"
        )
        rows = [(float(a), float(b)) for a, b in cur.fetchall()]
    conn.close()
    return rows


def reset(database_url: str, redis_url: str) -> None:
    """Forget the previous phase: rows and queued jobs (no worker may relay them later)."""
    conn = psycopg2.connect(database_url)
    with conn, conn.cursor() as cur:
        cur.execute("DELETE FROM transactions")
    conn.close()
    client = redis_sync.Redis.from_url(redis_url)
    # arq's keys only (queue, jobs, results, retries): the run's claim on this index stays.
    for key in client.scan_iter(match="arq:*", count=1000):
        client.delete(key)
    client.delete("worker:heartbeat")
    client.close()


async def wait_confirmed(database_url: str, count: int, within: float = 180) -> list[tuple[float, float]]:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        rows = await asyncio.to_thread(confirmed, database_url)
        if len(rows) >= count:
            return rows
        await asyncio.sleep(0.05)
    raise RuntimeError(f"only {len(rows)} of {count} transactions confirmed in {within:.0f} s")


async def wait_worker(redis_url: str, within: float = 60) -> None:
    client = redis_sync.Redis.from_url(redis_url)
    try:
        deadline = time.monotonic() + within
        while time.monotonic() < deadline:
            if client.exists("worker:heartbeat"):
                return
            await asyncio.sleep(0.1)
    finally:
        client.close()
    raise RuntimeError("no worker heartbeat")


async def relay(bench: Bench, start_worker: Any) -> dict[str, Any]:
    rpc = bench.soroban_rpc
    assert rpc is not None and rpc.contract_id is not None
    base = bench.api.base_url
    results: dict[str, Any] = {}
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=60)) as session:
        # Latency: one at a time, one worker, the emulator confirming at once.
        reset(bench.database_url, bench.redis_url)
        workers = [start_worker("worker-1")]
        try:
            await wait_worker(bench.redis_url)
            heirs = await asyncio.to_thread(
                make_beneficiaries, bench.database_url, bench.key_ring, LATENCY_SAMPLES
            )
            for n, heir in enumerate(heirs, start=1):
                rpc.fund(heir["wallet"].public_key, SEQUENCE_BASE)
                await submit_all(
                    session,
                    base,
                    [heir],
                    [envelope(rpc.contract_id, rpc.passphrase, heir, SEQUENCE_BASE + 1)],
                )
                await wait_confirmed(bench.database_url, n, within=30)
            rows = confirmed(bench.database_url)
            latencies = sorted(1000 * (b - a) for a, b in rows)
            results["latency_ms"] = {
                "samples": len(latencies),
                "p50": statistics.median(latencies),
                "p99": percentile(latencies, 0.99),
            }
            print(
                "  relay submit→confirmed (1 worker, one at a time):"
                f" p50 {results['latency_ms']['p50']:.1f} ms, p99 {results['latency_ms']['p99']:.1f} ms"
                f" over {len(latencies)}",
                flush=True,
            )
        finally:
            for w in workers:
                w.stop()
        # Throughput: a burst, confirmed by one worker, then by two (already running); first
        # with the emulator answering at once, then across a network (RELAY_NETWORK_LATENCY).
        for latency, label in ((0.0, ""), (RELAY_NETWORK_LATENCY, "_remote")):
            rpc.latency_seconds = latency
            for count in (1, 2):
                reset(bench.database_url, bench.redis_url)
                heirs = await asyncio.to_thread(
                    make_beneficiaries, bench.database_url, bench.key_ring, RELAY_BURST
                )
                xdrs = []
                for heir in heirs:
                    rpc.fund(heir["wallet"].public_key, SEQUENCE_BASE)
                    xdrs.append(envelope(rpc.contract_id, rpc.passphrase, heir, SEQUENCE_BASE + 1))
                workers = [start_worker(f"worker-{count}-{i}{label}") for i in range(count)]
                try:
                    await wait_worker(bench.redis_url)
                    await asyncio.sleep(3)  # the heartbeat proves one worker; give the other its start-up
                    cpu_before = [w.cpu_seconds() for w in workers]
                    await submit_all(session, base, heirs, xdrs)
                    rows = await wait_confirmed(bench.database_url, RELAY_BURST, within=120)
                    cpu = sum(w.cpu_seconds() for w in workers) - sum(cpu_before)
                finally:
                    for w in workers:
                        w.stop()
                first, last = min(a for a, _ in rows), max(b for _, b in rows)
                tps = RELAY_BURST / (last - first)
                key = f"tps_{count}_worker{'s' if count > 1 else ''}{label}"
                results[key] = tps
                results[f"worker_cpu_ms_per_tx_{count}{label}"] = 1000 * cpu / RELAY_BURST
                print(
                    f"  relay throughput, {count} worker(s), node answering in {latency * 1000:.0f} ms:"
                    f" {tps:.1f} tx/s ({RELAY_BURST} submitted at once; workers' CPU"
                    f" {1000 * cpu / RELAY_BURST:.2f} ms/tx)",
                    flush=True,
                )
        rpc.latency_seconds = 0.0
    for label in ("", "_remote"):
        if f"tps_1_worker{label}" in results and f"tps_2_workers{label}" in results:
            results[f"scale_2_over_1{label}"] = (
                results[f"tps_2_workers{label}"] / results[f"tps_1_worker{label}"]
            )
    return results


async def run(bench: Bench, workdir: Path, start_worker: Any) -> dict[str, Any]:
    service_heirs = await asyncio.to_thread(
        make_beneficiaries, bench.database_url, bench.key_ring, SUBMIT_WALLETS
    )
    ceiling_heirs = await asyncio.to_thread(
        make_beneficiaries, bench.database_url, bench.key_ring, SUBMIT_WALLETS
    )
    runs = bench.args.rounds + (1 if bench.args.warmup > 0 else 0)

    def fresh(target: Server, heirs: list[dict[str, Any]], name: str) -> Any:
        """A runner whose every timed run sends envelopes no earlier run sent."""
        batches = iter([submit_requests(bench, heirs, name, b) for b in range(runs)])

        async def run_once(seconds: float) -> dict[str, Any]:
            result: dict[str, Any] = await bench.http_load(target, next(batches), 202)(seconds)
            return result

        return run_once

    service = await asyncio.to_thread(fresh, bench.api, service_heirs, "service")
    ceiling = await asyncio.to_thread(fresh, bench.ceiling, ceiling_heirs, "ceiling")
    await bench.compare(SCENARIO, service, ceiling)
    return await relay(bench, start_worker)
