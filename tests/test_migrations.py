"""Migrations: every file applies to an empty database, once, even with two instances racing."""

from __future__ import annotations

import threading

import psycopg2
import psycopg2.extensions
import pytest

from service.migrate import apply_migrations, migration_files
from tests.helpers import migrations_before_drop, scratch_database


@pytest.fixture
def empty_database(service_urls):
    with scratch_database(service_urls[0], "lps_migrate") as (_, url):
        yield url


def _tables(url):
    with psycopg2.connect(url) as conn, conn.cursor() as cur:
        cur.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")
        names = {row[0] for row in cur.fetchall()}
    conn.close()
    return names


def test_all_migrations_apply_to_an_empty_database_and_are_idempotent(empty_database):
    names = [p.name for p in migration_files()]
    assert names == sorted(names) and names[0].startswith("0001_")
    assert apply_migrations(empty_database) == names
    assert {"schema_migrations", "users", "user_wallets", "activity"} <= _tables(empty_database)
    assert apply_migrations(empty_database) == []


def test_two_instances_migrating_together_apply_each_file_once(empty_database):
    results: list[list[str]] = []
    errors: list[BaseException] = []

    def run() -> None:
        try:
            results.append(apply_migrations(empty_database))
        except BaseException as exc:  # collected and asserted below
            errors.append(exc)

    threads = [threading.Thread(target=run) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    applied = sorted(results, key=len)
    assert applied[-1] == [p.name for p in migration_files()]
    assert all(r == [] for r in applied[:-1])


def test_badly_named_migration_is_refused(tmp_path):
    (tmp_path / "1_oops.sql").write_text("SELECT 1;")
    with pytest.raises(ValueError, match=r"0001_name\.sql"):
        migration_files(tmp_path)


def test_a_number_taken_twice_is_refused(tmp_path):
    (tmp_path / "0001_first.sql").write_text("SELECT 1;")
    (tmp_path / "0001_second.sql").write_text("SELECT 1;")
    with pytest.raises(ValueError, match="0001 is taken twice"):
        migration_files(tmp_path)


def test_0004_fails_uploads_left_in_staging_honestly(empty_database, tmp_path):
    """Items still pending under the staging design cannot be encrypted any more: they become
    `failed` with a reason, and the plaintext staging goes with its table."""
    for path in migration_files():
        if path.name < "0004_":
            (tmp_path / path.name).write_text(path.read_text())
    apply_migrations(empty_database, tmp_path)
    with psycopg2.connect(empty_database) as conn, conn.cursor() as cur:
        cur.execute("INSERT INTO users (wallet_address) VALUES ('GMIGRATIONTEST') RETURNING id")
        user_id = cur.fetchone()[0]
        for status in ("pending", "available"):
            cur.execute(
                "INSERT INTO archive_items (id, user_id, title, type, category, file_name, content_type,"
                " size_bytes, staged_chunks, audience_all, status, storage_key, key_id, wrapped_key,"
                " stored_bytes, sha256) VALUES (gen_random_uuid(), %s, %s, 'document', 'other', 'f', 'x/y',"
                " 1, 1, true, %s, 'k', 'k1', 'w', 25, sha256('x')) RETURNING id",
                (user_id, status, status),
            )
            if status == "pending":
                cur.execute(
                    "INSERT INTO archive_staging (item_id, seq, data) VALUES (%s, 0, 'x')", cur.fetchone()
                )
    conn.close()

    # Later ones follow, up to the drop of plaintext columns (these rows' titles were never sealed).
    upto = migrations_before_drop(tmp_path / "upto")
    assert apply_migrations(empty_database, upto)[0] == "0004_archive_sealed_on_upload.sql"
    with psycopg2.connect(empty_database) as conn, conn.cursor() as cur:
        cur.execute("SELECT title, status, failure_reason FROM archive_items ORDER BY title")
        rows = cur.fetchall()
    conn.close()
    assert rows[0][:2] == ("available", "available") and rows[0][2] is None
    assert rows[1][:2] == ("pending", "failed") and "upload the file again" in rows[1][2]
    assert "archive_staging" not in _tables(empty_database)
