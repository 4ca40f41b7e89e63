"""Personal data at rest (#18 item 3): names, relationships and email addresses of owners,
beneficiaries and guardians, asset labels, descriptions and amounts, and guardian report notes
are sealed under the key ring (models/sealed_text.py); every route still shows them, addresses
are found through their keyed blind index, and rotation re-seals and re-indexes them."""

from __future__ import annotations

import asyncio
import json

import psycopg2
import psycopg2.errors
import psycopg2.extras
import pytest
from arq import cron

from core.db import create_pool
from core.files.crypto import KeyRing
from models import sealed_text
from models.account import users
from models.contents import assets, beneficiaries, guardians
from service.migrate import apply_migrations, reseal_hook
from tests.helpers import migrations_before, scratch_database, sign_in
from tests.lifecycle_helpers import activate_plan, approve, guardian_session, report
from tests.plan_helpers import create, query
from workers import keys as key_jobs

MARK = "quillon7xq"  # in every personal value below; must never be found in a table
AMOUNT = "8675309.1234567"  # a distinctive amount, sealed like the texts
TABLES = (
    "users",
    "beneficiaries",
    "guardians",
    "assets",
    "plan_reports",
    "plan_approvals",
    "plan_transitions",
    "activity",
    "outbox",
)


def _dump(settings, table: str) -> str:
    """Every column of every row of `table` as PostgreSQL prints it."""
    return "\n".join(r["row"] for r in query(settings, f"SELECT t::text AS row FROM {table} t"))


def _find_beneficiaries(settings, ring: KeyRing, email: str) -> list[str]:
    candidates = sealed_text.blind_index_candidates(ring, table="beneficiaries", column="email", value=email)
    rows = query(
        settings,
        "SELECT id::text AS id FROM beneficiaries WHERE email_bidx = ANY(%s) ORDER BY id",
        ([psycopg2.Binary(c) for c in candidates],),
    )
    return [r["id"] for r in rows]


async def test_personal_data_is_sealed_at_rest_and_every_route_shows_it(client, settings):
    owner = await sign_in(client)
    headers = owner.headers
    setup = await activate_plan(client, owner, guardians=2, email=f"owner.{MARK}@example.org")
    resp = await client.patch("/api/users/me", json={"name": f"Olive {MARK}"}, headers=headers)
    assert resp.status == 200
    me = await (await client.get("/api/auth/me", headers=headers)).json()
    assert (me["name"], me["email"]) == (f"Olive {MARK}", f"owner.{MARK}@example.org")

    heir, guardian = setup.beneficiaries[0], setup.guardians[0]
    resp = await client.patch(
        f"/api/beneficiaries/{heir['id']}",
        json={"name": f"Hal {MARK}", "relationship": f"son {MARK}", "email": f"hal.{MARK}@example.org"},
        headers=headers,
    )
    assert resp.status == 200, await resp.text()
    resp = await client.patch(
        f"/api/guardians/{guardian.row['id']}",
        json={"name": f"Gus {MARK}", "email": f"gus.{MARK}@example.org", "relationship": f"uncle {MARK}"},
        headers=headers,
    )
    assert resp.status == 200, await resp.text()

    fresh = await sign_in(client)
    ada = await create(
        client,
        fresh,
        "beneficiaries",
        name=f"Ada {MARK}",
        relationship=f"daughter {MARK}",
        email=f"Ada.{MARK}@Example.org",
    )
    resp = await client.patch(
        f"/api/beneficiaries/{ada['id']}", json={"relationship": f"eldest {MARK}"}, headers=fresh.headers
    )
    assert (await resp.json())["relationship"] == f"eldest {MARK}"
    grace = await create(
        client, fresh, "guardians", name=f"Grace {MARK}", email=f"grace.{MARK}@example.org", relationship=MARK
    )
    resp = await client.patch(
        f"/api/guardians/{grace['id']}", json={"name": f"Grace H. {MARK}"}, headers=fresh.headers
    )
    assert (await resp.json())["name"] == f"Grace H. {MARK}"
    asset = await create(
        client, fresh, "assets", label=f"Savings {MARK}", amount=AMOUNT, description=f"Bank {MARK}"
    )
    resp = await client.patch(f"/api/assets/{asset['id']}", json={"amount": "12.50"}, headers=fresh.headers)
    assert (await resp.json())["amount"] == "12.50"
    resp = await client.patch(f"/api/assets/{asset['id']}", json={"amount": AMOUNT}, headers=fresh.headers)
    assert (await resp.json())["amount"] == AMOUNT

    for path, key, expected in (
        ("/api/beneficiaries", "name", f"Ada {MARK}"),
        ("/api/guardians", "name", f"Grace H. {MARK}"),
        ("/api/assets", "label", f"Savings {MARK}"),
    ):
        listed = await (await client.get(path, headers=fresh.headers)).json()
        assert [row[key] for row in listed] == [expected], path
    got = await (await client.get(f"/api/assets/{asset['id']}", headers=fresh.headers)).json()
    assert (got["label"], got["amount"], got["description"]) == (f"Savings {MARK}", AMOUNT, f"Bank {MARK}")
    got = await (await client.get(f"/api/beneficiaries/{ada['id']}", headers=fresh.headers)).json()
    assert (got["email"], got["relationship"]) == (f"Ada.{MARK}@Example.org", f"eldest {MARK}")

    # The guardian's side: a report with a note, then an approval; the owner's name is shown.
    assert (await report(client, setup, guardian, note=f"He is gone {MARK}")).status == 200
    assert (await approve(client, setup, guardian)).status == 200
    session = await guardian_session(client, guardian)
    ships = await (await client.get("/api/legacy/guardianships", headers=session.headers)).json()
    assert ships[0]["owner"]["name"] == f"Olive {MARK}"
    journey = await (await client.get("/api/legacy/journey", headers=headers)).json()
    assert [t["actorName"] for t in journey["transitions"] if t["actor"] == "guardian"] == [f"Gus {MARK}"]
    overview = await (await client.get("/api/legacy", headers=headers)).json()
    assert {a["name"] for a in overview["approvals"]["guardians"]} == {f"Gus {MARK}", "Guardian 1"}
    preview = await (await client.get(f"/api/legacy/preview/{heir['id']}", headers=headers)).json()
    assert (preview["owner"]["name"], preview["beneficiary"]["name"]) == (f"Olive {MARK}", f"Hal {MARK}")
    claims = await (await client.get("/api/legacy/claims", headers=headers)).json()
    assert {c["name"] for c in claims["claims"]} == {f"Hal {MARK}", "Heir 1"}

    # What PostgreSQL holds: no personal value in any table, and no plaintext column filled.
    for table in TABLES:
        assert MARK not in _dump(settings, table), table
    assert AMOUNT not in _dump(settings, "assets")
    plain = query(
        settings,
        "SELECT table_name || '.' || column_name AS c FROM information_schema.columns"
        " WHERE table_schema = current_schema() AND table_name = ANY(%s)",
        (list(sealed_text.COLUMNS),),
    )
    present = {r["c"] for r in plain}
    for table, columns in sealed_text.COLUMNS.items():  # no plaintext column left to fill
        assert all(f"{table}.{c}_sealed" in present and f"{table}.{c}" not in present for c in columns)
    (row,) = query(settings, "SELECT note_sealed FROM plan_reports")
    assert row["note_sealed"].startswith(f"{settings.encryption_keys.primary_id}.")

    # Found by address, however it is typed, through the blind index only.
    ring = settings.encryption_keys
    assert _find_beneficiaries(settings, ring, f"  ada.{MARK}@EXAMPLE.org ") == [ada["id"]]
    assert _find_beneficiaries(settings, ring, f"grace.{MARK}@example.org") == []  # a guardian's


def test_one_address_has_unrelated_indexes_in_each_table_and_under_each_key():
    ring = KeyRing.parse(f"{KeyRing.generate_entry('k2')},{KeyRing.generate_entry('k1')}")
    index = sealed_text.blind_index
    email = "ada@example.org"
    as_heir = index(ring, table="beneficiaries", column="email", value=email)
    assert as_heir == index(ring, table="beneficiaries", column="email", value=" ADA@example.org\t")
    assert as_heir != index(ring, table="guardians", column="email", value=email)
    assert as_heir != index(ring, table="beneficiaries", column="email", value=email, key_id="k1")
    assert len(as_heir or b"") == 32
    assert sealed_text.blind_index_candidates(ring, table="beneficiaries", column="email", value=email) == [
        as_heir,
        index(ring, table="beneficiaries", column="email", value=email, key_id="k1"),
    ]
    # Not the sealing key: the index key is an HKDF subkey of its own purpose.
    assert ring.subkey("k2", sealed_text.INDEX_PURPOSE) != ring.subkey("k2", sealed_text.PURPOSE)


async def test_rotation_reseals_and_reindexes_and_lookups_work_throughout(make_client, run_worker, settings):
    k1, k2 = KeyRing.generate_entry("k1"), KeyRing.generate_entry("k2")
    old_ring, new_ring, k2_only = KeyRing.parse(k1), KeyRing.parse(f"{k2},{k1}"), KeyRing.parse(k2)
    before = await make_client(encryption_keys=old_ring)
    owner = await sign_in(before)
    ada = await create(before, owner, "beneficiaries", email="Ada@Example.org")
    await create(before, owner, "guardians", name="Grace")
    await create(before, owner, "assets", amount="0.0000001")

    # Rotated, not yet re-sealed: the row indexed under k1 is still found (k1 is in the ring).
    assert _find_beneficiaries(settings, new_ring, "ada@example.org") == [ada["id"]]
    await run_worker(
        settings={"encryption_keys": new_ring},
        cron_jobs=[
            cron(key_jobs.reseal_private_texts, run_at_startup=True),
            cron(key_jobs.reseal_claim_tokens, run_at_startup=True),
        ],
    )
    prefixes = query(
        settings,
        "SELECT split_part(name_sealed, '.', 1) AS k FROM beneficiaries UNION ALL"
        " SELECT split_part(email_sealed, '.', 1) FROM guardians UNION ALL"
        " SELECT split_part(amount_sealed, '.', 1) FROM assets",
    )
    assert {r["k"] for r in prefixes} == {"k2"}
    assert _find_beneficiaries(settings, k2_only, " ADA@example.org") == [ada["id"]]

    retired = await make_client(encryption_keys=k2_only)
    listed = await (await retired.get("/api/beneficiaries", headers=owner.headers)).json()
    assert [b["email"] for b in listed] == ["Ada@Example.org"]
    listed = await (await retired.get("/api/assets", headers=owner.headers)).json()
    assert [a["amount"] for a in listed] == ["0.0000001"]


def _old_rows(url: str) -> dict[str, str]:
    """One row per table as a release before 0014 wrote it: every personal value in clear."""
    with psycopg2.connect(url) as conn, conn.cursor() as cur:
        cur.execute(
            "INSERT INTO users (wallet_address, name, email) VALUES ('GOLD', %s, %s) RETURNING id::text",
            (f"Olive {MARK}", f"olive.{MARK}@example.org"),
        )
        ids = {"user": cur.fetchone()[0]}
        cur.execute(
            "INSERT INTO beneficiaries (id, user_id, name, relationship, email, allocation_percentage,"
            " claim_token_hash, claim_token_sealed) VALUES (gen_random_uuid(), %s, %s, %s, %s, 50,"
            " sha256('t'), 'k1.x') RETURNING id::text",
            (ids["user"], f"Ada {MARK}", f"daughter {MARK}", f"Ada.{MARK}@example.org"),
        )
        ids["heir"] = cur.fetchone()[0]
        cur.execute(
            "INSERT INTO guardians (user_id, name, email, wallet_address) VALUES (%s, %s, %s, 'GGUARD')"
            " RETURNING id::text",
            (ids["user"], f"Grace {MARK}", f"grace.{MARK}@example.org"),
        )
        ids["guardian"] = cur.fetchone()[0]
        cur.execute(
            "INSERT INTO assets (user_id, label, amount, description) VALUES (%s, %s, 12.50, %s)"
            " RETURNING id::text",
            (ids["user"], f"Savings {MARK}", f"Bank {MARK}"),
        )
        ids["asset"] = cur.fetchone()[0]
        cur.execute("INSERT INTO plans (user_id) VALUES (%s) RETURNING id", (ids["user"],))
        plan_id = cur.fetchone()[0]
        cur.execute(
            "INSERT INTO plan_reports (plan_id, round, guardian_id, guardian_name, note, created_at)"
            " VALUES (%s, 1, %s, %s, %s, now())",
            (plan_id, ids["guardian"], f"Grace {MARK}", f"gone {MARK}"),
        )
        cur.execute(
            "INSERT INTO plan_approvals (plan_id, round, guardian_id, guardian_name, wallet_address,"
            " created_at) VALUES (%s, 1, %s, %s, 'GGUARD', now())",
            (plan_id, ids["guardian"], f"Grace {MARK}"),
        )
        # The timeline named the guardian before 0014 (summary and metadata.actorName).
        cur.execute(
            "INSERT INTO activity (user_id, kind, entity_type, entity_id, summary, metadata) VALUES"
            " (%s, 'guardian.approved', 'guardian', NULL, %s, '{}'),"
            " (%s, 'guardian.reported', 'guardian', NULL, %s, '{}'),"
            " (%s, 'plan.verification_started', 'plan', NULL, 'A guardian reported', %s)",
            (
                ids["user"],
                f"Guardian Grace {MARK} approved the release",
                ids["user"],
                f"Guardian Grace {MARK} reported that you may have died or cannot act",
                ids["user"],
                json.dumps({"actor": "guardian", "actorName": f"Grace {MARK}", "reason": "guardian_report"}),
            ),
        )
        cur.execute(
            "INSERT INTO plan_transitions (plan_id, from_status, to_status, actor, actor_name, reason, at)"
            " VALUES (%s, 'Active', 'PendingVerification', 'guardian', %s, 'guardian_report', now())",
            (plan_id, f"Grace {MARK}"),
        )
    conn.close()
    return ids


def _dump_all(url: str, tables: tuple[str, ...] = (*sealed_text.COLUMNS, "activity")) -> str:
    with psycopg2.connect(url) as conn, conn.cursor() as cur:
        cur.execute(" UNION ALL ".join(f"SELECT t::text FROM {t} t" for t in tables))
        dumped = "\n".join(r[0] for r in cur.fetchall())
    conn.close()
    return dumped


async def test_the_drop_of_plaintext_columns_refuses_until_all_is_sealed_and_loses_nothing(
    service_urls, settings, tmp_path
):
    """A deployment that never ran the reseal job: the drop migration refuses, applies nothing of
    itself and leaves every value where it was; `migrate` with the key ring seals first, then
    drops, and every value reads back through the models."""
    with scratch_database(service_urls[0], "lps_drop") as (_, url):
        apply_migrations(url, migrations_before(tmp_path / "old", "0014_"))
        ids = _old_rows(url)
        later = ("heir_requests", "plan_objections", "address_changes")  # made by later migrations
        sealed_tables = tuple(t for t in sealed_text.COLUMNS if t not in later)
        before = _dump_all(url, sealed_tables)

        # No key (the hook is what ENCRYPTION_KEYS provides): 0014 applies, the drop refuses.
        with pytest.raises(psycopg2.errors.RaiseException, match="plaintext not sealed yet") as refused:
            apply_migrations(url)
        for what in (
            "users.name/email",
            "beneficiaries.",
            "guardians.",
            "assets.",
            "plan_reports.",
            "plan_approvals.",
            "plan_transitions.",
        ):
            assert what in str(refused.value), what
        applied = {r["name"] for r in _rows(url, "SELECT name FROM schema_migrations")}
        assert "0014_personal_data_sealed.sql" in applied
        assert not any(n.endswith("_plaintext_columns_dropped.sql") for n in applied)
        assert _rows(url, "SELECT name, email FROM users") == [
            {"name": f"Olive {MARK}", "email": f"olive.{MARK}@example.org"}
        ]
        assert MARK in before and before.count(MARK) == _dump_all(url, sealed_tables).count(
            MARK
        )  # nothing lost

        # With the key ring, `migrate` seals everything, then drops the columns.
        ring = settings.encryption_keys
        applied_now = await asyncio.to_thread(apply_migrations, url, before_reseal=reseal_hook(settings, url))
        assert [n for n in applied_now if n.endswith("_plaintext_columns_dropped.sql")]
        assert MARK not in _dump_all(url)  # the timeline's old entries say "A guardian" now
        assert {
            r["summary"] for r in _rows(url, "SELECT summary FROM activity WHERE kind LIKE 'guardian.%%'")
        } == {
            "A guardian approved the release",
            "A guardian reported that you may have died or cannot act",
        }

        owner = {"user_id": ids["user"]}
        pool = await create_pool(url, maxsize=2)
        try:
            asset = await assets.get(pool, ring, raw_id=ids["asset"], **owner)
            assert (asset["label"], str(asset["amount"]), asset["description"]) == (
                f"Savings {MARK}",
                "12.50",
                f"Bank {MARK}",
            )
            guardian = await guardians.get(pool, ring, raw_id=ids["guardian"], **owner)
            assert (guardian["name"], guardian["email"]) == (f"Grace {MARK}", f"grace.{MARK}@example.org")
            user = await users.get_with_wallets(pool, ring, user_id=ids["user"])
            assert (user["name"], user["email"]) == (f"Olive {MARK}", f"olive.{MARK}@example.org")
            async with pool.acquire() as conn, conn.cursor() as cur:
                await cur.execute(
                    f"SELECT {beneficiaries.PUBLIC_COLUMNS} FROM beneficiaries WHERE id = %s", (ids["heir"],)
                )
                heir = sealed_text.open_row(ring, table="beneficiaries", row=await cur.fetchone())
                await cur.execute("SELECT id, note_sealed, guardian_name_sealed FROM plan_reports")
                report_row = sealed_text.open_row(ring, table="plan_reports", row=await cur.fetchone())
                await cur.execute("SELECT id, actor_name_sealed FROM plan_transitions")
                transition = sealed_text.open_row(ring, table="plan_transitions", row=await cur.fetchone())
            assert (heir["name"], heir["relationship"]) == (f"Ada {MARK}", f"daughter {MARK}")
            assert (report_row["note"], report_row["guardian_name"]) == (f"gone {MARK}", f"Grace {MARK}")
            assert transition["actor_name"] == f"Grace {MARK}"
            assert await sealed_text.reseal(pool, ring) == (0, 0)
        finally:
            pool.close()
            await pool.wait_closed()
        candidates = sealed_text.blind_index_candidates(
            ring, table="beneficiaries", column="email", value=f"ada.{MARK}@EXAMPLE.ORG"
        )
        found = _rows(
            url, "SELECT id::text AS id FROM beneficiaries WHERE email_bidx = ANY(%s)", (candidates,)
        )
        assert [r["id"] for r in found] == [ids["heir"]]
        assert await asyncio.to_thread(apply_migrations, url, before_reseal=reseal_hook(settings, url)) == []


def _rows(url: str, sql: str, params: object = None) -> list[dict[str, object]]:
    with psycopg2.connect(url) as conn, conn.cursor(cursor_factory=psycopg2.extras.RealDictCursor) as cur:
        cur.execute(sql, params)
        rows = [dict(r) for r in cur.fetchall()]
    conn.close()
    return rows
