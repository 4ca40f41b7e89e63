"""Archive throughput: encrypted upload/download through the API and worker vs plain put/get.

For each file size (100 MiB; 1 GiB with --big) and in the same run:

- service upload: multipart POST /api/archive (with --archive-page: the owner's page form,
  POST /plan/archive, signed in by the page's cookie), then poll GET /api/archive/{id} until it is
  `available` (the API sealed it into storage, the worker verified it): size / that time;
- service download: GET /api/archive/{id}/download, decrypting, read to the end and hashed;
- plain put/get: the same multipart body to the ceiling, which streams the `file` part into
  the same storage backend (`Storage.put_stream`), and streams it back (`get_stream`);
- raw AES-GCM: core.files.crypto StreamEncryptor/StreamDecryptor over 256 MiB in memory.

Peak RSS (VmHWM) of the API and the worker is reset before each size and read after it, so a
flat peak across sizes shows memory does not grow with the file.
"""

from __future__ import annotations

import asyncio
import hashlib
import html as markup
import os
import re
import statistics
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import aiohttp

from bench import loadgen, plan_page
from core.files.crypto import StreamDecryptor, StreamEncryptor, new_data_key

if TYPE_CHECKING:
    from bench.measure import Bench

MiB = 1024 * 1024
BLOCK = MiB
RAW_AES_BYTES = 256 * MiB
POLL_INTERVAL = 0.01  # the measuring client must not add much to the time to `available`
PROCESSING_TIMEOUT = 1800
KEY = new_data_key()
TIMEOUT = aiohttp.ClientTimeout(total=PROCESSING_TIMEOUT, sock_read=300)


def make_file(path: Path, size: int) -> str:
    """Write `size` random bytes to `path` in 1 MiB blocks; return their SHA-256."""
    digest = hashlib.sha256()
    with path.open("wb") as fh:
        remaining = size
        while remaining:
            block = os.urandom(min(BLOCK, remaining))
            digest.update(block)
            fh.write(block)
            remaining -= len(block)
    return digest.hexdigest()


def _encrypt(block: bytes, total: int, keep: bool) -> list[bytes]:
    encryptor = StreamEncryptor(KEY, "bench-object")
    sealed: list[bytes] = []
    for offset in range(0, total, BLOCK):
        start = offset % len(block)
        out = encryptor.update(block[start : start + BLOCK])
        if keep:
            sealed.append(out)
    sealed.append(encryptor.finalize())
    return sealed


def raw_aes_gcm(total: int = RAW_AES_BYTES) -> dict[str, float]:
    """MiB/s of StreamEncryptor and StreamDecryptor alone, fed 1 MiB chunks from memory.

    The timed encryption discards its output (as a streaming writer would), after an untimed
    warm-up pass, so page faults of a fresh 256 MiB buffer are not counted as cipher time.
    """
    block = os.urandom(16 * MiB)
    _encrypt(block, 32 * MiB, keep=False)
    started = time.perf_counter()
    _encrypt(block, total, keep=False)
    encrypt_s = time.perf_counter() - started
    sealed = _encrypt(block, total, keep=True)
    decryptor = StreamDecryptor(KEY, "bench-object")
    started = time.perf_counter()
    for piece in sealed:
        decryptor.update(piece)
    decryptor.finalize()
    decrypt_s = time.perf_counter() - started
    return {
        "bytes": total,
        "encrypt_mib_s": total / MiB / encrypt_s,
        "decrypt_mib_s": total / MiB / decrypt_s,
    }


_FORM_TOKEN = re.compile(r'name="formToken" value="([^"]*)"')


def _form(path: Path, fh: Any, token: str | None = None) -> aiohttp.FormData:
    form = aiohttp.FormData()
    if token is not None:
        form.add_field("formToken", token)
    form.add_field("type", "document")
    form.add_field("category", "legal")
    form.add_field("title", f"bench {path.name}")
    form.add_field("file", fh, filename=path.name, content_type="application/octet-stream")
    return form


async def _post_file(session: aiohttp.ClientSession, url: str, path: Path, headers: dict[str, str]) -> Any:
    with path.open("rb") as fh:
        async with session.post(url, data=_form(path, fh), headers=headers) as resp:
            body = await resp.json()
            if resp.status not in (201, 202):
                raise RuntimeError(f"upload to {url} answered {resp.status}: {body}")
            return body


class PageForm:
    """The owner's page form (POST /plan/archive): its session cookie and form token, and the
    headers of a browser on PUBLIC_BASE_URL."""

    def __init__(self, base: str, cookie: str, token: str) -> None:
        self.base, self.token = base, token
        self.headers = {**plan_page.as_the_service(base), "Cookie": f"{plan_page.SESSION_COOKIE}={cookie}"}

    @classmethod
    async def open(cls, session: aiohttp.ClientSession, base: str, keypair: Any) -> PageForm:
        cookie = await plan_page.page_session(base, keypair)
        page = cls(base, cookie, "")
        async with session.get(f"{base}/plan/archive", headers=page.headers, allow_redirects=False) as resp:
            found = _FORM_TOKEN.search(await resp.text())
        if resp.status != 200 or found is None:
            raise RuntimeError(f"/plan/archive answered {resp.status} with no upload form")
        page.token = markup.unescape(found.group(1))
        return page

    async def upload(self, session: aiohttp.ClientSession, path: Path, api_headers: dict[str, str]) -> Any:
        """The page's upload (303 to the list), then the item it made, from the JSON list."""
        with path.open("rb") as fh:
            async with session.post(
                f"{self.base}/plan/archive",
                data=_form(path, fh, self.token),
                headers=self.headers,
                allow_redirects=False,
            ) as resp:
                if resp.status != 303:
                    raise RuntimeError(f"the page's upload answered {resp.status}: {await resp.text()}")
        async with session.get(f"{self.base}/api/archive?limit=1", headers=api_headers) as resp:
            return (await resp.json())[0]


async def _get_file(session: aiohttp.ClientSession, url: str, headers: dict[str, str]) -> tuple[int, str]:
    digest = hashlib.sha256()
    size = 0
    async with session.get(url, headers=headers) as resp:
        if resp.status != 200:
            raise RuntimeError(f"download {url} answered {resp.status}: {await resp.text()}")
        async for chunk in resp.content.iter_chunked(256 * 1024):
            digest.update(chunk)
            size += len(chunk)
    return size, digest.hexdigest()


async def _wait_available(
    session: aiohttp.ClientSession, base: str, item_id: str, headers: dict[str, str]
) -> None:
    """Poll GET /api/archive/{id} until the worker has stored the item."""
    deadline = time.monotonic() + PROCESSING_TIMEOUT
    while time.monotonic() < deadline:
        async with session.get(f"{base}/api/archive/{item_id}", headers=headers) as resp:
            item = await resp.json()
        if item.get("status") == "available":
            return
        if item.get("status") == "failed" or resp.status != 200:
            raise RuntimeError(f"archive item {item_id}: {resp.status} {item}")
        await asyncio.sleep(POLL_INTERVAL)
    raise RuntimeError(f"archive item {item_id} not available after {PROCESSING_TIMEOUT}s")


async def service_round(
    bench: Bench,
    session: aiohttp.ClientSession,
    path: Path,
    size: int,
    expected: str,
    headers: dict[str, str],
    page: PageForm | None = None,
) -> dict[str, float]:
    """One encrypted upload (until `available`) and download through the API and worker.

    Also the CPU seconds the API and the worker spent in each phase.
    """
    api, worker = bench.api, bench.worker
    assert worker is not None
    base = api.base_url
    cpu0, started = (api.cpu_seconds(), worker.cpu_seconds()), time.perf_counter()
    if page is not None:
        item = await page.upload(session, path, headers)
    else:
        item = await _post_file(session, f"{base}/api/archive", path, headers)
    accepted = time.perf_counter()
    await _wait_available(session, base, item["id"], headers)
    cpu1, stored = (api.cpu_seconds(), worker.cpu_seconds()), time.perf_counter()
    got, digest = await _get_file(session, f"{base}/api/archive/{item['id']}/download", headers)
    cpu2, downloaded = api.cpu_seconds(), time.perf_counter()
    if (got, digest) != (size, expected):
        raise RuntimeError("service download does not match the uploaded file")
    async with session.delete(f"{base}/api/archive/{item['id']}", headers=headers) as resp:
        await resp.read()
    return {
        "upload_s": stored - started,
        "upload_http_s": accepted - started,
        "upload_worker_s": stored - accepted,
        "download_s": downloaded - stored,
        "upload_api_cpu_s": cpu1[0] - cpu0[0],
        "upload_worker_cpu_s": cpu1[1] - cpu0[1],
        "download_api_cpu_s": cpu2 - cpu1[0],
    }


async def plain_round(
    bench: Bench, session: aiohttp.ClientSession, path: Path, size: int, expected: str
) -> dict[str, float]:
    """The same bytes put to and got from the same storage through the bare ceiling app."""
    ceiling = bench.ceiling
    base = ceiling.base_url
    cpu0, started = ceiling.cpu_seconds(), time.perf_counter()
    stored = await _post_file(session, f"{base}/upload", path, {})
    cpu1, put_done = ceiling.cpu_seconds(), time.perf_counter()
    got, digest = await _get_file(session, f"{base}/download/{stored['key']}", {})
    cpu2, get_done = ceiling.cpu_seconds(), time.perf_counter()
    if (got, digest) != (size, expected):
        raise RuntimeError("plain download does not match the uploaded file")
    async with session.delete(f"{base}/objects/{stored['key']}") as resp:
        await resp.read()
    return {
        "upload_s": put_done - started,
        "download_s": get_done - put_done,
        "upload_cpu_s": cpu1 - cpu0,
        "download_cpu_s": cpu2 - cpu1,
    }


def _cpu_s_per_gib(size: int, seconds: list[float]) -> float:
    return statistics.median(seconds) * 1024 * MiB / size


def _mib_s(size: int, seconds: list[float]) -> float:
    return size / MiB / statistics.median(seconds)


def _cpu_per_gib(
    size: int, service_runs: list[dict[str, float]], plain_runs: list[dict[str, float]]
) -> dict[str, float]:
    return {
        "upload_api": _cpu_s_per_gib(size, [r["upload_api_cpu_s"] for r in service_runs]),
        "upload_worker": _cpu_s_per_gib(size, [r["upload_worker_cpu_s"] for r in service_runs]),
        "download_api": _cpu_s_per_gib(size, [r["download_api_cpu_s"] for r in service_runs]),
        "plain_put": _cpu_s_per_gib(size, [r["upload_cpu_s"] for r in plain_runs]),
        "plain_get": _cpu_s_per_gib(size, [r["download_cpu_s"] for r in plain_runs]),
    }


async def run_size(
    bench: Bench,
    session: aiohttp.ClientSession,
    workdir: Path,
    size: int,
    repeat: int,
    headers: dict[str, str],
    page: PageForm | None = None,
) -> dict[str, Any]:
    path = workdir / f"bench-{size // MiB}MiB.bin"
    expected = await asyncio.to_thread(make_file, path, size)
    assert bench.worker is not None
    for server in (bench.api, bench.worker):
        server.reset_peak()
    before = {s.name: s.status()["VmRSS"] for s in (bench.api, bench.worker)}
    service_runs, plain_runs = [], []
    try:
        for _ in range(repeat):
            plain_runs.append(await plain_round(bench, session, path, size, expected))
            service_runs.append(await service_round(bench, session, path, size, expected, headers, page))
    finally:
        path.unlink(missing_ok=True)
    peaks = {s.name: s.status()["VmHWM"] for s in (bench.api, bench.worker)}
    row: dict[str, Any] = {
        "size_mib": size // MiB,
        "repeat": repeat,
        "service_upload_mib_s": _mib_s(size, [r["upload_s"] for r in service_runs]),
        "service_download_mib_s": _mib_s(size, [r["download_s"] for r in service_runs]),
        "plain_put_mib_s": _mib_s(size, [r["upload_s"] for r in plain_runs]),
        "plain_get_mib_s": _mib_s(size, [r["download_s"] for r in plain_runs]),
        "service_upload_http_s": statistics.median(r["upload_http_s"] for r in service_runs),
        "service_upload_worker_s": statistics.median(r["upload_worker_s"] for r in service_runs),
        "rss_before_mib": {k: v / 1024 for k, v in before.items()},
        "peak_rss_mib": {k: v / 1024 for k, v in peaks.items()},
        "runs": {"service": service_runs, "plain": plain_runs},
    }
    row["server_cpu_s_per_gib"] = _cpu_per_gib(size, service_runs, plain_runs)
    row["upload_ratio"] = row["service_upload_mib_s"] / row["plain_put_mib_s"]
    row["download_ratio"] = row["service_download_mib_s"] / row["plain_get_mib_s"]
    print(
        f"  archive {row['size_mib']} MiB: upload {row['service_upload_mib_s']:.1f} MiB/s"
        f" (plain {row['plain_put_mib_s']:.1f}), download {row['service_download_mib_s']:.1f} MiB/s"
        f" (plain {row['plain_get_mib_s']:.1f}); peak RSS api {peaks['service'] / 1024:.0f} MiB,"
        f" worker {peaks['worker'] / 1024:.0f} MiB",
        flush=True,
    )
    return row


async def run(bench: Bench, workdir: Path, storage: str) -> dict[str, Any]:
    """Every archive measurement; the API must already serve /api/archive."""
    aes = await asyncio.to_thread(raw_aes_gcm)
    print(
        f"  raw AES-GCM (StreamEncryptor, 256 MiB in memory): encrypt {aes['encrypt_mib_s']:.0f} MiB/s,"
        f" decrypt {aes['decrypt_mib_s']:.0f} MiB/s",
        flush=True,
    )
    sizes = [(bench.args.size_mib * MiB, bench.args.rounds)]
    if bench.args.big:
        sizes.append((1024 * MiB, 1))
    rows = []
    async with aiohttp.ClientSession(timeout=TIMEOUT) as session:
        async with session.get(f"{bench.api.base_url}/api/archive") as resp:
            if resp.status == 404:
                print("  archive: /api/archive is not served by this build; skipped", flush=True)
                return {"raw_aes_gcm": aes, "sizes": [], "skipped": "no /api/archive route"}
        keypair = loadgen.wallets(1)[0]
        owner = await loadgen.sign_in(session, bench.api.base_url, keypair)
        headers = {"Authorization": f"Bearer {owner['token']}"}
        via_page = getattr(bench.args, "archive_page", False)
        page = await PageForm.open(session, bench.api.base_url, keypair) if via_page else None
        for size, repeat in sizes:
            rows.append(await run_size(bench, session, workdir, size, repeat, headers, page))
    return {"raw_aes_gcm": aes, "sizes": rows, "storage": storage, "via": "page" if via_page else "api"}


def print_table(results: dict[str, Any]) -> None:
    aes = results["raw_aes_gcm"]
    print(
        f"\nraw AES-GCM: encrypt {aes['encrypt_mib_s']:.0f} MiB/s, decrypt {aes['decrypt_mib_s']:.0f} MiB/s"
    )
    if not results["sizes"]:
        print(f"archive: {results.get('skipped', 'not run')}")
        return
    header = (
        f"{'archive':<9} {'up MiB/s':>8} {'plain put':>9} {'ratio':>5} {'202 s':>6} {'worker s':>8}"
        f" {'down MiB/s':>10} {'plain get':>9} {'ratio':>5} {'API RSS':>13} {'worker RSS':>11}"
    )
    print(header)
    print("-" * len(header))
    for row in results["sizes"]:
        size = f"{row['size_mib']} MiB"
        peak, before = row["peak_rss_mib"], row["rss_before_mib"]
        api_rss = f"{peak['service']:.0f} ({before['service']:.0f})"
        worker_rss = f"{peak['worker']:.0f} ({before['worker']:.0f})"
        print(
            f"{size:<9} {row['service_upload_mib_s']:>8.1f} {row['plain_put_mib_s']:>9.1f}"
            f" {row['upload_ratio']:>5.2f} {row['service_upload_http_s']:>6.2f}"
            f" {row['service_upload_worker_s']:>8.2f} {row['service_download_mib_s']:>10.1f}"
            f" {row['plain_get_mib_s']:>9.1f} {row['download_ratio']:>5.2f}"
            f" {api_rss:>13} {worker_rss:>11}"
        )
    for row in results["sizes"]:
        cpu = row["server_cpu_s_per_gib"]
        print(
            f"server CPU s per GiB, {row['size_mib']} MiB: upload API {cpu['upload_api']:.2f} + worker"
            f" {cpu['upload_worker']:.2f} (plain put {cpu['plain_put']:.2f}); download API"
            f" {cpu['download_api']:.2f} (plain get {cpu['plain_get']:.2f})"
        )
    print(
        "up = POST until `available` (the API encrypts into storage, then the worker verifies);"
        " 202 s / worker s = its two parts (median);\nRSS = peak MiB over all runs of that size, reset"
        " before them (RSS before the runs in brackets)"
    )
