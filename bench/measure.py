"""Measuring one scenario: a timed load against the service and the same load against the
ceiling, alternating rounds, each run's server CPU from /proc; the ratios and the table.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import shutil
import subprocess
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from bench import loadgen, wrk
from bench.processes import ROOT, Server
from core.files.crypto import KeyRing
from testing.soroban_rpc import SorobanRpcEmulator

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


def print_table(results: list[dict[str, Any]]) -> None:
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
