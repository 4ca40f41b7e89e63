"""`legacy-planning keys check`: does the configured key ring open what the database and the
object store hold? Run before a key rotation and after a restore (docs/operations.md).

Two kinds of evidence, neither ever printing a plaintext:

- a census, over every row: the key ids that sealed values (private text, claim tokens) and
  archive data keys were written under, each checked against ENCRYPTION_KEYS (a key id the ring
  lacks means every value under it is unreadable);
- a sample (random rows, `sample` per column): each value opened for its table, column and row,
  each archive item's data key unwrapped and its stored object checked (present, of its length,
  final segment authenticated: core.files.sealed_files.verify).

A problem names the table, column and row id (or the item id) and why; nothing else.
"""

from __future__ import annotations

from collections import Counter
from typing import TypedDict

from core.db import Pool, fetch_all
from core.files import sealed_files
from core.files.crypto import IntegrityError, KeyRing
from core.files.storage import Storage, StorageError
from models import sealed_text
from models.claim_tokens import open_claim_token
from models.common import as_record


class Problem(TypedDict):
    where: str  # "messages.content of row <id>", "archive item <id>", "key id k0"
    reason: str


class Report(TypedDict):
    checked: dict[str, int]  # what was opened, by table.column (or "archive objects")
    key_ids: dict[str, int]  # values and data keys per key id, over every row
    problems: list[Problem]


class _Item(TypedDict):
    id: str
    storage_key: str
    key_id: str
    wrapped_key: bytes
    size_bytes: int
    stored_bytes: int


def _census_sql() -> str:
    parts = [
        f"SELECT split_part({column}_sealed, '.', 1) AS key_id FROM {table} WHERE {column}_sealed IS NOT NULL"
        for table, columns in sealed_text.COLUMNS.items()
        for column in columns
    ]
    parts.append(
        "SELECT split_part(claim_token_sealed, '.', 1) FROM beneficiaries"
        " WHERE claim_token_sealed IS NOT NULL"
    )
    parts.append("SELECT key_id FROM archive_items WHERE key_id IS NOT NULL")
    return (
        f"SELECT key_id, count(*)::int AS n FROM ({' UNION ALL '.join(parts)}) k GROUP BY key_id ORDER BY 1"
    )


async def check(pool: Pool, ring: KeyRing, storage: Storage | None, *, sample: int = 50) -> Report:
    """Census and sample (see the module's docstring); `storage` None: objects are a problem."""
    checked: Counter[str] = Counter()
    problems: list[Problem] = []
    key_ids = {row["key_id"]: row["n"] for row in await fetch_all(pool, _census_sql())}
    problems.extend(
        {"where": f"key id {key_id}", "reason": f"{n} values are sealed under it; ENCRYPTION_KEYS lacks it"}
        for key_id, n in key_ids.items()
        if key_id not in ring.key_ids
    )
    for table, columns in sealed_text.COLUMNS.items():
        await _sample_texts(pool, ring, table, columns, sample, checked, problems)
    await _sample_claim_tokens(pool, ring, sample, checked, problems)
    await _sample_items(pool, ring, storage, sample, checked, problems)
    return {"checked": dict(checked), "key_ids": key_ids, "problems": problems}


async def _sample_texts(
    pool: Pool,
    ring: KeyRing,
    table: str,
    columns: tuple[str, ...],
    sample: int,
    checked: Counter[str],
    problems: list[Problem],
) -> None:
    present = " OR ".join(f"t.{c}_sealed IS NOT NULL" for c in columns)
    rows = await fetch_all(
        pool,
        f"SELECT t.id::text AS id, {sealed_text.select_list(table=table, alias='t')} FROM {table} t"
        f" WHERE {present} ORDER BY random() LIMIT %s",
        (sample,),
    )
    for row in rows:
        for column in columns:
            sealed = row[f"{column}_sealed"]
            if sealed is None:
                continue
            try:
                sealed_text.open_text(ring, table=table, column=column, row_id=row["id"], sealed=sealed)
                checked[f"{table}.{column}"] += 1
            except IntegrityError:
                problems.append({"where": f"{table}.{column} of row {row['id']}", "reason": "does not open"})


async def _sample_claim_tokens(
    pool: Pool, ring: KeyRing, sample: int, checked: Counter[str], problems: list[Problem]
) -> None:
    for row in await fetch_all(
        pool,
        "SELECT id::text AS id, claim_token_sealed FROM beneficiaries WHERE claim_token_sealed IS NOT NULL"
        " ORDER BY random() LIMIT %s",
        (sample,),
    ):
        try:
            open_claim_token(ring, sealed=row["claim_token_sealed"], beneficiary_id=row["id"])
            checked["beneficiaries.claim_token"] += 1
        except (IntegrityError, ValueError):
            problems.append(
                {"where": f"beneficiaries.claim_token of row {row['id']}", "reason": "does not open"}
            )


async def _sample_items(
    pool: Pool,
    ring: KeyRing,
    storage: Storage | None,
    sample: int,
    checked: Counter[str],
    problems: list[Problem],
) -> None:
    items = await fetch_all(
        pool,
        "SELECT id::text AS id, storage_key, key_id, wrapped_key, size_bytes, stored_bytes FROM archive_items"
        " WHERE status IN ('available', 'damaged') ORDER BY random() LIMIT %s",
        (sample,),
    )
    if items and storage is None:
        problems.append(
            {"where": "object storage", "reason": "STORAGE_URL is not set: stored files not checked"}
        )
    for raw in items:
        item = as_record(_Item, row={**raw, "wrapped_key": bytes(raw["wrapped_key"])})
        where = f"archive item {item['id']}"
        try:
            ring.unwrap_data_key(item["key_id"], item["wrapped_key"], item["id"])
            checked["archive_items.data_key"] += 1
            if storage is not None:
                await sealed_files.verify(storage, ring, {**item})
                checked["archive objects"] += 1
        except sealed_files.VerificationFailed as exc:
            problems.append({"where": where, "reason": f"stored file: {exc}"})
        except IntegrityError as exc:
            problems.append({"where": where, "reason": f"data key does not unwrap ({type(exc).__name__})"})
        except StorageError as exc:
            problems.append({"where": where, "reason": f"storage: {exc}"})
