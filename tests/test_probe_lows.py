"""The hostile probe's lows (#28), each over HTTP: no personal text in Redis (F3), what a guardian
who has not accepted sees (F4), the docs' CSP (F8), and an asset without a currency. F1 (the
two resend allowances) is in tests/test_claim_links.py, F2 (one pending wallet change) in
tests/test_lost_wallet.py, next to the flows they change."""

from __future__ import annotations

import re

import redis as redis_sync
from stellar_sdk import Keypair

from tests.capsule_helpers import Family
from tests.helpers import sign_in
from tests.lifecycle_helpers import activate_plan, answer, approve_plan, get_overview, guardian_session
from tests.plan_helpers import create
from tests.soroban_helpers import prove_wallet
from tests.support.guardian_page import page_link


def redis_dump(settings) -> bytes:
    """Every key and every value in the test's Redis database, as bytes."""
    client = redis_sync.Redis.from_url(settings.redis_url)
    out = []
    try:
        for key in client.scan_iter():
            out.append(key)
            kind = client.type(key)
            if kind == b"string":
                out.append(client.get(key) or b"")
            elif kind == b"zset":
                out += [m for m, _ in client.zrange(key, 0, -1, withscores=True)]
            elif kind == b"hash":
                out += [b for pair in client.hgetall(key).items() for b in pair]
            elif kind == b"list":
                out += client.lrange(key, 0, -1)
            elif kind == b"set":
                out += list(client.smembers(key))
    finally:
        client.close()
    return b"\n".join(out)


async def test_f3_the_wallet_challenge_keeps_no_personal_text_in_redis(
    client, clock, run_worker, email_provider, settings
):
    owner = await sign_in(client)
    setup = await activate_plan(client, owner)
    await approve_plan(client, setup)
    clock.advance(seconds=setup.overview["settings"]["cancelWindowSeconds"] + 1)
    await run_worker(settings=email_provider.settings)
    token = setup.beneficiaries[0]["claimToken"]
    wallet = Keypair.random()
    resp = await client.post(
        f"/api/claim/{token}/wallet/challenge", json={"walletAddress": wallet.public_key}
    )
    message = (await resp.json())["message"]
    assert resp.status == 200 and "Olive Owner's plan" in message  # the text names the owner…
    dump = redis_dump(settings)
    assert b"claim:wallet:" in dump  # …Redis holds the challenge…
    assert b"Olive" not in dump and b"beneficiary of" not in dump  # …but not its text
    nonce = re.search(r"Nonce: ([0-9a-f]{64})", message)
    assert nonce is not None and nonce.group(1).encode() in dump
    # The text rebuilt from the database verifies, once.
    resp = await prove_wallet(client, token, wallet)
    assert resp.status == 200 and (await resp.json())["wallet"]["address"] == wallet.public_key
    assert b"Olive" not in redis_dump(settings)
    # A signature over some other text (a forged name) is refused.
    other = Keypair.random()
    resp = await client.post(f"/api/claim/{token}/wallet/challenge", json={"walletAddress": other.public_key})
    forged = (await resp.json())["message"].replace("Olive Owner", "Mallory")
    from tests.helpers import sign

    resp = await client.post(
        f"/api/claim/{token}/wallet/verify",
        json={"walletAddress": other.public_key, "signature": sign(other, forged)},
    )
    assert resp.status == 401


async def test_f4_a_guardian_who_has_not_accepted_sees_nothing_of_the_heirs(
    client, clock, run_worker, email_provider
):
    owner = await sign_in(client)
    setup = await activate_plan(client, owner, guardians=4, accepting=2, threshold=2)
    waiting, declining = setup.guardians[2], setup.guardians[3]
    resp = await answer(client, declining, owner_plan_id=setup.plan_id, verb="decline")
    assert resp.status == 200
    await approve_plan(client, setup)
    clock.advance(seconds=setup.overview["settings"]["cancelWindowSeconds"] + 1)
    await run_worker(settings=email_provider.settings)
    assert (await get_overview(client, owner))["status"] == "Released"
    # A lost-wallet request is waiting, so an accepted guardian has heirs and changes to see.
    token = setup.beneficiaries[0]["claimToken"]
    assert (await prove_wallet(client, token, Keypair.random())).status == 200
    assert (await prove_wallet(client, token, Keypair.random())).status == 409
    accepted = await guardian_session(client, setup.guardians[0])
    [seen] = await (await client.get("/api/legacy/guardianships", headers=accepted.headers)).json()
    assert [b["name"] for b in seen["beneficiaries"]] == ["Heir 0", "Heir 1"] and seen["approvals"] == 2
    assert len(seen["walletChanges"]) == 1
    for guardian, state in ((waiting, "pending"), (declining, "declined")):
        session = await guardian_session(client, guardian)
        [item] = await (await client.get("/api/legacy/guardianships", headers=session.headers)).json()
        assert item["invitation"] == state and item["status"] == "Released"
        assert item["owner"]["name"] == "Olive Owner"
        assert item["beneficiaries"] == [] and item["walletChanges"] == []
        assert item["approvals"] == 0 and item["releaseAt"] is None and item["acceptedAt"] is None
        assert "Heir" not in str(item)


async def test_f8_the_docs_carry_a_csp_that_lets_swagger_ui_run_and_forbids_framing(client):
    resp = await client.get("/api/docs")
    assert resp.status == 200
    csp = resp.headers["Content-Security-Policy"]
    assert "frame-ancestors 'none'" in csp and "default-src 'none'" in csp
    assert resp.headers["X-Content-Type-Options"] == "nosniff"
    # The page's one inline script is allowed by its hash, and nothing else inline.
    hashes = re.findall(r"'sha256-[A-Za-z0-9+/=]+'", csp)
    assert len(hashes) == 1 and "'unsafe-inline'" not in csp.split("script-src")[1].split(";")[0]
    page = await resp.text()
    assets = re.findall(r'(?:src|href)="(/api/docs/static/[^"]+)"', page)
    assert assets
    for path in assets:
        asset = await client.get(path)
        assert asset.status == 200, path
        assert "frame-ancestors 'none'" in asset.headers["Content-Security-Policy"], path
        assert asset.headers["X-Content-Type-Options"] == "nosniff"
    spec = await client.get("/api/docs/openapi.json")
    assert "frame-ancestors 'none'" in spec.headers["Content-Security-Policy"]


async def test_an_asset_without_a_code_is_an_amount_with_no_currency(fam: Family):
    heir = await fam.add_heir("Ada", 100)
    resp = await fam.client.post(
        "/api/assets", json={"label": "The house", "amount": "1"}, headers=fam.owner.headers
    )
    house = await resp.json()
    assert resp.status == 201 and house["assetCode"] is None
    await create(fam.client, fam.owner, "assets", label="Savings", amount="12.5", assetCode="XLM")
    await fam.release()
    capsule = await fam.capsule(heir)
    by_label = {a["label"]: a for a in capsule["assets"]}
    assert by_label["The house"]["assetCode"] is None and by_label["The house"]["amount"] == "1"
    page = await (await fam.client.get(f"/claim/{heir['claimToken']}")).text()
    house_item = page[page.index("The house") :]
    house_item = house_item[: house_item.index("</li>")]
    # The amount stands as the owner wrote it, with no currency after it.
    assert re.search(r"\b1\.</span>", house_item) and "XLM" not in house_item
    savings = page[page.index("Savings") :]
    assert "12.5 XLM" in savings[: savings.index("</li>")]


async def test_a_guardian_who_has_not_accepted_sees_only_the_plans_state_on_their_page(
    client, run_worker, email_provider
):
    # Someone reached through a mistyped guardian address must not read a report's note.
    owner = await sign_in(client)
    setup = await activate_plan(
        client, owner, guardians=4, accepting=2, threshold=2, settings={"verificationTimeoutSeconds": 7200}
    )
    waiting, declining = setup.guardians[2], setup.guardians[3]
    assert (await answer(client, declining, owner_plan_id=setup.plan_id, verb="decline")).status == 200
    session = await guardian_session(client, setup.guardians[0])
    note = "Found at home on Tuesday; the funeral is on Friday at St Mary's"
    resp = await client.post(
        f"/api/legacy/guardianships/{setup.plan_id}/report",
        json={"note": note, "reason": "death"},
        headers=session.headers,
    )
    assert resp.status in (200, 202), await resp.text()
    assert (await get_overview(client, owner))["status"] == "PendingVerification"
    await run_worker(settings=email_provider.settings)

    accepted = await (await client.get(page_link(email_provider, "guardian1@example.org"))).text()
    # The accepted guardian sees the verification (what the others must not).
    for shown in (
        "Guardian 0",
        "has died",
        "Found at home on Tuesday",
        "approvals needed",
        "If not enough guardians approve by",
    ):
        assert shown in accepted, shown
    for guardian, words in ((waiting, "not answered the invitation"), (declining, "You declined")):
        path = page_link(email_provider, guardian.row["email"])
        resp = await client.get(path)
        text = await resp.text()
        assert resp.status == 200 and words in text
        assert "The plan is being verified" in text
        for hidden in (
            "Guardian 0",
            "reported",
            "has died",  # the accept button's words say what the role is, generically (not hidden)
            "Found at home",
            "funeral",
            "approval",
            "If not enough guardians approve by",
            "The verification",
            "Someone signed in",
            "Heir",
        ):
            assert hidden not in text, (guardian.row["email"], hidden)
        # Nothing asked now: a guardian who had not accepted when the round began does not take the
        # role on in it (whoever reads their mailbox could then approve or object).
        assert 'value="accept"' not in text and 'value="approve"' not in text
        assert "you can accept once it ends" in text
