"""A/B of two or more code trees of the API against one ceiling, in one run, on one database.

    .venv/bin/python bench/ab.py --service with=/path/to/tree-a --service without=/path/to/tree-b \
        --scenario me=with,without --scenario list=with,without --reps 3

Answers "what does this change buy on this route" on a shared machine: every tree's API runs
at once (same settings, secrets, database and Redis, so one token and one fixture serve all),
and for each scenario the trees are measured back to back, each with `bench.measure.Bench.compare`
(warm-up, alternating service and ceiling rounds, median) against the ceiling in the same
minute. Repetitions reverse the order of the trees. Compare each tree's ratio to the ceiling,
above all the CPU-per-request ratio, not raw rates: outside load moves raw rates by 2x here.
The ceiling and the worker (needed for the capsule's set-up) run from this tree; every tree
must answer the same routes. Scenarios: `me` (GET /api/auth/me), `list` (GET
/api/beneficiaries, 50 rows), `plan` (GET /plan, the owner's home page: bench/plan_page.py; with
`list`, its owner has the list's 50 heirs), `capsule` (GET /api/claim/:token, 100 messages, 50 documents),
`submit` (POST /api/claim/:token/submit, fresh envelopes for every run), `guardian-approve` (a
guardian's signed on-chain approval posted to their page's SEP-7 callback) and `heir-sep7`
(an heir's signed claim posted to theirs), each answer to a request of its own (bench/answers.py).
`--count-queries N` first sends N of each scenario's requests (but submit's) one by one to
every tree and prints the SQL statements per request (bench/querycount). `--rss-mib N` also
reports each API's peak RSS over three N MiB archive uploads; `--other-plans N` first gives the
database N other owners with a plan each, as a live service has (the owner list once paid for
them). Prints one `AB` line per measurement and writes them to `--out` as JSON. See bench/README.md.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import aiohttp
import psycopg2

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench import answers, archive, capsule, loadgen, measure, plan_page, processes, scenarios, soroban  # noqa: E402
from bench import run as bench_run  # noqa: E402
from core.files.crypto import KeyRing  # noqa: E402
from testing.soroban_rpc import SorobanRpcEmulator, random_contract_id  # noqa: E402

KINDS = ("me", "list", "plan", "capsule", "submit", "guardian-approve", "heir-sep7")
ANSWERS = ("guardian-approve", "heir-sep7")
Runner = measure.Runner


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    raw = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=raw)
    parser.add_argument("--service", action="append", default=[], help="NAME=DIR: an API from that tree")
    parser.add_argument("--scenario", action="append", default=[], help="KIND=NAME,NAME,…")
    parser.add_argument("--reps", type=int, default=3, help="repetitions; odd ones reverse the order")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--duration", type=float, default=5)
    parser.add_argument("--warmup", type=float, default=2)
    parser.add_argument("--connections", type=int, default=32)
    parser.add_argument("--rss-mib", type=int, default=0)
    parser.add_argument("--rss-services", default="", help="comma-separated names (default: all)")
    parser.add_argument(
        "--other-plans", type=int, default=0, help="other owners' plans in the database (a live service's)"
    )
    parser.add_argument(
        "--count-queries", type=int, default=0, help="N requests per scenario, one by one: statements each"
    )
    parser.add_argument("--out", default="")
    args = parser.parse_args(argv)
    args.services = dict(s.split("=", 1) for s in args.service)
    args.scenarios = [(s.split("=", 1)[0], s.split("=", 1)[1].split(",")) for s in args.scenario]
    for kind, names in args.scenarios:
        if kind not in KINDS or not set(names) <= set(args.services):
            parser.error(f"--scenario {kind}={','.join(names)}: unknown scenario or service")
    return args


def start(
    name: str,
    tree: Path,
    module_args: list[str],
    env: dict[str, str],
    log_dir: Path,
    wrap: Sequence[str] = (),
) -> processes.Server:
    """`wrap` goes before the interpreter: bench/instructions.py runs the APIs under callgrind."""
    log_path = log_dir / f"{name}.log"
    with log_path.open("wb") as log_file:
        proc = subprocess.Popen(
            [*wrap, sys.executable, "-m", *module_args],
            cwd=tree,
            env=env,
            stdout=log_file,
            stderr=subprocess.STDOUT,
        )
    return processes.Server(name, proc, log_path)


def cli_module(tree: Path) -> str:
    """The tree's process entry: `service.cli`, or `core.process.cli` in trees from before #29."""
    return "service.cli" if (tree / "service" / "cli.py").exists() else "core.process.cli"


def _stop_on_sigterm(*_: object) -> None:
    raise KeyboardInterrupt  # so the finally below stops every process and drops the database


class AB:
    def __init__(self, args: argparse.Namespace, database_url: str, redis_url: str, workdir: Path) -> None:
        self.args = args
        self.database_url = database_url
        self.redis_url = redis_url
        self.workdir = workdir
        self.servers: list[processes.Server] = []
        self.apis: dict[str, processes.Server] = {}
        self.rows: list[dict[str, Any]] = []
        self.queries: list[dict[str, Any]] = []
        self.rss: dict[str, list[Any]] = {}
        self.rpc = SorobanRpcEmulator(contract_id=random_contract_id())
        self.ring: KeyRing | None = None
        self.wrap: dict[str, list[str]] = {}  # per API: a command its interpreter runs under
        self.ready_within = 60.0
        self.bench_args = bench_run.parse_args(
            [
                *("--rounds", str(args.rounds), "--duration", str(args.duration)),
                *("--warmup", str(args.warmup), "--connections", str(args.connections), "--size-mib", "1"),
            ]
        )

    async def start_all(self) -> None:
        await self.rpc.start()
        storage = {"STORAGE_URL": (self.workdir / "objects").as_uri()}
        env = processes.service_env(self.database_url, self.redis_url, storage, processes.free_port())
        env.update(SERVICE_CONTRACT_ID=str(self.rpc.contract_id), SOROBAN_RPC_URL=self.rpc.url)
        self.ring = KeyRing.parse(env["ENCRYPTION_KEYS"])  # to seal the rows inserted in SQL
        self.public = env["PUBLIC_BASE_URL"]  # every tree's: owner pages want its Host and Origin
        for name, tree in self.args.services.items():
            port = processes.free_port()
            api_env = {**env, "PORT": str(port)}
            if self.args.count_queries:
                counter = str(ROOT / "bench" / "querycount")
                api_env["PYTHONPATH"] = os.pathsep.join(filter(None, [counter, env.get("PYTHONPATH")]))
                api_env["BENCH_COUNT_QUERIES"] = str(self.workdir / f"queries-{name}")
            module = [cli_module(Path(tree)), "serve"]
            api = start(name, Path(tree), module, api_env, self.workdir, self.wrap.get(name, []))
            api.base_url = f"http://127.0.0.1:{port}"
            self.apis[name] = api
            self.servers.append(api)
        port = processes.free_port()
        self.ceiling = start("ceiling", ROOT, ["bench.ceiling"], {**env, "PORT": str(port)}, self.workdir)
        self.ceiling.base_url = f"http://127.0.0.1:{port}"
        self.worker = start("worker", ROOT, ["service.cli", "worker"], env, self.workdir)
        self.servers += [self.ceiling, self.worker]
        for api in self.apis.values():
            await processes.wait_ready(api, "/api/health", self.ready_within)
        await processes.wait_ready(self.ceiling, "/health")

    async def close(self, base_db: str, *, keep_workdir: bool = False) -> None:
        """Stop every process and give back the run's database, Redis index and work directory."""
        for server in self.servers:
            server.stop()
        await self.rpc.stop()
        if not keep_workdir:
            shutil.rmtree(self.workdir, ignore_errors=True)
        with contextlib.suppress(Exception):
            processes.drop_database(base_db)
        processes.release_redis(self.redis_url)

    def bench(self, name: str) -> measure.Bench:
        return measure.Bench(
            self.bench_args,
            self.apis[name],
            self.ceiling,
            self.worker,
            self.database_url,
            self.redis_url,
            self.rpc,
            self.ring,
        )

    def other_plans(self) -> None:
        """Owners who are not the bench's, each with a plan: no owner's route should pay for them."""
        conn = psycopg2.connect(self.database_url)
        try:
            with conn, conn.cursor() as cur:
                cur.execute(
                    "WITH u AS (INSERT INTO users (wallet_address) SELECT 'BENCH-OTHER-' || g"
                    " FROM generate_series(1, %s) g RETURNING id)"
                    " INSERT INTO plans (user_id) SELECT id FROM u",
                    (self.args.other_plans,),
                )
                cur.execute("ANALYZE users; ANALYZE plans")
        finally:
            conn.close()

    async def set_up(self) -> None:
        if self.args.other_plans:
            await asyncio.to_thread(self.other_plans)
        kinds = {kind for kind, _ in self.args.scenarios}
        first = next(iter(self.apis))
        base = self.apis[first].base_url
        async with aiohttp.ClientSession(timeout=archive.TIMEOUT) as session:
            owner = await loadgen.sign_in(session, base, loadgen.wallets(1)[0])
            self.auth = {"Authorization": f"Bearer {owner['token']}"}
            self.owner_id = owner["user"]["id"]
            if "list" in kinds:
                for n in range(scenarios.LIST_ROWS):
                    row = {**scenarios.BENEFICIARY, "name": f"Beneficiary {n}", "allocationPercentage": 1}
                    async with session.post(f"{base}/api/beneficiaries", json=row, headers=self.auth) as resp:
                        if resp.status != 201:
                            raise RuntimeError(f"POST /api/beneficiaries: {resp.status} {await resp.text()}")
            if "plan" in kinds:  # the owner's home page: their people, a page session's cookie
                await plan_page.people(session, base, self.auth, heirs="list" not in kinds)
                self.cookie = await plan_page.page_session(base, loadgen.wallets(1)[0], public=self.public)
            if "guardian-approve" in kinds:
                self.people = {"guardian-approve": await asyncio.to_thread(self.guardians)}
            if "heir-sep7" in kinds:
                heirs = await asyncio.to_thread(self.heirs)
                self.people = {**getattr(self, "people", {}), "heir-sep7": heirs}
            if "capsule" in kinds:
                small = self.workdir / "capsule.bin"
                await asyncio.to_thread(archive.make_file, small, 1024 * 1024)
                self.token = (await capsule.setup(self.bench(first), session, small))["token"]

    def guardians(self) -> list[dict[str, Any]]:
        assert self.ring is not None
        return answers.make_guardians(self.database_url, self.ring)

    def heirs(self) -> list[dict[str, Any]]:
        assert self.ring is not None
        return soroban.make_beneficiaries(self.database_url, self.ring, answers.GUARDIANS)

    def answer_batch(self, kind: str, target: str, batch: int) -> list[Any]:
        assert self.rpc.contract_id is not None
        return answers.answers(
            redis_url=self.redis_url,
            contract_id=str(self.rpc.contract_id),
            passphrase=self.rpc.passphrase,
            people=self.people[kind],
            kind=kind,
            batch=batch,
            target=target,
        )

    async def answer_loads(self, bench: measure.Bench, kind: str) -> tuple[Runner, Runner]:
        """A signing request of its own for every answer of every timed run."""
        runs = self.bench_args.rounds + (1 if self.bench_args.warmup > 0 else 0)
        self.batches = getattr(self, "batches", 0)

        def fresh(target: processes.Server, side: str) -> Runner:
            first, self.batches = self.batches, self.batches + runs
            batches = iter([self.answer_batch(kind, side, b) for b in range(first, first + runs)])

            expect = 202 if side == "ceiling" and kind == "heir-sep7" else 200  # the ceiling's submit

            async def run_once(seconds: float) -> dict[str, Any]:
                result: dict[str, Any] = await bench.http_load(target, next(batches), expect)(seconds)
                return result

            return run_once

        service = await asyncio.to_thread(fresh, bench.api, "service")
        ceiling = await asyncio.to_thread(fresh, self.ceiling, "ceiling")
        return service, ceiling

    async def count_queries(self) -> None:
        """Statements per request: N requests one by one to each tree, the API's count read
        before and after (SIGUSR1, bench/querycount)."""
        n = self.args.count_queries
        for kind, order in self.args.scenarios:
            if kind == "submit":
                continue
            for name in order:
                if kind in ANSWERS:
                    self.batches = getattr(self, "batches", 0) + 1
                    batch = await asyncio.to_thread(self.answer_batch, kind, "service", self.batches - 1)
                else:
                    path, _, headers = self.route(kind)
                    batch = [("GET", path, headers, None)] * n
                api = self.apis[name]
                before = await self.statements(name, api)
                async with aiohttp.ClientSession(timeout=archive.TIMEOUT) as session:
                    for method, path, headers, body in batch[:n]:
                        async with session.request(
                            method, api.base_url + path, headers=headers, data=body
                        ) as resp:
                            if resp.status != 200:
                                raise RuntimeError(f"{kind} {name}: {resp.status} {await resp.text()}")
                per_request = (await self.statements(name, api) - before) / n
                self.queries.append({"kind": kind, "name": name, "requests": n, "statements": per_request})
                print(
                    f"QUERIES {kind:<16} {name:<10} {per_request:.2f} statements per request ({n})",
                    flush=True,
                )

    async def statements(self, name: str, api: processes.Server) -> int:
        path = self.workdir / f"queries-{name}.{api.proc.pid}"
        path.unlink(missing_ok=True)
        api.proc.send_signal(signal.SIGUSR1)
        for _ in range(100):
            await asyncio.sleep(0.05)
            if path.exists() and path.read_text():
                return int(path.read_text())
        raise RuntimeError(f"{name}: no statement count (is bench/querycount on its PYTHONPATH?)")

    def route(self, kind: str) -> tuple[str, str, dict[str, str]]:
        """A read scenario's path on the API, its path on the ceiling, and its headers."""
        service, ceiling = {
            "me": ("/api/auth/me", f"/me/{self.owner_id}"),
            "list": ("/api/beneficiaries", f"/beneficiaries/{self.owner_id}"),
            "capsule": (f"/api/claim/{getattr(self, 'token', '')}", f"/capsule/{getattr(self, 'token', '')}"),
            "plan": ("/plan", f"/plan-page/{getattr(self, 'cookie', '')}"),
        }[kind]
        if kind == "plan":
            cookie = {"Cookie": f"{plan_page.SESSION_COOKIE}={getattr(self, 'cookie', '')}"}
            return service, ceiling, {**cookie, "Host": plan_page.as_the_service(self.public)["Host"]}
        return service, ceiling, {} if kind == "capsule" else self.auth

    async def loads(self, kind: str, name: str) -> tuple[Runner, Runner]:
        bench = self.bench(name)
        if kind == "submit":
            return await self.submit_loads(bench)
        if kind in ANSWERS:
            return await self.answer_loads(bench, kind)
        service, ceiling, headers = self.route(kind)
        return (
            bench.http_load(bench.api, [("GET", service, headers, None)], 200),
            bench.http_load(self.ceiling, [("GET", ceiling, headers, None)], 200),
        )

    async def submit_loads(self, bench: measure.Bench) -> tuple[Runner, Runner]:
        """Envelopes never sent before for every timed run, as bench/soroban.py does."""
        runs = self.bench_args.rounds + (1 if self.bench_args.warmup > 0 else 0)

        def fresh(target: processes.Server, side: str) -> Runner:
            heirs = soroban.make_beneficiaries(self.database_url, bench.key_ring, soroban.SUBMIT_WALLETS)
            batches = iter([soroban.submit_requests(bench, heirs, side, b) for b in range(runs)])

            async def run_once(seconds: float) -> dict[str, Any]:
                result: dict[str, Any] = await bench.http_load(target, next(batches), 202)(seconds)
                return result

            return run_once

        return (
            await asyncio.to_thread(fresh, bench.api, "service"),
            await asyncio.to_thread(fresh, self.ceiling, "ceiling"),
        )

    async def measure(self) -> None:
        for rep in range(self.args.reps):
            for kind, order in self.args.scenarios:
                for name in order if rep % 2 == 0 else list(reversed(order)):
                    service, ceiling = await self.loads(kind, name)
                    load = os.getloadavg()
                    bench = self.bench(name)
                    await bench.compare(kind, service, ceiling)
                    svc, ceil = bench.results
                    row = {
                        "rep": rep,
                        "kind": kind,
                        "name": name,
                        "time": time.strftime("%H:%M:%S", time.gmtime()),
                        "loadavg": load,
                        "svc_rps": svc["rps"],
                        "ceil_rps": ceil["rps"],
                        "svc_cpu": svc["server_cpu_us_per_req"],
                        "ceil_cpu": ceil["server_cpu_us_per_req"],
                        "errors": svc["errors"] + ceil["errors"],
                        "svc_p50_ms": svc["p50_ms"],
                        "ratio": svc["rps"] / ceil["rps"],
                        "cpu_ratio": ceil["server_cpu_us_per_req"] / svc["server_cpu_us_per_req"],
                    }
                    self.rows.append(row)
                    print(
                        f"AB {row['time']} rep{rep} {kind:<8} {name:<10} ratio {row['ratio']:.3f}"
                        f" cpu-ratio {row['cpu_ratio']:.3f} service {row['svc_rps']:.0f} req/s"
                        f" p50 {row['svc_p50_ms']:.1f} ms"
                        f" {row['svc_cpu']:.0f} µs ceiling {row['ceil_rps']:.0f} req/s"
                        f" {row['ceil_cpu']:.0f} µs"
                        f" errors {row['errors']} load {load[0]:.2f}",
                        flush=True,
                    )

    async def peak_rss(self) -> None:
        big = self.workdir / "rss.bin"
        await asyncio.to_thread(archive.make_file, big, self.args.rss_mib * 1024 * 1024)
        only = set(filter(None, self.args.rss_services.split(","))) or set(self.apis)
        async with aiohttp.ClientSession(timeout=archive.TIMEOUT) as session:
            for rep in range(2):
                for name, api in self.apis.items():
                    if name not in only:
                        continue
                    api.reset_peak()
                    before = api.status()
                    for _ in range(3):
                        url = f"{api.base_url}/api/archive"
                        item = await archive._post_file(session, url, big, self.auth)
                        await archive._wait_available(session, api.base_url, item["id"], self.auth)
                    after = api.status()
                    self.rss.setdefault(name, []).append({"before": before, "after": after})
                    print(f"RSS rep{rep} {name}: {before} -> {after} (3 x {self.args.rss_mib} MiB)")


async def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    signal.signal(signal.SIGTERM, _stop_on_sigterm)
    print(f"ab: load average before the run {' '.join(f'{x:.2f}' for x in os.getloadavg())}", flush=True)
    base_db = os.environ.get("DATABASE_URL") or processes.DEFAULT_DATABASE_URL
    base_redis = os.environ.get("REDIS_URL") or processes.DEFAULT_REDIS_URL
    database_url = processes.fresh_database(base_db)
    redis_url = processes.fresh_redis(base_redis)
    workdir = Path(tempfile.mkdtemp(prefix="lps-ab-"))
    ab = AB(args, database_url, redis_url, workdir)
    try:
        await ab.start_all()
        await ab.set_up()
        if args.count_queries:
            await ab.count_queries()
        await ab.measure()
        if args.rss_mib:
            await ab.peak_rss()
        for server in ab.servers:
            server.check_alive()
    finally:
        await ab.close(base_db)
    if args.out:
        text = json.dumps({"compares": ab.rows, "rss": ab.rss, "queries": ab.queries}, indent=1, default=str)
        await asyncio.to_thread(Path(args.out).write_text, text)
    return 0


if __name__ == "__main__":
    raise SystemExit(asyncio.run(main()))
