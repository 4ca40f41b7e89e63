"""The two signed answers a page takes back, for bench/ab.py: a guardian's on-chain approval
posted to their page's callback (`guardian-approve`: POST /guardian/<token>/sep7/<id>) and an
heir's signed claim posted to theirs (`heir-sep7`: POST /claim/<token>/sep7/<id>).

Each request answers a signing request of its own: the records are written to Redis in the
format every tree since the guardian page reads (`sep7:request:<id>`), each for a distinct
envelope (its own sequence number), so no request is a replay. The guardians' plan is being
verified with a threshold no bench reaches (its approvals confirm on-chain and it stays in
verification); the heirs' plan is released (bench/soroban.py)."""

from __future__ import annotations

import hashlib
import json
import secrets
import time
import urllib.parse
import uuid
from collections.abc import Sequence
from typing import Any

import psycopg2
import psycopg2.extras
import redis as redis_sync
from stellar_sdk import Account, Keypair, SorobanDataBuilder, TransactionBuilder, TransactionEnvelope, scval

from bench import soroban
from core.files.crypto import KeyRing
from models import sealed_text

GUARDIANS = 10  # guardians who answer, each with a page token and a wallet
BATCH = 2_000  # distinct answers per timed run
NEVER = 1_000  # the plan's threshold: its round never completes under the bench
FORM = {"Content-Type": "application/x-www-form-urlencoded"}
Request = tuple[str, str, dict[str, str], bytes | None]


def make_guardians(database_url: str, ring: KeyRing, count: int = GUARDIANS) -> list[dict[str, Any]]:
    """One owner whose plan is being verified, with `count` accepted guardians (page token,
    wallet)."""
    owner = Keypair.random()
    owner_id = str(uuid.uuid4())
    rows: list[dict[str, Any]] = [
        {
            "id": str(uuid.uuid4()),
            "token": secrets.token_urlsafe(32),
            "wallet": Keypair.random(),
            "owner_id": owner_id,
            "owner_wallet": owner.public_key,
        }
        for _ in range(count)
    ]
    conn = psycopg2.connect(database_url)
    with conn, conn.cursor() as cur:
        cur.execute("INSERT INTO users (id, wallet_address) VALUES (%s, %s)", (owner_id, owner.public_key))
        cur.execute(
            "INSERT INTO user_wallets (wallet_address, user_id) VALUES (%s, %s)", (owner.public_key, owner_id)
        )
        cur.execute(
            "INSERT INTO plans (user_id, status, verification_round, verification_started_at,"
            " guardian_threshold, round_threshold) VALUES (%s, 'PendingVerification', 1, now(), %s, %s)",
            (owner_id, NEVER, NEVER),
        )
        values = []
        for row in rows:
            texts = {"name": "Guardian", "email": "guardian@example.org", "relationship": None}
            sealed = sealed_text.sealed_values(ring, table="guardians", row_id=row["id"], values=texts)
            values.append(
                (
                    row["id"],
                    owner_id,
                    sealed["name_sealed"],
                    sealed["email_sealed"],
                    sealed["email_bidx"],
                    row["wallet"].public_key,
                    hashlib.sha256(row["token"].encode()).digest(),
                )
            )
        psycopg2.extras.execute_values(
            cur,
            "INSERT INTO guardians (id, user_id, name_sealed, email_sealed, email_bidx, wallet_address,"
            " page_token_digest, accepted_at) VALUES %s",
            values,
            template="(%s, %s, %s, %s, %s, %s, %s, now())",
        )
    conn.close()
    return rows


def _signed(
    contract_id: str, passphrase: str, function: str, owner: str, wallet: Keypair, sequence: int
) -> str:
    """`function(owner, wallet)` as build returns it, signed by the wallet."""
    data = (
        SorobanDataBuilder()
        .set_resources(2_000_000, 3_000, 400)
        .set_resource_fee(soroban.RESOURCE_FEE)
        .build()
    )
    tx = (
        TransactionBuilder(Account(wallet.public_key, sequence - 1), passphrase, base_fee=100)
        .append_invoke_contract_function_op(
            contract_id, function, [scval.to_address(owner), scval.to_address(wallet.public_key)]
        )
        .add_time_bounds(0, int(time.time()) + 280)
        .build()
    )
    tx.transaction.soroban_data = data
    tx.transaction.fee += soroban.RESOURCE_FEE
    tx.sign(wallet)
    return tx.to_xdr()


def _keep(redis: Any, *, purpose: str, subject_id: str, signer: str, xdr: str, passphrase: str) -> str:
    """A signing request for this envelope, as the page would have issued it."""
    request_id = secrets.token_urlsafe(16)
    record = {
        "purpose": purpose,
        "subject_id": subject_id,
        "signer": signer,
        "tx_hash": TransactionEnvelope.from_xdr(xdr, passphrase).hash_hex(),
        "expires_at": time.time() + 280,
        "extra": None,
    }
    redis.set(f"sep7:request:{request_id}", json.dumps(record), ex=300)
    return request_id


def answers(
    *,
    redis_url: str,
    contract_id: str,
    passphrase: str,
    people: Sequence[dict[str, Any]],
    kind: str,
    batch: int,
    target: str,
) -> list[Request]:
    """`BATCH` answers, each to a request of its own (kept in Redis now); for the ceiling, the
    same envelopes posted to its bare route."""
    redis = redis_sync.Redis.from_url(redis_url)
    requests: list[Request] = []
    per_person = BATCH // len(people)
    first = 1 + batch * per_person
    function, purpose = (
        ("approve_guardian", "guardian.approve_onchain")
        if kind == "guardian-approve"
        else ("claim_assets", "heir.claim_assets")
    )
    for n in range(first, first + per_person):
        for person in people:
            wallet: Keypair = person["wallet"]
            xdr = _signed(
                contract_id, passphrase, function, person["owner_wallet"], wallet, soroban.SEQUENCE_BASE + n
            )
            if target == "ceiling":
                body = json.dumps({"signedXdr": xdr}).encode()
                path = f"/soroban/submit/{person['owner_id']}/{person['id']}"
                if kind == "guardian-approve":
                    path = f"/soroban/approve/{person['owner_id']}/{person['id']}"
                requests.append(("POST", path, {"Content-Type": "application/json"}, body))
                continue
            request_id = _keep(
                redis,
                purpose=purpose,
                subject_id=person["id"],
                signer=wallet.public_key,
                xdr=xdr,
                passphrase=passphrase,
            )
            page = "guardian" if kind == "guardian-approve" else "claim"
            body = urllib.parse.urlencode({"xdr": xdr}).encode()
            requests.append(("POST", f"/{page}/{person['token']}/sep7/{request_id}", FORM, body))
    redis.close()
    return requests
