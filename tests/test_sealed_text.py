"""Private text at rest (#12 item 8): message titles and content, archive titles, descriptions and
file names are sealed under the key ring, bound to their row and column; every route still shows
them, a sealed value moved to another row fails loudly, and the rotation cron re-seals them."""

from __future__ import annotations

import asyncio
import logging
from urllib.parse import quote

import psycopg2
from arq import cron

from core.db import create_pool
from core.files.crypto import KeyRing
from models import sealed_text
from models.contents import messages
from service.migrate import apply_migrations, reseal_hook
from tests.capsule_helpers import Family, family
from tests.helpers import migrations_before, scratch_database, sign_in
from tests.plan_helpers import create, query
from workers import keys as key_jobs

SECRET = "Zephyrine-7f3a"  # in every private text below; must never be found in a table


def _dump(settings, table: str) -> str:
    """Every column of every row of `table` as PostgreSQL prints it."""
    rows = query(settings, f"SELECT t::text AS row FROM {table} t")
    return "\n".join(r["row"] for r in rows)


async def test_texts_are_sealed_at_rest_and_every_route_shows_them(fam: Family, settings):
    ada = await fam.add_heir("Ada", 100)
    doc = await fam.document(
        b"the deed",
        filename=f"deed-{SECRET}-é.pdf",
        content_type="application/pdf",
        title=f"Deed {SECRET}",
        description=f"Where the {SECRET} deed is",
    )
    assert doc["title"] == f"Deed {SECRET}" and doc["fileName"] == f"deed-{SECRET}-é.pdf"
    await fam.vault.work()  # verified: `available`, so the capsule lists it
    opened = await fam.message(f"Dear Ada, {SECRET}", title=f"Hello {SECRET}")
    later = await fam.message(f"Not yet {SECRET}", title=f"Birthday {SECRET}", rule=("after_release", 3))
    headers = fam.owner.headers

    resp = await fam.client.patch(
        f"/api/messages/{opened['id']}", json={"content": f"Dearest Ada, {SECRET}"}, headers=headers
    )
    assert (await resp.json())["content"] == f"Dearest Ada, {SECRET}"
    got = await (await fam.client.get(f"/api/messages/{opened['id']}", headers=headers)).json()
    assert (got["title"], got["content"]) == (f"Hello {SECRET}", f"Dearest Ada, {SECRET}")
    listed = await (await fam.client.get("/api/messages", headers=headers)).json()
    assert {m["content"] for m in listed} == {f"Dearest Ada, {SECRET}", f"Not yet {SECRET}"}
    items = await (await fam.client.get("/api/archive", headers=headers)).json()
    assert items[0]["description"] == f"Where the {SECRET} deed is"

    preview = await fam.preview(ada)
    assert [m["content"] for m in preview["messages"]] == [f"Dearest Ada, {SECRET}"]
    assert [m["title"] for m in preview["sealedMessages"]] == [f"Birthday {SECRET}"]
    assert preview["documents"][0]["fileName"] == f"deed-{SECRET}-é.pdf"

    await fam.release()
    download = await fam.vault.download(doc["id"])
    assert download.status == 200 and await download.read() == b"the deed"
    assert quote(f"deed-{SECRET}-é.pdf", safe="") in download.headers["Content-Disposition"]
    capsule = await fam.capsule(ada)
    assert [m["title"] for m in capsule["messages"]] == [f"Hello {SECRET}"]
    assert capsule["sealedMessages"][0]["title"] == f"Birthday {SECRET}"
    assert "content" not in capsule["sealedMessages"][0]
    assert capsule["documents"][0]["title"] == f"Deed {SECRET}"
    from_capsule = await fam.open(ada["claimToken"], f"/documents/{doc['id']}/download")
    assert quote(f"deed-{SECRET}-é.pdf", safe="") in from_capsule.headers["Content-Disposition"]

    # What PostgreSQL holds (and so its WAL, replicas and backups): no text, and no plaintext column.
    for table in ("messages", "archive_items", "activity"):
        assert SECRET not in _dump(settings, table), table
    sealed = query(settings, "SELECT content_sealed FROM messages WHERE id = %s", (later["id"],))
    assert sealed[0]["content_sealed"].startswith(f"{settings.encryption_keys.primary_id}.")


async def test_a_sealed_text_moved_to_another_row_fails_loudly(client, settings, caplog):
    session = await sign_in(client)
    rule = {"releaseRule": {"kind": "on_release", "value": None}, "audience": {"all": True}}
    first = await create(client, session, "messages", content=f"first {SECRET}", title="one", **rule)
    second = await create(client, session, "messages", content=f"second {SECRET}", title="two", **rule)
    query(
        settings,
        "UPDATE messages m SET content_sealed = o.content_sealed FROM messages o"
        " WHERE m.id = %s AND o.id = %s",
        (first["id"], second["id"]),
    )
    caplog.set_level(logging.ERROR)
    for path in (f"/api/messages/{first['id']}", "/api/messages"):
        resp = await client.get(path, headers=session.headers)
        text = await resp.text()
        assert resp.status == 500 and SECRET not in text and "second" not in text
    assert any(
        f"messages.content of row {first['id']} does not open" in r.exc_text
        for r in caplog.records
        if r.exc_text
    )
    assert all(SECRET not in str(vars(r)) for r in caplog.records)

    # Within one row, too: the title's sealed value does not open as the content.
    query(settings, "UPDATE messages SET content_sealed = title_sealed WHERE id = %s", (second["id"],))
    resp = await client.get(f"/api/messages/{second['id']}", headers=session.headers)
    assert resp.status == 500


async def test_rotation_reseals_texts_and_the_old_key_can_go(
    make_client, run_worker, settings, file_backend, clock
):
    k1, k2 = KeyRing.generate_entry("k1"), KeyRing.generate_entry("k2")
    old_ring, new_ring, k2_only = KeyRing.parse(k1), KeyRing.parse(f"{k2},{k1}"), KeyRing.parse(k2)
    fam = await family(make_client, run_worker, settings, file_backend, clock, encryption_keys=old_ring)
    doc = await fam.document(b"x", filename="a.txt", content_type="text/plain", description="desc")
    note = await fam.message("body", title="title")
    sealed_cols = (
        "SELECT title_sealed AS v FROM messages UNION ALL SELECT content_sealed FROM messages"
        " UNION ALL SELECT title_sealed FROM archive_items UNION ALL SELECT description_sealed"
        " FROM archive_items UNION ALL SELECT file_name_sealed FROM archive_items"
    )
    assert {r["v"].split(".")[0] for r in query(settings, sealed_cols)} == {"k1"}

    await fam.vault.work(
        settings={"encryption_keys": new_ring},
        cron_jobs=[cron(key_jobs.reseal_private_texts, run_at_startup=True)],
    )
    assert {r["v"].split(".")[0] for r in query(settings, sealed_cols)} == {"k2"}

    retired = await make_client(encryption_keys=k2_only)
    got = await (await retired.get(f"/api/messages/{note['id']}", headers=fam.owner.headers)).json()
    assert (got["title"], got["content"]) == ("title", "body")
    item = await (await retired.get(f"/api/archive/{doc['id']}", headers=fam.owner.headers)).json()
    assert (item["title"], item["description"], item["fileName"]) == ("a.txt", "desc", "a.txt")


async def test_rows_from_before_0012_are_sealed_before_their_plaintext_column_is_dropped(
    service_urls, settings, tmp_path
):
    """0012 cannot seal in SQL (no key in the database): old rows keep their plaintext until the
    reseal job seals it; the migration that drops the plaintext columns refuses while any is
    left, and `migrate` runs the reseal just before it (tests/test_personal_data_sealed.py has
    the refusal)."""
    with scratch_database(service_urls[0], "lps_seal") as (_, url):
        apply_migrations(url, migrations_before(tmp_path / "old", "0012_"))
        with psycopg2.connect(url) as conn, conn.cursor() as cur:
            cur.execute("INSERT INTO users (wallet_address) VALUES ('GSEALTEST') RETURNING id")
            user_id = cur.fetchone()[0]
            cur.execute(
                "INSERT INTO messages (user_id, title, content, release_rule_kind, audience_all)"
                " VALUES (%s, %s, %s, 'on_release', true) RETURNING id::text",
                (user_id, f"old title {SECRET}", f"old content {SECRET}"),
            )
            message_id = cur.fetchone()[0]
            cur.execute(
                "INSERT INTO archive_items (id, user_id, title, type, category, description, file_name,"
                " content_type, size_bytes, audience_all, status, storage_key, key_id, wrapped_key,"
                " stored_bytes, sha256) VALUES (gen_random_uuid(), %s, %s, 'document', 'other', NULL, %s,"
                " 'x/y', 1, true, 'available', 'k', 'k1', 'w', 25, sha256('x')) RETURNING id::text",
                (user_id, f"old doc {SECRET}", f"old-{SECRET}.txt"),
            )
            item_id = cur.fetchone()[0]
        conn.close()
        ring = settings.encryption_keys
        applied = await asyncio.to_thread(apply_migrations, url, before_reseal=reseal_hook(settings, url))
        assert applied[0] == "0012_private_text_sealed.sql"
        assert any(name.endswith("_plaintext_columns_dropped.sql") for name in applied)

        pool = await create_pool(url, maxsize=2)
        try:
            after = await messages.get(pool, ring, user_id=str(user_id), raw_id=message_id)
            assert (after["title"], after["content"]) == (f"old title {SECRET}", f"old content {SECRET}")
            assert await sealed_text.reseal(pool, ring) == (0, 0)
        finally:
            pool.close()
            await pool.wait_closed()
        with psycopg2.connect(url) as conn, conn.cursor() as cur:
            cur.execute("SELECT m::text FROM messages m UNION ALL SELECT i::text FROM archive_items i")
            dumped = "\n".join(r[0] for r in cur.fetchall())
            cur.execute("SELECT file_name_sealed FROM archive_items")
            (file_name_sealed,) = cur.fetchone()
        conn.close()
        assert SECRET not in dumped
        assert (
            sealed_text.open_text(
                ring, table="archive_items", column="file_name", row_id=item_id, sealed=file_name_sealed
            )
            == f"old-{SECRET}.txt"
        )
