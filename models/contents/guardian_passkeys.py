"""The passkeys (WebAuthn credentials) of guardians who answer without a Stellar wallet.

Of each, only what checks its assertions: the credential id, its public key (COSE), the
signature counter and the transports the browser reported. A guardian registers the first when
they accept from their page and may add another after proving with it; the owner's
re-invitation deletes them all (models.contents.guardians `reinvite`). docs/security.md,
"Guardians with a passkey".
"""

from __future__ import annotations

from typing import Any

from core.db import Cursor
from models.proofs.passkey import Passkey

_COLUMNS = "credential_id, guardian_id::text AS guardian_id, public_key, sign_count, transports"


def _record(row: dict[str, Any]) -> Passkey:
    return {
        "credential_id": bytes(row["credential_id"]),
        "guardian_id": row["guardian_id"],
        "public_key": bytes(row["public_key"]),
        "sign_count": int(row["sign_count"]),
        "transports": list(row["transports"] or []),
    }


async def of_guardian(cur: Cursor, *, guardian_id: str) -> list[Passkey]:
    """This guardian's passkeys, oldest first."""
    await cur.execute(
        f"SELECT {_COLUMNS} FROM guardian_passkeys WHERE guardian_id = %s ORDER BY created_at", (guardian_id,)
    )
    return [_record(row) for row in await cur.fetchall()]


async def find(cur: Cursor, *, credential_id: bytes, lock: bool = False) -> Passkey | None:
    """The passkey with this credential id, whoever's it is (locked for its counter)."""
    await cur.execute(
        f"SELECT {_COLUMNS} FROM guardian_passkeys WHERE credential_id = %s"
        + (" FOR UPDATE" if lock else ""),
        (credential_id,),
    )
    row = await cur.fetchone()
    return None if row is None else _record(row)


async def add(cur: Cursor, *, passkey: Passkey) -> bool:
    """Keep a newly registered passkey; False when that credential is already kept."""
    await cur.execute(
        "INSERT INTO guardian_passkeys (credential_id, guardian_id, public_key, sign_count, transports)"
        " VALUES (%s, %s, %s, %s, %s) ON CONFLICT (credential_id) DO NOTHING RETURNING credential_id",
        (
            passkey["credential_id"],
            passkey["guardian_id"],
            passkey["public_key"],
            passkey["sign_count"],
            passkey["transports"],
        ),
    )
    return await cur.fetchone() is not None


async def set_sign_count(cur: Cursor, *, credential_id: bytes, sign_count: int) -> None:
    await cur.execute(
        "UPDATE guardian_passkeys SET sign_count = %s WHERE credential_id = %s", (sign_count, credential_id)
    )


async def revoke_all(cur: Cursor, *, guardian_id: str) -> int:
    """Delete every passkey of this guardian (a re-invitation); returns how many there were."""
    await cur.execute("DELETE FROM guardian_passkeys WHERE guardian_id = %s", (guardian_id,))
    return int(cur.rowcount)
