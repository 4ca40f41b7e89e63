"""Private text at rest: messages, archive texts, and the personal data of owners, beneficiaries,
guardians, assets and guardian reports (`COLUMNS` lists every one).

Each such column `c` is stored as `c_sealed` holding `KeyRing.seal("private-text", text, aad)`
with aad = "<table>.<column>|" + the row's uuid bytes, so a value copied onto another row, or
into another column of the same row, fails authentication instead of showing the wrong text.
The plaintext columns of old deployments are gone (migration 0015 drops them, after `reseal`
has sealed what they held: docs/sealed-text.md); only `reseal` still knows they may exist.
Nothing the service sorts by is among these columns; where it must find a row by one (an email
address), it looks up the column's keyed blind index (`blind_index_candidates`).

An open that fails is a `SealedTextError` (an IntegrityError): the request answers 500 and the
error log names the table, column and row, never a text.
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import uuid
from collections.abc import Mapping
from typing import Any, cast

from core.db import Pool, autocommit, transaction
from core.files.crypto import IntegrityError, KeyRing

PURPOSE = "private-text"
# The blind indexes' HMAC key: an HKDF subkey of its own, never the sealing key.
INDEX_PURPOSE = "blind-index"
# Sealed values up to this many characters are remembered once opened (titles, names, short
# letters); longer ones are opened each time, so the cache stays a few tens of MiB at most.
_CACHE_MAX_SEALED_CHARS = 2048

COLUMNS: dict[str, tuple[str, ...]] = {
    "messages": ("title", "content"),
    "archive_items": ("title", "description", "file_name"),
    "users": ("name", "email"),
    "beneficiaries": ("name", "relationship", "email"),
    "guardians": ("name", "email", "relationship"),
    # The amount is sealed as its decimal string ("12.50" keeps its scale); no SQL adds amounts.
    "assets": ("label", "description", "amount"),
    "plan_reports": ("guardian_name", "note"),
    "plan_approvals": ("guardian_name",),
    "plan_transitions": ("actor_name",),
    "heir_requests": ("note",),
    "plan_objections": ("note",),
    "address_changes": ("email",),
}
# Columns the service finds rows by: each also has `c_bidx` (bytea), the keyed blind index of its
# normalised value, written with `c_sealed` (see `blind_index`).
BLIND_INDEXED: dict[str, tuple[str, ...]] = {
    "users": ("email",),
    "beneficiaries": ("email",),
    "guardians": ("email",),
}


class SealedTextError(IntegrityError):
    """A sealed text did not open for its row and column (tampered, moved, or its key retired)."""


def select_list(*, table: str, alias: str, columns: tuple[str, ...] | None = None, prefix: str = "") -> str:
    """The sealed columns of `table` (all, or `columns`), for a SELECT; open the row with
    `open_row` (same `prefix`, which names the output keys when several tables are joined)."""
    return ", ".join(f"{alias}.{c}_sealed AS {prefix}{c}_sealed" for c in (columns or COLUMNS[table]))


def normalise(*, value: str) -> str:
    """What a blind index compares: trimmed, lower case (an email typed differently still matches)."""
    return value.strip().lower()


def blind_index(
    ring: KeyRing, *, table: str, column: str, value: str | None, key_id: str | None = None
) -> bytes | None:
    """HMAC-SHA256 of the normalised value under the ring's blind-index subkey (primary key unless
    `key_id`). Bound to table and column, so one address has unrelated indexes in two tables."""
    if value is None:
        return None
    key = ring.subkey(key_id or ring.primary_id, INDEX_PURPOSE)
    message = f"{table}.{column}|".encode() + normalise(value=value).encode("utf-8")
    return hmac.new(key, message, hashlib.sha256).digest()


def blind_index_candidates(ring: KeyRing, *, table: str, column: str, value: str) -> list[bytes]:
    """Every index `value` can have in `table.column`: one per key of the ring, primary first.

    Find rows with `WHERE <column>_bidx = ANY(%s)`: a row indexed under a key that is still in the
    ring (not re-sealed since a rotation) is found as well as one indexed under the primary.
    """
    return [
        cast(bytes, blind_index(ring, table=table, column=column, value=value, key_id=key_id))
        for key_id in ring.key_ids
    ]


def _aad(table: str, column: str, row_id: str) -> bytes:
    return f"{table}.{column}|".encode() + uuid.UUID(row_id).bytes


def seal(ring: KeyRing, *, table: str, column: str, row_id: str, text: str | None) -> str | None:
    if text is None:
        return None
    return ring.seal(PURPOSE, text.encode("utf-8"), _aad(table, column, row_id))


@functools.lru_cache(maxsize=8192)
def _open_cached(ring: KeyRing, table: str, column: str, sealed: str, row_id: str) -> str:
    return ring.open(PURPOSE, sealed, _aad(table, column, row_id)).decode("utf-8")


def open_text(
    ring: KeyRing, *, table: str, column: str, row_id: str, sealed: str | None, legacy: Any = None
) -> str | None:
    """The text of one column: opened from `sealed`, or (only `reseal` passes one) the plaintext
    of a row an old deployment wrote, if not sealed yet."""
    if sealed is None:
        return legacy
    try:
        if len(sealed) <= _CACHE_MAX_SEALED_CHARS:
            return _open_cached(ring, table, column, sealed, row_id)
        return ring.open(PURPOSE, sealed, _aad(table, column, row_id)).decode("utf-8")
    except IntegrityError as exc:
        raise SealedTextError(f"{table}.{column} of row {row_id} does not open: {exc}") from None


@functools.lru_cache(maxsize=256)
def _row_keys(table: str, prefix: str) -> tuple[tuple[str, str, str], ...]:
    return tuple((c, f"{prefix}{c}", f"{prefix}{c}_sealed") for c in COLUMNS[table])


def open_row(
    ring: KeyRing, *, table: str, row: Mapping[str, Any], id_key: str = "id", prefix: str = ""
) -> dict[str, Any]:
    """A copy of `row` with each `c_sealed` present (keys `{prefix}c_sealed`) replaced by the text
    as `{prefix}c`; the row's id is `row[id_key]` (NULL for an outer join that found none).

    On every listed row: the cached open is called directly (no per-column key building)."""
    record = dict(row)
    row_id = record[id_key]
    for column, key, sealed_key in _row_keys(table, prefix):
        if sealed_key not in record:
            continue
        sealed = record.pop(sealed_key)
        if sealed is None:
            record[key] = None
        elif len(sealed) <= _CACHE_MAX_SEALED_CHARS:
            try:
                record[key] = _open_cached(ring, table, column, sealed, row_id)
            except IntegrityError as exc:
                raise SealedTextError(f"{table}.{column} of row {row_id} does not open: {exc}") from None
        else:
            record[key] = open_text(ring, table=table, column=column, row_id=row_id, sealed=sealed)
    return record


def sealed_values(ring: KeyRing, *, table: str, row_id: str, values: Mapping[str, Any]) -> dict[str, Any]:
    """Column values to write: each private text becomes `c_sealed`, plus `c_bidx` for a
    blind-indexed one. Other values pass through; a Decimal is sealed as its string."""
    out: dict[str, Any] = {}
    for column, value in values.items():
        if column in COLUMNS[table]:
            text = None if value is None else str(value)
            out[f"{column}_sealed"] = seal(ring, table=table, column=column, row_id=row_id, text=text)
            if column in BLIND_INDEXED.get(table, ()):
                out[f"{column}_bidx"] = blind_index(ring, table=table, column=column, value=text)
        else:
            out[column] = value
    return out


def writable(*, table: str, columns: tuple[str, ...]) -> tuple[str, ...]:
    """`columns` with each private text among them replaced by its sealed column (and blind index)."""
    indexed = BLIND_INDEXED.get(table, ())
    return (
        tuple(c for c in columns if c not in COLUMNS[table])
        + tuple(f"{c}_sealed" for c in columns if c in COLUMNS[table])
        + tuple(f"{c}_bidx" for c in columns if c in indexed)
    )


async def legacy_columns(pool: Pool) -> dict[str, tuple[str, ...]]:
    """The plaintext columns of `COLUMNS` that still exist (a deployment that has not applied
    migration 0015 yet), by table; empty once they are dropped."""
    async with autocommit(pool) as cur:
        await cur.execute(
            "SELECT table_name::text AS t, column_name::text AS c FROM information_schema.columns"
            " WHERE table_schema = current_schema() AND table_name = ANY(%s)",
            (list(COLUMNS),),
        )
        present = {(r["t"], r["c"]) for r in await cur.fetchall()}
    found = {t: tuple(c for c in cols if (t, c) in present) for t, cols in COLUMNS.items()}
    return {t: cols for t, cols in found.items() if cols}


async def reseal(pool: Pool, ring: KeyRing, *, batch: int = 200) -> tuple[int, int]:
    """Seal every private text not yet sealed under the primary key (or not sealed at all).

    Returns (rows rewritten, rows that could not be opened). Once both are 0 no text needs an
    older key, and no plaintext column holds anything. Rows are re-indexed (`c_bidx`) with the
    key they are sealed under. The guarded UPDATE skips a row that was edited meanwhile (the
    next run takes it). updated_at is left alone: nothing changed.
    """
    prefix = f"{ring.primary_id}."
    legacy = await legacy_columns(pool)
    existing = await _existing_tables(pool)
    resealed = unopenable = 0
    for table, columns in COLUMNS.items():
        if table not in existing:
            continue
        done, failed = await _reseal_table(
            pool, ring, table=table, columns=columns, plain=legacy.get(table, ()), prefix=prefix, batch=batch
        )
        resealed += done
        unopenable += failed
    return resealed, unopenable


async def _existing_tables(pool: Pool) -> set[str]:
    """A table created by a later migration than the one running this (the 0015 hook) is
    not there yet, and holds nothing to seal."""
    async with autocommit(pool) as cur:
        await cur.execute(
            "SELECT table_name::text AS t FROM information_schema.tables"
            " WHERE table_schema = current_schema() AND table_name = ANY(%s)",
            (list(COLUMNS),),
        )
        return {r["t"] for r in await cur.fetchall()}


async def _reseal_table(
    pool: Pool,
    ring: KeyRing,
    *,
    table: str,
    columns: tuple[str, ...],
    plain: tuple[str, ...],
    prefix: str,
    batch: int,
) -> tuple[int, int]:
    """One table, in id order, a batch at a time: (rows rewritten, rows that could not be opened)."""
    stale = " OR ".join(
        [f"{c} IS NOT NULL" for c in plain]
        + [f"({c}_sealed IS NOT NULL AND NOT starts_with({c}_sealed, %(prefix)s))" for c in columns]
    )
    selected = ", ".join([*plain, *(f"{c}_sealed" for c in columns)])
    after = "00000000-0000-0000-0000-000000000000"
    resealed = unopenable = 0
    while True:
        async with autocommit(pool) as cur:
            await cur.execute(
                f"SELECT id, {selected} FROM {table} WHERE ({stale}) AND id > %(after)s ORDER BY id"
                " LIMIT %(batch)s",
                {"prefix": prefix, "after": after, "batch": batch},
            )
            rows = await cur.fetchall()
        if not rows:
            return resealed, unopenable
        for row in rows:
            after = row["id"]
            done = await _reseal_row(pool, ring, table=table, columns=columns, plain=plain, row=row)
            if done is None:
                unopenable += 1
            else:
                resealed += done


async def _reseal_row(
    pool: Pool,
    ring: KeyRing,
    *,
    table: str,
    columns: tuple[str, ...],
    plain: tuple[str, ...],
    row: dict[str, Any],
) -> int | None:
    """Rewrite one row under the primary key: 1, 0 when it was edited meanwhile, None when it
    cannot be opened."""
    try:
        texts = {
            c: open_text(
                ring,
                table=table,
                column=c,
                row_id=row["id"],
                sealed=row[f"{c}_sealed"],
                legacy=row.get(c),
            )
            for c in columns
        }
    except SealedTextError:
        return None
    new = sealed_values(ring, table=table, row_id=row["id"], values=texts)
    new.update({c: None for c in plain})
    assignments = ", ".join(f"{c} = %(new_{c})s" for c in new)
    guard = " AND ".join(f"{c} IS NOT DISTINCT FROM %(old_{c})s" for c in new if c in row)
    params = {f"new_{c}": v for c, v in new.items()}
    params.update({f"old_{c}": row[c] for c in new if c in row})
    params["id"] = row["id"]
    async with transaction(pool) as cur:
        await cur.execute(f"UPDATE {table} SET {assignments} WHERE id = %(id)s AND {guard}", params)
        rowcount: int = cur.rowcount
        return rowcount
