"""Every record a model hands to the API or a job is what its TypedDict declares (keys and
value types), checked against real rows: mypy checks the code that reads the keys, these
tests check the declarations themselves."""

from __future__ import annotations

import uuid

import pytest
from stellar_sdk import Keypair

from api.keys import CLOCK, DB, REDIS, SETTINGS
from models import activity, wallet_requests
from models.account import users
from models.activity import ActivityFilter
from models.archive import items, serving, sweeps
from models.claim import capsules
from models.contents import assets, beneficiaries, guardians, messages
from models.delivery import deliveries, history, outbox, sweep
from models.delivery.budget import Budget
from models.flows import exports, finishing
from models.pagination import PageRequest
from models.plan import journey
from models.plan.guardianships import invitation
from models.proofs import challenge
from tests.archive_helpers import Archive
from tests.capsule_helpers import Family
from tests.helpers import sign_in
from tests.lifecycle_helpers import activate_plan, approve, guardian_session, report
from tests.plan_helpers import create, query
from tests.records import assert_record

# Emails to addresses the owner typed: a budget as a request from nowhere in particular has.
BUDGET = Budget(per_account=25, per_client=100, client=None)


async def test_beneficiary_records(client):
    session = await sign_in(client)
    created = await create(client, session, "beneficiaries")
    pool, ring = client.app[DB], client.app[SETTINGS].key_ring
    owner = {"user_id": session.user["id"]}
    page = await beneficiaries.list_page(pool, ring, page=PageRequest(), **owner)
    assert [str(row["id"]) for row in page.items] == [created["id"]]
    assert_record(page.items[0], beneficiaries.Beneficiary)
    item = await beneficiaries.get(pool, ring, raw_id=created["id"], **owner)
    assert_record(item, beneficiaries.Beneficiary)
    rotated = await beneficiaries.rotate_claim_token(pool, ring, raw_id=created["id"], **owner)
    assert_record(rotated, beneficiaries.Beneficiary)
    found = await capsules.open_by_token(pool, ring, token=rotated["claim_token"])
    assert found is not None
    assert_record(found, capsules.Capsule)
    with pytest.raises(AssertionError, match=r"missing \['claim_token'"):
        assert_record(found, beneficiaries.Beneficiary)  # the check can fail
    with pytest.raises(AssertionError, match="allocation_percentage: str"):
        assert_record({**found, "allocation_percentage": "10"}, capsules.Capsule)


async def test_guardian_and_asset_records(client):
    session = await sign_in(client)
    pool, ring, owner = client.app[DB], client.app[SETTINGS].key_ring, {"user_id": session.user["id"]}
    for module, collection, record_type, change in (
        (guardians, "guardians", guardians.Guardian, {"relationship": "cousin"}),
        (assets, "assets", assets.Asset, {"description": "Joint account"}),
    ):
        created = await create(client, session, collection)
        page = await module.list_page(pool, ring, page=PageRequest(), **owner)
        assert [str(row["id"]) for row in page.items] == [created["id"]]
        assert_record(page.items[0], record_type, collection)
        assert_record(await module.get(pool, ring, raw_id=created["id"], **owner), record_type, collection)
        extra = (
            {"redis": client.app[REDIS], "now": client.app[CLOCK].now(), "budget": BUDGET}
            if module is guardians
            else {}
        )
        updated = await module.update(pool, ring, raw_id=created["id"], changes=change, **owner, **extra)
        assert_record(updated, record_type, collection)


async def test_message_records(client):
    session = await sign_in(client)
    pool, ring, owner = client.app[DB], client.app[SETTINGS].key_ring, {"user_id": session.user["id"]}
    ada = await create(client, session, "beneficiaries")
    created = await create(
        client,
        session,
        "messages",
        releaseRule={"kind": "on_date", "value": "2031-01-02"},
        audience={"beneficiaryIds": [ada["id"]]},
    )
    page = await messages.list_page(pool, ring, page=PageRequest(), **owner)
    assert_record(page.items[0], messages.Message)
    item = await messages.get(pool, ring, raw_id=created["id"], **owner)
    assert_record(item, messages.Message)
    assert item["audience"] == {"all": False, "beneficiary_ids": [ada["id"]]}
    rule = {"kind": "after_release", "value": 30}
    updated = await messages.update(pool, ring, raw_id=created["id"], changes={"release_rule": rule}, **owner)
    assert_record(updated, messages.Message)
    assert updated["release_rule"] == rule


async def test_archive_records(vault: Archive):
    pool, ring = vault.client.app[DB], vault.client.app[SETTINGS].key_ring
    owner = {"user_id": vault.session.user["id"]}
    created = await vault.upload_ok(b"x" * 1000, type="photo", filename="a.png", content_type="image/png")
    page = await items.list_page(pool, ring, page=PageRequest(), **owner)
    assert_record(page.items[0], items.ArchiveItem)
    assert_record(await items.get(pool, ring, raw_id=created["id"], **owner), items.ArchiveItem)
    sealed = await serving.get_sealed(
        pool, ring, raw_id=created["id"], now=vault.client.app[CLOCK].now(), **owner
    )
    assert_record(sealed, items.SealedArchiveItem)
    claimed = await items.claim_attempt(pool, item_id=created["id"])  # what the verify job reads
    assert claimed is not None
    assert_record(claimed, items.ClaimedItem)
    (wrapped,) = await sweeps.wrapped_under_other_keys(
        pool, key_id="not-the-key", after=str(uuid.UUID(int=0))
    )
    assert_record(wrapped, sweeps.WrappedKey)


async def test_export_records(fam: Family):
    pool, ring, redis = fam.client.app[DB], fam.client.app[SETTINGS].key_ring, fam.client.app[REDIS]
    heir = await fam.add_heir("Ada", 100)
    photo = await fam.vault.upload_ok(b"x" * 1000, type="photo", filename="a.png", content_type="image/png")
    await fam.document(b"a document", filename="d.txt", content_type="text/plain")
    await fam.vault.work()
    await fam.document(b"pending", filename="p.txt", content_type="text/plain")
    await fam.message("hello", mediaId=photo["id"])
    owned = await exports.owner_export(pool, ring, redis, user_id=fam.owner.user["id"])
    assert len(owned["files"]) == 2 and len(owned["letters"]) == 1 and len(owned["left_out"]) == 1
    assert_record(owned, exports.OwnerExport)
    await fam.release()
    capsule = await capsules.open_by_token(pool, ring, token=heir["claimToken"])
    assert capsule is not None
    left = await exports.heir_export(pool, ring, redis, capsule=capsule, now=fam.clock.now())
    assert len(left["files"]) == 3 and len(left["letters"]) == 1  # p.txt verified on the way
    assert_record(left, exports.HeirExport)


async def test_scrub_records(vault: Archive, clock):
    from datetime import timedelta

    from models.archive import scrub

    await vault.upload_ok(b"x" * 1000, filename="a.txt", content_type="text/plain")
    await vault.work()
    target = await scrub.next_due(
        vault.client.app[DB], now=clock.now() + timedelta(days=8), interval=timedelta(days=7)
    )
    assert target is not None
    assert_record(target, scrub.ScrubTarget)


async def test_deletion_records(client):
    from models.flows import deletion

    session = await sign_in(client)
    now = client.app[CLOCK].now()
    requested = await deletion.request(
        client.app[DB], user_id=session.user["id"], confirm=session.keypair.public_key, now=now
    )
    assert_record(requested, deletion.Requested)
    found = await deletion.get(client.app[DB], deletion_id=requested["deletion_id"])
    assert found is not None
    assert_record(found, deletion.Deletion)


async def test_key_check_records(vault: Archive):
    from api.keys import STORAGE
    from models import key_check

    await vault.upload_ok(b"x" * 1000, filename="a.txt", content_type="text/plain")
    await vault.work()
    app = vault.client.app
    report = await key_check.check(app[DB], app[SETTINGS].key_ring, app[STORAGE], sample=5)
    assert report["problems"] == [] and report["checked"]["archive objects"] == 1
    assert_record(report, key_check.Report)


async def test_user_and_activity_records(client):
    session = await sign_in(client)
    pool, user_id, ring = client.app[DB], session.user["id"], client.app[SETTINGS].key_ring
    user = await users.get_by_wallet(pool, ring, wallet_address=session.keypair.public_key)
    assert user is not None
    assert_record(user, users.SigningIn)
    updated = await users.update_profile(
        pool,
        ring,
        client.app[REDIS],
        user_id=user_id,
        changes={"name": "Ada"},
        now=client.app[CLOCK].now(),
        budget=BUDGET,
    )
    assert_record(updated, users.UserWithWallets)
    assert updated["wallets"] == [session.keypair.public_key]
    await create(client, session, "assets")  # an entry with metadata
    page = await activity.list_for_user(
        pool, ring, user_id=user_id, filters=ActivityFilter(), page=PageRequest()
    )
    assert [entry["kind"] for entry in page.items] == ["asset.created", "user.updated", "user.created"]
    for entry in page.items:
        assert_record(entry, activity.ActivityEntry, entry["kind"])


async def test_plan_records(client, settings):
    """The plan records read with `models.common.as_record`: overview (plan, facts, approvals,
    notices), journey (transitions), a guardian's plans, and the outbox row a delivery reads."""
    owner = await sign_in(client)
    setup = await activate_plan(client, owner, guardians=3)
    assert (await report(client, setup, setup.guardians[0])).status == 200
    assert (await approve(client, setup, setup.guardians[0])).status == 200
    pool, ring, user_id = client.app[DB], client.app[SETTINGS].key_ring, owner.user["id"]
    view = await journey.overview(pool, ring, user_id=user_id)
    assert_record(view, journey.Overview)
    assert view["approval_count"] == 1 and view["notifications"]
    story = await journey.journey(pool, ring, user_id=user_id)
    assert_record(story, journey.Journey)
    assert story["transitions"]
    guardian = await guardian_session(client, setup.guardians[0])
    (membership,) = await invitation.list_for(pool, ring, user_id=guardian.user["id"])
    assert_record(membership, invitation.Guardianship)
    pending = query(
        settings, "SELECT id::text AS id FROM outbox WHERE status = 'pending' ORDER BY created_at"
    )
    delivery = await deliveries.load(pool, ring, row_id=pending[0]["id"])
    assert delivery is not None
    assert_record(delivery, deliveries.Delivery)


async def test_liveness_records(client, clock, run_worker):
    """The plan row, the readiness facts, a guardianship and an email delivery with a check-in
    link, as read by the SQL that builds them (#17)."""
    from core.db import autocommit
    from models import plans
    from models.plan import journey, plan_settings
    from models.plan.guardianships import invitation
    from tests.lifecycle_helpers import activate_plan, report

    owner = await sign_in(client)
    setup = await activate_plan(client, owner, settings={"verificationTimeoutSeconds": 3600})
    assert (await report(client, setup, setup.guardians[0])).status == 200
    pool = client.app[DB]
    async with autocommit(pool) as cur:
        plan = await plans.get(cur, user_id=owner.user["id"])
        assert_record(plan, plans.Plan, "plans")
        ring = client.app[SETTINGS].key_ring
        assert_record(
            await plan_settings.facts(cur, ring, user_id=owner.user["id"]), plan_settings.Facts, "facts"
        )
        await cur.execute("SELECT id::text AS id FROM outbox WHERE kind = 'verification_started'")
        outbox_id = (await cur.fetchone())["id"]
    assert plan is not None
    assert_record(journey.verification(plan=plan), journey.Verification, "verification")
    [item] = await invitation.list_for(pool, ring, user_id=setup.guardians[0].session.user["id"])  # type: ignore[union-attr]
    assert_record(item, invitation.Guardianship, "guardianships")
    delivery = await deliveries.load(pool, ring, row_id=outbox_id)
    assert_record(delivery, deliveries.Delivery, "outbox")
    assert delivery is not None and delivery["check_in_link"] is True


async def test_onchain_records(make_client, soroban_rpc, clock, run_worker):
    """The on-chain records as their SQL returns them: the capsule with the columns its rules
    check, the target, a stored transaction, the relay's row and the owner's claims overview."""
    from stellar_sdk import Keypair

    from models.chain import claims, transactions
    from models.flows import onchain
    from tests.lifecycle_helpers import get_overview
    from tests.soroban_helpers import contract_overrides, prove_wallet
    from tests.support.onchain import approving, build_sign_submit, run

    client = await make_client(**contract_overrides(soroban_rpc))
    setup = await approving(client, soroban_rpc, guardians=1, threshold=1)
    plan = setup.plan_id
    guardian = await guardian_session(client, setup.guardians[0])
    await build_sign_submit(
        client,
        f"/api/legacy/guardianships/{plan}/approve/build",
        f"/api/legacy/guardianships/{plan}/submit",
        setup.guardians[0].keypair,
        soroban_rpc,
        headers=guardian.headers,
    )
    await run(run_worker, soroban_rpc)
    window = (await get_overview(client, setup.owner))["settings"]["cancelWindowSeconds"]
    clock.advance(seconds=window + 1)
    await run(run_worker, soroban_rpc)  # ready to finalise
    heir, wallet = setup.beneficiaries[0], Keypair.random()
    assert (await prove_wallet(client, heir["claimToken"], wallet)).status == 200
    soroban_rpc.fund(wallet.public_key)
    pool, ring = client.app[DB], client.app[SETTINGS].key_ring

    capsule = await capsules.open_by_token(pool, ring, token=heir["claimToken"])
    assert_record(capsule, capsules.Capsule, "capsule")
    assert capsule is not None and capsule["plan_id"] == plan and capsule["claimed"] is False
    target = onchain.beneficiary_target(
        capsule=capsule, function="finalize_release", wallet_address=wallet.public_key, now=clock.now()
    )
    assert_record(target, onchain.Target, "target")
    tx = await build_sign_submit(
        client,
        f"/api/claim/{heir['claimToken']}/release/build",
        f"/api/claim/{heir['claimToken']}/submit",
        wallet,
        soroban_rpc,
        json={"walletAddress": wallet.public_key},
    )
    stored = await transactions.get_for_beneficiary(pool, tx_id=tx["id"], beneficiary_id=heir["id"])
    assert_record(stored, transactions.Transaction, "transaction")
    relay_row = await transactions.start_attempt(
        pool, tx_hash=tx["hash"], now=clock.now()
    )  # as the relay reads it
    assert_record(relay_row, transactions.RelayRow, "relay row")
    await run(run_worker, soroban_rpc)
    view = await claims.overview(pool, ring, user_id=setup.owner.user["id"])
    assert_record(view, claims.ClaimsOverview, "claims overview")
    assert view["release"]["status"] == "confirmed"


async def test_delivery_event_records(client, run_worker, settings):
    """A delivery event's `Heard` rows, and a notice carrying what the provider said (#28)."""
    from core.db import transaction
    from models.plan import journey
    from testing.emailserver import start_capture_server

    server, runner = await start_capture_server()
    try:
        owner = await sign_in(client)
        await activate_plan(client, owner)
        await run_worker(settings=server.settings)
    finally:
        await runner.cleanup()
    (row,) = query(settings, "SELECT provider_id FROM outbox WHERE kind = 'guardian_invitation' LIMIT 1")
    pool = client.app[DB]
    async with transaction(pool) as cur:
        heard = await outbox.hear(
            cur, provider_id=row["provider_id"], delivery="bounced", now=client.app[CLOCK].now()
        )
    assert heard
    for item in heard:
        assert_record(item, outbox.Heard)
    view = await journey.overview(pool, client.app[SETTINGS].key_ring, user_id=owner.user["id"])
    bounced = [n for n in view["notifications"] if n["delivery"] == "bounced"]
    assert bounced
    for notice in view["notifications"]:
        assert_record(notice, history.Notice)


async def test_due_outbox_records(client, settings):
    """The sweep's due rows: one never claimed, one whose delivery job's claim lapsed."""
    owner = await sign_in(client)
    await activate_plan(client, owner, guardians=2)
    query(settings, "UPDATE outbox SET created_at = created_at - interval '1 hour'")
    query(
        settings,
        "UPDATE outbox SET claimed_by = 'deliver_email:dead', claimed_until = now() - interval '1 second'"
        " WHERE id = (SELECT min(id::text)::uuid FROM outbox)",
    )
    due = await sweep.due_for_enqueue(client.app[DB], now=client.app[CLOCK].now())
    for row in due:
        assert_record(row, sweep.Due)
    assert {row["holder"] for row in due} == {None, "deliver_email:dead"}


async def test_signing_request_records(client, settings):
    """What a page's signing request keeps (models.wallet_requests) and the heir's step."""
    pool, redis, ring, now = client.app[DB], client.app[REDIS], settings.key_ring, client.app[CLOCK].now()
    session = await sign_in(client)
    created = await create(client, session, "beneficiaries")
    capsule = await capsules.open_by_token(pool, ring, token=created["claimToken"])
    assert capsule is not None
    prepared = await challenge.issue(
        redis,
        settings,
        purpose="heir.prove",
        subject_id=capsule["beneficiary_id"],
        signer=Keypair.random().public_key,
        now=now,
    )
    assert_record(prepared, wallet_requests.Prepared)
    kept = await wallet_requests.peek(
        redis, request_id=prepared["id"], subject_id=capsule["beneficiary_id"], now=now
    )
    assert_record(kept, wallet_requests.WalletRequest)
    step = await finishing.next_step(pool, gateway=None, capsule=capsule)
    assert_record(step, finishing.HeirStep)
    await wallet_requests.keep_for_reuse(
        redis, subject_id=capsule["beneficiary_id"], prepared=prepared, now=now
    )
    reused = await wallet_requests.reusable(
        redis, subject_id=capsule["beneficiary_id"], purpose="heir.prove", now=now
    )
    assert reused is not None
    assert_record(reused, wallet_requests.Prepared)


async def test_guardian_page_records(client, settings):
    """A guardian's page (models.flows.guardian_pages), opened by the token its link carries."""
    from core.db import transaction
    from models import guardian_links
    from models.flows import guardian_pages

    pool, ring = client.app[DB], settings.key_ring
    session = await sign_in(client)
    await activate_plan(client, session, guardians=1)
    (row,) = query(settings, "SELECT id::text AS id FROM guardians")
    async with transaction(pool) as cur:
        await guardians.remember_pages(cur, ring, rendered=[(row["id"], 1)])
    token = guardian_links.token_for(ring, key_id=ring.primary_id, guardian_id=row["id"], version=1)
    page = await guardian_pages.open_by_token(pool, ring, token=token)
    assert (
        page is not None
        and page["status"] == "Active"
        and page["asks"] == ["report", "suggest_address", "decline"]
    )
    assert_record(page, guardian_pages.GuardianPage)
    assert await guardian_pages.open_by_token(pool, ring, token="0" * 64) is None


async def test_owner_session_and_passkey_records(client):
    from models.account import passkeys, pending_sign_ins, sessions
    from models.proofs.passkey import Passkey
    from tests.support.owner import sign_in_page

    keypair = Keypair.random()
    await sign_in_page(client, keypair)
    pool, redis, now = client.app[DB], client.app[REDIS], client.app[CLOCK].now()
    cookie = client.session.cookie_jar.filter_cookies(client.make_url("/"))["__Host-lps_session"].value
    found = await sessions.current(pool, cookie=cookie, idle_seconds=600, now=now)
    assert found is not None
    assert_record(found, sessions.OwnerSession)
    key: Passkey = {
        "credential_id": b"\x01" * 16,
        "guardian_id": found["user_id"],
        "public_key": b"\x02" * 77,
        "sign_count": 0,
        "transports": ["internal"],
    }
    assert await passkeys.add(pool, user_id=found["user_id"], passkey=key, now=now)
    kept = await passkeys.get(pool, credential_id=key["credential_id"])
    assert kept is not None
    assert_record(kept, passkeys.OwnerPasskey)
    assert_record((await passkeys.of_owner(pool, user_id=found["user_id"]))[0], passkeys.OwnerPasskey)
    started = pending_sign_ins.begin(wallet=keypair.public_key, next_path="/plan", ttl_seconds=60, now=now)
    await pending_sign_ins.keep(redis, pending=started["pending"], now=now)
    pending = await pending_sign_ins.of_cookie(redis, cookie=started["cookie"], now=now)
    assert pending is not None
    assert_record(pending, pending_sign_ins.PendingSignIn)


async def test_job_lease_records(client):
    """A lapsed lease (models.jobs.leases), as the lease sweep reads it."""
    from datetime import timedelta

    from models.jobs import leases

    pool, now = client.app[DB], client.app[CLOCK].now()
    held = await leases.take(
        pool,
        name="relay_transaction:ab",
        job="relay_transaction",
        args=["ab"],
        holder="h1",
        now=now,
        lease=timedelta(seconds=1),
    )
    assert held
    (lapsed,) = await leases.lapsed(pool, now=now + timedelta(seconds=2))
    assert lapsed == {
        "name": "relay_transaction:ab",
        "job": "relay_transaction",
        "args": ["ab"],
        "holder": "h1",
    }
    assert_record(lapsed, leases.Lapsed)
