"""The heir's wallet: proven through their claim token before it may build or submit a claim.

Without a proof, anything signed by a wallet W was accepted through any sibling's token, and
the first confirmed claim bound W to whichever beneficiary submitted it (issue #16): the
signed envelope is public once it reaches the network, so a sibling could take another heir's
claim. Now a wallet is bound to one beneficiary before it is used, by the owner (recorded in
the plan) or by the heir signing a challenge through their token (`challenge`, `verify`), and
the on-chain routes take only the bound wallet (models.onchain). Decisions: docs/soroban.md
"Beneficiary wallets".
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from datetime import UTC, datetime, timedelta
from typing import TypedDict

from arq.connections import ArqRedis
from redis.asyncio import Redis

from core import challenges, ratelimit
from core.clock import wire_time
from core.db import Cursor, Pool, transaction, unless_duplicate
from core.errors import BadRequest, Conflict, NotFound, TooManyRequests, Unauthorized
from core.files.crypto import KeyRing
from core.settings import Settings
from core.stellar.wallet import decode_signature, verify_signature
from models import activity, sealed_text
from models.chain import wallet_requests
from models.claim.capsule import READY, RELEASED_STATE, Capsule, WalletBinding, state
from models.common import as_record
from models.contents import beneficiaries
from models.delivery import outbox
from models.delivery.announce import Email, Entry, announce
from models.plan import plans

CHALLENGE_KEY = "claim:wallet:{}:{}"  # beneficiary id, wallet -> live challenges (core.challenges)
CHALLENGE_TTL = timedelta(minutes=5)
PROVE_FIRST = (
    "Prove your wallet first: POST /api/claim/{token}/wallet/challenge with your walletAddress, "
    "sign the message it returns with that wallet, and POST the signature to "
    "/api/claim/{token}/wallet/verify."
)
TAKEN = "This wallet is already bound to another beneficiary of this plan"
# A waiting wallet change blocks another for this long, unless the guardians decide it first.
PENDING_FOR = timedelta(days=7)
# Guardians hear about one heir's wallet changes by email at most this often.
GUARDIAN_EMAIL_EVERY = timedelta(hours=24)


def _require_open(capsule: Capsule) -> None:
    """Proofs only once the heirs hold their links (ready or released): before that the owner
    decides the wallet, and the challenge would name the owner to whoever holds a locked link."""
    if state(capsule) not in (READY, RELEASED_STATE):
        raise Conflict("Your capsule is not open yet; a wallet can be proven once it is.")


def short(address: str) -> str:
    """A wallet as people compare it: its last six characters."""
    return f"ending in {address[-6:]}"


def _challenge_text(
    settings: Settings, *, capsule: Capsule, wallet_address: str, nonce: str, issued: datetime
) -> str:
    """The text an heir signs, built from the database's facts (the owner's name) and the nonce
    and time kept in Redis: rebuilt at verify, never stored (#28 F3)."""
    owner = capsule["owner_name"] or "the owner"
    return (
        f"{settings.service_name} asks you to prove this Stellar wallet:\n"
        f"{wallet_address}\n\n"
        f"to claim as beneficiary of {owner}'s plan.\n"
        "Signing proves you control this wallet. It does not authorize any payment or transaction.\n\n"
        f"Nonce: {nonce}\n"
        f"Issued At: {wire_time(issued)}\n"
        f"Expiration Time: {wire_time(issued + CHALLENGE_TTL)}"
    )


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


async def challenge(
    redis: Redis, settings: Settings, *, capsule: Capsule, wallet_address: str, client_ip: str, now: datetime
) -> str:
    """The text the heir signs with the wallet; single use, 5 minutes, several live at once.
    Redis keeps only `nonce issued-ms digest` per challenge: no name, no text (its snapshot on
    disk holds nothing personal)."""
    _require_open(capsule)
    retry = await ratelimit.hit(redis, f"claim-wallet:ip:{client_ip}", settings.rate_limit_challenge_per_ip)
    if retry:
        raise TooManyRequests("Too many wallet challenges from this address; try again later", retry)
    nonce = secrets.token_hex(32)
    issued = now.replace(microsecond=now.microsecond // 1000 * 1000)  # wire_time keeps milliseconds
    message = _challenge_text(
        settings, capsule=capsule, wallet_address=wallet_address, nonce=nonce, issued=issued
    )
    stamp = f"{nonce} {(issued - _EPOCH) // timedelta(milliseconds=1)} {_digest(message)}"
    key = CHALLENGE_KEY.format(capsule["beneficiary_id"], wallet_address)
    await challenges.store(redis, key, stamp, ttl_seconds=int(CHALLENGE_TTL.total_seconds()), now=now)
    return message


def _rebuilt(settings: Settings, *, capsule: Capsule, wallet_address: str, stamp: str) -> str | None:
    """The text a kept stamp stands for, rebuilt from the database's facts; None if it no longer
    matches the digest (the facts changed since) or the stamp is not one of ours."""
    try:
        nonce, millis, digest = stamp.split(" ")
        issued = _EPOCH + timedelta(milliseconds=int(millis))
    except ValueError:
        return None
    text = _challenge_text(
        settings, capsule=capsule, wallet_address=wallet_address, nonce=nonce, issued=issued
    )
    return text if hmac.compare_digest(_digest(text), digest) else None


async def _burn_signed(
    redis: Redis, settings: Settings, *, capsule: Capsule, wallet_address: str, signature: str, now: datetime
) -> None:
    """Find the live challenge this signature signs and burn it (401 otherwise)."""
    raw = decode_signature(signature)
    if raw is None:
        raise BadRequest(
            ["signature: Must be a 64-byte ed25519 signature, base64 (88 chars) or hex (128 chars)."],
            details={"signature": ["Not a valid signature encoding."]},
        )
    key = CHALLENGE_KEY.format(capsule["beneficiary_id"], wallet_address)
    expired = "No valid challenge for this wallet (expired or already used); request a new one"
    candidates = await challenges.live_at(redis, key, now)
    if not candidates:
        raise Unauthorized(expired)
    signed = None
    for stamp in candidates:
        text = _rebuilt(settings, capsule=capsule, wallet_address=wallet_address, stamp=stamp)
        if text is not None and verify_signature(wallet_address, text, raw):
            signed = stamp
            break
    if signed is None:
        raise Unauthorized("The signature does not match a challenge for this wallet")
    if not await challenges.consume_at(redis, key, signed):
        raise Unauthorized(expired)


async def verify(
    pool: Pool,
    redis: ArqRedis,
    settings: Settings,
    *,
    capsule: Capsule,
    wallet_address: str,
    signature: str,
    now: datetime,
) -> WalletBinding:
    """Bind the proven wallet to this beneficiary: the same wallet again is a no-op; a wallet
    bound to a sibling is 409. Another wallet already bound to them is 409 too, and the proof is
    kept as a request their guardians can approve (a lost wallet), committed before the 409."""
    _require_open(capsule)
    await _burn_signed(
        redis, settings, capsule=capsule, wallet_address=wallet_address, signature=signature, now=now
    )
    return await _bind(pool, redis, capsule=capsule, wallet_address=wallet_address, now=now)


async def challenge_transaction(
    redis: Redis, settings: Settings, *, capsule: Capsule, wallet_address: str, client_ip: str, now: datetime
) -> wallet_requests.Prepared:
    """The SEP-10-style challenge the heir's wallet signs to prove it (docs/pages.md), kept as a
    single-use signing request for this beneficiary; the same rules and limit as `challenge`."""
    _require_open(capsule)
    retry = await ratelimit.hit(redis, f"claim-wallet:ip:{client_ip}", settings.rate_limit_challenge_per_ip)
    if retry:
        raise TooManyRequests("Too many wallet challenges from this address; try again later", retry)
    return await wallet_requests.challenge(
        redis,
        settings,
        purpose="heir.prove",
        subject_id=capsule["beneficiary_id"],
        signer=wallet_address,
        now=now,
    )


async def verify_transaction(
    pool: Pool,
    redis: ArqRedis,
    settings: Settings,
    *,
    capsule: Capsule,
    request: wallet_requests.WalletRequest,
    signed_xdr: str,
    now: datetime,
) -> WalletBinding:
    """`verify` for a signed challenge transaction instead of a message signature: the request
    used up, then the same binding rules (a sibling's wallet 409, another wallet of theirs kept
    for the guardians)."""
    _require_open(capsule)
    await wallet_requests.take_challenge(redis, settings, request=request, signed_xdr=signed_xdr)
    return await _bind(pool, redis, capsule=capsule, wallet_address=request["signer"], now=now)


async def _bind(
    pool: Pool, redis: ArqRedis, *, capsule: Capsule, wallet_address: str, now: datetime
) -> WalletBinding:
    async with transaction(pool) as cur:
        await cur.execute(
            "SELECT b.wallet_address, b.wallet_bound_via, b.wallet_bound_at, p.status, p.ready_at"
            " FROM beneficiaries b JOIN plans p ON p.user_id = b.user_id WHERE b.id = %s FOR UPDATE OF b",
            (capsule["beneficiary_id"],),
        )
        row = await cur.fetchone()
        if row is None:
            raise NotFound("Capsule")
        # Again under the row lock: the owner may have checked in since the token was looked up.
        _require_open(
            as_record(Capsule, row={**capsule, "plan_status": row["status"], "ready_at": row["ready_at"]})
        )
        bound = row["wallet_address"]
        if bound == wallet_address:
            return {
                "address": bound,
                "bound_via": row["wallet_bound_via"],
                "bound_at": row["wallet_bound_at"],
            }
        if bound is None:
            await _bind_proven(cur, capsule=capsule, wallet_address=wallet_address, now=now)
            return {"address": wallet_address, "bound_via": "proven", "bound_at": now}
        change = await _request_change(cur, capsule=capsule, wallet_address=wallet_address, now=now)
    await outbox.enqueue(redis, change["outbox"])
    raise Conflict(
        f"Another wallet ({short(bound)}) is already bound to you"
        + (", as the plan's owner recorded it." if row["wallet_bound_via"] == "owner" else ".")
        + " Claim with that wallet. If you no longer hold it, this proof was kept: the plan's "
        f"guardians have been asked to approve this wallet instead ({change['threshold']} of them must).",
        details={
            "walletChange": {
                "status": "pending",
                "walletAddress": wallet_address,
                "approvals": 0,
                "threshold": change["threshold"],
            }
        },
    )


async def _bind_proven(cur: Cursor, *, capsule: Capsule, wallet_address: str, now: datetime) -> None:
    bound = await beneficiaries.bind_wallet(
        cur, beneficiary_id=capsule["beneficiary_id"], wallet_address=wallet_address, via="proven", now=now
    )
    if not bound:
        raise Conflict(TAKEN)
    await activity.record(
        cur,
        user_id=capsule["owner_id"],
        kind="beneficiary.wallet_proven",
        entity_id=capsule["beneficiary_id"],
        summary="A beneficiary proved the wallet they will claim with",
        metadata={"walletAddress": wallet_address},
    )


# A lost wallet (docs/soroban.md "A lost wallet") --------------------------------------------


class ChangeRequested(TypedDict):
    outbox: list[str]
    threshold: int


class WalletChange(TypedDict):
    """A wallet an heir proved in place of the one bound to them, awaiting the guardians."""

    id: str
    beneficiary_id: str
    name: str  # the heir's
    wallet_address: str
    requested_at: datetime
    approvals: int
    approved_by_me: bool


class ChangeStatus(TypedDict):
    status: str  # pending | applied
    approvals: int
    threshold: int


async def _threshold(cur: Cursor, plan_id: str) -> int:
    plan = await plans.get_by_id(cur, plan_id)
    assert plan is not None
    return await plans.threshold_now(cur, plan)


async def _request_change(
    cur: Cursor, *, capsule: Capsule, wallet_address: str, now: datetime
) -> ChangeRequested:
    """Keep the proven wallet as a request and ask every guardian (by email at most once a day per
    heir); 409 while another request of this heir waits (under PENDING_FOR), once the heir has
    claimed, or for a wallet bound to a sibling."""
    beneficiary_id = capsule["beneficiary_id"]
    await cur.execute(
        "SELECT EXISTS (SELECT 1 FROM transactions WHERE beneficiary_id = %(b)s AND function = 'claim_assets'"
        "   AND status = 'confirmed') AS claimed,"
        " EXISTS (SELECT 1 FROM beneficiaries WHERE user_id = %(owner)s AND wallet_address = %(w)s) AS taken,"
        " (SELECT id::text FROM plans WHERE user_id = %(owner)s) AS plan_id",
        {"b": beneficiary_id, "owner": capsule["owner_id"], "w": wallet_address},
    )
    facts = await cur.fetchone()
    if facts["claimed"]:
        raise Conflict(
            "You have already claimed your share with the wallet bound to you; it cannot change now."
        )
    if facts["taken"]:
        raise Conflict(TAKEN)
    plan_id = facts["plan_id"]
    await _refuse_while_pending(
        cur, plan_id=plan_id, beneficiary_id=beneficiary_id, wallet_address=wallet_address, now=now
    )
    await cur.execute(
        "INSERT INTO wallet_changes (beneficiary_id, plan_id, wallet_address, created_at)"
        " VALUES (%s, %s, %s, %s) RETURNING id::text AS id",
        (beneficiary_id, plan_id, wallet_address, now),
    )
    change_id = (await cur.fetchone())["id"]
    told_lately = await _guardians_told_lately(cur, plan_id=plan_id, beneficiary_id=beneficiary_id, now=now)
    row_ids = await announce(
        cur,
        plan_id=plan_id,
        owner_id=capsule["owner_id"],
        now=now,
        guardians=None
        if told_lately
        else Email(
            "wallet_change_requested",
            {"beneficiaryId": beneficiary_id, "walletEnd": wallet_address[-6:], "changeId": change_id},
        ),
        timeline=Entry(
            "beneficiary.wallet_change_requested",
            "A beneficiary proved a new wallet; the guardians were asked to approve it",
            {"walletAddress": wallet_address},
            entity_id=beneficiary_id,
        ),
    )
    return {"outbox": row_ids, "threshold": await _threshold(cur, plan_id)}


async def _refuse_while_pending(
    cur: Cursor, *, plan_id: str, beneficiary_id: str, wallet_address: str, now: datetime
) -> None:
    """One request waits per heir: another proof while it is pending is 409 until the guardians
    decide it or it is PENDING_FOR old (then it lapses, `replaced`). A new proof never resets the
    approvals of the one waiting (#28 F2: a leaked link looping requests could otherwise keep the
    real heir's change from ever reaching the threshold)."""
    await cur.execute(
        "SELECT c.id, c.wallet_address, c.created_at,"
        " (SELECT count(*) FROM wallet_change_approvals a WHERE a.change_id = c.id) AS approvals"
        " FROM wallet_changes c WHERE c.beneficiary_id = %s AND c.status = 'pending' FOR UPDATE",
        (beneficiary_id,),
    )
    pending = await cur.fetchone()
    if pending is None:
        return
    lapses = pending["created_at"] + PENDING_FOR
    if lapses <= now:
        await cur.execute(
            "UPDATE wallet_changes SET status = 'replaced', decided_at = %s WHERE id = %s",
            (now, pending["id"]),
        )
        return
    threshold = await _threshold(cur, plan_id)
    waiting = (
        "This wallet"
        if pending["wallet_address"] == wallet_address
        else f"Another wallet ({short(pending['wallet_address'])})"
    )
    raise Conflict(
        f"{waiting} already waits for the guardians' approval"
        + f" ({pending['approvals']} of {threshold} so far). A different wallet can be asked for once they "
        f"have decided, or from {wire_time(lapses)}.",
        details={
            "walletChange": {
                "status": "pending",
                "walletAddress": pending["wallet_address"],
                "approvals": pending["approvals"],
                "threshold": threshold,
                "requestedAt": wire_time(pending["created_at"]),
                "lapsesAt": wire_time(lapses),
            }
        },
    )


async def _guardians_told_lately(cur: Cursor, *, plan_id: str, beneficiary_id: str, now: datetime) -> bool:
    """Were the guardians emailed about this heir's wallet within GUARDIAN_EMAIL_EVERY?"""
    await cur.execute(
        "SELECT EXISTS (SELECT 1 FROM outbox WHERE plan_id = %s AND kind = 'wallet_change_requested'"
        " AND context->>'beneficiaryId' = %s AND created_at > %s) AS told",
        (plan_id, beneficiary_id, now - GUARDIAN_EMAIL_EVERY),
    )
    return bool((await cur.fetchone())["told"])


async def pending_changes(
    cur: Cursor, ring: KeyRing, *, plan_ids: list[str], guardian_user_id: str
) -> dict[str, list[WalletChange]]:
    """The requests waiting in these plans, with their approvals so far and whether this
    guardian account approved."""
    if not plan_ids:
        return {}
    await cur.execute(
        "SELECT c.id::text AS id, c.plan_id::text AS plan_id, c.beneficiary_id::text AS beneficiary_id,"
        f" {sealed_text.select_list(table='beneficiaries', alias='b', columns=('name',))}, c.wallet_address,"
        " c.created_at AS requested_at,"
        " (SELECT count(*) FROM wallet_change_approvals a WHERE a.change_id = c.id) AS approvals,"
        " EXISTS (SELECT 1 FROM wallet_change_approvals a WHERE a.change_id = c.id"
        "   AND a.approver_user_id = %s) AS approved_by_me"
        " FROM wallet_changes c JOIN beneficiaries b ON b.id = c.beneficiary_id"
        " WHERE c.plan_id = ANY(%s::uuid[]) AND c.status = 'pending' ORDER BY c.created_at, c.id",
        (guardian_user_id, plan_ids),
    )
    result: dict[str, list[WalletChange]] = {}
    for sealed_row in await cur.fetchall():
        row = sealed_text.open_row(ring, table="beneficiaries", row=sealed_row, id_key="beneficiary_id")
        plan_id = row.pop("plan_id")
        result.setdefault(plan_id, []).append(as_record(WalletChange, row=row))
    return result


async def approve_change(
    cur: Cursor,
    *,
    plan_id: str,
    owner_id: str,
    change_id: str,
    guardian_id: str,
    approver_user_id: str,
    now: datetime,
) -> ChangeStatus:
    """One guardian's approval of a waiting request; at the plan's threshold the proven wallet
    is bound to the heir (`guardians`). Call with the plan row locked."""
    await cur.execute(
        "SELECT beneficiary_id::text AS beneficiary_id, wallet_address, status FROM wallet_changes"
        " WHERE id = %s AND plan_id = %s FOR UPDATE",
        (change_id, plan_id),
    )
    change = await cur.fetchone()
    if change is None:
        raise NotFound("Wallet change")
    if change["status"] != "pending":
        raise Conflict(
            "This request was already applied."
            if change["status"] == "applied"
            else "The heir proved another wallet since; approve that request instead."
        )
    approved = await unless_duplicate(
        cur,
        "INSERT INTO wallet_change_approvals (change_id, guardian_id, approver_user_id, created_at)"
        " VALUES (%s, %s, %s, %s)",
        (change_id, guardian_id, approver_user_id, now),
    )
    if not approved:
        raise Conflict("You have already approved this wallet.")
    await cur.execute("SELECT count(*) AS n FROM wallet_change_approvals WHERE change_id = %s", (change_id,))
    approvals = (await cur.fetchone())["n"]
    threshold = await _threshold(cur, plan_id)
    await activity.record(
        cur,
        user_id=owner_id,
        kind="beneficiary.wallet_change_approved",
        entity_id=change["beneficiary_id"],
        summary="A guardian approved a beneficiary's new wallet",
        metadata={"guardianId": guardian_id, "approvals": approvals, "threshold": threshold},
    )
    if approvals < threshold:
        return {"status": "pending", "approvals": approvals, "threshold": threshold}
    await cur.execute(
        "SELECT EXISTS (SELECT 1 FROM transactions WHERE beneficiary_id = %s AND function = 'claim_assets'"
        " AND status = 'confirmed') AS claimed",
        (change["beneficiary_id"],),
    )
    if (await cur.fetchone())["claimed"]:
        raise Conflict("This heir has already claimed with the wallet bound to them; it cannot change now.")
    bound = await beneficiaries.bind_wallet(
        cur,
        beneficiary_id=change["beneficiary_id"],
        wallet_address=change["wallet_address"],
        via="guardians",
        now=now,
    )
    if not bound:
        raise Conflict(TAKEN)
    await cur.execute(
        "UPDATE wallet_changes SET status = 'applied', decided_at = %s WHERE id = %s", (now, change_id)
    )
    await activity.record(
        cur,
        user_id=owner_id,
        kind="beneficiary.wallet_replaced",
        entity_id=change["beneficiary_id"],
        summary="The guardians approved a beneficiary's new wallet; it replaces the one bound before",
        metadata={"walletAddress": change["wallet_address"]},
    )
    return {"status": "applied", "approvals": approvals, "threshold": threshold}
