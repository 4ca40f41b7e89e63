"""The lifecycle: the scheduler's scan against idle plans, and email delivery from the outbox.

- **Scan**: 100 000 Active plans of which 1 000 are due (their grace period ended: each scan
  starts verification, writing its transition, timeline entry and outbox row), then the same
  with 10 000 plans, same 1 000 due. Both times come from `models.flows.scheduler.scan`, the
  function the cron runs, against the bench database; the due plans are reset between runs
  (SCAN_ROUNDS each, median kept). The two should be within 25 %: the scan reads due plans
  through the partial index on `next_due_at`, so idle plans cost nothing. The plan's
  `EXPLAIN (ANALYZE, BUFFERS)` is printed for both sizes. The plans carry #24's default
  deadline (30 days, release). Then the guardians' reconfirmation sweep (#24): one accepted
  guardian per plan, 1 000 of them due, `models.plan.guardianships.reconfirmation.sweep` timed
  the same way (it asks each due guardian: an outbox row and the due time moved).
- **Outbox delivery**: EMAILS outbox rows enqueued to the real worker as the API does
  (`outbox.enqueue`: one `deliver_email` job per batch of 32 rows; each claims its rows in one
  query, renders text + HTML, POSTs them concurrently with Idempotency-Key, records them in
  one statement) against a local capture server (`python -m testing.emailserver`), timed until
  the last row is `sent`; the ceiling is a bare aiohttp client posting the same bodies to the
  same server, at 16 concurrent requests (arq `max_jobs`, what the worker had with one job per
  row) and at 32 (the worker's connection pool, what it has now), the better of the two kept.
  Target ≥ 0.5. BENCH_OUTBOX_ROUNDS (default SCAN_ROUNDS) rounds, medians.

Data is generated in SQL (`INSERT … SELECT generate_series`), so setting up 100 000 plans
takes seconds.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import time
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

import aiohttp
import psycopg2
import psycopg2.extensions
import psycopg2.extras
from arq.connections import ArqRedis

from core import db, mailer
from core.files.crypto import KeyRing
from core.redis import connect
from core.settings import Settings
from models import sealed_text
from models.delivery import deliveries, outbox
from models.flows import scheduler
from models.mail import emails
from models.plan.guardianships import reconfirmation
from service.migrate import apply_migrations
from workers.main import MAX_JOBS

if TYPE_CHECKING:
    from bench.measure import Bench

BIG, SMALL, DUE = 100_000, 10_000, 1_000
SCAN_ROUNDS = 5
EMAILS = int(os.environ.get("BENCH_OUTBOX_EMAILS", 2_000))  # more for a profile: ~1 s each at 2 000
BARE_CONCURRENCY = (MAX_JOBS, 32)

DUE_SQL = "SELECT next_due_at, id FROM plans WHERE next_due_at <= %s ORDER BY next_due_at, id LIMIT 500"


def _execute(database_url: str, *statements: str, params: Any = None) -> list[Any]:
    conn = psycopg2.connect(database_url)
    conn.autocommit = True
    rows: list[Any] = []
    with conn.cursor() as cur:
        for sql in statements:
            cur.execute(sql, params)
            if cur.description:
                rows = cur.fetchall()
    conn.close()
    return rows


def make_plans(database_url: str, total: int, due: int) -> None:
    """`total` owners with Active plans; the first `due` are past their grace period."""
    _execute(
        database_url,
        # Names and addresses are sealed (models/sealed_text.py): `seal_owner_contacts` adds them
        # for the owners the outbox bench emails; the scan reads neither.
        "INSERT INTO users (wallet_address) SELECT 'GBENCHPLAN' || g FROM generate_series(1, %(total)s) g",
        # Idle plans: checked in within the last 30 days, next stage spread over the coming weeks.
        # With #24's defaults for new plans: a 30-day deadline that releases (its rounds carry the
        # owner's warning stages too).
        "INSERT INTO plans (user_id, status, activated_at, last_check_in_at, check_in_due_at, next_due_at,"
        " verification_timeout_seconds, on_verification_timeout)"
        " SELECT u.id, 'Active', now() - interval '100 days', now() - mod(n, 30) * interval '1 day',"
        "  now() + (90 - mod(n, 30)) * interval '1 day', now() + (76 - mod(n, 30)) * interval '1 day',"
        "  30 * 86400, 'release'"
        " FROM (SELECT id, row_number() OVER (ORDER BY wallet_address) AS n FROM users"
        "       WHERE wallet_address LIKE 'GBENCHPLAN%%') u",
        "UPDATE plans SET last_check_in_at = now() - interval '120 days',"
        " check_in_due_at = now() - interval '30 days', stage_done = 4,"
        " next_due_at = now() - interval '16 days'"
        " WHERE id IN (SELECT id FROM plans ORDER BY id LIMIT %(due)s)",
        "VACUUM ANALYZE plans",
        "VACUUM ANALYZE users",
        params={"total": total, "due": due},
    )


def reset_due(database_url: str, due: int) -> None:
    """Put the due plans back as they were before a scan, and drop what the scan wrote."""
    _execute(
        database_url,
        "UPDATE plans SET status = 'Active', verification_round = 0, verification_started_at = NULL,"
        " verification_reason = NULL, round_threshold = NULL, deadline_stage_done = 0,"
        " next_due_at = now() - interval '16 days'"
        " WHERE id IN (SELECT id FROM plans ORDER BY id LIMIT %(due)s)",
        "TRUNCATE check_in_links, outbox, plan_transitions, activity",
        "VACUUM ANALYZE plans",
        params={"due": due},
    )


def make_guardians(database_url: str, due: int) -> None:
    """One accepted guardian per bench plan, its reconfirmation a year away; the first `due` of
    them due now (#24: the sweep must follow the due guardians, not all of them)."""
    _execute(
        database_url,
        # (Names and addresses are not opened by the sweep: placeholders stand for the sealed values.)
        "INSERT INTO guardians (user_id, name_sealed, email_sealed, wallet_address, accepted_at, invited_at,"
        " reconfirm_due_at)"
        " SELECT p.user_id, 'bench', 'bench', 'GBENCHGUARD' || row_number() OVER (ORDER BY p.id),"
        "  now() - interval '200 days', now() - interval '201 days',"
        "  now() + (1 + mod(row_number() OVER (ORDER BY p.id), 300)) * interval '1 day' FROM plans p",
        "VACUUM ANALYZE guardians",
    )
    reset_guardians(database_url, due)


def reset_guardians(database_url: str, due: int) -> None:
    _execute(
        database_url,
        "UPDATE guardians SET reconfirm_asked_at = NULL, reconfirm_due_at = now() - interval '1 hour'"
        " WHERE id IN (SELECT id FROM guardians ORDER BY id LIMIT %(due)s)",
        "TRUNCATE outbox CASCADE",
        "VACUUM ANALYZE guardians",
        params={"due": due},
    )


async def sweep_once(pool: db.Pool, database_url: str, due: int) -> float:
    reset_guardians(database_url, due)
    started = time.perf_counter()
    counts, _ = await reconfirmation.sweep(
        pool, now=datetime.now(UTC), interval=timedelta(days=365), grace=timedelta(days=30)
    )
    elapsed = time.perf_counter() - started
    if counts != {"asked": due}:
        raise RuntimeError(f"sweep did not ask exactly the due guardians: {counts}")
    return elapsed


def explain(database_url: str) -> str:
    rows = _execute(database_url, "EXPLAIN (ANALYZE, BUFFERS) " + DUE_SQL, params=(datetime.now(UTC),))
    return "\n".join(r[0] for r in rows)


async def scan_once(pool: db.Pool, database_url: str, due: int) -> float:
    reset_due(database_url, due)
    started = time.perf_counter()
    result = await scheduler.scan(
        pool, now=datetime.now(UTC), contract_configured=False, warning_seconds=86400
    )
    elapsed = time.perf_counter() - started
    if result["counts"] != {"verification_started": due}:
        raise RuntimeError(f"scan did not process exactly the due plans: {result['counts']}")
    return elapsed


def sibling_database(database_url: str, suffix: str) -> str:
    """A second migrated database next to the bench one (dropped by `drop_sibling`)."""
    name = psycopg2.extensions.parse_dsn(database_url)["dbname"] + suffix
    _execute(database_url, f'DROP DATABASE IF EXISTS "{name}"', f'CREATE DATABASE "{name}"')
    url = psycopg2.extensions.make_dsn(database_url, dbname=name)
    apply_migrations(url)
    return url


def drop_sibling(database_url: str, sibling_url: str) -> None:
    name = psycopg2.extensions.parse_dsn(sibling_url)["dbname"]
    _execute(database_url, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


async def bench_scan(database_url: str) -> dict[str, Any]:
    """100k plans in the bench database, 10k in a sibling; rounds alternate between the two so
    load from elsewhere on the machine falls on both alike."""
    small_url = sibling_database(database_url, "_small")
    try:
        _execute(database_url, "TRUNCATE users CASCADE")
        make_plans(database_url, BIG, DUE)
        make_plans(small_url, SMALL, DUE)
        reset_due(database_url, DUE)
        reset_due(small_url, DUE)
        big_plan, small_plan = explain(database_url), explain(small_url)  # with the due plans in place
        times: dict[str, list[float]] = {"big": [], "small": []}
        sweeps: dict[str, list[float]] = {"big": [], "small": []}
        pools = {"big": await db.create_pool(database_url, 10), "small": await db.create_pool(small_url, 10)}
        urls = {"big": database_url, "small": small_url}
        try:
            for _ in range(SCAN_ROUNDS):
                for size in ("big", "small"):
                    times[size].append(await scan_once(pools[size], urls[size], DUE))
            # The guardians' reconfirmation sweep (#24), over the same plans' guardians.
            for size in ("big", "small"):
                make_guardians(urls[size], DUE)
            for _ in range(SCAN_ROUNDS):
                for size in ("big", "small"):
                    sweeps[size].append(await sweep_once(pools[size], urls[size], DUE))
        finally:
            for pool in pools.values():
                pool.close()
                await pool.wait_closed()
    finally:
        drop_sibling(database_url, small_url)
    medians = {size: statistics.median(runs) for size, runs in times.items()}
    ratio = medians["big"] / medians["small"]
    for size, n in (("big", BIG), ("small", SMALL)):
        print(
            f"  lifecycle scan, {n:>7} plans, {DUE} due   {medians[size] * 1000:8.1f} ms"
            f"  ({DUE / medians[size]:.0f} plans/s; rounds {[round(t, 3) for t in times[size]]})",
            flush=True,
        )
    print(f"  lifecycle scan 100k / 10k time ratio {ratio:.2f} (target within 1.25)")
    swept = {size: statistics.median(runs) for size, runs in sweeps.items()}
    sweep_ratio = swept["big"] / swept["small"]
    for size, n in (("big", BIG), ("small", SMALL)):
        print(
            f"  reconfirmation sweep, {n:>7} guardians, {DUE} due   {swept[size] * 1000:8.1f} ms"
            f"  (rounds {[round(t, 3) for t in sweeps[size]]})",
            flush=True,
        )
    print(f"  reconfirmation sweep 100k / 10k time ratio {sweep_ratio:.2f} (target within 1.25)")
    print("  EXPLAIN (100k):\n    " + big_plan.replace("\n", "\n    "))
    print("  EXPLAIN (10k):\n    " + small_plan.replace("\n", "\n    "))
    return {
        "plans_100k": {"median_s": medians["big"], "rounds_s": times["big"]},
        "plans_10k": {"median_s": medians["small"], "rounds_s": times["small"]},
        "ratio": ratio,
        "sweep_100k": {"median_s": swept["big"], "rounds_s": sweeps["big"]},
        "sweep_10k": {"median_s": swept["small"], "rounds_s": sweeps["small"]},
        "sweep_ratio": sweep_ratio,
        "explain_100k": big_plan,
        "explain_10k": small_plan,
    }


def seal_owner_contacts(database_url: str, ring: KeyRing, count: int) -> None:
    """A sealed name and address (as the service writes them) for the owners of the first
    `count` plans that have none."""
    conn = psycopg2.connect(database_url)
    with conn, conn.cursor() as cur:
        cur.execute(
            "SELECT u.id::text, u.wallet_address FROM plans p JOIN users u ON u.id = p.user_id"
            " WHERE u.email_sealed IS NULL ORDER BY p.id LIMIT %s",
            (count,),
        )
        values = []
        for user_id, wallet in cur.fetchall():
            number = wallet.removeprefix("GBENCHPLAN")
            sealed = sealed_text.sealed_values(
                ring,
                table="users",
                row_id=user_id,
                values={"name": f"Owner {number}", "email": f"owner{number}@example.test"},
            )
            values.append((user_id, sealed["name_sealed"], sealed["email_sealed"], sealed["email_bidx"]))
        psycopg2.extras.execute_values(
            cur,
            "UPDATE users u SET name_sealed = v.n, email_sealed = v.e, email_bidx = v.b"
            " FROM (VALUES %s) AS v (id, n, e, b) WHERE u.id = v.id::uuid",
            values,
            page_size=1000,
        )
    conn.close()


def make_outbox(database_url: str, ring: KeyRing, count: int) -> list[str]:
    if _execute(database_url, "SELECT count(*) FROM plans")[0][0] < count:  # outbox bench alone
        make_plans(database_url, count, 0)
    seal_owner_contacts(database_url, ring, count)
    rows = _execute(
        database_url,
        "TRUNCATE check_in_links, outbox",
        "INSERT INTO outbox (kind, plan_id, recipient_type, recipient_id, context, next_attempt_at,"
        " created_at) SELECT 'check_in_reminder', p.id, 'owner', p.user_id,"
        " jsonb_build_object('dueAt', p.check_in_due_at, 'daysBefore', 3), now(), now()"
        " FROM plans p ORDER BY p.id LIMIT %(count)s RETURNING id::text",
        # As the scheduler writes them: each owner reminder carries a check-in link (#17).
        "INSERT INTO check_in_links (outbox_id, plan_id, created_at, expires_at)"
        " SELECT id, plan_id, now(), now() + interval '30 days' FROM outbox",
        params={"count": count},
    )
    return [r[0] for r in rows]


async def worker_rate(database_url: str, redis: ArqRedis, ids: list[str]) -> float:
    """Enqueue every row as the API would, time until none is pending (polled every 20 ms
    through the pending-rows partial index: a count(*) over the whole outbox every 20 ms was a
    tenth of a core of PostgreSQL's time taken from the worker), then check all were sent."""
    conn = psycopg2.connect(database_url)
    conn.autocommit = True
    cur = conn.cursor()

    def pending() -> bool:
        cur.execute("SELECT EXISTS (SELECT 1 FROM outbox WHERE status = 'pending')")
        return bool(cur.fetchone()[0])

    try:
        started = time.perf_counter()
        await outbox.enqueue(redis, row_ids=ids)
        while pending():
            if time.perf_counter() - started > 300:
                raise RuntimeError(f"the worker left emails pending after 300 s (of {len(ids)})")
            await asyncio.sleep(0.02)
        elapsed = time.perf_counter() - started
        cur.execute("SELECT count(*) FROM outbox WHERE status = 'sent'")
        sent = int(cur.fetchone()[0])
        if sent != len(ids):
            raise RuntimeError(f"the worker sent {sent} of {len(ids)} emails")
        return len(ids) / elapsed
    finally:
        conn.close()


async def bodies(
    database_url: str, settings: Settings, ring: KeyRing, ids: list[str]
) -> list[tuple[str, bytes]]:
    """The very requests the worker sends (rendered the same way), for the bare client."""
    pool = await db.create_pool(database_url, 4)
    out = []
    try:
        for row_id in ids:
            row = await deliveries.load(pool, ring, row_id=row_id)
            assert row is not None
            message = emails.render(
                d=row,
                ring=ring,
                base_url=settings.public_base_url,
                app_url=settings.public_app_url,
                operator_name=settings.operator_name,
                operator_contact=settings.operator_contact,
            )
            out.append((row_id, mailer.body(settings, message)))
    finally:
        pool.close()
        await pool.wait_closed()
    return out


async def bare_rate(settings: Settings, requests: list[tuple[str, bytes]], concurrency: int) -> float:
    queue: asyncio.Queue[tuple[str, bytes]] = asyncio.Queue()
    for item in requests:
        queue.put_nowait(item)

    async def post_all(session: aiohttp.ClientSession) -> None:
        while not queue.empty():
            row_id, data = queue.get_nowait()
            headers = {
                "Authorization": f"Bearer {settings.email_provider_api_key}",
                "Content-Type": "application/json",
                "Idempotency-Key": row_id,
            }
            async with session.post(settings.email_provider_url, data=data, headers=headers) as resp:
                await resp.read()
                if resp.status >= 300:
                    raise RuntimeError(f"capture server answered {resp.status}")

    async with mailer.open_session() as session:
        started = time.perf_counter()
        await asyncio.gather(*(post_all(session) for _ in range(concurrency)))
        return len(requests) / (time.perf_counter() - started)


async def bench_outbox(
    database_url: str, redis_url: str, settings: Settings, ring: KeyRing
) -> dict[str, Any]:
    redis = await connect(redis_url, settings.arq_queue_name)
    worker: list[float] = []
    bare: dict[int, list[float]] = {c: [] for c in BARE_CONCURRENCY}
    try:
        for _ in range(int(os.environ.get("BENCH_OUTBOX_ROUNDS", SCAN_ROUNDS))):
            ids = make_outbox(database_url, ring, EMAILS)
            same = await bodies(database_url, settings, ring, ids)  # rendered while still pending
            worker.append(await worker_rate(database_url, redis, ids))
            for concurrency in BARE_CONCURRENCY:
                bare[concurrency].append(await bare_rate(settings, same, concurrency))
    finally:
        await redis.aclose()
    worker_per_s = statistics.median(worker)
    bare_by = {c: statistics.median(r) for c, r in bare.items()}
    bare_per_s = max(bare_by.values())
    result: dict[str, Any] = {
        "emails": EMAILS,
        "worker_per_s": worker_per_s,
        "bare_per_s": bare_per_s,
        "bare_per_s_by_concurrency": bare_by,
        "ratio": worker_per_s / bare_per_s,
        "rounds_worker": [round(r) for r in worker],
        "rounds_bare": {c: [round(x) for x in r] for c, r in bare.items()},
    }
    print(
        f"  outbox delivery ({EMAILS} emails)        worker {result['worker_per_s']:7.0f}/s"
        f"  bare client {result['bare_per_s']:7.0f}/s (best of "
        + ", ".join(f"{c}: {v:.0f}/s" for c, v in bare_by.items())
        + f")  ratio {result['ratio']:.2f} (target >= 0.5)"
        f"  rounds {result['rounds_worker']} / {result['rounds_bare']}",
        flush=True,
    )
    return result


async def run(bench: Bench, settings: Settings) -> dict[str, Any]:
    """Both measurements; `settings` are the service's (database, Redis, email provider)."""
    print("lifecycle:", flush=True)
    parts = os.environ.get("BENCH_LIFECYCLE_PARTS", "scan,outbox").split(",")
    scan = await bench_scan(bench.database_url) if "scan" in parts else None
    if "outbox" not in parts:
        return {"scan": scan, "outbox": None}
    delivery = await bench_outbox(bench.database_url, settings.redis_url, settings, settings.key_ring)
    return {"scan": scan, "outbox": delivery}
