"""Deleting an account through HTTP and the real worker: refused mid-release, sessions ended at
once, guardians told before their rows go, then no row, object or Redis key of the account is
left, also when the job is lost or storage is down half-way; the wallet signs in to a new,
empty account."""

from __future__ import annotations

import json
import re
from typing import Any

import redis as redis_sync

from models.account import users
from tests.capsule_helpers import Family
from tests.conftest import REDIS_LOCK_KEY
from tests.helpers import assert_error, sign_in
from tests.lifecycle_helpers import activate_plan, approve_plan, report
from tests.plan_helpers import query
from tests.support.guardian_page import ask, page_link
from tests.wallet_app import WalletApp, callback_path

ACCOUNT_TABLES = (
    "users",
    "beneficiaries",
    "guardians",
    "assets",
    "messages",
    "archive_items",
    "plans",
    "activity",
)


async def delete_me(fam: Family, confirm: Any, session: Any = None) -> Any:
    return await fam.client.delete(
        "/api/users/me", json={"confirm": confirm}, headers=(session or fam.owner).headers
    )


def leftovers(fam: Family, user_id: str) -> dict[str, int]:
    """Rows anywhere that still name the account (by owner id or via its plan)."""
    found = {}
    for table in ACCOUNT_TABLES:
        column = "id" if table == "users" else "user_id"
        n = query(fam.settings, f"SELECT count(*) AS n FROM {table} WHERE {column} = %s", (user_id,))[0]["n"]
        if n:
            found[table] = n
    for sql in (
        "SELECT count(*) AS n FROM user_wallets WHERE user_id = %s",
        "SELECT count(*) AS n FROM outbox WHERE recipient_id = %s",
        "SELECT count(*) AS n FROM account_deletions WHERE user_id = %s",
    ):
        n = query(fam.settings, sql, (user_id,))[0]["n"]
        if n:
            found[sql] = n
    return found


def redis_keys_naming(fam: Family, values: list[str]) -> list[str]:
    client = redis_sync.Redis.from_url(fam.settings.redis_url)
    try:
        return [k.decode() for v in values for k in client.scan_iter(match=f"*{v}*")]
    finally:
        client.close()


async def test_bad_confirmations_are_400_and_change_nothing(fam: Family):
    for body in ({}, {"confirm": ""}, {"confirm": "GABC"}, {"confirm": 7}):
        resp = await fam.client.delete("/api/users/me", json=body, headers=fam.owner.headers)
        assert resp.status == 400, body
        assert_error(await resp.json(), 400)
    other = await sign_in(fam.client)
    resp = await delete_me(fam, other.keypair.public_key)  # a wallet, but another account's
    assert resp.status == 400
    resp = await fam.client.get("/api/auth/me", headers=fam.owner.headers)
    assert resp.status == 200


async def test_refused_while_verifying_approved_or_released(fam: Family):
    setup = await activate_plan(fam.client, fam.owner)
    resp = await report(fam.client, setup, setup.guardians[0])
    assert resp.status == 200, await resp.text()
    resp = await delete_me(fam, fam.owner.keypair.public_key)
    assert resp.status == 409
    body = await resp.json()
    assert_error(body, 409)
    assert "check in first" in body["message"]
    await approve_plan(fam.client, setup)
    resp = await delete_me(fam, fam.owner.keypair.public_key)
    assert resp.status == 409 and (await resp.json())["planStatus"] == "Approved"
    resp = await fam.client.get("/api/auth/me", headers=fam.owner.headers)
    assert resp.status == 200  # nothing ended


async def test_everything_goes_and_the_wallet_starts_afresh(fam: Family, email_provider):
    owner_id = fam.owner.user["id"]
    setup = await activate_plan(fam.client, fam.owner, email="olive@example.org")
    doc = await fam.document(b"the deed", filename="deed.txt", content_type="text/plain")
    photo = await fam.vault.upload_ok(b"\x89PNG", filename="p.png", content_type="image/png", type="photo")
    await fam.vault.work(settings=email_provider.settings)  # the guardians' invitations go out
    pages = {
        m.group(0)
        for r in email_provider.requests
        for m in re.finditer(r"/guardian/[0-9a-f]{64}", r.body["text"])
    }
    assert len(pages) == 2
    for page in pages:
        resp = await fam.client.get(page)
        assert resp.status == 200
    await fam.message("to all", mediaId=photo["id"])
    resp = await fam.client.get("/api/legacy/export", headers=fam.owner.headers)  # a Redis key of its own
    await resp.read()
    heir_token = setup.beneficiaries[0]["claimToken"]
    ids = [owner_id, setup.plan_id, *(b["id"] for b in setup.beneficiaries)]
    assert redis_keys_naming(fam, ids)
    assert fam.vault.object_path(doc["id"]).exists()

    resp = await delete_me(fam, fam.owner.keypair.public_key)
    assert resp.status == 202, await resp.text()
    body = await resp.json()
    assert body["status"] == "deleting" and body["endedEverywhereBy"]
    resp = await fam.client.get("/api/beneficiaries", headers=fam.owner.headers)
    assert resp.status == 401  # this server refuses the session at once
    assert (
        query(fam.settings, "SELECT status FROM plans WHERE id = %s", (setup.plan_id,))[0]["status"]
        == "Draft"
    )

    # The same wallet signs in to a new, empty account at once.
    again = await sign_in(fam.client, fam.owner.keypair)
    assert again.user["id"] != owner_id
    resp = await fam.client.get("/api/beneficiaries", headers=again.headers)
    assert await resp.json() == []

    await fam.vault.work(settings=email_provider.settings)  # emails go, the deletion waits for them
    await fam.vault.work(settings=email_provider.settings)  # the sweeper brings it back: done
    goodbyes = [
        r for r in email_provider.requests if r.body["subject"] == "Olive Owner's plan no longer exists"
    ]
    assert sorted(r.to for r in goodbyes) == ["guardian0@example.org", "guardian1@example.org"]
    assert "/guardian/" not in goodbyes[0].body["text"]  # no link to a page that is going

    assert leftovers(fam, owner_id) == {}
    assert not (fam.vault.storage_root / "archive" / owner_id).exists() or not any(
        (fam.vault.storage_root / "archive" / owner_id).iterdir()
    )
    assert query(fam.settings, "SELECT count(*) AS n FROM archive_deletions")[0]["n"] == 0
    assert redis_keys_naming(fam, ids) == []
    resp = await fam.open(heir_token)
    assert resp.status == 404
    for page in pages:  # the guardians' pages open nothing either
        resp = await fam.client.get(page)
        assert resp.status == 404
    resp = await fam.client.get("/api/beneficiaries", headers=again.headers)  # the new account is untouched
    assert resp.status == 200


async def test_a_lost_job_and_storage_down_half_way_still_finish(fam: Family, make_client):
    owner_id = fam.owner.user["id"]
    await fam.add_heir("Ada", 100)
    docs = [await fam.document(f"file {n}".encode(), filename=f"f{n}.txt") for n in range(3)]
    await fam.vault.work()
    resp = await delete_me(fam, fam.owner.keypair.public_key)
    assert resp.status == 202
    client = redis_sync.Redis.from_url(fam.settings.redis_url)
    lock = client.get(REDIS_LOCK_KEY)
    client.flushdb()  # Redis lost everything, the queued job with it
    client.set(REDIS_LOCK_KEY, lock or b"", ex=3600)
    client.close()

    await fam.vault.work(settings={"storage_url": None})  # the sweeper finds the ledger; storage is down
    assert leftovers(fam, owner_id) == {}  # every row is gone
    pending = query(fam.settings, "SELECT storage_key FROM archive_deletions ORDER BY storage_key")
    assert sorted(r["storage_key"] for r in pending) == sorted(f"archive/{owner_id}/{d['id']}" for d in docs)
    assert all(fam.vault.object_path(d["id"]).exists() for d in docs)
    assert not any("user" in json.dumps(r) for r in pending)  # keys only: no personal data

    await fam.vault.work()  # storage is back: the archive sweeper removes what is left
    assert query(fam.settings, "SELECT count(*) AS n FROM archive_deletions")[0]["n"] == 0
    assert not any(fam.vault.object_path(d["id"]).exists() for d in docs)


CONFIRM_LINK = re.compile(r"https://legacy\.example\.test(/confirm-email/[0-9a-f]{64})")
CHECK_IN_LINK = re.compile(r"https://legacy\.example\.test(/check-in/[0-9a-f]{64})")


async def test_every_link_stops_the_moment_the_202_is_answered(fam: Family, email_provider):
    """Claim, guardian, check-in and confirmation links, a live signing request and the
    guardian's list: all refused at the 202, before the worker has run; the goodbyes go after."""
    day = 86400
    setup = await activate_plan(
        fam.client,
        fam.owner,
        email="olive@example.org",
        settings={"checkInIntervalSeconds": 2 * day, "gracePeriodSeconds": day},
    )
    heir = setup.beneficiaries[0]
    resp = await fam.client.post(f"/api/beneficiaries/{heir['id']}/confirm-email", headers=fam.owner.headers)
    assert resp.status == 202
    fam.clock.advance(days=1, seconds=1)  # the check-in reminder, with its link
    await fam.vault.work(settings=email_provider.settings)
    guardian_page = page_link(email_provider, "guardian0@example.org")
    [confirm] = CONFIRM_LINK.findall(email_provider.to("heir0@example.org")[-1].body["text"])
    [check_in] = CHECK_IN_LINK.findall(email_provider.to("olive@example.org")[-1].body["text"])
    guardian = setup.guardians[0]
    guardian_account = await sign_in(fam.client, guardian.keypair)
    links = (
        f"/api/claim/{heir['claimToken']}",
        f"/claim/{heir['claimToken']}",
        guardian_page,
        confirm,
        check_in,
    )
    for link in links:
        resp = await fam.client.get(link)
        assert resp.status == 200, link
    listed = await (
        await fam.client.get("/api/legacy/guardianships", headers=guardian_account.headers)
    ).json()
    assert [g["planId"] for g in listed] == [setup.plan_id]
    wallet = WalletApp(fam.client, guardian.keypair)
    signing = await wallet.open(await ask(fam.client, guardian_page, "report"))

    resp = await delete_me(fam, fam.owner.keypair.public_key)
    assert resp.status == 202, await resp.text()
    # No worker has run: the rows are all still there, and nothing opens any more.
    assert query(fam.settings, "SELECT count(*) AS n FROM users WHERE id = %s", (fam.owner.user["id"],))[0][
        "n"
    ]
    for link in links:
        resp = await fam.client.get(link)
        assert resp.status == 404, link
        if not link.startswith("/api/"):
            assert "This link does not open anything" in await resp.text()
    resp = await fam.client.post(check_in)
    assert resp.status == 404
    resp = await fam.client.post("/api/legacy/check-in/link", json={"token": check_in.rsplit("/", 1)[1]})
    assert resp.status == 404
    resp = await fam.client.post(confirm)
    assert resp.status == 404
    resp = await fam.client.post(callback_path(signing), data={"xdr": wallet.sign(signing)})
    assert resp.status == 404, await resp.text()
    # The guardian's list drops the plan rather than show its owner as `deleted:<id>`.
    resp = await fam.client.get("/api/legacy/guardianships", headers=guardian_account.headers)
    assert resp.status == 200 and await resp.json() == []
    resp = await fam.client.get(
        f"/api/legacy/guardianships/{setup.plan_id}/attestation", headers=guardian_account.headers
    )
    assert resp.status == 404

    await fam.vault.work(settings=email_provider.settings)  # the goodbyes still go out
    goodbyes = [
        r for r in email_provider.requests if r.body["subject"] == "Olive Owner's plan no longer exists"
    ]
    assert sorted(r.to for r in goodbyes) == ["guardian0@example.org", "guardian1@example.org"]
    assert all("deleted:" not in r.body["text"] for r in email_provider.requests)


def test_a_deleted_accounts_tombstone_is_never_named_as_a_wallet():
    assert users.known_as(name=None, wallet="deleted:0b6c3f0e") == "the plan's owner"
    assert users.known_as(name=None, wallet="GABC") == "the holder of the Stellar wallet GABC"
    assert users.known_as(name="Olive", wallet="deleted:0b6c3f0e") == "Olive"


async def test_emails_written_before_the_deletion_are_not_sent_but_the_goodbyes_are(
    client, run_worker, email_provider, settings
):
    """An invitation and an address confirmation still pending at the 202 would carry links that
    open nothing: the worker skips them; each accepted guardian's goodbye still goes."""
    owner = await sign_in(client)
    setup = await activate_plan(client, owner, guardians=1, email="olive@example.org")
    await run_worker(settings=email_provider.settings)
    before = len(email_provider.requests)
    resp = await client.post(
        "/api/guardians", json={"name": "Late", "email": "late@example.org"}, headers=owner.headers
    )
    assert resp.status == 201, await resp.text()
    heir = setup.beneficiaries[0]
    resp = await client.post(f"/api/beneficiaries/{heir['id']}/confirm-email", headers=owner.headers)
    assert resp.status == 202
    resp = await client.delete(
        "/api/users/me", json={"confirm": owner.keypair.public_key}, headers=owner.headers
    )
    assert resp.status == 202, await resp.text()
    await run_worker(settings=email_provider.settings)
    assert not email_provider.to("late@example.org")
    assert len(email_provider.to("heir0@example.org")) == len(
        [r for r in email_provider.requests[:before] if r.to == "heir0@example.org"]
    )
    [goodbye] = email_provider.requests[before:]
    assert goodbye.to == "guardian0@example.org" and "no longer exists" in goodbye.body["subject"]
