"""Accounts and their wallets. The owner's name and email are sealed at rest (models/sealed_text.py)."""

from __future__ import annotations

from datetime import datetime
from typing import Any, TypedDict

import psycopg2.errors
from arq.connections import ArqRedis

from core.db import Cursor, Pool, autocommit, fetch_one, transaction
from core.errors import Conflict, NotFound, validation_error
from core.files.crypto import KeyRing
from core.text.cleaning import clean_line
from core.text.i18n import N_, _
from models import activity, sealed_text
from models.common import TOMBSTONE, as_record, wire_names
from models.contents import guardians
from models.delivery import outbox, owner_notices
from models.delivery.budget import Budget

USER_COLUMNS = (
    f"u.id, u.wallet_address, {sealed_text.select_list(table='users', alias='u')}, u.locale, u.time_zone,"
    " u.grammatical_gender, u.created_at, u.updated_at"
)
# Plain columns a profile update may set beside the sealed name and email: the owner's language
# and zone (checked by the API against LANGUAGES and the IANA names; docs/translations.md) and
# how to refer to them (core.text.gender.GENDERS; docs/pages.md "Grammatical gender").
PLAIN = ("locale", "time_zone", "grammatical_gender")


class User(TypedDict):
    """An account; `wallet_address` is the wallet it was created with."""

    id: str
    wallet_address: str
    name: str | None
    email: str | None
    locale: str | None  # one of LANGUAGES when set; None: emails in English, pages by the browser
    time_zone: str | None  # an IANA name; None: UTC
    grammatical_gender: str | None  # core.text.gender.GENDERS; None: not said (gender-free words)
    created_at: datetime
    updated_at: datetime


class UserWithWallets(User):
    wallets: list[str]  # every wallet that signs in to the account, oldest first


class SigningIn(User):
    """The account as sign-in reads it: with the session generation the new token carries."""

    session_generation: int


# known_as's words when there is no name, lower-case for the middle of a sentence, in the
# reader's language (core.text.i18n); an email that opens a sentence with them capitalises them
# (models.mail.texts.common.sentence_case).
# Translators: stands in for the owner's name wherever a name would be, in any sentence and any
# grammatical case ("{owner}'s plan", "We have told {owner}"): prefer words that read right in
# every position (no article that must change with the case). {wallet} is a Stellar wallet key.
STAND_INS = (N_("the holder of the Stellar wallet {wallet}"), N_("the plan's owner"))


def known_as(*, name: str | None, wallet: str | None) -> str:
    """The words naming an owner to their guardians and heirs (emails, the guardian's page): their
    name; a plan is activated and a guardian invited only once it has one, so the wallet
    stands in only for a name cleared since, never "the person who named you". (No wallet: an
    email with no plan behind it, which names no owner.)"""
    if name and clean_line(name):
        return clean_line(name)  # a name stored before names were cleaned on the way in
    # A deleted account's wallet is a tombstone, not a wallet anyone would know it by.
    if wallet and not wallet.startswith(TOMBSTONE):
        return _(STAND_INS[0]).format(wallet=wallet)
    return _(STAND_INS[1])


def _record(ring: KeyRing, row: dict[str, Any]) -> Any:
    return sealed_text.open_row(ring, table="users", row=row)


async def sign_in(pool: Pool, ring: KeyRing, *, wallet_address: str) -> SigningIn:
    """Return the account owning this wallet, creating it (name null) on first sign-in.

    If a concurrent link or sign-in claims the wallet first, the unique constraint stops this
    insert and the account that won is returned instead.
    """
    user = await get_by_wallet(pool, ring, wallet_address=wallet_address)
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
                summary=N_("Account created with a Stellar wallet"),
            )
    except psycopg2.errors.UniqueViolation:
        pass
    user = await get_by_wallet(pool, ring, wallet_address=wallet_address)
    if user is None:  # the wallet row we collided with was removed meanwhile; vanishingly rare
        raise Conflict("Sign-in raced with another change to this wallet; try again")
    return user


async def get_by_wallet(pool: Pool, ring: KeyRing, *, wallet_address: str) -> SigningIn | None:
    """The account this wallet signs in to; its session generation is read here, fresh, so a
    token issued after a logout-all anywhere carries the new one."""
    row = await fetch_one(
        pool,
        f"SELECT {USER_COLUMNS}, u.session_generation FROM user_wallets w JOIN users u ON u.id = w.user_id"
        " WHERE w.wallet_address = %s",
        (wallet_address,),
    )
    return None if row is None else as_record(SigningIn, row=_record(ring, row))


async def get_signing_in(pool: Pool, ring: KeyRing, *, user_id: str) -> SigningIn | None:
    """The account a passkey signs in to, with its session generation read fresh; None once its
    deletion has begun (no wallet signs in to it then, and no passkey either)."""
    row = await fetch_one(
        pool, f"SELECT {USER_COLUMNS}, u.session_generation FROM users u WHERE u.id = %s", (user_id,)
    )
    if row is None or str(row["wallet_address"]).startswith(TOMBSTONE):
        return None
    return as_record(SigningIn, row=_record(ring, row))


async def get_with_wallets(pool: Pool, ring: KeyRing, *, user_id: str) -> UserWithWallets:
    """The account and every wallet that signs in to it (oldest first), in one round trip."""
    async with autocommit(pool) as cur:
        return await one_with_wallets(cur, ring, user_id=user_id)


async def one_with_wallets(cur: Cursor, ring: KeyRing, *, user_id: str) -> UserWithWallets:
    """`get_with_wallets` on the caller's cursor (the owner's export reads it in its snapshot)."""
    await cur.execute(
        f"SELECT {USER_COLUMNS}, ARRAY(SELECT w.wallet_address FROM user_wallets w"
        " WHERE w.user_id = u.id ORDER BY w.created_at) AS wallets FROM users u WHERE u.id = %s",
        (user_id,),
    )
    row = await cur.fetchone()
    if row is None:
        raise NotFound("User")
    return as_record(UserWithWallets, row=_record(ring, row))


async def update_profile(
    pool: Pool,
    ring: KeyRing,
    redis: ArqRedis,
    *,
    user_id: str,
    changes: dict[str, Any],
    now: datetime,
    budget: Budget,
) -> UserWithWallets:
    """Apply name/email (sealed), locale, zone and grammatical gender changes; the timeline names
    the fields, not their values. A new address is told to the owner at both addresses
    (models.delivery.owner_notices)."""
    columns = [c for c in ("name", "email", *PLAIN) if c in changes]
    values = sealed_text.sealed_values(
        ring, table="users", row_id=user_id, values={c: changes[c] for c in columns}
    )
    row_ids: list[str] = []
    async with transaction(pool) as cur:
        await cur.execute(
            "SELECT u.id,"
            f" {sealed_text.select_list(table='users', alias='u', columns=('email',))}"
            " FROM users u WHERE u.id = %s"
            " FOR UPDATE",
            (user_id,),
        )
        before = await cur.fetchone()
        if before is None:
            raise NotFound("User")
        previous = sealed_text.open_row(ring, table="users", row=before)["email"]
        assignments = ", ".join(f"{c} = %s" for c in values)
        await cur.execute(
            f"UPDATE users SET {assignments}, updated_at = clock_timestamp() WHERE id = %s RETURNING id",
            [*values.values(), user_id],
        )
        if await cur.fetchone() is None:
            raise NotFound("User")
        await activity.record(
            cur,
            user_id=user_id,
            kind="user.updated",
            entity_id=user_id,
            summary=N_("Profile updated"),
            metadata={"fields": wire_names(columns=columns)},
        )
        if changes.get("name"):  # invitations that waited for the owner's name go now
            row_ids += await guardians.invite_waiting(cur, ring, user_id=user_id, now=now, budget=budget)
        if "email" in changes and changes["email"] != previous:
            await owner_notices.tell_owner(
                cur, ring, user_id=user_id, change="owner_email", name=changes["email"], now=now
            )
            if previous is not None:
                row_ids += await owner_notices.tell_previous_address(
                    cur, ring, user_id=user_id, address=previous, now=now
                )
    await outbox.enqueue(redis, row_ids=row_ids)
    return await get_with_wallets(pool, ring, user_id=user_id)


async def link_wallet(
    pool: Pool, ring: KeyRing, *, user_id: str, wallet_address: str, now: datetime
) -> UserWithWallets:
    """Attach a proven wallet; 409 if another account already signs in with it."""
    async with transaction(pool) as cur:
        await cur.execute("SELECT user_id FROM user_wallets WHERE wallet_address = %s", (wallet_address,))
        existing = await cur.fetchone()
        if existing is not None and existing["user_id"] != user_id:
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
                summary=N_("Another Stellar wallet was linked"),
                metadata={"walletAddress": wallet_address},
            )
            await owner_notices.tell_owner(
                cur, ring, user_id=user_id, change="wallet_linked", name=wallet_address, now=now
            )
    return await get_with_wallets(pool, ring, user_id=user_id)


async def remove_wallet(
    pool: Pool,
    ring: KeyRing,
    *,
    check: AccountCheck,
    user_id: str,
    wallet_address: str,
    contract_configured: bool,
    now: datetime,
) -> int:
    """Remove a wallet from the account and end every session of it, as logout-all does (a
    session carries no wallet, so a leaked key's sessions can only go with all of them).

    404 for a wallet that is not the account's, 409 for the last one, and, with a contract
    configured, 409 for the primary wallet (the plan's owner on-chain). Off-chain, removing the
    primary makes the oldest remaining wallet primary. Returns the new session generation.
    Decisions: docs/security.md, "The owner's key".
    """
    async with transaction(pool) as cur:
        await cur.execute("SELECT wallet_address FROM users WHERE id = %s FOR UPDATE", (user_id,))
        account = await cur.fetchone()
        if account is None:
            raise NotFound("User")
        await cur.execute(
            "SELECT wallet_address FROM user_wallets WHERE user_id = %s ORDER BY created_at, wallet_address",
            (user_id,),
        )
        wallets = [row["wallet_address"] for row in await cur.fetchall()]
        if wallet_address not in wallets:
            raise NotFound("Wallet")
        if len(wallets) == 1:
            raise Conflict(
                "This is the only wallet that signs in to your account: link another one first "
                "(POST /api/auth/link-wallet), then remove this one."
            )
        primary = account["wallet_address"] == wallet_address
        if primary and contract_configured:
            raise Conflict(
                "This wallet is your plan's owner on the on-chain contract, so it cannot be removed. "
                "If its key leaked, sign out everywhere (POST /api/auth/logout-all) and check in."
            )
        await cur.execute(
            "DELETE FROM user_wallets WHERE wallet_address = %s AND user_id = %s", (wallet_address, user_id)
        )
        successor = next(w for w in wallets if w != wallet_address)
        await cur.execute(
            "UPDATE users SET wallet_address = CASE WHEN %s THEN %s ELSE wallet_address END,"
            " session_generation = session_generation + 1, updated_at = clock_timestamp()"
            " WHERE id = %s RETURNING session_generation",
            (primary, successor, user_id),
        )
        generation = int((await cur.fetchone())["session_generation"])
        await activity.record(
            cur,
            user_id=user_id,
            kind="user.wallet_removed",
            entity_id=user_id,
            summary=N_(
                "A Stellar wallet was removed from your account and every session was ended; your oldest "
                "remaining wallet is now your primary one"
            )
            if primary
            else N_("A Stellar wallet was removed from your account and every session was ended"),
            metadata={"walletAddress": wallet_address, **({"primaryNow": successor} if primary else {})},
        )
        await owner_notices.tell_owner(
            cur, ring, user_id=user_id, change="wallet_removed", name=wallet_address, now=now
        )
    check.remember(user_id=user_id, generation=generation, now=now.timestamp())
    return generation


async def retire(cur: Cursor, *, user_id: str, confirm: str) -> int:
    """The first step of deleting an account (models.flows.deletion), in its transaction: no
    wallet signs in to it any more (the next sign-in with one starts a new, empty account: the
    account's own `wallet_address` becomes a tombstone) and every session ends, as logout-all
    ends them. 400 unless `confirm` is one of its wallets. Returns the new session generation."""
    await cur.execute("SELECT id FROM users WHERE id = %s FOR UPDATE", (user_id,))
    if await cur.fetchone() is None:
        raise NotFound("User")
    await cur.execute("SELECT wallet_address FROM user_wallets WHERE user_id = %s", (user_id,))
    if confirm not in {row["wallet_address"] for row in await cur.fetchall()}:
        raise validation_error({"confirm": ["Must be a wallet address of this account."]})
    await cur.execute("DELETE FROM user_wallets WHERE user_id = %s", (user_id,))
    await cur.execute(
        "UPDATE users SET wallet_address = %s || id::text,"
        " session_generation = session_generation + 1, updated_at = clock_timestamp()"
        " WHERE id = %s RETURNING session_generation",
        (TOMBSTONE, user_id),
    )
    return int((await cur.fetchone())["session_generation"])


async def delete(cur: Cursor, *, user_id: str) -> None:
    """The account's last step: every row of it goes, every table cascading from `users`."""
    await cur.execute("DELETE FROM users WHERE id = %s", (user_id,))


# How long a process trusts what it last read about an account (that it exists, its session
# generation). Within it, an account deleted or signed out everywhere elsewhere is still
# accepted by this process on reads; the process that ended the sessions knows at once.
ACCOUNT_CHECK_SECONDS = 30.0
_KNOWN_MAX = 50_000


class AccountCheck:
    """Per process (one per app): account id -> (expiry, session generation), positive answers
    only. No route deletes an account; an operator does, in SQL (tests/test_auth.py deletes one
    so), and a write naming it is refused at once by the foreign keys (core.db)."""

    def __init__(self) -> None:
        self._known: dict[str, tuple[float, int]] = {}

    async def generation(self, pool: Pool, *, user_id: str, now: float) -> int | None:
        """The account's session generation, or None if the account is gone. `now`: seconds."""
        known = self._known.get(user_id)
        if known is not None and known[0] > now:
            return known[1]
        row = await fetch_one(pool, "SELECT session_generation FROM users WHERE id = %s", (user_id,))
        if row is None:
            self._known.pop(user_id, None)
            return None
        self.remember(user_id=user_id, generation=row["session_generation"], now=now)
        return int(row["session_generation"])

    def remember(self, *, user_id: str, generation: int, now: float) -> None:
        """What was just read or written (or proven by a token we signed) about the account."""
        if len(self._known) >= _KNOWN_MAX:
            self._known.clear()
        self._known[user_id] = (now + ACCOUNT_CHECK_SECONDS, generation)


async def end_all_sessions(pool: Pool, *, check: AccountCheck, user_id: str, now: float) -> int:
    """Raise the account's session generation: every token issued before stops working, here at
    once (this process's check learns it now) and in other processes within
    ACCOUNT_CHECK_SECONDS. Returns the new generation."""
    async with transaction(pool) as cur:
        await cur.execute(
            "UPDATE users SET session_generation = session_generation + 1 WHERE id = %s"
            " RETURNING session_generation",
            (user_id,),
        )
        row = await cur.fetchone()
        if row is None:
            raise NotFound("User")
        await activity.record(
            cur,
            user_id=user_id,
            kind="user.sessions_ended",
            entity_id=user_id,
            summary=N_("Signed out of every session"),
        )
    generation = int(row["session_generation"])
    check.remember(user_id=user_id, generation=generation, now=now)
    return generation
