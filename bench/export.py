"""The owner's export (`GET /api/legacy/export`): memory stays flat for a large archive.

One owner, one `--export-mib` file (default 1 GiB) uploaded through the API and verified by the
worker. Then, in the same run:

- the API's RSS (`VmRSS`) just before the export is the baseline; its peak (`VmHWM`, reset
  with `clear_refs` first) over the whole export is read after it: the growth is what a 1 GiB
  export costs in memory;
- the export is read to the end and saved; the zip's manifest must list the file with the
  uploaded SHA-256 (the member is checked against it too);
- the ceiling: a plain get of the same number of bytes from the same storage
  (`Storage.get_stream` through bench/ceiling.py), for the throughput ratio.

One export per run (the route allows 3 an hour per account), so this is a short run.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import time
import zipfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

import aiohttp

from bench import archive, loadgen

if TYPE_CHECKING:
    from bench.measure import Bench

MiB = 1024 * 1024


async def _save(session: aiohttp.ClientSession, url: str, headers: dict[str, str], dest: Path) -> int:
    size = 0
    async with session.get(url, headers=headers) as resp:
        if resp.status != 200:
            raise RuntimeError(f"export answered {resp.status}: {await resp.text()}")
        with dest.open("wb") as fh:
            async for chunk in resp.content.iter_chunked(256 * 1024):
                fh.write(chunk)
                size += len(chunk)
    return size


def _check_zip(path: Path, name: str, expected: str) -> None:
    with zipfile.ZipFile(path) as zf:
        manifest = json.loads(zf.read("manifest.json"))
        listed = {f["path"]: f["sha256"] for f in manifest["files"]}
        if listed.get(f"archive/{name}") != expected:
            raise RuntimeError(f"the export's manifest does not list archive/{name} with its hash")
        digest = hashlib.sha256()
        with zf.open(f"archive/{name}") as member:
            while block := member.read(MiB):
                digest.update(block)
        if digest.hexdigest() != expected:
            raise RuntimeError("the exported file does not match the upload")


async def run(bench: Bench, workdir: Path) -> dict[str, Any]:
    size = bench.args.export_mib * MiB
    api = bench.api
    base = api.base_url
    source = workdir / "export-source.bin"
    expected = await asyncio.to_thread(archive.make_file, source, size)
    saved = workdir / "export.zip"
    async with aiohttp.ClientSession(timeout=archive.TIMEOUT) as session:
        owner = await loadgen.sign_in(session, base, loadgen.wallets(1)[0])
        headers = {"Authorization": f"Bearer {owner['token']}"}
        item = await archive._post_file(session, f"{base}/api/archive", source, headers)
        await archive._wait_available(session, base, item["id"], headers)
        stored = await archive._post_file(session, f"{bench.ceiling.base_url}/upload", source, {})
        source.unlink()

        api.reset_peak()
        baseline = api.status()["VmRSS"]
        cpu0, started = api.cpu_seconds(), time.perf_counter()
        exported = await _save(session, f"{base}/api/legacy/export", headers, saved)
        export_s, export_cpu = time.perf_counter() - started, api.cpu_seconds() - cpu0
        peak = api.status()["VmHWM"]

        started = time.perf_counter()
        got, _ = await archive._get_file(session, f"{bench.ceiling.base_url}/download/{stored['key']}", {})
        plain_s = time.perf_counter() - started
        if got != size:
            raise RuntimeError("plain get returned the wrong size")
    await asyncio.to_thread(_check_zip, saved, source.name, expected)
    saved.unlink()
    row = {
        "file_mib": size // MiB,
        "zip_mib": exported / MiB,
        "rss_baseline_mib": baseline / 1024,
        "rss_peak_mib": peak / 1024,
        "rss_growth_mib": (peak - baseline) / 1024,
        "export_mib_s": size / MiB / export_s,
        "export_api_cpu_s": export_cpu,
        "plain_get_mib_s": size / MiB / plain_s,
    }
    row["ratio"] = row["export_mib_s"] / row["plain_get_mib_s"]
    print(
        f"  export of a {row['file_mib']} MiB archive: API RSS {row['rss_baseline_mib']:.0f} MiB before,"
        f" peak {row['rss_peak_mib']:.0f} MiB (+{row['rss_growth_mib']:.1f}); {row['export_mib_s']:.0f} MiB/s"
        f" vs plain get {row['plain_get_mib_s']:.0f} MiB/s (ratio {row['ratio']:.2f});"
        f" API CPU {row['export_api_cpu_s']:.1f} s",
        flush=True,
    )
    return row
