"""The places that lean on a library's private details or patch it, each in one module (the
"Library internals" table in docs/conventions.md lists them all): aiopg's `Cursor._transaction`
(core.db._unlink) and `Pool._wakeup` (core.db._wake_a_waiter), arq's key layout and enqueue
(core.queue) and its poll step and job start (workers.main.Worker), aiohttp's request handler (api.server),
stellar_sdk's patch of aiohttp's readline and its repair (core.stellar.readline),
aiohttp-apigami's operation dict (api.public, api.claim.gate) and parser key (api.app),
stellar_sdk's XDR types on xdrlib3 (core.stellar.soroban_check).
These tests fail loudly when a library changes. aiopg's two stay: psycopg 3 needs neither but
cost more per request, so it was not adopted (docs/conventions.md, "The database driver").
The OpenAPI document's plugin (api.app, `AiohttpApiSpec.spec`) is held by tests/test_openapi.py."""

from __future__ import annotations

import asyncio
import base64
import gc
import inspect
import socket
import subprocess
import sys
import textwrap
import uuid
import weakref
from collections.abc import Iterator
from pathlib import Path

import aiohttp
import aiohttp.streams
import psycopg2
import pytest
from aiohttp import web
from arq.jobs import Job
from stellar_sdk import Keypair

from core import db, queue, tokens
from core import redis as core_redis
from core.files.crypto import KeyRing
from core.settings import Settings
from core.stellar import readline
from tests.support.processes import worker_env


async def _cursor_freed_without_gc(pool, use_helper: bool) -> bool:
    gc.collect()
    gc.disable()
    try:
        if use_helper:
            async with db.autocommit(pool) as cur:
                await cur.execute("SELECT 1")
                ref = weakref.ref(cur)
        else:
            async with pool.acquire() as conn, conn.cursor() as cur:
                await cur.execute("SELECT 1")
                ref = weakref.ref(cur)
        del cur
        return ref() is None
    finally:
        gc.enable()


async def test_cursors_are_freed_by_refcount_once_unlinked(settings):
    """aiopg's Cursor and its Transaction point at each other; `_unlink` breaks that through
    aiopg's private `Cursor._transaction`. If aiopg renames it, the helper's cursor is no
    longer freed without the cycle collector and this fails (the control shows the cycle)."""
    pool = await db.create_pool(settings.database_url, 2)
    try:
        assert not await _cursor_freed_without_gc(pool, use_helper=False)  # the cycle aiopg makes
        assert await _cursor_freed_without_gc(pool, use_helper=True)
    finally:
        pool.close()
        await pool.wait_closed()


async def test_a_connection_killed_in_use_wakes_a_caller_waiting_for_one(settings):
    """aiopg's release wakes a caller waiting in acquire only for a live connection; core.db
    wakes one through aiopg's private `Pool._wakeup` when the connection came back closed.
    Without that (or if aiopg renames it) the waiter below sleeps until the pool timeout (30 s)
    and this fails; tests/test_faults.py shows the same under traffic."""
    pool = await db.create_pool(settings.database_url, 1)
    try:
        waiter = None
        with pytest.raises(psycopg2.OperationalError):
            async with db.autocommit(pool) as cur:  # the pool's one connection
                waiter = asyncio.create_task(db.fetch_one(pool, "SELECT 1 AS one"))
                await cur.execute("SELECT pg_terminate_backend(pg_backend_pid())")  # killed in use
        assert waiter is not None
        assert await asyncio.wait_for(waiter, 10) == {"one": 1}  # 10 s: a bound, not a timing
    finally:
        pool.close()
        await pool.wait_closed()


def test_arq_polls_through_poll_iteration():
    """workers.main.Worker catches a Redis error in `_poll_iteration`: arq's main loop must still
    call it, once per poll, and it must still read the queue there."""
    from arq.worker import Worker

    assert "await self._poll_iteration()" in inspect.getsource(Worker.main)
    assert "zrangebyscore" in inspect.getsource(Worker._poll_iteration)


async def test_a_redis_error_while_starting_jobs_leaks_no_job_slot(settings, clock, monkeypatch):
    """arq's `start_jobs` takes a job slot (job_counter, a semaphore permit) before its Redis
    pipeline and gives it back only on ResponseError/WatchError. workers.main.Worker gives it back
    on a connection error too: after more failed starts than it has slots, and Redis answering
    again, the worker still takes the job and runs it (without that it polls, beating, forever)."""
    from redis.exceptions import ConnectionError as RedisConnectionError

    from workers import main

    monkeypatch.setattr(main, "REDIS_RETRY_SECONDS", 0.05)
    pool = await core_redis.connect(settings.redis_url, settings.arq_queue_name)
    job_id = f"seam-{uuid.uuid4().hex}"
    assert await queue.enqueue_once(pool, "verify_archive_item", str(uuid.uuid4()), job_id=job_id)
    # More failed starts than the worker's slots (2) and its semaphore's permits (3).
    real_pipeline, failures = pool.pipeline, {"left": 5}

    def pipeline(*args, **kwargs):  # Redis down for the first five starts, then back
        if kwargs.get("transaction") and failures["left"] > 0:
            failures["left"] -= 1
            raise RedisConnectionError("Redis is restarting")
        return real_pipeline(*args, **kwargs)

    pool.pipeline = pipeline  # type: ignore[method-assign]
    worker = main.create_worker(
        settings,
        clock,
        burst=True,
        poll_delay=0.01,
        handle_signals=False,
        max_jobs=2,
        cron_jobs=[],
        redis_pool=pool,
    )
    try:
        await asyncio.wait_for(worker.main(), timeout=30)
        assert failures["left"] == 0
        job = Job(job_id, pool, _queue_name=settings.arq_queue_name, _deserializer=core_redis.deserialize)
        info = await job.result_info()
        assert info is not None and info.success
        assert worker.job_counter == 0
    finally:
        await worker.close()


async def test_result_key_is_where_arq_keeps_a_finished_result(settings, run_worker):
    """core.queue knows arq's key layout: result_key (no public call drops a kept result) and
    enqueue (arq's enqueue_job as one Lua script: job key, result key, queue score). If arq moves
    either, the worker no longer finds the job or enqueue_once no longer re-queues, and this fails."""
    pool = await core_redis.connect(settings.redis_url, settings.arq_queue_name)
    try:
        job_id = f"seam-{uuid.uuid4().hex}"
        missing_item = str(uuid.uuid4())  # the job runs and reports "not pending"
        assert await queue.enqueue_once(pool, "verify_archive_item", missing_item, job_id=job_id)
        await run_worker()
        job = Job(job_id, pool, _queue_name=settings.arq_queue_name, _deserializer=core_redis.deserialize)
        assert await job.result_info() is not None
        assert await pool.exists(queue.result_key(job_id)) == 1
        # A plain enqueue is refused while arq keeps the result; enqueue_once drops it and queues.
        assert await pool.enqueue_job("verify_archive_item", missing_item, _job_id=job_id) is None
        assert await queue.enqueue_once(pool, "verify_archive_item", missing_item, job_id=job_id)
        assert await job.result_info() is None
    finally:
        await pool.aclose()


async def test_enqueues_of_one_turn_share_a_round_trip_and_keep_arqs_refusals(redis_url):
    """core.queue.enqueue: several callers in one turn of the event loop, one script call;
    each hears its own answer (a repeated id is refused, as arq's enqueue_job would), and the
    jobs are arq's own (readable by arq's Job)."""

    from arq.jobs import Job, JobStatus

    from core import queue
    from core.redis import connect

    redis = await connect(redis_url, "seams-queue")
    try:
        await redis.delete("seams-queue")
        ids = [f"seams-job-{n}" for n in range(5)]
        await redis.delete(*(queue.job_key_prefix + i for i in ids), *(queue.result_key(i) for i in ids))
        # The server may not hold the script yet (a new Redis): redis-py then loads it and calls
        # again. Load it first, so the count below is only the turn's calls.
        await redis.script_load(queue._SCRIPT.script)
        calls = 0
        original = redis.evalsha

        async def counting(*args, **kwargs):
            nonlocal calls
            calls += 1
            return await original(*args, **kwargs)

        redis.evalsha = counting  # type: ignore[method-assign]
        answers = await asyncio.gather(
            *(queue.enqueue(redis, "relay", n, job_id=job_id) for n, job_id in enumerate(ids)),
            queue.enqueue(redis, "relay", 99, job_id=ids[0]),
        )
        assert answers == [True] * 5 + [False]
        assert calls == 1
        assert await redis.zcard("seams-queue") == 5
        job = Job(ids[3], redis, _queue_name="seams-queue", _deserializer=redis.job_deserializer)
        assert await job.status() is JobStatus.queued
        assert list((await job.info()).args) == [3]  # type: ignore[union-attr]
        assert await queue.enqueue(redis, "relay", 3, job_id=ids[3]) is False  # a later turn too
    finally:
        await redis.delete("seams-queue")
        await redis.aclose()


async def _only_connection(client):
    """The server side of the one open connection (aiohttp's public Server.connections)."""
    server = client.server.runner.server
    for _ in range(200):
        if server.connections:
            return server.connections[0]
        await asyncio.sleep(0.01)
    raise AssertionError("the server never saw the connection")


async def test_aiohttp_protocol_seams_that_api_server_relies_on(make_client):
    """api.server subclasses aiohttp's RequestHandler: AppRunner._make_server builds the server
    asyncio calls for each connection; `_waiter` is pending exactly while aiohttp waits for a
    head (the head deadline reads it); handle_error is what aiohttp calls for a request it cannot
    parse. If aiohttp renames or reshapes any of these, this fails before production does."""
    import asyncio

    from api.server import ServiceRequestHandler, ServiceServer

    client = await make_client(request_head_timeout_seconds=30)
    assert isinstance(client.server.runner.server, ServiceServer)
    reader, writer = await asyncio.open_connection(client.server.host, client.server.port)
    try:
        protocol = await _only_connection(client)
        assert isinstance(protocol, ServiceRequestHandler)
        assert protocol._waiter is not None and not protocol._waiter.done()  # waiting for a head
        assert protocol._head_deadline is not None  # armed from the connection's start
        writer.write(b"GET /api/health HTTP/1.1\r\nHost: x\r\n")
        await writer.drain()
        writer.write(b"\r\n")
        await writer.drain()
        head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 15)
        assert head.split(b" ")[1] in (b"200", b"503")
        length = next(
            int(v)
            for k, _, v in (h.partition(b":") for h in head.split(b"\r\n"))
            if k.lower() == b"content-length"
        )
        await reader.readexactly(length)
        for _ in range(200):  # the response is out; aiohttp waits for the next head again
            if protocol._waiter is not None and not protocol._waiter.done():
                break
            await asyncio.sleep(0.01)
        assert protocol._head_deadline is None  # disarmed by the complete head, not re-armed idle
        writer.write(b"GET /api/he")  # part of a later head: armed from its first byte
        await writer.drain()
        for _ in range(200):
            if protocol._head_deadline is not None:
                break
            await asyncio.sleep(0.01)
        assert protocol._head_deadline is not None
        writer.write(b"alth\x01 HTTP/1.1\r\n\r\n")  # finished, but malformed: handle_error
        await writer.drain()
        reply = await asyncio.wait_for(reader.read(65536), 15)
        assert reply.startswith(b"HTTP/1.0 400 ") and b"application/json" in reply
        assert reply.endswith(b'"message": "Malformed HTTP request"}')
    finally:
        writer.close()


# stellar_sdk's aiohttp patch and its repair (core/stellar/readline.py).

ROOT = Path(__file__).resolve().parent.parent


def _fresh_interpreter(code: str) -> str:
    """Run `code` in a new interpreter: the patch is process-wide and happens once per process."""
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip()


def test_importing_stellar_sdk_replaces_aiohttp_readline_and_the_repair_restores_it():
    """Why the repair exists, and that it works: after `import stellar_sdk`, aiohttp's readline
    has lost its `max_line_length` keyword (aiohttp's multipart reader passes it); after
    `restore_aiohttp_readline()` the keyword is back and enforced. If stellar_sdk stops patching,
    the first answer flips and core/stellar/readline.py can go."""
    out = _fresh_interpreter(
        """
        import asyncio, inspect
        import aiohttp.streams as streams
        from aiohttp.base_protocol import BaseProtocol
        from aiohttp.http_exceptions import LineTooLong

        import stellar_sdk  # noqa: F401
        print("max_line_length" in inspect.signature(streams.StreamReader.readline).parameters)

        from core.stellar.readline import restore_aiohttp_readline

        restore_aiohttp_readline()
        print("max_line_length" in inspect.signature(streams.StreamReader.readline).parameters)

        async def read():
            loop = asyncio.get_running_loop()
            reader = streams.StreamReader(BaseProtocol(loop), 2**16, loop=loop)
            reader.feed_data(b"short\\n" + b"x" * 100 + b"\\n")
            reader.feed_eof()
            first = await reader.readline(max_line_length=16)
            try:
                await reader.readline(max_line_length=16)
            except LineTooLong:
                return first, "refused"
            return first, "read"

        print(*asyncio.run(read()))
        """
    )
    assert out.splitlines() == ["False", "True", "b'short\\n' refused"]


def test_the_repair_is_aiohttps_own_definition():
    """core/stellar/readline.py restores a copy of aiohttp's readline; aiohttp's source file (which
    the patch does not touch) must still define it the same way, or the copy is stale."""
    own = " ".join(inspect.getsource(aiohttp.streams.StreamReader).split())
    assert (
        "async def readline(self, *, max_line_length: int | None = None) -> bytes:"
        " return await self.readuntil(max_size=max_line_length)"
    ) in own
    repaired = inspect.getsource(readline._aiohttp_readline).strip()
    assert repaired.endswith("return await self.readuntil(max_size=max_line_length)")


@pytest.fixture
def api_process(settings: Settings, tmp_path: Path) -> Iterator[tuple[str, subprocess.Popen[bytes], Path]]:
    """`legacy-planning serve` as production starts it, on these settings and a free port."""
    port = _free_port()
    env = worker_env(settings, KeyRing.generate_entry("k1"))
    env.update(PORT=str(port), HOST="127.0.0.1")
    log_path = tmp_path / "api.log"
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "service.cli", "serve"], cwd=ROOT, env=env, stdout=log, stderr=log
        )
    try:
        yield f"http://127.0.0.1:{port}", process, log_path
    finally:
        process.terminate()
        process.wait(timeout=30)


async def test_the_api_process_repairs_readline_at_start(settings, api_process):
    """`legacy-planning serve` calls the repair before serving: a multipart archive upload to the
    real API process is accepted (with stellar_sdk's readline it fails inside aiohttp's multipart
    reader). Worker processes start through the same `service.cli.main`."""
    base, process, log_path = api_process
    user_id = str(uuid.uuid4())
    with psycopg2.connect(settings.database_url) as conn, conn.cursor() as cur:
        cur.execute(
            "INSERT INTO users (id, wallet_address) VALUES (%s, %s)", (user_id, Keypair.random().public_key)
        )
    conn.close()
    token = tokens.issue(settings.jwt_secret, user_id, settings.jwt_issuer, settings.jwt_audience, 600)
    async with aiohttp.ClientSession() as session:
        await _until_up(session, f"{base}/api/health", process, log_path)
        form = aiohttp.FormData()
        form.add_field("title", "Seam")
        form.add_field("category", "legal")
        form.add_field("file", b"multipart body\n" * 64, filename="seam.txt", content_type="text/plain")
        headers = {"Authorization": f"Bearer {token}"}
        async with session.post(f"{base}/api/archive", data=form, headers=headers) as resp:
            body = await resp.json()
            assert resp.status == 202, body
            assert body["status"] == "pending"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


async def _until_up(
    session: aiohttp.ClientSession, url: str, process: subprocess.Popen[bytes], log_path: Path
) -> None:
    """Poll until the process answers (a bound for a loaded machine, not a timing assertion)."""
    for _ in range(600):
        assert process.poll() is None, f"the API exited; its log: {log_path}"
        try:
            async with session.get(url) as resp:
                if resp.status in (200, 503):
                    return
        except aiohttp.ClientConnectionError:
            pass
        await asyncio.sleep(0.1)
    raise AssertionError(f"the API did not answer; its log: {log_path}")


# aiohttp-apigami: the operation dict a decorator may amend, and the parser under the app key.


async def test_public_and_the_claim_gate_amend_the_operation_apigami_documents(aiohttp_client):
    """api.public.public and api.claim.gate.claim_gate amend a handler's OpenAPI operation through
    aiohttp-apigami's `utils.get_or_set_apispec` (not exported): the dict its `@docs` fills and
    its document generator reads. The exported `docs()` is no substitute: it also resets
    `produces` to JSON, which `@public` above a page's `@docs` would undo. If apigami moves the
    dict, these operations lose `security: []` or the token parameter and this fails."""
    from aiohttp_apigami import docs, setup_aiohttp_apispec

    from api.claim.gate import TOKEN_PARAM, claim_gate
    from api.public import public

    @public
    @docs(summary="a page", produces=["text/html"])
    async def page(request: web.Request) -> web.Response:
        return web.Response()

    @docs(summary="a capsule route")
    @claim_gate
    async def capsule(request: web.Request, capsule: object) -> web.Response:
        return web.Response()

    app = web.Application()
    app.router.add_get("/page", page)
    app.router.add_get("/api/claim/{token}", capsule)
    setup_aiohttp_apispec(app, url="/openapi.json", openapi_version="3.0.3")
    client = await aiohttp_client(app)
    spec = await (await client.get("/openapi.json")).json()
    page_op = spec["paths"]["/page"]["get"]
    assert (page_op["summary"], page_op["security"], page_op["produces"]) == ("a page", [], ["text/html"])
    capsule_op = spec["paths"]["/api/claim/{token}"]["get"]
    assert (capsule_op["summary"], capsule_op["security"]) == ("a capsule route", [])
    assert [p for p in capsule_op["parameters"] if p["name"] == "token"] == [TOKEN_PARAM]
    assert {"404", "429"} <= set(capsule_op["responses"])


async def test_apigami_validates_with_the_parser_held_under_its_app_key(aiohttp_client):
    """api.app puts api.common.RequestParser (every failure a 400 in the standard body, the body
    read within its deadline) under aiohttp-apigami's `constants.APISPEC_PARSER` key, replacing the
    webargs parser `setup_aiohttp_apispec` stores there; no setup argument takes a parser. If
    the validation middleware stops reading that key, the recording parser sees nothing."""
    from aiohttp_apigami import request_schema, setup_aiohttp_apispec, validation_middleware
    from aiohttp_apigami.constants import APISPEC_PARSER
    from marshmallow import Schema, fields
    from webargs.aiohttpparser import AIOHTTPParser

    class Body(Schema):
        name = fields.String(required=True)

    seen: list[str] = []

    class Recording(AIOHTTPParser):
        async def load_json(self, req: web.Request, schema: Schema) -> object:
            seen.append(req.path)
            return await super().load_json(req, schema)

    @request_schema(Body)
    async def create(request: web.Request) -> web.Response:
        return web.json_response(request["data"])

    app = web.Application(middlewares=[validation_middleware])
    app.router.add_post("/things", create)
    setup_aiohttp_apispec(app, url="/openapi.json", openapi_version="3.0.3")
    app[APISPEC_PARSER] = Recording()
    client = await aiohttp_client(app)
    resp = await client.post("/things", json={"name": "seam"})
    assert (resp.status, await resp.json(), seen) == (200, {"name": "seam"}, ["/things"])


async def test_apigami_builds_its_document_through_register_once_per_route_table(aiohttp_client):
    """api.schemas.OpenApiDocument overrides aiohttp-apigami's private `AiohttpApiSpec._register`
    (what its startup hook calls to walk the routes and store the document under
    `constants.SWAGGER_DICT`, the key its document route reads) to build the document once
    per route table in a process. If apigami stops calling `_register`, or reads the document
    from elsewhere, the second app builds its own (not the same object) or serves none."""
    from aiohttp_apigami import docs
    from aiohttp_apigami.constants import SWAGGER_DICT

    from api.schemas import OpenApiDocument

    @docs(summary="a route")
    async def one(request: web.Request) -> web.Response:
        return web.Response()

    @docs(summary="another route")
    async def other(request: web.Request) -> web.Response:
        return web.Response()

    async def served(*routes: tuple[str, object]) -> tuple[web.Application, dict[str, object]]:
        app = web.Application()
        for path, handler in routes:
            app.router.add_get(path, handler)  # type: ignore[arg-type]
        OpenApiDocument(app=app, url="/openapi.json", openapi_version="3.0.3", title="t", version="1")
        client = await aiohttp_client(app)
        document: dict[str, object] = await (await client.get("/openapi.json")).json()
        return client.app, document

    first, document = await served(("/seam-one", one))
    again, same = await served(("/seam-one", one))
    grown, larger = await served(("/seam-one", one), ("/seam-other", other))
    assert again[SWAGGER_DICT] is first[SWAGGER_DICT] and same == document
    assert set(document["paths"]) == {"/seam-one"}  # type: ignore[call-overload]
    assert grown[SWAGGER_DICT] is not first[SWAGGER_DICT]
    assert set(larger["paths"]) == {"/seam-one", "/seam-other"}  # type: ignore[call-overload]


# stellar_sdk's generated XDR types on xdrlib3 (core/stellar/soroban_check.py decode).


def test_stellar_sdk_xdr_types_unpack_from_an_xdrlib3_unpacker_that_refuses_trailing_bytes():
    """soroban_check.decode unpacks the envelope with stellar_sdk's generated
    `TransactionEnvelope.unpack` from an `xdrlib3.Unpacker` it holds, so `done()` can refuse
    bytes after the envelope (the exported `from_xdr_bytes` builds its own and ignores them) and
    the transaction's own bytes are sliced from the input. If stellar_sdk changes its XDR runtime
    or the generated `unpack`, this fails."""
    from stellar_sdk import Account, Network, TransactionBuilder
    from stellar_sdk import xdr as x
    from xdrlib3 import Error as XdrError
    from xdrlib3 import Unpacker

    from core.errors import BadRequest
    from core.stellar import soroban_check

    keypair = Keypair.random()
    tx = (
        TransactionBuilder(Account(keypair.public_key, 7), Network.TESTNET_NETWORK_PASSPHRASE, base_fee=100)
        .append_bump_sequence_op(9)
        .set_timeout(60)
        .build()
    )
    tx.sign(keypair)
    raw = base64.b64decode(tx.to_xdr())
    unpacker = Unpacker(raw)
    envelope = x.TransactionEnvelope.unpack(unpacker)
    unpacker.done()
    assert envelope == x.TransactionEnvelope.from_xdr_bytes(raw)
    assert x.TransactionEnvelope.from_xdr_bytes(raw + b"\0\0\0\0") == envelope  # exported: ignores them
    trailing = Unpacker(raw + b"\0\0\0\0")
    x.TransactionEnvelope.unpack(trailing)
    with pytest.raises(XdrError):
        trailing.done()
    assert envelope.v1 is not None
    decoded = soroban_check.decode(base64.b64encode(raw).decode())
    assert decoded.tx_bytes == envelope.v1.tx.to_xdr_bytes()
    assert decoded.hash(Network.TESTNET_NETWORK_PASSPHRASE) == tx.hash()
    with pytest.raises(BadRequest):
        soroban_check.decode(base64.b64encode(raw + b"\0\0\0\0").decode())
