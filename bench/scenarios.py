"""The request scenarios run in bench/run.py itself (the archive, capsule, Soroban and lifecycle
ones have modules of their own): what each sets up, and which service and ceiling loads it
compares.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from typing import Any

import aiohttp
import psycopg2
import psycopg2.extras

from bench import loadgen, wrk
from bench.measure import Bench

# Sign-in wallets, used round-robin: each stays below 10 challenges a minute (sign_in_wallets).
SIGN_IN_WALLETS = 4096
SIGN_IN_RATE_BOUND = 2000
# Creates spread over this many owners at 0.01 % each: 10,000 creates per owner fit in 100 %.
CREATE_OWNERS = 32
CREATE_ALLOCATION = "0.01"
LIST_ROWS = 50
BENEFICIARY = {"name": "Bench Beneficiary", "relationship": "sibling", "email": "bench@example.com"}


def add_users(database_url: str, addresses: Sequence[str]) -> None:
    """Accounts for returning-user sign-ins, inserted directly (what a first sign-in creates)."""
    conn = psycopg2.connect(database_url)
    with conn, conn.cursor() as cur:
        psycopg2.extras.execute_values(
            cur,
            "WITH u AS (INSERT INTO users (wallet_address) VALUES %s RETURNING id, wallet_address)"
            " INSERT INTO user_wallets (wallet_address, user_id) SELECT wallet_address, id FROM u",
            [(a,) for a in addresses],
            page_size=1000,
        )
    conn.close()


async def bench_auth(bench: Bench) -> None:
    """GET /api/auth/me (JWT + account) and the full wallet sign-in (challenge + verify)."""
    async with aiohttp.ClientSession() as session:
        owner = await loadgen.sign_in(session, bench.api.base_url, loadgen.wallets(1)[0])
    token, user_id = owner["token"], owner["user"]["id"]
    auth = {"Authorization": f"Bearer {token}"}
    await bench.compare(
        "GET /api/auth/me",
        bench.http_load(bench.api, [("GET", "/api/auth/me", auth, None)], 200),
        bench.http_load(bench.ceiling, [("GET", f"/me/{user_id}", auth, None)], 200),
    )

    keypairs = loadgen.wallets(sign_in_wallets(bench.args))
    add_users(bench.database_url, [k.public_key for k in keypairs])
    await bench.compare(
        "sign-in (challenge + verify)",
        bench.scripted_load(
            bench.api,
            loadgen.sign_in_operation(keypairs, "/api/auth/wallet/challenge", "/api/auth/wallet/verify"),
        ),
        bench.scripted_load(bench.ceiling, loadgen.sign_in_operation(keypairs, "/challenge", "/verify")),
    )


def sign_in_wallets(args: argparse.Namespace) -> int:
    """Enough wallets that none asks for 8 challenges within the 10-per-minute window.

    Sized for up to SIGN_IN_RATE_BOUND sign-ins a second over the whole (warm-up + rounds) load.
    """
    seconds = args.warmup + args.rounds * args.duration
    return max(SIGN_IN_WALLETS, int(SIGN_IN_RATE_BOUND * min(seconds, 60) / 8) + 1)


async def bench_beneficiaries(bench: Bench) -> None:
    """GET /api/beneficiaries (one owner, 50 rows) and POST /api/beneficiaries.

    Creates go round-robin over CREATE_OWNERS owners at 0.01 % each, so the 100 % allocation
    cap is never reached (10,000 creates per owner); the ceiling writes for its own owners.
    """
    base = bench.api.base_url
    async with aiohttp.ClientSession() as session:
        owners = [await loadgen.sign_in(session, base, k) for k in loadgen.wallets(1 + 2 * CREATE_OWNERS)]
        lister = owners[0]
        headers = {"Authorization": f"Bearer {lister['token']}"}
        async with session.get(f"{base}/api/beneficiaries", headers=headers) as resp:
            if resp.status == 404:
                print("  beneficiaries: /api/beneficiaries is not served by this build; skipped", flush=True)
                return
        for n in range(LIST_ROWS):
            row = {**BENEFICIARY, "name": f"Beneficiary {n}", "allocationPercentage": 1}
            async with session.post(f"{base}/api/beneficiaries", json=row, headers=headers) as resp:
                if resp.status != 201:
                    raise RuntimeError(f"POST /api/beneficiaries answered {resp.status}: {await resp.text()}")
        async with session.get(f"{base}/api/beneficiaries", headers=headers) as resp:
            listed = await resp.json()
            if resp.status != 200 or len(listed) != LIST_ROWS:
                raise RuntimeError(f"GET /api/beneficiaries answered {resp.status} with {len(listed)} rows")

    user_id = lister["user"]["id"]
    await bench.compare(
        "GET /api/beneficiaries (50 rows)",
        bench.http_load(bench.api, [("GET", "/api/beneficiaries", headers, None)], 200),
        bench.http_load(bench.ceiling, [("GET", f"/beneficiaries/{user_id}", headers, None)], 200),
    )

    body = json.dumps({**BENEFICIARY, "allocationPercentage": float(CREATE_ALLOCATION)}).encode()
    service_owners, ceiling_owners = owners[1 : 1 + CREATE_OWNERS], owners[1 + CREATE_OWNERS :]

    def create(path: str, owner: dict[str, Any]) -> wrk.Request:
        return (
            "POST",
            path,
            {"Content-Type": "application/json", "Authorization": f"Bearer {owner['token']}"},
            body,
        )

    await bench.compare(
        "POST /api/beneficiaries",
        bench.http_load(bench.api, [create("/api/beneficiaries", o) for o in service_owners], 201),
        bench.http_load(
            bench.ceiling, [create(f"/beneficiaries/{o['user']['id']}", o) for o in ceiling_owners], 201
        ),
    )


async def bench_messages(bench: Bench) -> None:
    """GET /api/messages: one owner, 50 letters of ~1 KB with a title each (sealed at rest
    since #12 item 8, so the service opens 100 texts per page; the ceiling returns them as stored)."""
    base = bench.api.base_url
    async with aiohttp.ClientSession() as session:
        (owner,) = [await loadgen.sign_in(session, base, k) for k in loadgen.wallets(1)]
        headers = {"Authorization": f"Bearer {owner['token']}"}
        for n in range(LIST_ROWS):
            row = {
                "title": f"Letter {n}",
                "content": f"Letter number {n}. " * 60,
                "releaseRule": {"kind": "on_release", "value": None},
                "audience": {"all": True},
            }
            async with session.post(f"{base}/api/messages", json=row, headers=headers) as resp:
                if resp.status != 201:
                    raise RuntimeError(f"POST /api/messages answered {resp.status}: {await resp.text()}")
    await bench.compare(
        "GET /api/messages (50 rows)",
        bench.http_load(bench.api, [("GET", "/api/messages", headers, None)], 200),
        bench.http_load(bench.ceiling, [("GET", f"/messages/{owner['user']['id']}", headers, None)], 200),
    )
