"""The owner's passkeys (WebAuthn, discoverable): added on the account page, then enough to sign
in with no address to type. Checked by the same proof as the guardians' passkeys
(models/proofs/passkey.py, py_webauthn). Of each, only what checks its assertions is kept, and
when it was added and last used (for the account page). Removing one ends the page sessions it
opened (the sessions' foreign key cascades). docs/security.md, "The owner's passkeys".
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, TypedDict

from core.db import Pool, autocommit, fetch_one, transaction
from core.errors import NotFound
from core.text.i18n import N_
from models import activity
from models.proofs.passkey import Passkey

_COLUMNS = (
    "credential_id, user_id::text AS user_id, public_key, sign_count, transports, created_at, last_used_at"
)


class OwnerPasskey(TypedDict):
    credential_id: bytes
    user_id: str
    public_key: bytes
    sign_count: int
    transports: list[str]
    created_at: datetime
    last_used_at: datetime | None


def _record(row: dict[str, Any]) -> OwnerPasskey:
    return {
        "credential_id": bytes(row["credential_id"]),
        "user_id": row["user_id"],
        "public_key": bytes(row["public_key"]),
        "sign_count": int(row["sign_count"]),
        "transports": list(row["transports"] or []),
        "created_at": row["created_at"],
        "last_used_at": row["last_used_at"],
    }


def as_proof(*, passkey: OwnerPasskey) -> Passkey:
    """The passkey as models.proofs.passkey checks it (its holder in the holder's slot)."""
    return {
        "credential_id": passkey["credential_id"],
        "guardian_id": passkey["user_id"],
        "public_key": passkey["public_key"],
        "sign_count": passkey["sign_count"],
        "transports": passkey["transports"],
    }


async def of_owner(pool: Pool, *, user_id: str) -> list[OwnerPasskey]:
    """The owner's passkeys, oldest first."""
    async with autocommit(pool) as cur:
        await cur.execute(
            f"SELECT {_COLUMNS} FROM owner_passkeys WHERE user_id = %s ORDER BY created_at", (user_id,)
        )
        return [_record(row) for row in await cur.fetchall()]


async def get(pool: Pool, *, credential_id: bytes) -> OwnerPasskey | None:
    """The passkey with this credential id, whoever's it is."""
    row = await fetch_one(
        pool, f"SELECT {_COLUMNS} FROM owner_passkeys WHERE credential_id = %s", (credential_id,)
    )
    return None if row is None else _record(row)


async def add(pool: Pool, *, user_id: str, passkey: Passkey, now: datetime) -> bool:
    """Keep a newly registered passkey of this owner; False when that credential is already kept."""
    async with transaction(pool) as cur:
        await cur.execute(
            "INSERT INTO owner_passkeys (credential_id, user_id, public_key, sign_count, transports,"
            " created_at) VALUES (%s, %s, %s, %s, %s, %s)"
            " ON CONFLICT (credential_id) DO NOTHING RETURNING credential_id",
            (
                passkey["credential_id"],
                user_id,
                passkey["public_key"],
                passkey["sign_count"],
                passkey["transports"],
                now,
            ),
        )
        if await cur.fetchone() is None:
            return False
        await activity.record(
            cur,
            user_id=user_id,
            kind="user.passkey_added",
            entity_id=user_id,
            summary=N_("A passkey was added: it can now sign in to your account"),
        )
    return True


async def used(pool: Pool, *, credential_id: bytes, sign_count: int, now: datetime) -> None:
    """Its counter and when it last signed in (a lone update: no timeline entry)."""
    async with autocommit(pool) as cur:
        await cur.execute(
            "UPDATE owner_passkeys SET sign_count = %s, last_used_at = %s WHERE credential_id = %s",
            (sign_count, now, credential_id),
        )


async def remove(pool: Pool, *, user_id: str, credential_id: bytes) -> None:
    """Remove one of the owner's passkeys; the page sessions it opened end with it. 404 for a
    passkey that is not this owner's."""
    async with transaction(pool) as cur:
        await cur.execute(
            "DELETE FROM owner_passkeys WHERE credential_id = %s AND user_id = %s RETURNING credential_id",
            (credential_id, user_id),
        )
        if await cur.fetchone() is None:
            raise NotFound("Passkey")
        await activity.record(
            cur,
            user_id=user_id,
            kind="user.passkey_removed",
            entity_id=user_id,
            summary=N_("A passkey was removed, and the sessions it opened were ended"),
        )
