"""The fault matrix: the whole stack in real processes under a steady load, one fault at a time,
and what must hold checked after each (docs/operations.md, "While something is down").

    .venv/bin/python bench/chaos.py            # make chaos: every fault, --rounds 2
    .venv/bin/python bench/chaos.py --short    # CI: one release, each fault once

The stack is the run's own, so a fault touches nobody else on the machine:
- PostgreSQL: a scratch cluster under ./.data/chaos (pgserver's binaries, a unix socket), stopped
  with `pg_ctl stop -m fast` and started again under the running API and worker;
- Redis: a `redis-server` on a free loopback port with no persistence, emptied (FLUSHALL) or
  restarted empty;
- S3: moto's server (testing/s3server.py) behind a fault proxy on loopback that answers 503,
  holds connections (timeouts) or refuses them, cutting uploads in flight;
- the email provider: a capture server in this process that deduplicates by Idempotency-Key as
  a provider does, slows down, or answers each new email 500, then 429 with Retry-After, then
  not at all (past the sender's 20 s timeout), then 202;
- the API (`service.cli serve`) and the worker (`service.cli worker`) as processes, with
  production settings (bench/processes.py) and short lifecycle intervals; the worker is
  SIGKILLed in the middle of a release's 20 claim links and started again, as a supervisor would;
  then SIGKILLed with an archive verification, an account deletion and a scrub run mid-way (the
  relay: in the RPC fault), each taken over within its lease.

The load: LOAD_OWNERS owners in a loop (their profile, beneficiaries and assets read, an asset
created, their name changed) and heirs' page views (`/claim/<token>`), each client pausing
PAUSE between requests; every answer is kept with its time and phase. Every write the API
acknowledged is looked for at the end. Figures print as a table and go to
bench/results/chaos-<time>.json; bench/README.md keeps them.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import contextlib
import hashlib
import itertools
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import aiohttp
import psycopg2
import psycopg2.extras
from aiohttp import web
from stellar_sdk import Keypair

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.processes import Server, free_port, service_env, start_server, wait_ready  # noqa: E402
from service.migrate import apply_migrations  # noqa: E402
from testing.s3server import (  # noqa: E402
    TEST_ACCESS_KEY_ID,
    TEST_REGION,
    TEST_SECRET_ACCESS_KEY,
    create_bucket,
    start_moto_server,
)

DATA = ROOT / ".data" / "chaos"
RESULTS = ROOT / "bench" / "results"
LOAD_OWNERS = 4
PAUSE = 0.1  # seconds each load client waits between requests: a steady, bounded load
HEIRS = 20
REQUEST_TIMEOUT = 60.0
SETTLE_WITHIN = 180.0  # the longest any phase waits for its rows to settle before it fails
BUCKET = "lps-chaos"


def log(message: str) -> None:
    print(f"chaos {time.strftime('%H:%M:%S')} {message}", flush=True)


# ---------------------------------------------------------------------------------------------
# The stack


class Postgres:
    """A scratch cluster of pgserver's binaries under DATA, on a unix socket (as root, pgserver
    runs it as its own system user), restarted with pg_ctl."""

    def __init__(self, data_dir: Path) -> None:
        shutil.rmtree(data_dir, ignore_errors=True)
        data_dir.mkdir(parents=True)
        runtime = data_dir / "runtime"
        runtime.mkdir(mode=0o700)
        os.environ.setdefault("XDG_RUNTIME_DIR", str(runtime))
        import pgserver

        self.server: Any = pgserver.get_server(data_dir / "pg", cleanup_mode="delete")
        info = self.server.get_postmaster_info()
        self.socket_dir = str(info.socket_dir)
        self.server.psql('CREATE DATABASE "chaos";')
        self.url = self.server.get_uri("chaos")

    def _pg_ctl(self, *args: str) -> None:
        from pgserver import _commands

        pg_ctl: Any = _commands.pg_ctl  # type: ignore[attr-defined]  # made at import, one per binary
        pg_ctl(list(args), pgdata=self.server.pgdata, user=self.server.system_user, timeout=60)

    def stop_fast(self) -> None:
        self._pg_ctl("-w", "-m", "fast", "stop")

    def start(self) -> None:
        self._pg_ctl("-w", "-o", '-h ""', "-o", f"-k {self.socket_dir}", "-l", str(self.server.log), "start")

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.server.cleanup()


class Redis:
    """A redis-server of the run's own on a free loopback port, with no persistence."""

    def __init__(self, workdir: Path) -> None:
        self.port = free_port()
        self.workdir = workdir
        self.proc: subprocess.Popen[bytes] | None = None
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.start()

    def start(self) -> None:
        args = ["redis-server", "--bind", "127.0.0.1", "--port", str(self.port), "--save", "", "--appendonly"]
        args += ["no", "--dir", str(self.workdir)]
        self.proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for _ in range(100):
            if self.cli("PING") == "PONG":
                return
            time.sleep(0.05)
        raise RuntimeError("redis-server did not start")

    def cli(self, *args: str) -> str:
        out = subprocess.run(
            ["redis-cli", "-h", "127.0.0.1", "-p", str(self.port), *args], capture_output=True, text=True
        )
        return out.stdout.strip()

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


class FaultProxy:
    """A TCP proxy on loopback in front of a server: `pass`, `503` (answers each request 503 and
    closes), `hang` (accepts and never answers: the client's timeouts) or `refuse` (closes at
    once: the server is gone). Switching away from `pass` cuts the connections in flight."""

    def __init__(self, target_port: int) -> None:
        self.target_port = target_port
        self.mode = "pass"
        self.port = 0
        self.open: set[asyncio.StreamWriter] = set()
        self.server: asyncio.AbstractServer | None = None

    async def start(self) -> None:
        self.server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        self.port = self.server.sockets[0].getsockname()[1]

    def set(self, mode: str) -> None:
        self.mode = mode
        if mode != "pass":
            for writer in list(self.open):
                writer.close()
            self.open.clear()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        mode = self.mode
        try:
            if mode == "refuse":
                return
            if mode == "503":
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 5)
                writer.write(
                    b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
                )
                await writer.drain()
                return
            self.open.add(writer)
            if mode == "hang":
                while self.mode == "hang" and not writer.is_closing():  # noqa: ASYNC110 - polled
                    await asyncio.sleep(0.2)
                return
            up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.target_port)
            self.open.add(up_writer)
            await asyncio.gather(self._pipe(reader, up_writer), self._pipe(up_reader, writer))
        except (OSError, asyncio.IncompleteReadError):
            pass
        finally:
            self.open.discard(writer)
            writer.close()

    async def _pipe(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while data := await reader.read(65536):
                writer.write(data)
                await writer.drain()
        except (OSError, asyncio.IncompleteReadError):
            pass
        finally:
            self.open.discard(writer)
            writer.close()


@dataclass
class Arrival:
    key: str
    to: str
    at: float
    answer: int  # the status answered (0: held past the sender's timeout)
    retry_after: float = 0.0


@dataclass
class Provider:
    """The email provider: every request kept (its key, recipient, time and answer); an email is
    an effect the first time its key is accepted, as a provider deduplicating by key sends it once.
    `mode`: `ok`; `slow` (each answer after `delay`); `refuse` (each key new to this mode is
    answered 500, then 429 with Retry-After, then held past the sender's timeout, then 202)."""

    mode: str = "ok"
    delay: float = 0.0
    retry_after: int = 10
    arrivals: list[Arrival] = field(default_factory=list)
    refusing: dict[str, int] = field(default_factory=dict)  # key -> answers given in `refuse`
    url: str = ""

    async def handle(self, request: web.Request) -> web.Response:
        body = json.loads(await request.read())
        key = request.headers.get("Idempotency-Key", "")
        arrival = Arrival(key, str(body.get("to", [""])[0]), time.monotonic(), 202)
        self.arrivals.append(arrival)
        if self.mode == "refuse" or key in self.refusing:
            step = self.refusing.get(key, 0)
            self.refusing[key] = step + 1
            if step == 0:
                arrival.answer = 500
                return web.json_response({"message": "provider error"}, status=500)
            if step == 1:
                arrival.answer, arrival.retry_after = 429, self.retry_after
                return web.json_response(
                    {"message": "slow down"}, status=429, headers={"Retry-After": str(self.retry_after)}
                )
            if step == 2:
                arrival.answer = 0
                await asyncio.sleep(25)  # past core.mailer.TIMEOUT (20 s)
                return web.json_response({"message": "late"}, status=503)
        if self.mode == "slow":
            await asyncio.sleep(self.delay)
        return web.json_response({"id": f"msg-{key}"}, status=202)

    async def start(self) -> web.AppRunner:
        app = web.Application()
        app.router.add_post("/emails", self.handle)
        runner = web.AppRunner(app, access_log=None, handler_cancellation=False)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        self.url = f"http://127.0.0.1:{runner.addresses[0][1]}/emails"
        return runner


# ---------------------------------------------------------------------------------------------
# The load


@dataclass
class Answer:
    at: float
    phase: str
    route: str
    status: int  # 0: no HTTP answer (connection refused, timeout)
    retry_after: bool
    error: str = ""
    took: float = 0.0


@dataclass
class Owner:
    keypair: Keypair
    token: str = ""
    user_id: str = ""
    assets: list[str] = field(default_factory=list)  # acknowledged (201) creations
    claim_tokens: list[str] = field(default_factory=list)

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"}


class Chaos:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.phase = "warm-up"
        self.answers: list[Answer] = []
        self.stop_load = asyncio.Event()
        self.http: aiohttp.ClientSession | None = None
        self.base_url = ""
        self.api: Server | None = None
        self.worker: Server | None = None
        self.env: dict[str, str] = {}
        self.provider = Provider()
        self.owners: list[Owner] = []
        self.heir_tokens: list[str] = []
        self.results: list[dict[str, Any]] = []
        self.failures: list[str] = []
        self.workdir = DATA / "run"
        self.rpc: Any = None
        self.mark = 0  # the provider's arrivals before the phase began
        self.rpc_proxy: Any = None

    # -- HTTP -----------------------------------------------------------------------------------

    async def call(
        self, method: str, path: str, route: str = "", record: bool = True, **kwargs: Any
    ) -> tuple[int, Any]:
        assert self.http is not None
        started = time.monotonic()
        try:
            async with self.http.request(
                method, self.base_url + path, timeout=aiohttp.ClientTimeout(total=REQUEST_TIMEOUT), **kwargs
            ) as resp:
                raw = await resp.read()
                status, retry_after = resp.status, "Retry-After" in resp.headers
                body: Any = raw
                if resp.content_type == "application/json":
                    body = json.loads(raw or b"null")
        except (aiohttp.ClientError, TimeoutError, OSError) as exc:
            status, retry_after, body = 0, False, None
            error = type(exc).__name__
        else:
            error = ""
        if record:
            took = time.monotonic() - started
            self.answers.append(
                Answer(started, self.phase, route or f"{method} {path}", status, retry_after, error, took)
            )
        return status, body

    async def sign_in(self, owner: Owner) -> None:
        address = owner.keypair.public_key
        status, body = await self.call(
            "POST",
            "/api/auth/wallet/challenge",
            "POST /api/auth/wallet/challenge",
            json={"walletAddress": address},
        )
        if status != 200:
            raise RuntimeError(f"challenge answered {status}")
        signature = base64.b64encode(owner.keypair.sign(body["message"].encode())).decode()
        status, body = await self.call(
            "POST",
            "/api/auth/wallet/verify",
            "POST /api/auth/wallet/verify",
            json={"walletAddress": address, "signature": signature},
        )
        if status != 200:
            raise RuntimeError(f"verify answered {status}")
        owner.token, owner.user_id = body["token"], body["user"]["id"]

    async def must(self, method: str, path: str, owner: Owner | None, expect: int, **kwargs: Any) -> Any:
        """A setup step: retried while the stack answers 503 (a fault phase), else it must succeed."""
        for _ in range(60):
            status, body = await self.call(
                method, path, record=False, headers=owner.headers if owner else {}, **kwargs
            )
            if status == expect:
                return body
            if status not in (0, 503):
                raise RuntimeError(f"{method} {path} answered {status}: {body!r}"[:500])
            await asyncio.sleep(1)
        raise RuntimeError(f"{method} {path} did not answer {expect}")

    # -- the stack ------------------------------------------------------------------------------

    def start_api(self) -> None:
        self.api = start_server("api", ["service.cli", "serve"], self.env, self.workdir)
        self.api.base_url = self.base_url

    def start_worker(self, n: int = 0, env: dict[str, str] | None = None) -> None:
        self.worker = start_server(f"worker-{n}", ["service.cli", "worker"], env or self.env, self.workdir)

    # -- the load -------------------------------------------------------------------------------

    async def owner_loop(self, owner: Owner, n: int) -> None:
        step = n
        while not self.stop_load.is_set():
            step += 1
            h = owner.headers
            kind = step % 6
            if kind == 0:
                await self.call("GET", "/api/auth/me", headers=h)
            elif kind == 1:
                await self.call("GET", "/api/beneficiaries", headers=h)
            elif kind == 2:
                status, body = await self.call(
                    "POST", "/api/assets", headers=h, json={"label": f"Savings {step}", "amount": "12.5"}
                )
                if status == 201:
                    owner.assets.append(body["id"])
            elif kind == 3:
                await self.call("GET", "/api/assets?limit=5", "GET /api/assets", headers=h)
            elif kind == 4:
                await self.call("PATCH", "/api/users/me", headers=h, json={"name": f"Owner {n} {step}"})
            elif self.heir_tokens:
                token = self.heir_tokens[step % len(self.heir_tokens)]
                await self.call("GET", f"/claim/{token}", "GET /claim/<token>")
            await asyncio.sleep(PAUSE)

    # -- the database, read directly ------------------------------------------------------------

    def sql(self, statement: str, params: Any = None) -> list[dict[str, Any]]:
        conn = psycopg2.connect(self.env["DATABASE_URL"], cursor_factory=psycopg2.extras.RealDictCursor)
        try:
            conn.autocommit = True
            with conn.cursor() as cur:
                cur.execute(statement, params)
                return [dict(r) for r in cur.fetchall()] if cur.description else []
        finally:
            conn.close()

    async def wait_sql(
        self, statement: str, check: Callable[[list[dict[str, Any]]], bool], within: float, params: Any = None
    ) -> float:
        """Seconds until the query's rows pass `check`; raises past `within`."""
        started = time.monotonic()
        while time.monotonic() - started < within:
            with contextlib.suppress(psycopg2.OperationalError):
                if check(self.sql(statement, params)):
                    return time.monotonic() - started
            await asyncio.sleep(0.25)
        raise TimeoutError(f"not settled within {within:.0f} s: {statement}")

    def pending_email(self) -> int:
        return int(
            self.sql(
                "SELECT count(*)::int AS n FROM outbox WHERE status = 'pending'"
                " AND next_attempt_at <= now() + interval '1 minute'"
            )[0]["n"]
        )

    # -- plans ----------------------------------------------------------------------------------

    async def approved_plan(self, heirs: int) -> tuple[Owner, list[str]]:
        """An owner whose plan is Approved with a zero cancel window: the worker's next scan
        releases it. Returns the owner and the heirs' claim tokens."""
        owner = Owner(Keypair.random())
        await self.sign_in(owner)
        await self.must(
            "PATCH", "/api/users/me", owner, 200, json={"email": "owner@example.org", "name": "Olive"}
        )
        tokens = []
        for i in range(heirs):
            body = await self.must(
                "POST",
                "/api/beneficiaries",
                owner,
                201,
                json={
                    "name": f"Heir {i}",
                    "relationship": "child",
                    "email": f"heir{i}@example.org",
                    "allocationPercentage": 100 // heirs,
                },
            )
            tokens.append(body["claimToken"])
        guardians = []
        for i in range(2):
            keypair = Keypair.random()
            await self.must(
                "POST",
                "/api/guardians",
                owner,
                201,
                json={
                    "name": f"Guardian {i}",
                    "email": f"guardian{i}@example.org",
                    "walletAddress": keypair.public_key,
                },
            )
            guardians.append(Owner(keypair))
        plan = await self.must("GET", "/api/legacy", owner, 200)
        for guardian in guardians:
            await self.sign_in(guardian)
            await self.must("POST", f"/api/legacy/guardianships/{plan['id']}/accept", guardian, 200)
        await self.must(
            "PATCH",
            "/api/legacy",
            owner,
            200,
            json={"checkInIntervalSeconds": 3600, "gracePeriodSeconds": 600, "cancelWindowSeconds": 0},
        )
        await self.must("POST", "/api/legacy/activate", owner, 200)
        await self.must("POST", f"/api/legacy/guardianships/{plan['id']}/report", guardians[0], 200, json={})
        self.approving = (plan["id"], guardians)
        return owner, tokens

    async def approve(self) -> None:
        plan_id, guardians = self.approving
        for guardian in guardians:
            att = await self.must("GET", f"/api/legacy/guardianships/{plan_id}/attestation", guardian, 200)
            signature = base64.b64encode(guardian.keypair.sign(att["message"].encode())).decode()
            for _ in range(60):  # PostgreSQL may be down: asked again, as a client would
                status, body = await self.call(
                    "POST",
                    f"/api/legacy/guardianships/{plan_id}/approve",
                    record=False,
                    headers=guardian.headers,
                    json={"signature": signature},
                )
                if status not in (0, 503):
                    break
                await asyncio.sleep(1)
            if status == 409:  # the threshold was met by the first: the plan moved on
                break
            if status != 200:
                raise RuntimeError(f"approve answered {status}: {body}")

    # -- checks ---------------------------------------------------------------------------------

    def check(self, ok: bool, what: str) -> None:
        if not ok:
            self.failures.append(f"{self.phase}: {what}")
            log(f"FAILED: {what}")

    def classes(self, phase: str) -> dict[str, int]:
        """The phase's answers at or above 500 (and transport failures), by class."""
        counts: Counter[str] = Counter()
        for a in self.answers:
            if a.phase != phase:
                continue
            counts["requests"] += 1
            if a.status == 0:
                counts[f"no answer ({a.error})"] += 1
            elif a.status == 503:
                counts["503 with Retry-After" if a.retry_after else "503 without Retry-After"] += 1
            elif a.status >= 500:
                counts[str(a.status)] += 1
        return dict(counts)

    def first_ok_after(self, phase: str, since: float) -> float | None:
        oks = [a.at for a in self.answers if a.phase == phase and a.at >= since and 200 <= a.status < 400]
        return (min(oks) - since) if oks else None

    def lost_writes(self) -> int:
        acknowledged = [a for o in self.owners for a in o.assets]
        if not acknowledged:
            return 0
        found = self.sql("SELECT id::text AS id FROM assets WHERE id = ANY(%s::uuid[])", (acknowledged,))
        return len(acknowledged) - len(found)

    def half_done(self) -> int:
        """Plans whose status is not where their last transition put them."""
        rows = self.sql(
            "SELECT count(*)::int AS n FROM plans p WHERE EXISTS (SELECT 1 FROM plan_transitions t"
            " WHERE t.plan_id = p.id) AND p.status <> (SELECT t.to_status FROM plan_transitions t"
            " WHERE t.plan_id = p.id ORDER BY t.seq DESC LIMIT 1)"
        )
        return int(rows[0]["n"])

    def repeated_effects(self) -> dict[str, int]:
        """Keys the provider accepted more than once (it sends once: deduplicated), and emails
        written twice (two outbox rows for one event's recipient: an effect twice)."""
        twice = self.sql(
            "SELECT count(*)::int AS n FROM (SELECT 1 FROM outbox WHERE kind <> 'account_changes'"
            " GROUP BY kind, plan_id, recipient_type, recipient_id, context::text HAVING count(*) > 1) d"
        )
        accepted = Counter(a.key for a in self.provider.arrivals[self.mark :] if a.answer == 202)
        return {
            "keysAcceptedAgain": sum(1 for n in accepted.values() if n > 1),
            "emailsWrittenTwice": int(twice[0]["n"]),
        }

    def record(self, fault: str, **figures: Any) -> None:
        took = sorted(a.took for a in self.answers if a.phase == self.phase)
        entry = {
            "fault": fault,
            "phase": self.phase,
            "fiveHundreds": self.classes(self.phase),
            "slowestAnswerSeconds": round(took[-1], 2) if took else None,
            "p99AnswerSeconds": round(took[int(len(took) * 0.99)], 3) if took else None,
            "rowsLost": self.lost_writes(),
            "halfDoneTransitions": self.half_done(),
            **self.repeated_effects(),
            **figures,
        }
        self.check(entry["rowsLost"] == 0, f"{entry['rowsLost']} acknowledged writes lost")
        self.check(entry["halfDoneTransitions"] == 0, "a plan's status is not its last transition's")
        self.check(entry["emailsWrittenTwice"] == 0, "an email written twice")
        served = entry["fiveHundreds"]
        bad = {k: v for k, v in served.items() if k not in ("requests", "503 with Retry-After")}
        self.check(not bad, f"answers other than 503 with Retry-After: {bad}")
        for name, server in (("api", self.api), ("worker", self.worker)):
            self.check(server is not None and server.proc.poll() is None, f"the {name} process exited")
        self.results.append(entry)
        log(json.dumps(entry))

    # -- the faults -----------------------------------------------------------------------------

    async def fault_postgres(self, n: int) -> None:
        """Fast shutdown, DOWN seconds down, start; the API and worker are not restarted."""
        self.phase = f"postgres-{n}"
        self.mark = len(self.provider.arrivals)
        api_pid, worker_pid = self.api.pid, self.worker.pid  # type: ignore[union-attr]
        # A release in flight: the approvals, then the scan's release (its transition, timeline
        # entry and 20 claim links in one transaction) race the shutdown.
        owner, tokens = await self.approved_plan(HEIRS)
        approving = asyncio.create_task(self.approve())
        await asyncio.sleep(0.5)
        down = 6.0
        log("PostgreSQL: pg_ctl stop -m fast")
        await asyncio.to_thread(self.pg.stop_fast)
        stopped = time.monotonic()
        await asyncio.sleep(down)
        restarting = time.monotonic()
        await asyncio.to_thread(self.pg.start)
        started = time.monotonic()
        log("PostgreSQL: started again")
        recovered = await self.wait_api_ok(started)
        probe = await self.probe_email()
        await approving
        released = (
            "SELECT p.status, (SELECT count(*) FROM outbox o WHERE o.plan_id = p.id AND o.kind = 'claim_link'"
            " AND o.status = 'sent')::int AS links FROM plans p WHERE p.user_id = %s"
        )
        await self.wait_sql(
            released,
            lambda rows: rows[0]["status"] == "Released" and rows[0]["links"] >= HEIRS,
            SETTLE_WITHIN,
            (owner.user_id,),
        )
        (release,) = self.sql(released, (owner.user_id,))
        self.check(release["links"] == HEIRS, f"{release['links']} claim links sent for {HEIRS} heirs")
        self.heir_tokens += tokens
        self.check(self.api.pid == api_pid and self.worker.pid == worker_pid, "a process was restarted")  # type: ignore[union-attr]
        during = [a for a in self.answers if a.phase == self.phase and stopped <= a.at < restarting]
        self.record(
            "PostgreSQL fast restart",
            downSeconds=round(started - stopped, 1),
            answeredWhileDown=dict(Counter(f"{a.status} {a.route}" for a in during)),
            apiRecoverySeconds=recovered,
            workerRecoverySeconds=probe,
            releaseAroundTheOutage=f"{release['status']}, {release['links']} claim links sent",
        )

    async def wait_api_ok(self, since: float) -> float | None:
        for _ in range(600):
            ok = self.first_ok_after(self.phase, since)
            if ok is not None:
                return round(ok, 2)
            await asyncio.sleep(0.1)
        self.check(False, "the API did not answer 2xx again within 60 s")
        return None

    async def probe_email(self) -> float:
        """A new owner adds a guardian: seconds until the invitation is sent (the worker works)."""
        owner = Owner(Keypair.random())
        started = time.monotonic()
        for _ in range(60):
            with contextlib.suppress(RuntimeError):
                await self.sign_in(owner)
                break
            await asyncio.sleep(1)
        await self.must(
            "PATCH", "/api/users/me", owner, 200, json={"name": "Probe", "email": "probe@example.org"}
        )
        await self.must(
            "POST",
            "/api/guardians",
            owner,
            201,
            json={
                "name": "G",
                "email": "probe-guardian@example.org",
                "walletAddress": Keypair.random().public_key,
            },
        )
        statement = (
            "SELECT status FROM outbox WHERE kind = 'guardian_invitation' AND recipient_id IN"
            f" (SELECT id FROM guardians WHERE user_id = '{owner.user_id}')"
        )
        await self.wait_sql(statement, lambda rows: bool(rows) and rows[0]["status"] == "sent", SETTLE_WITHIN)
        return round(time.monotonic() - started, 2)

    async def fault_redis(self, n: int, how: str) -> None:
        """Jobs waiting in Redis (a slow provider, a burst of invitations), then Redis emptied:
        the sweep re-enqueues every pending row; sign-in works again at once."""
        self.phase = f"redis-{how}-{n}"
        self.mark = len(self.provider.arrivals)
        owner = Owner(Keypair.random())
        await self.sign_in(owner)
        await self.must(
            "PATCH", "/api/users/me", owner, 200, json={"name": "Burst", "email": "burst@example.org"}
        )
        self.worker.proc.send_signal(signal.SIGSTOP)  # type: ignore[union-attr]  # the jobs wait in Redis
        for i in range(12):
            await self.must(
                "POST",
                "/api/guardians",
                owner,
                201,
                json={
                    "name": f"G{i}",
                    "email": f"g{i}@example.org",
                    "walletAddress": Keypair.random().public_key,
                },
            )
        queued = self.redis.cli("ZCARD", self.env["ARQ_QUEUE_NAME"])
        log(f"Redis: {how} with {queued} jobs queued and {self.pending_email()} emails pending")
        down_answers: dict[str, int] = {}
        if how == "flushall":
            self.redis.cli("FLUSHALL")
            self.worker.proc.send_signal(signal.SIGCONT)  # type: ignore[union-attr]
        else:  # down for 5 s, the worker running through it, then back empty
            self.redis.stop()
            went = time.monotonic()
            self.worker.proc.send_signal(signal.SIGCONT)  # type: ignore[union-attr]
            for _ in range(10):  # what sign-in answers meanwhile
                status, _ = await self.call(
                    "POST",
                    "/api/auth/wallet/challenge",
                    "POST /api/auth/wallet/challenge",
                    json={"walletAddress": Keypair.random().public_key},
                )
                await asyncio.sleep(max(0.0, went + 5 - time.monotonic()) / 10)
            down_answers = dict(
                Counter(
                    f"{a.status} {a.route}" for a in self.answers if a.phase == self.phase and a.at >= went
                )
            )
            await asyncio.sleep(max(0.0, went + 5 - time.monotonic()))
            self.redis.start()
        emptied = time.monotonic()
        fresh = Owner(Keypair.random())
        signed_in = None
        for _ in range(50):
            try:
                await self.sign_in(fresh)
                signed_in = round(time.monotonic() - emptied, 2)
                break
            except RuntimeError:
                await asyncio.sleep(0.2)
        self.check(signed_in is not None, "no sign-in within 10 s of Redis coming back empty")
        status, _ = await self.call("GET", "/api/auth/me", headers=self.owners[0].headers, record=False)
        self.check(status == 200, f"a session from before answered {status}")
        statement = (
            "SELECT count(*) FILTER (WHERE status <> 'sent')::int AS n FROM outbox"
            " WHERE kind = 'guardian_invitation'"
            f" AND recipient_id IN (SELECT id FROM guardians WHERE user_id = '{owner.user_id}')"
        )
        settled = await self.wait_sql(statement, lambda rows: rows[0]["n"] == 0, SETTLE_WITHIN)
        self.record(
            f"Redis emptied ({'FLUSHALL' if how == 'flushall' else 'restart, no persistence'})",
            jobsQueuedWhenEmptied=int(queued or 0),
            answeredWhileDown=down_answers,
            signInAfterSeconds=signed_in,
            emailsSettledSeconds=round(time.monotonic() - emptied, 1) if settled is not None else None,
        )

    async def fault_storage(self, n: int) -> None:
        """Uploads and downloads through S3 answering 503, then hanging, then gone (moto stopped
        mid-upload: its proxy cuts the connections), then back."""
        self.phase = f"storage-{n}"
        self.mark = len(self.provider.arrivals)
        owner = self.owners[0]
        uploads: list[tuple[str, str, bytes]] = []  # (item id, sha256, data) acknowledged
        refused: list[bytes] = []
        statuses: Counter[str] = Counter()

        async def one_upload(i: int) -> None:
            data = os.urandom(64 * 1024 + i)
            form = aiohttp.FormData()
            form.add_field("file", data, filename=f"f{i}.bin", content_type="application/octet-stream")
            status, body = await self.call(
                "POST", "/api/archive", "POST /api/archive", headers=owner.headers, data=form
            )
            statuses[f"upload {status}"] += 1
            if status == 202:
                uploads.append((body["id"], hashlib.sha256(data).hexdigest(), data))
            else:
                refused.append(data)

        async def uploader(stop: asyncio.Event) -> None:
            i = 0
            while not stop.is_set():
                i += 1
                await one_upload(i)
                if uploads:
                    item_id = uploads[i % len(uploads)][0]
                    status, _ = await self.call(
                        "GET",
                        f"/api/archive/{item_id}/download",
                        "GET /api/archive/:id/download",
                        headers=owner.headers,
                    )
                    statuses[f"download {status}"] += 1
                await asyncio.sleep(0.2)

        stop = asyncio.Event()
        task = asyncio.create_task(uploader(stop))
        await asyncio.sleep(3)
        for mode in ("503", "hang", "refuse"):
            log(f"S3: {mode}")
            self.s3_proxy.set(mode)
            await asyncio.sleep(6)
        self.s3_proxy.set("pass")
        back = time.monotonic()
        log("S3: back")
        await asyncio.sleep(4)
        stop.set()
        await task
        # A retried upload succeeds: each refused one, once.
        retried_ok = 0
        for data in refused[:5]:
            form = aiohttp.FormData()
            form.add_field("file", data, filename="again.bin", content_type="application/octet-stream")
            status, body = await self.call(
                "POST", "/api/archive", "POST /api/archive", headers=owner.headers, data=form
            )
            if status == 202:
                retried_ok += 1
                uploads.append((body["id"], hashlib.sha256(data).hexdigest(), data))
        self.check(retried_ok == min(5, len(refused)), "a retried upload was refused")
        ids = [u[0] for u in uploads]
        settled = await self.wait_sql(
            "SELECT count(*) FILTER (WHERE status = 'pending')::int AS n FROM archive_items"
            " WHERE id = ANY(%s::uuid[])",
            lambda rows: rows[0]["n"] == 0,
            SETTLE_WITHIN,
            (ids,),
        )
        states = self.sql(
            "SELECT id::text AS id, status FROM archive_items WHERE id = ANY(%s::uuid[])", (ids,)
        )
        by_id = {r["id"]: r["status"] for r in states}
        missing = 0
        for item_id, digest, _ in uploads:
            if by_id.get(item_id) != "available":
                continue
            status, body = await self.call(
                "GET", f"/api/archive/{item_id}/download", record=False, headers=owner.headers
            )
            if status != 200 or hashlib.sha256(body).hexdigest() != digest:
                missing += 1
        self.check(missing == 0, f"{missing} available items do not download whole")
        self.check(
            all(by_id.get(i) == "available" for i in ids),
            f"acknowledged uploads not available: {Counter(by_id.values())}",
        )
        self.record(
            "Object store fails (503, timeouts, moto gone mid-upload)",
            answers=dict(statuses),
            acknowledgedUploads=len(uploads),
            itemsPointingAtNothing=missing,
            itemStates=dict(Counter(by_id.values())),
            retriedUploadsAccepted=f"{retried_ok}/{min(5, len(refused))}",
            apiRecoverySeconds=round(self.first_ok_after(self.phase, back) or -1, 2),
            settledSeconds=round(settled, 1),
        )

    async def fault_email(self, n: int) -> None:
        """Each new email answered 500, then 429 with Retry-After, then held past the timeout,
        then 202: every row ends `sent`, under one key, with Retry-After honoured."""
        self.phase = f"email-{n}"
        self.mark = len(self.provider.arrivals)
        self.provider.mode = "refuse"
        owner = Owner(Keypair.random())
        await self.sign_in(owner)
        await self.must(
            "PATCH", "/api/users/me", owner, 200, json={"name": "Refused", "email": "r@example.org"}
        )
        for i in range(8):
            await self.must(
                "POST",
                "/api/guardians",
                owner,
                201,
                json={
                    "name": f"R{i}",
                    "email": f"r{i}@example.org",
                    "walletAddress": Keypair.random().public_key,
                },
            )
        started = time.monotonic()
        statement = (
            "SELECT id::text AS id, status, attempts FROM outbox WHERE kind = 'guardian_invitation'"
            f" AND recipient_id IN (SELECT id FROM guardians WHERE user_id = '{owner.user_id}')"
        )
        await self.wait_sql(
            statement, lambda rows: len(rows) == 8 and all(r["status"] == "sent" for r in rows), SETTLE_WITHIN
        )
        settled = time.monotonic() - started
        self.provider.mode = "ok"
        rows = self.sql(statement)
        by_key: dict[str, list[Arrival]] = {}
        for arrival in self.provider.arrivals:
            by_key.setdefault(arrival.key, []).append(arrival)
        honoured = True
        for row in rows:
            seen = by_key.get(row["id"], [])
            self.check(
                [a.answer for a in seen] == [500, 429, 0, 202],
                f"row {row['id']} saw {[a.answer for a in seen]}",
            )
            for before, after in itertools.pairwise(seen):
                if before.answer == 429 and after.at - before.at < before.retry_after:
                    honoured = False
        self.check(honoured, "an attempt came before the provider's Retry-After")
        self.record(
            "Email provider refuses (500, 429 + Retry-After, timeout)",
            rows=len(rows),
            rowsSent=sum(1 for r in rows if r["status"] == "sent"),
            attempts=dict(Counter(str(r["attempts"]) for r in rows)),
            retryAfterHonoured=honoured,
            settledSeconds=round(settled, 1),
        )

    async def fault_worker_kill(self, n: int) -> None:
        """A release of HEIRS heirs at a slow provider; the worker SIGKILLed once their claim
        links are at the provider, and started again: every row `sent`, one key each."""
        self.phase = f"worker-kill-{n}"
        self.mark = len(self.provider.arrivals)
        owner, tokens = await self.approved_plan(HEIRS)
        self.heir_tokens += tokens
        self.provider.mode, self.provider.delay = "slow", 5.0
        before = len(self.provider.arrivals)
        await self.approve()
        statement = (
            "SELECT id::text AS id, kind, status, attempts FROM outbox WHERE plan_id ="
            f" (SELECT id FROM plans WHERE user_id = '{owner.user_id}') AND kind = 'claim_link'"
        )
        started = time.monotonic()
        while time.monotonic() - started < 120:
            links = {r["id"] for r in self.sql(statement)}
            arrived = {a.key for a in self.provider.arrivals[before:]} & links
            if len(links) == HEIRS and len(arrived) >= HEIRS // 2:
                break
            await asyncio.sleep(0.05)
        else:
            raise RuntimeError("the release's claim links never reached the provider")
        self.worker.proc.send_signal(signal.SIGKILL)  # type: ignore[union-attr]
        self.worker.proc.wait()  # type: ignore[union-attr]
        killed = time.monotonic()
        log(f"worker SIGKILLed with {len(arrived)} of {HEIRS} claim links at the provider")
        self.start_worker(n + 1)
        release_rows = (
            "SELECT id::text AS id, kind, status, attempts FROM outbox WHERE plan_id ="
            f" (SELECT id FROM plans WHERE user_id = '{owner.user_id}') AND created_at >="
            " (SELECT max(at) FROM plan_transitions t JOIN plans p ON p.id = t.plan_id"
            f" WHERE p.user_id = '{owner.user_id}' AND t.to_status = 'Released')"
        )
        await self.wait_sql(
            release_rows, lambda rows: bool(rows) and all(r["status"] == "sent" for r in rows), 600
        )
        settled = time.monotonic() - killed
        self.provider.mode = "ok"
        rows = self.sql(release_rows)
        keys = Counter(a.key for a in self.provider.arrivals[before:])
        link_rows = [r for r in rows if r["kind"] == "claim_link"]
        self.check(len(link_rows) == HEIRS, f"{len(link_rows)} claim links for {HEIRS} heirs")
        self.check(settled <= 90, f"rows settled {settled:.0f} s after the kill")
        self.record(
            "Worker SIGKILLed mid-delivery (20 claim links, slow provider)",
            releaseRows=len(rows),
            rowsSent=sum(1 for r in rows if r["status"] == "sent"),
            settledAfterKillSeconds=round(settled, 1),
            keysPerRow=dict(Counter(str(keys[r["id"]]) for r in rows)),
            attempts=dict(Counter(str(r["attempts"]) for r in rows)),
        )

    async def fault_jobs(self, n: int) -> None:
        """The worker SIGKILLed with a job of every other family on rows mid-way: an upload's
        verification and an account's deletion, each blocked on its row (a lock held here), and
        a scrub run reading at a crawl (for this fault the worker reads every stored file again
        after a second, at 20 kB/s). A new worker is started at once; every job's work is taken
        over once its lease lapses: the item `available` with one attempt more, the account
        gone, a whole read recorded after the kill. Then the usual worker again."""
        self.phase = f"jobs-{n}"
        self.mark = len(self.provider.arrivals)
        crawl = {**self.env, "ARCHIVE_SCRUB_INTERVAL_SECONDS": "1", "ARCHIVE_SCRUB_BYTES_PER_SECOND": "20000"}
        owner, leaving = Owner(Keypair.random()), Owner(Keypair.random())
        for who in (owner, leaving):
            await self.sign_in(who)
        form = aiohttp.FormData()  # something stored for the scrub to read (again and again)
        form.add_field(
            "file", os.urandom(64 * 1024), filename="read.bin", content_type="application/octet-stream"
        )
        stored = await self.must("POST", "/api/archive", owner, 202, data=form)
        await self.wait_sql(
            "SELECT 1 FROM archive_items WHERE id = %s AND status = 'available'",
            bool,
            SETTLE_WITHIN,
            (stored["id"],),
        )
        self.worker.stop()  # type: ignore[union-attr]
        self.start_worker(300 + 3 * n, crawl)  # its scrub run at start-up reads at the crawl
        await self.wait_sql(
            "SELECT holder FROM job_leases WHERE name = 'cron:scrub_archive'", bool, SETTLE_WITHIN
        )
        self.worker.proc.send_signal(signal.SIGSTOP)  # type: ignore[union-attr]  # the jobs wait in Redis
        form = aiohttp.FormData()
        form.add_field(
            "file", os.urandom(64 * 1024), filename="kept.bin", content_type="application/octet-stream"
        )
        item = await self.must("POST", "/api/archive", owner, 202, data=form)
        await self.must("DELETE", "/api/users/me", leaving, 202, json={"confirm": leaving.keypair.public_key})
        (ledger,) = self.sql(
            "SELECT id::text AS id FROM account_deletions WHERE user_id = %s", (leaving.user_id,)
        )
        lock = psycopg2.connect(self.env["DATABASE_URL"])
        try:
            with lock.cursor() as cur:
                cur.execute("SELECT 1 FROM archive_items WHERE id = %s FOR UPDATE", (item["id"],))
                cur.execute("SELECT 1 FROM account_deletions WHERE id = %s FOR UPDATE", (ledger["id"],))
            self.worker.proc.send_signal(signal.SIGCONT)  # type: ignore[union-attr]
            held = "SELECT name, holder FROM job_leases WHERE name IN (%s, %s, 'cron:scrub_archive')"
            names = (f"verify_archive_item:{item['id']}", f"delete_account:{ledger['id']}")
            await self.wait_sql(held, lambda rows: len(rows) == 3, SETTLE_WITHIN, names)
            dead = {r["name"]: r["holder"] for r in self.sql(held, names)}
            self.worker.proc.send_signal(signal.SIGKILL)  # type: ignore[union-attr]
            self.worker.proc.wait()  # type: ignore[union-attr]
            killed = time.monotonic()
            killed_at = self.sql("SELECT now() AS at")[0]["at"]
            log(f"worker SIGKILLed mid-job: {sorted(dead)}")
        finally:
            lock.close()  # the dead worker's statements may now commit on their own
        self.start_worker(301 + 3 * n, crawl)
        (before,) = self.sql("SELECT attempts FROM archive_items WHERE id = %s", (item["id"],))
        await self.wait_sql(
            "SELECT (SELECT status FROM archive_items WHERE id = %s) AS item,"
            " (SELECT count(*) FROM account_deletions WHERE id = %s) + (SELECT count(*) FROM users"
            "   WHERE id = %s) AS account,"
            " (SELECT count(*) FROM archive_scrub WHERE checked_at > %s) AS scrubbed",
            lambda rows: (
                rows[0]["item"] == "available" and rows[0]["account"] == 0 and rows[0]["scrubbed"] > 0
            ),
            SETTLE_WITHIN,
            (item["id"], ledger["id"], leaving.user_id, killed_at),
        )
        settled = time.monotonic() - killed
        (after,) = self.sql("SELECT status, attempts FROM archive_items WHERE id = %s", (item["id"],))
        kept = await self.must("GET", f"/api/archive/{item['id']}", owner, 200)
        self.check(settled <= 60, f"rows settled {settled:.0f} s after the kill")
        self.check(after["attempts"] <= before["attempts"] + 1, f"verification attempts {before} -> {after}")
        self.check(kept["status"] == "available", f"the item reads {kept['status']}")
        self.record(
            "Worker SIGKILLed mid-job (an archive verification, an account deletion, a scrub run)",
            settledAfterKillSeconds=round(settled, 1),
            leasesHeld=len(dead),
            verificationAttempts=f"{before['attempts']} -> {after['attempts']}",
        )
        self.worker.stop()  # type: ignore[union-attr]
        self.start_worker(302 + 3 * n)

    async def fault_rpc(self, n: int) -> None:
        """Contract mode: heirs' claim transactions submitted while the RPC node is down, then
        slow, then restarting; each stays `pending`, then is confirmed once, its effect once."""
        from bench.soroban import envelope, make_beneficiaries
        from core.files.crypto import KeyRing
        from testing.soroban_rpc import SorobanRpcEmulator, random_contract_id

        self.phase = f"rpc-setup-{n}"
        if self.rpc is None:
            self.rpc = SorobanRpcEmulator(contract_id=random_contract_id())
            await self.rpc.start()
            self.rpc_proxy = FaultProxy(int(self.rpc.url.rsplit(":", 1)[1].split("/")[0]))
            await self.rpc_proxy.start()
            # The API and the worker start again in contract mode (a configuration, not a fault).
            for server in (self.api, self.worker):
                server.stop()  # type: ignore[union-attr]
            self.env.update(
                SERVICE_CONTRACT_ID=str(self.rpc.contract_id),
                SOROBAN_RPC_URL=f"http://127.0.0.1:{self.rpc_proxy.port}",
                SOROBAN_RPC_TIMEOUT_SECONDS="3",
            )
            self.start_api()
            self.start_worker(100)
            await wait_ready(self.api, "/api/health")  # type: ignore[arg-type]
        rpc, proxy = self.rpc, self.rpc_proxy
        assert rpc.contract_id is not None
        per_mode = 3
        heirs = await asyncio.to_thread(
            make_beneficiaries,
            self.env["DATABASE_URL"],
            KeyRing.parse(self.env["ENCRYPTION_KEYS"]),
            4 * per_mode,
        )
        sequence = 4_294_967_296 * 9
        for heir in heirs:
            rpc.fund(heir["wallet"].public_key, sequence)
        self.phase = f"rpc-{n}"
        sends_before, accepted_before = len(rpc.calls_to("sendTransaction")), len(rpc.sent)
        self.mark = len(self.provider.arrivals)
        submits: Counter[str] = Counter()

        async def submit(batch: list[dict[str, Any]]) -> None:
            for heir in batch:
                xdr = envelope(rpc.contract_id, rpc.passphrase, heir, sequence + 1)
                status, _ = await self.call(
                    "POST",
                    f"/api/claim/{heir['token']}/submit",
                    "POST /api/claim/:token/submit",
                    json={"signedXdr": xdr},
                )
                submits[str(status)] += 1

        ids = [h["id"] for h in heirs[: 3 * per_mode]]
        statement = (
            "SELECT status, count(*)::int AS n FROM transactions"
            " WHERE beneficiary_id = ANY(%s::uuid[]) GROUP BY 1"
        )
        log("RPC: down")
        proxy.set("refuse")
        await submit(heirs[:per_mode])
        await asyncio.sleep(5)
        pending_while_down = {r["status"]: r["n"] for r in self.sql(statement, (ids,))}
        log("RPC: slow (2 s an answer)")
        proxy.set("pass")
        rpc.latency_seconds = 2.0
        await submit(heirs[per_mode : 2 * per_mode])
        await asyncio.sleep(4)
        log("RPC: restarting (refused 4 s, then back)")
        rpc.latency_seconds = 0.0
        proxy.set("refuse")
        await submit(heirs[2 * per_mode : 3 * per_mode])
        await asyncio.sleep(4)
        proxy.set("pass")
        back = time.monotonic()
        await self.wait_sql(
            statement,
            lambda rows: {r["status"]: r["n"] for r in rows} == {"confirmed": len(ids)},
            SETTLE_WITHIN,
            (ids,),
        )
        settled = time.monotonic() - back
        log("RPC: holding every request; the worker SIGKILLed mid-relay")
        proxy.set("hang")
        last = heirs[3 * per_mode :]
        await submit(last)
        relaying = "SELECT count(*)::int AS n FROM job_leases WHERE name LIKE 'relay_transaction:%'"
        await self.wait_sql(relaying, lambda rows: rows[0]["n"] > 0, SETTLE_WITHIN)
        self.worker.proc.send_signal(signal.SIGKILL)  # type: ignore[union-attr]
        self.worker.proc.wait()  # type: ignore[union-attr]
        killed = time.monotonic()
        proxy.set("pass")
        self.start_worker(400 + n)
        await self.wait_sql(
            statement,
            lambda rows: {r["status"]: r["n"] for r in rows} == {"confirmed": len(last)},
            SETTLE_WITHIN,
            ([h["id"] for h in last],),
        )
        after_kill = time.monotonic() - killed
        self.check(after_kill <= 60, f"relays settled {after_kill:.0f} s after the kill")
        owners = list({h["owner_id"] for h in heirs})
        effects = self.sql(
            "SELECT kind, count(*)::int AS n FROM activity WHERE user_id = ANY(%s::uuid[])"
            " AND kind IN ('transaction.confirmed', 'beneficiary.claimed') GROUP BY 1",
            (owners,),
        )
        counts = {r["kind"]: r["n"] for r in effects}
        self.check(pending_while_down == {"pending": per_mode}, f"while down: {pending_while_down}")
        self.check(
            counts == {"transaction.confirmed": len(heirs), "beneficiary.claimed": len(heirs)},
            f"effects: {counts}",
        )
        self.record(
            "RPC node down, slow, restarted; the worker SIGKILLed mid-relay",
            submits=dict(submits),
            whileDown=pending_while_down,
            confirmedAfterBackSeconds=round(settled, 1),
            settledAfterKillSeconds=round(after_kill, 1),
            transactions=len(heirs),
            effects=counts,
            sendTransactionCalls=len(rpc.calls_to("sendTransaction")) - sends_before,
            acceptedByTheNode=len(rpc.sent) - accepted_before,
        )

    # -- the run --------------------------------------------------------------------------------

    async def run(self) -> int:
        args = self.args
        shutil.rmtree(DATA, ignore_errors=True)
        self.workdir.mkdir(parents=True)
        log("starting PostgreSQL, Redis, moto, the provider")
        self.pg = Postgres(DATA / "postgres")
        apply_migrations(self.pg.url)
        self.redis = Redis(self.workdir)
        moto_url, stop_moto = start_moto_server()
        await create_bucket(moto_url, BUCKET)
        self.s3_proxy = FaultProxy(int(moto_url.rsplit(":", 1)[1]))
        await self.s3_proxy.start()
        provider_runner = await self.provider.start()
        port = free_port()
        storage = {
            "STORAGE_URL": f"s3://{BUCKET}",
            "S3_ENDPOINT_URL": f"http://127.0.0.1:{self.s3_proxy.port}",
            "AWS_REGION": TEST_REGION,
            "AWS_ACCESS_KEY_ID": TEST_ACCESS_KEY_ID,
            "AWS_SECRET_ACCESS_KEY": TEST_SECRET_ACCESS_KEY,
        }
        self.env = service_env(self.pg.url, self.redis.url, storage, port)
        self.env.update(
            LIFECYCLE_SCAN_SECONDS="2",
            PLAN_MIN_CHECK_IN_INTERVAL_SECONDS="60",
            PLAN_MIN_CANCEL_WINDOW_SECONDS="0",
            PLAN_MIN_VERIFICATION_TIMEOUT_SECONDS="60",
            EMAIL_PROVIDER_URL=self.provider.url,
            EMAIL_PROVIDER_API_KEY="chaos-provider-key",
            EMAIL_FROM="chaos@example.test",
            EMAIL_RETRY_BASE_SECONDS="2",
            # Every owner of the run signs up from 127.0.0.1: the per-client cap on emails to
            # people they name would defer the invitations the faults are about.
            EMAIL_TO_NAMED_PEOPLE_PER_CLIENT_PER_DAY="100000",
            LOG_LEVEL="WARNING",
        )
        self.base_url = f"http://127.0.0.1:{port}"
        self.http = aiohttp.ClientSession()
        load: list[asyncio.Task[None]] = []
        began = time.monotonic()
        try:
            self.start_api()
            self.start_worker()
            await wait_ready(self.api, "/api/health")  # type: ignore[arg-type]
            for _ in range(LOAD_OWNERS):
                owner = Owner(Keypair.random())
                await self.sign_in(owner)
                body = await self.must(
                    "POST",
                    "/api/beneficiaries",
                    owner,
                    201,
                    json={
                        "name": "Ada",
                        "relationship": "daughter",
                        "email": "ada@example.org",
                        "allocationPercentage": 10,
                    },
                )
                self.heir_tokens.append(body["claimToken"])
                self.owners.append(owner)
            load = [asyncio.create_task(self.owner_loop(o, i)) for i, o in enumerate(self.owners)]
            await asyncio.sleep(3)
            faults: list[tuple[str, Callable[[int], Awaitable[None]]]] = [
                ("worker", self.fault_worker_kill),
                ("jobs", self.fault_jobs),
                ("postgres", self.fault_postgres),
                ("redis", lambda n: self.fault_redis(n, "flushall")),
                ("storage", self.fault_storage),
                ("email", self.fault_email),
                ("rpc", self.fault_rpc),
            ]
            if not args.short:
                faults.insert(3, ("redis-restart", lambda n: self.fault_redis(n, "restart")))
            only = set(args.only.split(",")) if args.only else None
            # The RPC faults come after every round of the others: the stack stays in contract
            # mode once they have begun (guardians then approve on-chain only).
            plan = [(n, name, fault) for name, fault in faults for n in range(args.rounds)]
            plan.sort(key=lambda step: (step[1] == "rpc", step[0]))
            for n, name, fault in plan:
                if only and name not in only:
                    continue
                if time.monotonic() - began > args.max_seconds:
                    self.failures.append(f"stopped at {name}: past --max-seconds {args.max_seconds}")
                    break
                log(f"fault: {name} (round {n + 1})")
                await fault(n)
                self.phase = "between"
                await asyncio.sleep(2)
        finally:
            self.stop_load.set()
            for task in load:
                with contextlib.suppress(Exception):
                    await task
            await self.http.close()
            for server in (self.api, self.worker):
                if server is not None:
                    server.stop()
            await provider_runner.cleanup()
            if self.rpc is not None:
                await self.rpc.stop()
            stop_moto()
            self.redis.stop()
            self.pg.close()
        return self.report(time.monotonic() - began)

    def report(self, elapsed: float) -> int:
        summary = {
            "when": datetime.now(UTC).isoformat(timespec="seconds"),
            "short": self.args.short,
            "rounds": self.args.rounds,
            "seconds": round(elapsed, 1),
            "loadavg": os.getloadavg(),
            "cpus": os.cpu_count(),
            "requests": len(self.answers),
            "faults": self.results,
            "failures": self.failures,
        }
        RESULTS.mkdir(parents=True, exist_ok=True)
        path = RESULTS / f"chaos-{datetime.now(UTC):%Y%m%dT%H%M%S}.json"
        path.write_text(json.dumps(summary, indent=2))
        print()
        for entry in self.results:
            print(f"{entry['fault']}  [{entry['phase']}]")
            for key, value in entry.items():
                if key not in ("fault", "phase"):
                    print(f"    {key}: {value}")
        print("\n" + markdown(self.results))
        print(f"\n{len(self.answers)} requests in {elapsed:.0f} s, load average {os.getloadavg()}; {path}")
        if self.failures:
            print("FAILED:\n  " + "\n  ".join(self.failures))
            return 1
        print("every invariant held")
        return 0


def markdown(results: list[dict[str, Any]]) -> str:
    """The bench/README table: one line per fault injected."""
    timing = {"settledAfterKill", "apiRecovery", "workerRecovery", "signInAfter", "emailsSettled", "settled"}
    timing.add("confirmedAfterBack")
    lines = [
        "| fault | round | recovered (s) | answers ≥ 500 by class (of all) | slowest answer (s) | rows lost"
        " | half-done | written twice | keys accepted again |",
        "|---|---:|---|---|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        times = ", ".join(
            f"{k.removesuffix('Seconds')} {v}"
            for k, v in r.items()
            if k.endswith("Seconds") and k.removesuffix("Seconds") in timing
        )
        served = dict(r["fiveHundreds"])
        total = served.pop("requests", 0)
        classes = ", ".join(f"{v} {k}" for k, v in served.items()) or "none"
        lines.append(
            f"| {r['fault']} | {int(r['phase'].rsplit('-', 1)[1]) + 1} | {times} | {classes} (of {total})"
            f" | {r['slowestAnswerSeconds']} | {r['rowsLost']} | {r['halfDoneTransitions']}"
            f" | {r['emailsWrittenTwice']} | {r['keysAcceptedAgain']} |"
        )
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--short", action="store_true", help="CI: one release, each fault once")
    parser.add_argument(
        "--rounds", type=int, default=None, help="times through the faults (default 2; --short: 1)"
    )
    parser.add_argument(
        "--only",
        default="",
        help="comma-separated: worker, jobs, postgres, redis, redis-restart, storage, email, rpc",
    )
    parser.add_argument(
        "--max-seconds", type=float, default=1200, help="start no fault past this (default 1200)"
    )
    args = parser.parse_args()
    args.rounds = args.rounds or (1 if args.short else 2)
    return asyncio.run(Chaos(args).run())


if __name__ == "__main__":
    sys.exit(main())
