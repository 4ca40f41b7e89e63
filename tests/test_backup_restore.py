"""Backup and restore, as docs/operations.md tells an operator to do it: pg_dump (the one that
matches the server) and a copy of the objects, restored into a fresh database and storage,
open the released capsule byte for byte; `legacy-planning keys check` passes with the escrowed
key ring, and fails clearly, printing no plaintext, without it or with another."""

from __future__ import annotations

import asyncio
import hashlib
import os
import secrets
import shutil
import subprocess
import sys
from pathlib import Path

from stellar_sdk import Keypair

from core.files.crypto import KeyRing
from testing.pgtools import matching_tool, server_major
from tests.capsule_helpers import Family
from tests.helpers import scratch_database

ROOT = Path(__file__).resolve().parent.parent
LETTER = "Dear Ada, the key is under the blue pot 5b1e"
DOC_NAME = "will-7c2a.pdf"


def keys_check(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "service.cli", "keys", "check", *args],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


async def test_dump_and_objects_restore_and_open_the_capsule_byte_for_byte(
    fam: Family, make_client, service_urls, encryption_keys_entry, tmp_path
):
    ada = await fam.add_heir("Ada", 100)
    will = os.urandom(300 * 1024)
    doc = await fam.document(will, filename=DOC_NAME, content_type="application/pdf", title="My will")
    photo = secrets.token_bytes(70 * 1024)
    media = await fam.vault.upload_ok(photo, filename="us.png", content_type="image/png", type="photo")
    await fam.vault.work()
    letter = await fam.message(LETTER, title="For Ada", mediaId=media["id"])
    await fam.release()
    before = await fam.capsule(ada)
    assert before["documents"][0]["id"] == doc["id"]

    # The backup: a dump by the pg_dump of the server's major version, and the objects copied.
    major = server_major(fam.settings.database_url)
    dump = tmp_path / "backup.dump"
    await asyncio.to_thread(
        subprocess.run,
        [
            str(matching_tool("pg_dump", major)),
            "--format=custom",
            f"--file={dump}",
            fam.settings.database_url,
        ],
        check=True,
        timeout=120,
    )
    objects = tmp_path / "restored-objects"
    shutil.copytree(fam.vault.storage_root, objects)

    with scratch_database(service_urls[0], "lps_restore") as (_, restored_url):
        await asyncio.to_thread(
            subprocess.run,
            [str(matching_tool("pg_restore", major)), "--no-owner", f"--dbname={restored_url}", str(dump)],
            check=True,
            timeout=120,
        )
        client = await make_client(database_url=restored_url, storage_url=objects.as_uri())
        try:
            token = ada["claimToken"]
            resp = await client.get(f"/api/claim/{token}")
            assert resp.status == 200
            assert await resp.json() == before  # the same capsule, every field
            resp = await client.get(f"/api/claim/{token}/documents/{doc['id']}/download")
            got = await resp.read()
            assert resp.status == 200 and got == will
            assert hashlib.sha256(got).hexdigest() == before["documents"][0]["sha256"]
            resp = await client.get(f"/api/claim/{token}/messages/{letter['id']}/media")
            assert resp.status == 200 and await resp.read() == photo
        finally:
            await client.close()

        env = {
            "PATH": os.environ.get("PATH", ""),
            "APP_ENV": "test",
            "DATA_DIR": str(tmp_path / "data"),
            "DATABASE_URL": restored_url,
            "REDIS_URL": fam.settings.redis_url,
            "STORAGE_URL": objects.as_uri(),
            "JWT_SECRET": secrets.token_urlsafe(48),
            "ENCRYPTION_KEYS": encryption_keys_entry,
            "LOG_LEVEL": "WARNING",
        }
        ok = await asyncio.to_thread(keys_check, env, "--sample", "1000")
        assert ok.returncode == 0, ok.stdout + ok.stderr
        assert "keys check: OK" in ok.stdout
        assert "opened: archive objects: 2" in ok.stdout and "opened: messages.content: 1" in ok.stdout

        # Another key under the same id: every sampled value and data key is named, none shown.
        wrong = await asyncio.to_thread(keys_check, {**env, "ENCRYPTION_KEYS": KeyRing.generate_entry("k1")})
        assert wrong.returncode == 1, wrong.stdout + wrong.stderr
        assert "keys check: FAILED" in wrong.stdout
        assert f"CANNOT OPEN: messages.content of row {letter['id']}: does not open" in wrong.stdout
        assert f"CANNOT OPEN: archive item {doc['id']}" in wrong.stdout
        # A ring without the key id at all: the census says how many values need it.
        other = await asyncio.to_thread(keys_check, {**env, "ENCRYPTION_KEYS": KeyRing.generate_entry("k9")})
        assert other.returncode == 1
        assert "CANNOT OPEN: key id k1:" in other.stdout and "ENCRYPTION_KEYS lacks it" in other.stdout
        for run in (ok, wrong, other):
            for secret in (
                LETTER,
                "Ada",
                DOC_NAME,
                ada["claimToken"],
                encryption_keys_entry.split(":", 1)[1],
            ):
                assert secret not in run.stdout + run.stderr

        # No key ring at all, as in production: a clear configuration error, exit 2.
        production = {
            **env,
            "APP_ENV": "production",
            "PUBLIC_BASE_URL": "https://legacy.example.org",
            "URI_REQUEST_SIGNING_SEED": Keypair.random().secret,
        }
        del production["ENCRYPTION_KEYS"]
        missing = await asyncio.to_thread(keys_check, production)
        assert missing.returncode == 2, missing.stdout + missing.stderr
        assert "ENCRYPTION_KEYS" in missing.stderr and "configuration error" in missing.stderr
