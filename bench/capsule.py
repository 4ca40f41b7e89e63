"""The capsule: GET /api/claim/:token against the ceiling, random access, and download speed.

Set up through the API (one owner, one beneficiary at 100 %, MESSAGES messages to everyone
opening at release, DOCUMENTS small documents, one `--size-mib` file), verified by the real
worker; then the plan is marked `Released` in SQL (the lifecycle's guardian approvals and
cancel window are not what is measured here). Measured in the same run:

- `GET /api/claim/:token` under load vs the ceiling's `/capsule/:token`, which runs the same
  three queries (imported from models/claim/capsules.py) and dumps the rows with `json.dumps`;
- time to first byte of `Range: bytes=0-1048575` vs `Range: bytes=-1048576` of the big file
  (RANGE_SAMPLES of each, alternating; medians), on the owner's download and the capsule's;
  random access means the last MiB costs about what the first does, not a scan from the start;
- the capsule's full download of the big file vs a plain get of the same bytes (ceiling).
"""

from __future__ import annotations

import asyncio
import hashlib
import statistics
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import aiohttp
import psycopg2

from bench import loadgen
from bench.archive import TIMEOUT, _get_file, _post_file, _wait_available, make_file, plain_round

if TYPE_CHECKING:
    from bench.measure import Bench

MiB = 1024 * 1024
MESSAGES = 100
DOCUMENTS = 50
ASSETS = 50
RANGE_SAMPLES = 50
SCENARIO = f"GET /api/claim/:token ({MESSAGES}m, {DOCUMENTS}d, {ASSETS}a)"
HEIR_EMAIL = "heir@example.com"


async def _json(resp: aiohttp.ClientResponse, expect: int) -> Any:
    body = await resp.json()
    if resp.status != expect:
        raise RuntimeError(f"{resp.method} {resp.url.path} answered {resp.status}: {body}")
    return body


async def _small_document(session: aiohttp.ClientSession, base: str, n: int, headers: dict[str, str]) -> str:
    form = aiohttp.FormData()
    form.add_field("title", f"Document {n}")
    form.add_field("category", "legal")
    form.add_field(
        "file", f"document {n}\n".encode() * 40, filename=f"doc-{n}.txt", content_type="text/plain"
    )
    async with session.post(f"{base}/api/archive", data=form, headers=headers) as resp:
        return str((await _json(resp, 202))["id"])


def release(database_url: str, owner_id: str) -> None:
    """Mark the owner's plan Released (setup only: the lifecycle is benchmarked elsewhere)."""
    conn = psycopg2.connect(database_url)
    with conn, conn.cursor() as cur:
        cur.execute(
            "INSERT INTO plans (user_id, status, approved_at, released_at)"
            " VALUES (%s, 'Released', now(), now()) ON CONFLICT (user_id)"
            " DO UPDATE SET status = 'Released', approved_at = now(), released_at = now()",
            (owner_id,),
        )
    conn.close()


async def setup(bench: Bench, session: aiohttp.ClientSession, big: Path) -> dict[str, Any]:
    base = bench.api.base_url
    owner = await loadgen.sign_in(session, base, loadgen.wallets(2)[1])
    headers = {"Authorization": f"Bearer {owner['token']}"}
    heir = {
        "name": "Bench Heir",
        "relationship": "child",
        "email": "heir@example.com",
        "allocationPercentage": 100,
    }
    async with session.post(f"{base}/api/beneficiaries", json=heir, headers=headers) as resp:
        beneficiary = await _json(resp, 201)
    for n in range(MESSAGES):
        body = {
            "title": f"Letter {n}",
            "content": f"Letter number {n}. " * 40,
            "releaseRule": {"kind": "on_release", "value": None},
            "audience": {"all": True},
        }
        async with session.post(f"{base}/api/messages", json=body, headers=headers) as resp:
            await _json(resp, 201)
    for n in range(ASSETS):
        body = {"label": f"Asset {n}", "amount": f"{n}.50", "assetCode": "XLM", "description": "In the safe"}
        async with session.post(f"{base}/api/assets", json=body, headers=headers) as resp:
            await _json(resp, 201)
    ids = [await _small_document(session, base, n, headers) for n in range(DOCUMENTS)]
    big_item = await _post_file(session, f"{base}/api/archive", big, headers)
    for item_id in [*ids, big_item["id"]]:
        await _wait_available(session, base, item_id, headers)
    release(bench.database_url, owner["user"]["id"])
    token = beneficiary["claimToken"]
    async with session.get(f"{base}/api/claim/{token}") as resp:
        capsule = await _json(resp, 200)
    shown = (len(capsule["messages"]), len(capsule["documents"]), len(capsule["assets"]))
    if shown != (MESSAGES, DOCUMENTS + 1, ASSETS):
        raise RuntimeError("the capsule does not show what was set up")
    return {"token": token, "headers": headers, "big_id": big_item["id"]}


async def ttfb(
    session: aiohttp.ClientSession, url: str, headers: dict[str, str], expect: bytes
) -> dict[str, float]:
    """Seconds to the first body byte and to the last, for one ranged GET; checks the bytes."""
    started = time.perf_counter()
    async with session.get(url, headers=headers) as resp:
        if resp.status != 206:
            raise RuntimeError(f"range GET {url} answered {resp.status}: {await resp.text()}")
        first = await resp.content.readany()
        first_at = time.perf_counter()
        rest = await resp.content.read()
        done = time.perf_counter()
    if hashlib.sha256(first + rest).digest() != expect:
        raise RuntimeError(f"range GET {url} returned the wrong bytes")
    return {"ttfb_s": first_at - started, "total_s": done - started}


async def range_ttfb(
    session: aiohttp.ClientSession, url: str, headers: dict[str, str], big: Path, size: int
) -> dict[str, Any]:
    with big.open("rb") as fh:
        head = hashlib.sha256(fh.read(MiB)).digest()
        fh.seek(size - MiB)
        tail = hashlib.sha256(fh.read(MiB)).digest()
    first: list[dict[str, float]] = []
    last: list[dict[str, float]] = []
    for _ in range(RANGE_SAMPLES):
        first.append(await ttfb(session, url, {**headers, "Range": f"bytes=0-{MiB - 1}"}, head))
        last.append(await ttfb(session, url, {**headers, "Range": f"bytes=-{MiB}"}, tail))
    row = {
        "first_mib_ttfb_ms": 1000 * statistics.median(r["ttfb_s"] for r in first),
        "last_mib_ttfb_ms": 1000 * statistics.median(r["ttfb_s"] for r in last),
        "first_mib_total_ms": 1000 * statistics.median(r["total_s"] for r in first),
        "last_mib_total_ms": 1000 * statistics.median(r["total_s"] for r in last),
    }
    row["ttfb_ratio_last_over_first"] = row["last_mib_ttfb_ms"] / row["first_mib_ttfb_ms"]
    return row


async def resend_load(bench: Bench) -> dict[str, Any]:
    """POST /api/claim/resend under the bench's connections (32 by default): an address that
    matches the released plan's heir, then unknown addresses, one timed run each. The answer is
    the same 202 either way; the two p99s show whether the request path differs by a match."""
    rows: dict[str, Any] = {}
    for name, addresses in (
        ("matched", [HEIR_EMAIL]),
        ("unmatched", [f"nobody{n}@example.com" for n in range(64)]),
    ):
        requests = [
            (
                "POST",
                "/api/claim/resend",
                {"Content-Type": "application/json"},
                f'{{"email": "{a}"}}'.encode(),
            )
            for a in addresses
        ]
        summary = await bench.http_load(bench.api, requests, 202)(bench.args.duration)
        rows[name] = {k: summary[k] for k in ("rps", "p50_ms", "p99_ms", "errors", "requests")}
        print(
            f"  POST /api/claim/resend ({name}, {bench.args.connections} connections)"
            f" {summary['rps']:9.1f} req/s  p50 {summary['p50_ms']:7.2f} ms  p99 {summary['p99_ms']:7.2f} ms"
            f"  errors {summary['errors']}",
            flush=True,
        )
    return rows


async def run(bench: Bench, workdir: Path) -> dict[str, Any]:
    size = bench.args.size_mib * MiB
    big = workdir / f"capsule-{bench.args.size_mib}MiB.bin"
    expected = await asyncio.to_thread(make_file, big, size)
    results: dict[str, Any] = {"size_mib": bench.args.size_mib}
    try:
        async with aiohttp.ClientSession(timeout=TIMEOUT) as session:
            ctx = await setup(bench, session, big)
            token = ctx["token"]
            await bench.compare(
                SCENARIO,
                bench.http_load(bench.api, [("GET", f"/api/claim/{token}", {}, None)], 200),
                bench.http_load(bench.ceiling, [("GET", f"/capsule/{token}", {}, None)], 200),
            )
            results["resend"] = await resend_load(bench)
            base = bench.api.base_url
            for name, url, headers in (
                ("capsule", f"{base}/api/claim/{token}/documents/{ctx['big_id']}/download", {}),
                ("owner", f"{base}/api/archive/{ctx['big_id']}/download", ctx["headers"]),
            ):
                row = await range_ttfb(session, url, headers, big, size)
                results[f"range_{name}"] = row
                print(
                    f"  range TTFB ({name} download, {bench.args.size_mib} MiB): first MiB"
                    f" {row['first_mib_ttfb_ms']:.2f} ms, last MiB {row['last_mib_ttfb_ms']:.2f} ms"
                    f" (ratio {row['ttfb_ratio_last_over_first']:.2f}; whole MiB"
                    f" {row['first_mib_total_ms']:.1f} / {row['last_mib_total_ms']:.1f} ms)",
                    flush=True,
                )
            downloads, plains = [], []
            url = f"{base}/api/claim/{token}/documents/{ctx['big_id']}/download"
            for _ in range(bench.args.rounds):
                plains.append((await plain_round(bench, session, big, size, expected))["download_s"])
                started = time.perf_counter()
                if await _get_file(session, url, {}) != (size, expected):
                    raise RuntimeError("capsule download does not match the uploaded file")
                downloads.append(time.perf_counter() - started)
            results["download"] = {
                "capsule_mib_s": size / MiB / statistics.median(downloads),
                "plain_get_mib_s": size / MiB / statistics.median(plains),
            }
            results["download"]["ratio"] = (
                results["download"]["capsule_mib_s"] / results["download"]["plain_get_mib_s"]
            )
            got = results["download"]
            print(
                f"  capsule download {got['capsule_mib_s']:.1f} MiB/s vs plain get"
                f" {got['plain_get_mib_s']:.1f} MiB/s (ratio {got['ratio']:.2f})",
                flush=True,
            )
    finally:
        big.unlink(missing_ok=True)
    return results
