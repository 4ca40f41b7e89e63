"""The owner's key is not the family's weak point (#25): a sign-in during verification is not a
veto, a released account holds no keys to the heirs, wallets can be removed, the owner hears of
every change, and plans carry plain names. Over HTTP, with the email capture."""

from __future__ import annotations

import json
from datetime import datetime

from stellar_sdk import Keypair, StrKey

from api.html import spelled
from core.clock import wire_time
from tests.helpers import assert_error, challenge, sign, sign_in
from tests.lifecycle_helpers import (
    activate_plan,
    approve,
    approve_plan,
    get_overview,
    guardian_session,
    report,
)
from tests.media_samples import png
from tests.plan_helpers import activity_rows, create, query
from tests.support.guardian_page import ask, page_link
from tests.support.words import visible_text
from tests.wallet_app import WalletApp


async def test_a_sign_in_during_verification_leaves_the_plan_and_a_check_in_vetoes(
    client, run_worker, email_provider, settings
):
    owner = await sign_in(client)
    setup = await activate_plan(client, owner)
    assert (await get_overview(client, owner))["verificationNotice"] is None
    assert (await report(client, setup, setup.guardians[0])).status == 200

    # Someone holding the seed phrase signs in "to look": the verification goes on.
    await sign_in(client, owner.keypair)
    overview = await get_overview(client, owner)
    assert overview["status"] == "PendingVerification"
    notice = overview["verificationNotice"]
    started = datetime.fromisoformat(overview["verificationStartedAt"])
    assert "Guardian 0" in notice and spelled(started) in notice  # in words, never ISO
    assert "only an explicit check-in stops it" in notice and "signing in" in notice
    assert "deadline" in notice
    kinds = [r["kind"] for r in activity_rows(settings, owner.user["id"])]
    assert kinds.count("account.signed_in_during_verification") == 1
    assert "plan.vetoed" not in kinds and "plan.check_in" not in kinds

    # Approved: the same, and the notice says when the heirs get their links.
    await approve_plan(client, setup)
    await sign_in(client, owner.keypair)
    overview = await get_overview(client, owner)
    release_at = datetime.fromisoformat(overview["releaseAt"])
    assert overview["status"] == "Approved" and spelled(release_at) in overview["verificationNotice"]
    kinds = [r["kind"] for r in activity_rows(settings, owner.user["id"])]
    assert kinds.count("account.signed_in_during_verification") == 2 and "plan.vetoed" not in kinds
    assert query(settings, "SELECT count(*) AS n FROM outbox WHERE kind = 'false_alarm'")[0]["n"] == 0

    # Only an explicit check-in vetoes; the guardians hear it was a false alarm.
    assert (await client.post("/api/legacy/check-in", headers=owner.headers)).status == 200
    overview = await get_overview(client, owner)
    assert overview["status"] == "Active" and overview["verificationNotice"] is None
    await run_worker(settings=email_provider.settings)
    assert any("false alarm" in m.body["subject"] for m in email_provider.to("guardian0@example.org"))

    # In Active a sign-in is still a check-in.
    await sign_in(client, owner.keypair)
    kinds = [r["kind"] for r in activity_rows(settings, owner.user["id"])]
    assert kinds.count("plan.check_in") == 2


def key_used_times(settings, user_id):
    """When the owner's timeline recorded a sign-in during verification, oldest first."""
    rows = query(
        settings,
        "SELECT created_at FROM activity WHERE user_id = %s"
        " AND kind = 'account.signed_in_during_verification' ORDER BY created_at",
        (user_id,),
    )
    return [r["created_at"] for r in rows]


async def guardianship(client, guardian, plan_id):
    """The plan as this guardian's GET /api/legacy/guardianships lists it."""
    resp = await client.get(
        "/api/legacy/guardianships", headers=(await guardian_session(client, guardian)).headers
    )
    assert resp.status == 200, await resp.text()
    [item] = [g for g in await resp.json() if g["planId"] == plan_id]
    return item


def key_sentence(owner, at):
    return (
        f"Someone signed in with {owner}\u2019s key on {spelled(at)} during this verification. "
        "Only an explicit check-in stops the release."
    )


async def test_the_plans_accepted_guardians_see_that_someone_used_the_owners_key(
    client, run_worker, email_provider, settings
):
    owner = await sign_in(client)
    setup = await activate_plan(client, owner, guardians=3, accepting=2)
    await run_worker(settings=email_provider.settings)
    paths = [page_link(email_provider, f"guardian{i}@example.org") for i in range(3)]
    accepted = setup.guardians[:2]

    async def seen(index):
        """ownerKeyUsedAt and the page's words for guardian `index`."""
        guardian = setup.guardians[index]
        item = await guardianship(client, guardian, setup.plan_id)
        page = visible_text(await (await client.get(paths[index])).text())
        return item["ownerKeyUsedAt"], page

    # Active: a sign-in is a check-in, nothing for the guardians to see.
    await sign_in(client, owner.keypair)
    for index in range(3):
        at, page = await seen(index)
        assert at is None and "Someone signed in" not in page
    assert (await report(client, setup, accepted[0])).status == 200
    at, page = await seen(0)
    assert at is None and "Someone signed in" not in page

    # Someone signs in with the owner's key, twice: the accepted guardians see the latest time.
    await sign_in(client, owner.keypair)
    await sign_in(client, owner.keypair)
    first, latest = key_used_times(settings, owner.user["id"])
    assert first < latest
    for index in (0, 1):
        at, page = await seen(index)
        assert at == wire_time(latest)
        assert key_sentence("Olive Owner", latest) in page
    # Never a guardian who has not accepted.
    at, page = await seen(2)
    assert at is None and "Someone signed in" not in page

    # Approved: the same round, still shown.
    for guardian in accepted:
        assert (await approve(client, setup, guardian)).status == 200
    assert (await get_overview(client, owner))["status"] == "Approved"
    at, page = await seen(1)
    assert at == wire_time(latest) and key_sentence("Olive Owner", latest) in page

    # The owner checks in: the verification is over, and so is the notice.
    assert (await client.post("/api/legacy/check-in", headers=owner.headers)).status == 200
    at, page = await seen(0)
    assert at is None and "Someone signed in" not in page

    # A new verification starts clean: the last round's sign-ins are not this one's.
    assert (await report(client, setup, accepted[1])).status == 200
    at, page = await seen(0)
    assert at is None and "Someone signed in" not in page
    await sign_in(client, owner.keypair)
    again = key_used_times(settings, owner.user["id"])[-1]
    at, page = await seen(0)
    assert at == wire_time(again) and key_sentence("Olive Owner", again) in page


async def test_an_owner_without_a_name_is_their_wallet_on_the_guardians_page(
    client, run_worker, email_provider, settings
):
    owner = await sign_in(client)
    setup = await activate_plan(client, owner)
    await run_worker(settings=email_provider.settings)
    path = page_link(email_provider, "guardian0@example.org")
    # The name is cleared after activation (activation and invitations need one).
    resp = await client.patch("/api/users/me", json={"name": None}, headers=owner.headers)
    assert resp.status == 200, await resp.text()
    assert (await report(client, setup, setup.guardians[0])).status == 200
    await sign_in(client, owner.keypair)

    wallet = owner.keypair.public_key
    holder = f"the holder of the Stellar wallet {wallet}"
    page = visible_text(await (await client.get(path)).text())
    assert "person who named you" not in page and "Olive" not in page
    assert f"You are a guardian of {holder}\u2019s plan" in page
    assert f"The holder of the Stellar wallet {wallet} can stop it at any moment by checking in." in page
    [at] = key_used_times(settings, owner.user["id"])
    assert key_sentence(holder, at) in page
    # The wallet's prompt names the owner the same way.
    request = await WalletApp(client, setup.guardians[0].keypair).open(await ask(client, path, "approve"))
    assert request.msg == f"Approve the release of {holder}'s plan, as their guardian"
    item = await guardianship(client, setup.guardians[0], setup.plan_id)
    assert item["owner"] == {"name": None, "walletAddress": wallet}


async def test_the_notice_names_the_deadline_and_its_outcome(client, settings):
    owner = await sign_in(client)
    setup = await activate_plan(
        client, owner, settings={"verificationTimeoutSeconds": 7 * 86400, "onVerificationTimeout": "release"}
    )
    assert (await report(client, setup, setup.guardians[0])).status == 200
    notice = (await get_overview(client, owner))["verificationNotice"]
    assert "by the deadline" in notice and "released after your cancel window all the same" in notice


async def test_after_release_no_owner_route_holds_a_token_or_a_sealed_text(
    client, clock, run_worker, settings
):
    owner = await sign_in(client)
    setup = await activate_plan(client, owner)
    heir = setup.beneficiaries[0]
    letters = {}
    for kind, value, text in (
        ("on_release", None, "open at release"),
        ("on_date", "2035-06-01", "sealed until 2035"),
        ("after_release", 2, "two days after"),
    ):
        letters[kind] = await create(
            client,
            owner,
            "messages",
            content=text,
            releaseRule={"kind": kind, "value": value},
            audience={"all": True},
        )
    assert letters["on_date"]["content"] == "sealed until 2035" and letters["on_date"]["opensAt"] is None
    listed = await (await client.get("/api/beneficiaries", headers=owner.headers)).json()
    assert all(len(b["claimToken"]) == 64 for b in listed)  # before release: as the spec says

    await approve_plan(client, setup)
    clock.advance(seconds=setup.overview["settings"]["cancelWindowSeconds"] + 1)
    await run_worker()
    released_at = (await get_overview(client, owner))["releasedAt"]
    assert released_at

    # No claim token on any owner route.
    for path in ("/api/beneficiaries", f"/api/beneficiaries/{heir['id']}"):
        body = await (await client.get(path, headers=owner.headers)).json()
        for row in body if isinstance(body, list) else [body]:
            assert row["claimToken"] is None
            assert heir["claimToken"] not in json.dumps(row)
    # Only this owner's release counts: another owner's heirs keep their links on their routes.
    other = await sign_in(client)
    theirs = await create(
        client, other, "beneficiaries", name="B", email="b@example.org", allocationPercentage=5
    )
    for path in ("/api/beneficiaries", f"/api/beneficiaries/{theirs['id']}"):
        body = await (await client.get(path, headers=other.headers)).json()
        for row in body if isinstance(body, list) else [body]:
            assert row["claimToken"] == theirs["claimToken"]
    # No text of a letter not yet opened to its heirs; the opened one stays, each with its date.
    by_id = {m["id"]: m for m in await (await client.get("/api/messages", headers=owner.headers)).json()}
    opened, dated, later = (by_id[letters[k]["id"]] for k in ("on_release", "on_date", "after_release"))
    assert opened["content"] == "open at release" and opened["opensAt"] == released_at
    assert dated["content"] is None and dated["opensAt"] == "2035-06-01T00:00:00.000Z"
    assert later["content"] is None and later["opensAt"] > released_at
    one = await (await client.get(f"/api/messages/{letters['on_date']['id']}", headers=owner.headers)).json()
    assert one["content"] is None and "sealed until 2035" not in json.dumps(one)
    clock.advance(days=2, seconds=1)
    one = await (
        await client.get(f"/api/messages/{letters['after_release']['id']}", headers=owner.headers)
    ).json()
    assert one["content"] == "two days after"
    # The owner's preview stays: what the heir sees already.
    resp = await client.get(f"/api/legacy/preview/{heir['id']}", headers=owner.headers)
    assert resp.status == 200
    assert "sealed until 2035" not in await resp.text()
    # Writes are 409 as before; the heir's own link still opens everything that is open.
    resp = await client.post(f"/api/beneficiaries/{heir['id']}/claim-token/rotate", headers=owner.headers)
    assert resp.status == 409
    capsule = await (await client.get(f"/api/claim/{heir['claimToken']}")).json()
    assert "open at release" in json.dumps(capsule) and "sealed until 2035" not in json.dumps(capsule)


async def link(client, session, keypair):
    message = await challenge(client, keypair.public_key)
    resp = await client.post(
        "/api/auth/link-wallet",
        headers=session.headers,
        json={"walletAddress": keypair.public_key, "signature": sign(keypair, message)},
    )
    assert resp.status == 200, await resp.text()
    return await resp.json()


async def test_a_removed_wallet_no_longer_signs_in_and_every_session_ends(client, settings):
    owner = await sign_in(client)
    first = owner.keypair
    second, third = Keypair.random(), Keypair.random()
    await link(client, owner, second)
    await link(client, owner, third)

    # Not the account's: 404 (another account's wallet, an unknown one, garbage).
    stranger = await sign_in(client)
    for address in (stranger.keypair.public_key, Keypair.random().public_key, "nonsense"):
        resp = await client.delete(f"/api/auth/wallets/{address}", headers=owner.headers)
        assert resp.status == 404, address

    # Off-chain the primary wallet can go: the oldest remaining one becomes primary.
    resp = await client.delete(f"/api/auth/wallets/{first.public_key}", headers=owner.headers)
    assert resp.status == 204 and await resp.read() == b""
    assert resp.headers["Sessions-Ended-Everywhere-By"].endswith("Z")
    # Every session has ended, this one included.
    resp = await client.get("/api/auth/me", headers=owner.headers)
    assert resp.status == 401
    again = await sign_in(client, second)
    assert again.user["id"] == owner.user["id"] and again.user["walletAddress"] == second.public_key
    me = await (await client.get("/api/auth/me", headers=again.headers)).json()
    assert me["wallets"] == [second.public_key, third.public_key]
    # The removed wallet signs in to a new, empty account, not to this one.
    other = await sign_in(client, first)
    assert other.user["id"] != owner.user["id"]
    kinds = [r["kind"] for r in activity_rows(settings, owner.user["id"])]
    assert "user.wallet_removed" in kinds

    # The last wallet stays: 409.
    resp = await client.delete(f"/api/auth/wallets/{third.public_key}", headers=again.headers)
    assert resp.status == 204
    last = await sign_in(client, second)
    resp = await client.delete(f"/api/auth/wallets/{second.public_key}", headers=last.headers)
    assert resp.status == 409
    assert_error(await resp.json(), 409)


async def test_with_a_contract_the_primary_wallet_stays(make_client):
    client = await make_client(service_contract_id=StrKey.encode_contract(bytes(32)))
    owner = await sign_in(client)
    second = Keypair.random()
    await link(client, owner, second)
    resp = await client.delete(f"/api/auth/wallets/{owner.keypair.public_key}", headers=owner.headers)
    assert resp.status == 409 and "on-chain" in (await resp.json())["message"]
    resp = await client.delete(f"/api/auth/wallets/{second.public_key}", headers=owner.headers)
    assert resp.status == 204


def changes_mail(email_provider, address):
    """The owner's digests and address-change notices (not the lifecycle's own emails)."""
    return [m for m in email_provider.to(address) if "change" in m.body["subject"]]


def digests(settings):
    return query(
        settings, "SELECT status, context FROM outbox WHERE kind = 'account_changes' ORDER BY created_at"
    )


async def test_the_owner_hears_of_every_change_once_a_minute(
    client, clock, run_worker, email_provider, settings
):
    owner = await sign_in(client)
    # While drafting nothing is told: the owner is still setting up.
    draft_heir = await create(client, owner, "beneficiaries", name="Drafted", allocationPercentage=10)
    resp = await client.delete(f"/api/beneficiaries/{draft_heir['id']}", headers=owner.headers)
    assert resp.status == 204
    setup = await activate_plan(client, owner, guardians=3)
    assert digests(settings) == []

    heir, guardian = setup.beneficiaries[0], setup.guardians[0].row
    wallet = Keypair.random()
    edits = [
        ("PATCH", f"/api/beneficiaries/{heir['id']}", {"email": "new-heir@example.org"}),
        ("PATCH", f"/api/beneficiaries/{heir['id']}", {"walletAddress": Keypair.random().public_key}),
        ("PATCH", f"/api/guardians/{guardian['id']}", {"email": "new-guardian@example.org"}),
        ("PATCH", f"/api/guardians/{guardian['id']}", {"walletAddress": Keypair.random().public_key}),
        ("PATCH", f"/api/beneficiaries/{heir['id']}", {"relationship": "niece"}),  # not told
    ]
    for method, path, body in edits:
        resp = await client.request(method, path, json=body, headers=owner.headers)
        assert resp.status == 200, await resp.text()
    added = await create(client, owner, "guardians", name="Gwen Added", email="gwen@example.org")
    resp = await client.delete(f"/api/guardians/{setup.guardians[2].row['id']}", headers=owner.headers)
    assert resp.status == 204, await resp.text()
    await link(client, owner, wallet)
    clock.advance(seconds=30)
    resp = await client.delete(f"/api/auth/wallets/{wallet.public_key}", headers=owner.headers)
    assert resp.status == 204
    owner = await sign_in(client, owner.keypair)

    # One digest, not sent before its minute is over.
    [digest] = digests(settings)
    assert digest["status"] == "pending" and len(digest["context"]["changes"]) == 8
    assert "Heir 0" not in json.dumps(digest["context"])  # names are sealed in the row
    await run_worker(settings=email_provider.settings)
    assert changes_mail(email_provider, "owner@example.org") == []
    clock.advance(seconds=31)
    await run_worker(settings=email_provider.settings)
    [mail] = changes_mail(email_provider, "owner@example.org")
    text = mail.body["text"]
    assert mail.body["subject"] == "8 changes to your legacy plan"
    for line in (
        "Heir 0 (beneficiary): email address changed",
        "Heir 0 (beneficiary): Stellar wallet changed",
        "Guardian 0 (guardian): email address changed",
        "Guardian 0 (guardian): Stellar wallet changed",
        "Gwen Added: added as a guardian",
        "Guardian 2: removed from your guardians",
        f"The wallet {wallet.public_key}: linked to your account",
        f"The wallet {wallet.public_key}: removed from your account",
    ):
        assert line in text, line
    assert "niece" not in text and "new-heir@example.org" not in text and "gwen@example.org" not in text
    assert "check in" in text and "sign out everywhere" in text and "review your beneficiaries" in text
    assert added["id"]

    # A later change starts the next digest; the owner's address: both addresses are told.
    resp = await client.patch("/api/users/me", json={"email": "moved@example.org"}, headers=owner.headers)
    assert resp.status == 200
    await run_worker(settings=email_provider.settings)
    [old] = changes_mail(email_provider, "owner@example.org")[1:]
    assert "was changed" in old.body["subject"] and "moved@example.org" not in old.body["text"]
    assert "sign out everywhere" in old.body["text"]
    clock.advance(seconds=61)
    await run_worker(settings=email_provider.settings)
    [new] = changes_mail(email_provider, "moved@example.org")
    assert new.body["subject"] == "A change to your legacy plan"
    assert "Your email address: changed to this one" in new.body["text"]


async def test_activation_needs_the_owners_name_and_invitations_wait_for_it(
    client, run_worker, email_provider, settings
):
    owner = await sign_in(client)
    resp = await client.patch("/api/users/me", json={"email": "nameless@example.org"}, headers=owner.headers)
    assert resp.status == 200
    await create(client, owner, "beneficiaries", allocationPercentage=100)
    keypair = Keypair.random()
    guardian = await create(
        client, owner, "guardians", name="Gail", email="gail@example.org", walletAddress=keypair.public_key
    )
    assert guardian["invitedAt"] is None
    await run_worker(settings=email_provider.settings)
    assert email_provider.to("gail@example.org") == []  # no "the person who named you"
    resp = await client.post("/api/legacy/activate", headers=owner.headers)
    assert resp.status == 409
    problems = (await resp.json())["details"]["readiness"]["problems"]
    assert "Add your name so guardians and heirs know whose plan this is." in problems

    resp = await client.patch("/api/users/me", json={"name": "Nora Named"}, headers=owner.headers)
    assert resp.status == 200
    [row] = await (await client.get("/api/guardians", headers=owner.headers)).json()
    assert row["invitedAt"] is not None
    await run_worker(settings=email_provider.settings)
    [mail] = email_provider.to("gail@example.org")
    assert "Nora Named" in mail.body["subject"] and "Nora Named" in mail.body["text"]
    assert "the person who named you" not in mail.body["text"]
    problems = (await get_overview(client, owner))["readiness"]["problems"]
    assert not any("Add your name" in p for p in problems)


async def test_warnings_for_a_guardian_who_inherits_and_a_single_approval(client):
    owner = await sign_in(client)
    heir_wallet = Keypair.random().public_key
    await create(
        client, owner, "beneficiaries", name="Ann", email="ANN@example.org", walletAddress=heir_wallet
    )
    await create(client, owner, "guardians", name="Ann as guardian", email="ann@Example.org")
    await create(client, owner, "guardians", name="Bob", email="bob@example.org", walletAddress=heir_wallet)
    await create(client, owner, "guardians", name="Cy", email="cy@example.org")
    warnings = (await get_overview(client, owner))["readiness"]["warnings"]
    [both] = [w for w in warnings if "both a guardian and a beneficiary" in w]
    assert "Ann as guardian, Bob are" in both and "Cy" not in both
    assert not any("One guardian's approval" in w for w in warnings)  # a majority of 3 is 2
    resp = await client.patch("/api/legacy", json={"guardianThreshold": 1}, headers=owner.headers)
    assert resp.status == 200
    warnings = (await get_overview(client, owner))["readiness"]["warnings"]
    assert any("One guardian's approval is enough" in w for w in warnings)


async def released_after_report(client, clock, run_worker, email_provider, owner, reason):
    setup = await activate_plan(client, owner, guardians=2)
    resp = await client.post(
        f"/api/legacy/guardianships/{setup.plan_id}/report",
        json={"reason": reason},
        headers=(await guardian_session(client, setup.guardians[0])).headers,
    )
    assert resp.status == 200, await resp.text()
    for guardian in setup.guardians:
        assert (await approve(client, setup, guardian)).status == 200
    clock.advance(seconds=setup.overview["settings"]["cancelWindowSeconds"] + 1)
    await run_worker(settings=email_provider.settings)
    assert (await get_overview(client, owner))["status"] == "Released"
    return setup


async def test_a_reported_death_brings_sympathy_and_other_reasons_neutral_words(
    client, clock, run_worker, email_provider, settings
):
    # A reason outside the four is a 400.
    owner = await sign_in(client)
    setup = await activate_plan(client, owner, guardians=2)
    session = await guardian_session(client, setup.guardians[0])
    resp = await client.post(
        f"/api/legacy/guardianships/{setup.plan_id}/report",
        json={"reason": "boredom"},
        headers=session.headers,
    )
    assert resp.status == 400

    for reason, owner_words, guardian_words in (
        ("death", "reported your death", "has died"),
        ("unreachable", "cannot reach you", "cannot reach Olive Owner"),
    ):
        email_provider.requests.clear()
        owner = await sign_in(client)
        setup = await released_after_report(client, clock, run_worker, email_provider, owner, reason)
        await run_worker(settings=email_provider.settings)
        [started] = [m for m in email_provider.to("owner@example.org") if "verify" in m.body["subject"]]
        assert owner_words in started.body["text"]
        [asked] = [
            m for m in email_provider.to("guardian1@example.org") if "help is needed" in m.body["subject"]
        ]
        assert guardian_words in asked.body["text"]
        [link] = email_provider.to("heir0@example.org")
        page = await (await client.get(f"/claim/{setup.beneficiaries[0]['claimToken']}")).text()
        if reason == "death":
            assert link.body["text"].count("sorry for your loss") == 1 and "sorry for your loss" in page
        else:
            assert "sorry" not in link.body["text"] and "sorry" not in page
            assert "left something for you" in link.body["subject"]
        kinds = {r["kind"]: r["metadata"] for r in activity_rows(settings, owner.user["id"])}
        assert kinds["guardian.reported"]["reason"] == reason


async def test_in_a_browser_the_heirs_page_chooses_its_words_by_the_reported_reason(
    client, clock, run_worker, email_provider, context
):
    """Chromium reads the heir's released page: sympathy only for a reported death."""
    origin = str(client.make_url("")).rstrip("/")
    page = await context.new_page()
    for reason in ("death", "incapacity", "unreachable", "other", None):
        owner = await sign_in(client)
        setup = await released_after_report(client, clock, run_worker, email_provider, owner, reason)
        response = await page.goto(
            f"{origin}/claim/{setup.beneficiaries[0]['claimToken']}", wait_until="load"
        )
        assert response.status == 200
        assert await page.locator("h1").inner_text() == "Olive Owner left this for you, Heir 0"
        lead = await page.locator("p.lead").inner_text()
        words = await page.locator("body").inner_text()
        if reason == "death":
            assert lead.startswith("We are sorry for your loss. It was released to you on"), lead
            assert words.count("sorry") == 1
        else:
            assert lead.startswith("It was released to you on"), (reason, lead)
            assert "sorry" not in words.lower() and "loss" not in words.lower(), reason


async def test_after_release_the_media_of_an_unopened_letter_stays_the_heirs(vault, clock):
    client, owner = vault.client, vault.session
    setup = await activate_plan(client, owner)
    photos = []
    for name in ("now.png", "later.png"):
        item = await vault.upload_ok(png(), type="photo", filename=name, content_type="image/png")
        photos.append(item["id"])
    await vault.work()
    for media, rule in zip(
        photos,
        ({"kind": "on_release", "value": None}, {"kind": "on_date", "value": "2035-06-01"}),
        strict=True,
    ):
        await create(client, owner, "messages", mediaId=media, releaseRule=rule)
    assert (await vault.download(photos[1])).status == 200  # before release: the owner's own
    await approve_plan(client, setup)
    clock.advance(seconds=setup.overview["settings"]["cancelWindowSeconds"] + 1)
    await vault.work()
    assert (await get_overview(client, owner))["status"] == "Released"
    assert (await vault.download(photos[0])).status == 200  # its letter is open to the heirs
    resp = await vault.download(photos[1])
    body = await resp.json()
    assert resp.status == 409 and body["details"]["opensAt"] == "2035-06-01T00:00:00.000Z"
