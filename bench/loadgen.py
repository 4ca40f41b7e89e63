"""Closed-loop asyncio load generator: fixed concurrency, fixed duration, per-request latency.

Used for flows wrk cannot script (sign-in signs every challenge with the wallet's key) and as
the fallback for plain requests when wrk is not installed. Each run is bounded in time and in
count and only ever targets a loopback address.
"""

from __future__ import annotations

import asyncio
import base64
import ipaddress
import itertools
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import aiohttp
from stellar_sdk import Keypair

# One operation: send whatever it sends on the session, return True when it succeeded.
Operation = Callable[[aiohttp.ClientSession], Awaitable[bool]]

MAX_OPERATIONS = 2_000_000
REQUEST_TIMEOUT = aiohttp.ClientTimeout(total=30)


def require_loopback(url: str) -> None:
    """Refuse any target that is not this machine: load is only ever sent to loopback."""
    host = urlsplit(url).hostname or ""
    if host == "localhost":
        return
    try:
        if ipaddress.ip_address(host).is_loopback:
            return
    except ValueError:
        pass
    raise ValueError(f"load generator targets loopback only, not {host!r}")


def percentile(sorted_values: Sequence[float], fraction: float) -> float:
    """Nearest-rank percentile of an already sorted sequence (0.0 when empty)."""
    if not sorted_values:
        return 0.0
    rank = max(0, min(len(sorted_values) - 1, round(fraction * len(sorted_values) + 0.5) - 1))
    return sorted_values[rank]


@dataclass
class LoadResult:
    """What one timed run measured; latencies are seconds per operation."""

    duration: float
    latencies: list[float] = field(default_factory=list)
    errors: int = 0
    error_kinds: Counter[str] = field(default_factory=Counter)

    def summary(self) -> dict[str, Any]:
        ordered = sorted(self.latencies)
        ok = len(ordered)
        return {
            "requests": ok + self.errors,
            "errors": self.errors,
            "error_kinds": dict(self.error_kinds),
            "rps": ok / self.duration if self.duration else 0.0,
            "p50_ms": percentile(ordered, 0.50) * 1000,
            "p99_ms": percentile(ordered, 0.99) * 1000,
            "mean_ms": (sum(ordered) / ok * 1000) if ok else 0.0,
        }


async def run_load(
    base_url: str,
    operation: Operation,
    *,
    connections: int,
    duration: float,
    warmup: float = 0.0,
    max_operations: int = MAX_OPERATIONS,
) -> LoadResult:
    """Run `operation` from `connections` concurrent loops; time only what runs after `warmup`.

    An operation counts if it starts inside the measured window; the window is closed when
    the last of them has finished, so the rate is never inflated by a cut-off tail.
    """
    require_loopback(base_url)
    loop = asyncio.get_running_loop()
    started = loop.time()
    window_start = started + warmup
    deadline = window_start + duration
    result = LoadResult(duration=duration)
    budget = itertools.count()

    async def one_loop(session: aiohttp.ClientSession) -> None:
        while next(budget) < max_operations:
            begin = loop.time()
            if begin >= deadline:
                return
            try:
                ok = await operation(session)
                kind = "status"
            except (aiohttp.ClientError, TimeoutError, ValueError, KeyError) as exc:
                ok, kind = False, type(exc).__name__
            if begin < window_start:
                continue
            if ok:
                result.latencies.append(loop.time() - begin)
            else:
                result.errors += 1
                result.error_kinds[kind] += 1

    connector = aiohttp.TCPConnector(limit=connections, force_close=False)
    async with aiohttp.ClientSession(base_url, connector=connector, timeout=REQUEST_TIMEOUT) as session:
        await asyncio.gather(*(one_loop(session) for _ in range(connections)))
    result.duration = max(loop.time(), deadline) - window_start
    return result


def http_operation(
    requests: Sequence[tuple[str, str, dict[str, str], bytes | None]], expect: int
) -> Operation:
    """Cycle through prepared (method, path, headers, body) requests; success is status `expect`."""
    cycle = itertools.cycle(requests)

    async def operation(session: aiohttp.ClientSession) -> bool:
        method, path, headers, body = next(cycle)
        async with session.request(method, path, headers=headers, data=body) as resp:
            await resp.read()
            return resp.status == expect

    return operation


def sign_in_operation(wallets: Sequence[Keypair], challenge_path: str, verify_path: str) -> Operation:
    """One full wallet sign-in: fetch a challenge, sign it (raw bytes, base64), verify it.

    Wallets are used round-robin so that each stays under the per-wallet challenge limit.
    """
    cycle = itertools.cycle(wallets)

    async def operation(session: aiohttp.ClientSession) -> bool:
        keypair = next(cycle)
        address = keypair.public_key
        async with session.post(challenge_path, json={"walletAddress": address}) as resp:
            if resp.status != 200:
                await resp.read()
                return False
            message: str = (await resp.json())["message"]
        signature = base64.b64encode(keypair.sign(message.encode())).decode()
        async with session.post(verify_path, json={"walletAddress": address, "signature": signature}) as resp:
            await resp.read()
            return resp.status == 200

    return operation


def wallets(count: int) -> list[Keypair]:
    """Fresh random wallets (ed25519 keypairs), as a real wallet would hold."""
    return [Keypair.random() for _ in range(count)]


async def sign_in(session: aiohttp.ClientSession, base_url: str, keypair: Keypair) -> dict[str, Any]:
    """A real wallet sign-in through the API; returns its body ({token, user})."""
    address = keypair.public_key
    async with session.post(f"{base_url}/api/auth/wallet/challenge", json={"walletAddress": address}) as resp:
        resp.raise_for_status()
        message: str = (await resp.json())["message"]
    signature = base64.b64encode(keypair.sign(message.encode())).decode()
    async with session.post(
        f"{base_url}/api/auth/wallet/verify", json={"walletAddress": address, "signature": signature}
    ) as resp:
        resp.raise_for_status()
        body: dict[str, Any] = await resp.json()
        return body
