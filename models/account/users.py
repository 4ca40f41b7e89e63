"""Accounts and their wallets."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any, TypedDict, cast

import psycopg2.errors

from core.db import Pool, fetch_one, transaction
from core.errors import Conflict, NotFound
from models import activity

USER_COLUMNS = "u.id, u.wallet_address, u.name, u.email, u.created_at, u.updated_at"


class User(TypedDict):
    """An account; `wallet_address` is the wallet it was created with."""

    id: uuid.UUID
    wallet_address: str
    name: str | None
    email: str | None
    created_at: datetime
    updated_at: datetime


class UserWithWallets(User):
    wallets: list[str]  # every wallet that signs in to the account, oldest first


async def sign_in(pool: Pool, wallet_address: str) -> User:
    """Return the account owning this wallet, creating it (name null) on first sign-in.

    If a concurrent link or sign-in claims the wallet first, the unique constraint stops this
    insert and the account that won is returned instead.
    """
    user = await get_by_wallet(pool, wallet_address)
    if user is not None:
        return user
    try:
        async with transaction(pool) as cur:
            await cur.execute(
                "INSERT INTO users (wallet_address) VALUES (%s) RETURNING id", (wallet_address,)
            )
            created = await cur.fetchone()
            await cur.execute(
                "INSERT INTO user_wallets (wallet_address, user_id) VALUES (%s, %s)",
                (wallet_address, created["id"]),
            )
            await activity.record(
                cur,
                user_id=created["id"],
                kind="user.created",
                entity_id=created["id"],
                summary="Account created with a Stellar wallet",
            )
    except psycopg2.errors.UniqueViolation:
        pass
    user = await get_by_wallet(pool, wallet_address)
    if user is None:  # the wallet row we collided with was removed meanwhile; vanishingly rare
        raise Conflict("Sign-in raced with another change to this wallet; try again")
    return user


async def get_by_wallet(pool: Pool, wallet_address: str) -> User | None:
    row = await fetch_one(
        pool,
        f"SELECT {USER_COLUMNS} FROM user_wallets w JOIN users u ON u.id = w.user_id"
        " WHERE w.wallet_address = %s",
        (wallet_address,),
    )
    return cast(User | None, row)


async def get_with_wallets(pool: Pool, user_id: str) -> UserWithWallets:
    """The account and every wallet that signs in to it (oldest first), in one round trip."""
    row = await fetch_one(
        pool,
        f"SELECT {USER_COLUMNS}, ARRAY(SELECT w.wallet_address FROM user_wallets w"
        " WHERE w.user_id = u.id ORDER BY w.created_at) AS wallets FROM users u WHERE u.id = %s",
        (user_id,),
    )
    if row is None:
        raise NotFound("User")
    return cast(UserWithWallets, row)


async def update_profile(pool: Pool, *, user_id: str, changes: dict[str, Any]) -> UserWithWallets:
    """Apply name/email changes; the timeline names the fields, not their values."""
    columns = [c for c in ("name", "email") if c in changes]
    async with transaction(pool) as cur:
        assignments = ", ".join(f"{c} = %s" for c in columns)
        await cur.execute(
            f"UPDATE users SET {assignments}, updated_at = clock_timestamp() WHERE id = %s RETURNING id",
            [changes[c] for c in columns] + [user_id],
        )
        if await cur.fetchone() is None:
            raise NotFound("User")
        await activity.record(
            cur,
            user_id=user_id,
            kind="user.updated",
            entity_id=user_id,
            summary="Profile updated",
            metadata={"fields": columns},
        )
    return await get_with_wallets(pool, user_id)


async def link_wallet(pool: Pool, *, user_id: str, wallet_address: str) -> UserWithWallets:
    """Attach a proven wallet; 409 if another account already signs in with it."""
    async with transaction(pool) as cur:
        await cur.execute("SELECT user_id FROM user_wallets WHERE wallet_address = %s", (wallet_address,))
        existing = await cur.fetchone()
        if existing is not None and str(existing["user_id"]) != str(user_id):
            raise Conflict("This wallet is already linked to another account")
        if existing is None:
            try:
                await cur.execute(
                    "INSERT INTO user_wallets (wallet_address, user_id) VALUES (%s, %s)",
                    (wallet_address, user_id),
                )
            except psycopg2.errors.UniqueViolation:
                raise Conflict("This wallet is already linked to another account") from None
            await activity.record(
                cur,
                user_id=user_id,
                kind="user.wallet_linked",
                entity_id=user_id,
                summary="Another Stellar wallet was linked",
                metadata={"walletAddress": wallet_address},
            )
    return await get_with_wallets(pool, user_id)


# user id -> monotonic expiry. Positive answers only, so a deleted account stops
# authenticating within EXISTS_TTL on every instance (and at once on writes: see core.db).
# No route deletes an account; an operator does, in SQL (tests/test_auth.py deletes one so).
_known: dict[str, float] = {}
EXISTS_TTL = 30.0
_KNOWN_MAX = 50_000


async def exists(pool: Pool, user_id: str, now: float) -> bool:
    """Whether the account behind a session still exists; `now` is a monotonic reading."""
    expiry = _known.get(user_id)
    if expiry is not None and expiry > now:
        return True
    row = await fetch_one(pool, "SELECT 1 AS found FROM users WHERE id = %s", (user_id,))
    if row is None:
        _known.pop(user_id, None)
        return False
    if len(_known) >= _KNOWN_MAX:
        _known.clear()
    _known[user_id] = now + EXISTS_TTL
    return True
