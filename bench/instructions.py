"""Instructions per request, counted by callgrind: a measure the machine's load cannot move.

    .venv/bin/python bench/instructions.py --service base=/tmp/ab/base --service mine=. \\
        --scenario list=base,mine --requests 200 --reps 2

Wall-clock and CPU-time ratios here move by more than 5 % between repetitions when other work
shares the two cores; an instruction count does not. Each tree's API runs under
`valgrind --tool=callgrind` with instrumentation off (so it starts in seconds, not minutes),
on one database and Redis as in bench/ab.py (the same fixtures, the same token). For each
scenario and tree: instrumentation on, a warm-up, then two windows closed by callgrind dumps,
one with no request and one with N requests sent one by one over one kept-alive connection;
the count per request is the difference divided by N (the empty window holds what the
process does on its own, a few hundred instructions). The whole API process is counted
(event loop, aiohttp, aiopg and psycopg2, JSON), not the client. PYTHONHASHSEED is fixed so that two
runs of one tree give the same count. Scenarios: bench/ab.py's `me`, `list`, `capsule` and
`submit` (each submit an envelope never sent before, from heirs made for that count).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import aiohttp

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench import ab, archive, processes, soroban  # noqa: E402

KINDS = ("me", "list", "capsule", "submit")


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--service", action="append", default=[], help="NAME=DIR: an API from that tree")
    parser.add_argument("--scenario", action="append", default=[], help="KIND=NAME,NAME,…")
    parser.add_argument("--requests", type=int, default=200, help="requests in the counted window")
    parser.add_argument("--warmup", type=int, default=50, help="requests before counting")
    parser.add_argument("--reps", type=int, default=2, help="repetitions; odd ones reverse the order")
    parser.add_argument(
        "--keep", action="store_true", help="keep the dumps, for callgrind_annotate (the path is printed)"
    )
    args = parser.parse_args(argv)
    if any(s.split("=", 1)[0] not in KINDS for s in args.scenario):
        parser.error(f"scenarios: {', '.join(KINDS)}")
    args.ab = ab.parse_args(
        [*(f"--service={s}" for s in args.service), *(f"--scenario={s}" for s in args.scenario)]
    )
    return args


def callgrind(out: Path) -> list[str]:
    return ["valgrind", "--tool=callgrind", "--instr-atstart=no", f"--callgrind-out-file={out}.%p"]


async def control(api: processes.Server, *flags: str) -> None:
    """callgrind_control reaches the API through vgdb, which wakes it even while it waits in epoll.
    vgdb names its pipes after $HOST, which the API's environment sets to its listening address."""
    env = {**os.environ, "HOST": "127.0.0.1"}
    proc = await asyncio.create_subprocess_exec(
        "callgrind_control",
        *flags,
        str(api.pid),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        env=env,
    )
    out, _ = await asyncio.wait_for(proc.communicate(), 60)
    if proc.returncode != 0 or b"OK." not in out or b"error" in out.lower():
        raise RuntimeError(f"callgrind_control {' '.join(flags)} {api.pid}: {out.decode(errors='replace')}")


def instructions(dump: Path) -> int:
    """The dump's total Ir (its `summary:` line, or `totals:` in older formats)."""
    for line in dump.read_text(errors="replace").splitlines():
        if line.startswith(("summary:", "totals:")):
            return int(line.split()[1])
    raise RuntimeError(f"{dump}: no summary line")


async def window(api: processes.Server, out: Path) -> int:
    """Close the current window with a dump and read its count (callgrind numbers each dump)."""
    before = set(out.parent.glob(f"{out.name}.{api.pid}.*"))
    await control(api, "--dump=window")
    for _ in range(100):
        new = set(out.parent.glob(f"{out.name}.{api.pid}.*")) - before
        if new:
            dump = max(new, key=lambda p: int(p.suffix.lstrip(".")))
            await asyncio.sleep(0.2)  # written before callgrind_control returns; a margin all the same
            return instructions(dump)
        await asyncio.sleep(0.1)
    raise RuntimeError(f"no dump from {api.name}: {sorted(p.name for p in out.parent.iterdir())}")


Request = tuple[str, str, dict[str, str], bytes | None]


async def send(session: aiohttp.ClientSession, api: processes.Server, requests: Sequence[Request]) -> None:
    for method, path, headers, body in requests:
        async with session.request(method, api.base_url + path, headers=headers, data=body) as resp:
            await resp.read()
            if resp.status not in (200, 202):
                raise RuntimeError(f"{api.name} {method} {path}: {resp.status}")


def requests(lab: ab.AB, kind: str, name: str, n: int) -> list[Request]:
    """n requests of the scenario; a submit's envelopes are new ones, from heirs of their own."""
    if kind != "submit":
        path, _, headers = lab.route(kind)
        return [("GET", path, headers, None)] * n
    bench = lab.bench(name)
    heirs = soroban.make_beneficiaries(lab.database_url, bench.key_ring, soroban.SUBMIT_WALLETS)
    return soroban.submit_requests(bench, heirs, "service", 0)[:n]


async def count(lab: ab.AB, args: argparse.Namespace, kind: str, name: str, out: Path) -> dict[str, float]:
    api = lab.apis[name]
    batch = await asyncio.to_thread(requests, lab, kind, name, args.warmup + args.requests)
    connector = aiohttp.TCPConnector(limit=1)  # one kept-alive connection, as a client would hold
    async with aiohttp.ClientSession(timeout=archive.TIMEOUT, connector=connector) as session:
        await control(api, "--instr=on")
        await send(session, api, batch[: args.warmup])
        await window(api, out)
        empty = await window(api, out)
        await send(session, api, batch[args.warmup :])
        full = await window(api, out)
        await control(api, "--instr=off")
    per_request = (full - empty) / args.requests
    return {"empty": empty, "full": full, "per_request": per_request}


async def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    signal.signal(signal.SIGTERM, ab._stop_on_sigterm)
    os.environ["PYTHONHASHSEED"] = "0"
    base_db = os.environ.get("DATABASE_URL") or processes.DEFAULT_DATABASE_URL
    base_redis = os.environ.get("REDIS_URL") or processes.DEFAULT_REDIS_URL
    database_url = processes.fresh_database(base_db)
    redis_url = processes.fresh_redis(base_redis)
    workdir = Path(tempfile.mkdtemp(prefix="lps-instr-"))
    lab = ab.AB(args.ab, database_url, redis_url, workdir)
    outs = {name: workdir / f"callgrind.{name}" for name in args.ab.services}
    lab.wrap = {name: callgrind(out) for name, out in outs.items()}
    lab.ready_within = 300
    try:
        await lab.start_all()
        await lab.set_up()
        for rep in range(args.reps):
            for kind, order in args.ab.scenarios:
                for name in order if rep % 2 == 0 else list(reversed(order)):
                    result = await count(lab, args, kind, name, outs[name])
                    print(
                        f"INSTR {time.strftime('%H:%M:%S', time.gmtime())} rep{rep} {kind:<8} {name:<10}"
                        f" {result['per_request']:,.0f} instructions per request"
                        f" ({args.requests} requests; empty window {result['empty']:,})",
                        flush=True,
                    )
        for server in lab.servers:
            server.check_alive()
    finally:
        await lab.close(base_db, keep_workdir=args.keep)
        if args.keep:
            print(f"dumps kept in {workdir}: callgrind.<tree>.<pid>.<n>, a count's last dump its N requests")
    return 0


if __name__ == "__main__":
    raise SystemExit(asyncio.run(main()))
