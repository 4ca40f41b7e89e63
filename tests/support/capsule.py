"""The heir's side over HTTP, as several suites read it: a capsule page fetched with its privacy
headers and no-script CSP checked and its words read for machine words, and a zip export (the
owner's or the heir's) opened with its CRCs and its manifest's sizes and hashes checked.

The capsule, check-in, asset, export and zip-words suites all read pages and zips this way, so
each checks every response by the same rules.
"""

from __future__ import annotations

import hashlib
import io
import json
import zipfile
from typing import Any

import aiohttp

from tests.capsule_helpers import PRIVACY_HEADERS, Family
from tests.support.words import assert_plain, page_words

NO_SCRIPT_CSP = (
    "default-src 'none'; style-src 'self'; img-src 'self'; media-src 'self'; "
    "form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
)


def assert_page_headers(resp: aiohttp.ClientResponse) -> None:
    for name, value in PRIVACY_HEADERS.items():
        assert resp.headers.get(name) == value, (resp.status, name, resp.headers.get(name))
    assert resp.headers.get("Content-Security-Policy") == NO_SCRIPT_CSP, resp.status


async def page(fam: Family, path: str, method: str = "GET", **kwargs: Any) -> tuple[int, str]:
    resp = await fam.client.request(method, path, **kwargs)
    assert_page_headers(resp)
    text = await resp.text()
    if method != "HEAD":
        assert resp.content_type == "text/html", (resp.status, resp.content_type, text[:200])
        assert "<script" not in text.lower()
        assert_plain(page_words(text), f"the heir's page ({method} {resp.status})")
    return resp.status, text


async def read_zip(resp: aiohttp.ClientResponse) -> tuple[zipfile.ZipFile, bytes]:
    data = await resp.read()
    assert resp.status == 200, data[:500]
    assert resp.headers["Content-Type"] == "application/zip"
    assert resp.headers["Content-Disposition"].startswith("attachment;")
    archive = zipfile.ZipFile(io.BytesIO(data))
    assert archive.testzip() is None  # every CRC checks
    return archive, data


def check_manifest(archive: zipfile.ZipFile) -> dict[str, Any]:
    """manifest.json is last and names every other entry with its exact size and hash."""
    names = archive.namelist()
    assert names[-1] == "manifest.json"
    manifest: dict[str, Any] = json.loads(archive.read("manifest.json"))
    listed = {f["path"]: f for f in manifest["files"]}
    assert sorted(listed) == sorted(names[:-1])
    for path, entry in listed.items():
        data = archive.read(path)
        assert entry["size"] == len(data), path
        assert entry["sha256"] == hashlib.sha256(data).hexdigest(), path
    return manifest


async def owner_export(fam: Family) -> aiohttp.ClientResponse:
    return await fam.client.get("/api/legacy/export", headers=fam.owner.headers)
