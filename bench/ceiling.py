"""The ceiling: a bare aiohttp app doing only the datastore work of each benchmarked route.

Same aiohttp, same aiopg pool settings (`core.db.create_pool`: DictCursor, DB_POOL_MAX),
same Redis client library, same storage backend. No middleware, no JWT, no validation, no
schemas, no logging: the fastest this stack can answer with the same queries, so
`service / ceiling` is the share of the stack's speed the service keeps.

Run by bench/run.py as `python -m bench.ceiling` with DATABASE_URL, REDIS_URL, STORAGE_URL
and PORT in the environment; it listens on 127.0.0.1 only.
"""

from __future__ import annotations

import json
import os
import secrets
import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any

from aiohttp import web
from redis.asyncio import Redis
from stellar_sdk import TransactionEnvelope

from bench import plan_page
from core import db
from core.files.storage import Storage, open_storage
from core.stellar.readline import restore_aiohttp_readline
from models.claim.capsules import ASSETS_SQL, CAPSULE_SQL, DOCUMENTS_SQL, MESSAGES_SQL, token_digest
from models.contents.messages import COLUMNS as MESSAGE_COLUMNS

# The piece sizes the service uses: 256 KiB multipart reads, 1 MiB storage reads on download.
UPLOAD_CHUNK = 256 * 1024
DOWNLOAD_CHUNK = 1024 * 1024

POOL = web.AppKey("pool", db.Pool)
REDIS = web.AppKey("redis", Redis)
STORAGE = web.AppKey("storage", object)
NETWORK_PASSPHRASE = os.environ.get("STELLAR_NETWORK_PASSPHRASE", "Test SDF Network ; September 2015")

# Names, relationships and addresses are sealed at rest (models/sealed_text.py): the ceiling reads
# and writes the same columns, as stored (never sealed or opened: that is the service's work).
USER_SQL = (
    "SELECT id, wallet_address, name_sealed, email_sealed, created_at, updated_at FROM users WHERE id = %s"
)
USER_BY_WALLET_SQL = (
    "SELECT u.id, u.wallet_address, u.name_sealed, u.email_sealed, u.created_at, u.updated_at"
    " FROM user_wallets w JOIN users u ON u.id = w.user_id WHERE w.wallet_address = %s"
)
# The columns models/contents/beneficiaries.py reads (sealed values returned as stored).
BENEFICIARY_COLUMNS = (
    "id, user_id, name_sealed, relationship_sealed, email_sealed, allocation_percentage, created_at,"
    " updated_at, claim_token_sealed"
)
BENEFICIARY_INSERT = (
    "INSERT INTO beneficiaries (id, user_id, name_sealed, relationship_sealed, email_sealed, email_bidx,"
    " allocation_percentage, claim_token_hash, claim_token_sealed)"
    " VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)"
    f" RETURNING {BENEFICIARY_COLUMNS}"
)


def dumps(data: Any) -> str:
    return json.dumps(data, default=str)


async def me(request: web.Request) -> web.Response:
    """GET /api/auth/me without verifying anything: one SELECT by primary key."""
    row = await db.fetch_one(request.app[POOL], USER_SQL, (request.match_info["user_id"],))
    return web.json_response(row, dumps=dumps)


async def challenge(request: web.Request) -> web.Response:
    """The sign-in challenge minus rate limits and address checks: one Redis SET with a TTL."""
    body = await request.json()
    message = f"ceiling challenge for {body['walletAddress']}\nNonce: {secrets.token_hex(32)}"
    await request.app[REDIS].set(f"ceiling:challenge:{body['walletAddress']}", message, ex=300)
    return web.json_response({"message": message})


async def verify(request: web.Request) -> web.Response:
    """Sign-in verify minus signature and JWT: take the challenge (GETDEL), fetch the account."""
    body = await request.json()
    message = await request.app[REDIS].getdel(f"ceiling:challenge:{body['walletAddress']}")
    if message is None:
        raise web.HTTPUnauthorized()
    user = await db.fetch_one(request.app[POOL], USER_BY_WALLET_SQL, (body["walletAddress"],))
    return web.json_response({"token": "-", "user": user}, dumps=dumps)


async def list_beneficiaries(request: web.Request) -> web.Response:
    """GET /api/beneficiaries: the same keyset page query (limit 50 + 1 look-ahead row)."""
    rows = await db.fetch_all(
        request.app[POOL],
        f"SELECT {BENEFICIARY_COLUMNS} FROM beneficiaries WHERE user_id = %s"
        " ORDER BY created_at DESC, id DESC LIMIT 51",
        (request.match_info["user_id"],),
    )
    return web.json_response(rows[:50], dumps=dumps)


async def list_messages(request: web.Request) -> web.Response:
    """GET /api/messages: the same keyset page query (imported from models/contents/messages.py), rows as
    read (sealed texts as stored, not opened)."""
    rows = await db.fetch_all(
        request.app[POOL],
        f"SELECT {MESSAGE_COLUMNS} FROM messages m WHERE m.user_id = %s"
        " ORDER BY m.created_at DESC, m.id DESC LIMIT 51",
        (request.match_info["user_id"],),
    )
    return web.json_response(rows[:50], dumps=dumps)


async def create_beneficiary(request: web.Request) -> web.Response:
    """POST /api/beneficiaries: one INSERT … RETURNING in autocommit, no allocation check."""
    body = await request.json()
    params = (
        str(uuid.uuid4()),
        request.match_info["user_id"],
        body["name"],
        body["relationship"],
        body["email"],
        secrets.token_bytes(32),  # stands for the blind index
        body["allocationPercentage"],
        secrets.token_bytes(32),
        secrets.token_hex(40),
    )
    row = await db.fetch_one(request.app[POOL], BENEFICIARY_INSERT, params)
    return web.json_response(row, status=201, dumps=dumps)


async def capsule(request: web.Request) -> web.Response:
    """GET /api/claim/:token: the same four queries (token lookup with the plan's state, the
    messages addressed to the beneficiary with their opening time, the documents, the assets),
    rows as read, on one pooled connection; no schemas, no timeline, no privacy headers."""
    async with db.autocommit(request.app[POOL]) as cur:
        await cur.execute(
            f"{CAPSULE_SQL} WHERE b.claim_token_hash = %s", (token_digest(token=request.match_info["token"]),)
        )
        found = await cur.fetchone()
        if found is None:
            raise web.HTTPNotFound()
        params = {
            "owner": found["owner_id"],
            "beneficiary": found["beneficiary_id"],
            "released": found["released_at"],
            "now": datetime.now(UTC),
        }
        await cur.execute(MESSAGES_SQL, params)
        messages = await cur.fetchall()
        await cur.execute(DOCUMENTS_SQL, params)
        documents = await cur.fetchall()
        await cur.execute(ASSETS_SQL, params)
        assets = await cur.fetchall()
    body = {"capsule": found, "messages": messages, "documents": documents, "assets": assets}
    return web.json_response(body, dumps=dumps)


async def upload(request: web.Request) -> web.Response:
    """A plain streamed put: the multipart `file` part straight into storage, no crypto."""
    storage: Storage = request.app[STORAGE]  # type: ignore[assignment]
    reader = await request.multipart()
    key = f"plain/{secrets.token_hex(8)}"
    size = 0
    async for part in reader:
        if getattr(part, "name", None) != "file":
            await part.release()  # type: ignore[union-attr]
            continue

        async def chunks(part: Any = part) -> AsyncIterator[bytes]:
            while chunk := await part.read_chunk(UPLOAD_CHUNK):
                yield chunk

        size = await storage.put_stream(key, chunks())
    return web.json_response({"key": key, "size": size}, status=201)


async def download(request: web.Request) -> web.StreamResponse:
    """A plain streamed get of the stored bytes."""
    storage: Storage = request.app[STORAGE]  # type: ignore[assignment]
    response = web.StreamResponse(headers={"Content-Type": "application/octet-stream"})
    await response.prepare(request)
    async for chunk in storage.get_stream(request.match_info["key"], DOWNLOAD_CHUNK):
        await response.write(chunk)
    await response.write_eof()
    return response


async def delete(request: web.Request) -> web.Response:
    storage: Storage = request.app[STORAGE]  # type: ignore[assignment]
    await storage.delete(request.match_info["key"])
    return web.Response(status=204)


TRANSACTION_INSERT = (
    "INSERT INTO transactions (hash, function, user_id, beneficiary_id, signer, valid_until, xdr,"
    " created_at, updated_at) VALUES (%s, 'claim_assets', %s, %s, %s, %s, %s, %s, %s)"
    " ON CONFLICT (hash) DO NOTHING"
    " RETURNING id, hash, function, status, ledger, confirmed_at, contract_error_code, reason"
)


async def soroban_submit(request: web.Request) -> web.Response:
    """POST /soroban/submit/{owner}/{beneficiary}: decode the signed XDR (stellar-sdk, hash for
    the network) and insert the same row the service's submit inserts; no checks, no job."""
    body = await request.json()
    envelope = TransactionEnvelope.from_xdr(body["signedXdr"], NETWORK_PASSPHRASE)
    tx = envelope.transaction
    now = datetime.now(UTC)
    valid_until = datetime.fromtimestamp(tx.preconditions.time_bounds.max_time, UTC)  # type: ignore[union-attr]
    async with db.autocommit(request.app[POOL]) as cur:
        await cur.execute(
            TRANSACTION_INSERT,
            (
                envelope.hash_hex(),
                request.match_info["owner"],
                request.match_info["beneficiary"],
                tx.source.account_id,
                valid_until,
                body["signedXdr"],
                now,
                now,
            ),
        )
        row = await cur.fetchone()
    return web.Response(text=dumps(row), status=202, content_type="application/json")


APPROVAL_INSERT = (
    "INSERT INTO transactions (hash, function, user_id, plan_id, guardian_id, signer, valid_until, xdr,"
    " created_at, updated_at) SELECT %s, 'approve_guardian', p.user_id, p.id, %s, %s, %s, %s, %s, %s"
    " FROM plans p WHERE p.user_id = %s ON CONFLICT (hash) DO NOTHING"
    " RETURNING id, hash, function, status, ledger, confirmed_at, contract_error_code, reason"
)


async def soroban_approve(request: web.Request) -> web.Response:
    """POST /soroban/approve/{owner}/{guardian}: a guardian's signed approve_guardian decoded
    and stored as the service stores it; no checks, no job."""
    body = await request.json()
    envelope = TransactionEnvelope.from_xdr(body["signedXdr"], NETWORK_PASSPHRASE)
    tx = envelope.transaction
    now = datetime.now(UTC)
    valid_until = datetime.fromtimestamp(tx.preconditions.time_bounds.max_time, UTC)  # type: ignore[union-attr]
    async with db.autocommit(request.app[POOL]) as cur:
        await cur.execute(
            APPROVAL_INSERT,
            (
                envelope.hash_hex(),
                request.match_info["guardian"],
                tx.source.account_id,
                valid_until,
                body["signedXdr"],
                now,
                now,
                request.match_info["owner"],
            ),
        )
        row = await cur.fetchone()
    return web.Response(text=dumps(row), status=200, content_type="application/json")


async def health(request: web.Request) -> web.Response:
    return web.json_response({"status": "ok"})


async def resources(app: web.Application) -> AsyncIterator[None]:
    app[POOL] = await db.create_pool(os.environ["DATABASE_URL"], int(os.environ.get("DB_POOL_MAX", "20")))
    app[REDIS] = Redis.from_url(os.environ["REDIS_URL"])
    storage = await open_storage(
        os.environ.get("STORAGE_URL"),
        s3_endpoint_url=os.environ.get("S3_ENDPOINT_URL") or None,
        region=os.environ.get("AWS_REGION") or None,
    )
    app[STORAGE] = storage
    yield
    if storage is not None:
        await storage.close()
    await app[REDIS].aclose()
    app[POOL].close()
    await app[POOL].wait_closed()


def create_app() -> web.Application:
    app = web.Application(client_max_size=1024 * 1024)
    app.cleanup_ctx.append(resources)
    app.router.add_get("/health", health)
    app.router.add_get("/me/{user_id}", me)
    app.router.add_post("/challenge", challenge)
    app.router.add_post("/verify", verify)
    app.router.add_get("/beneficiaries/{user_id}", list_beneficiaries)
    app.router.add_get("/messages/{user_id}", list_messages)
    app.router.add_post("/beneficiaries/{user_id}", create_beneficiary)
    app.router.add_get("/capsule/{token}", capsule)
    app.router.add_post("/soroban/submit/{owner}/{beneficiary}", soroban_submit)
    app.router.add_post("/soroban/approve/{owner}/{guardian}", soroban_approve)
    app.router.add_post("/upload", upload)
    app.router.add_get("/download/{key:.+}", download)
    app.router.add_delete("/objects/{key:.+}", delete)
    plan_page.register(app, POOL)
    return app


if __name__ == "__main__":
    restore_aiohttp_readline()  # its archive route reads multipart bodies
    web.run_app(create_app(), host="127.0.0.1", port=int(os.environ["PORT"]), access_log=None, print=None)
