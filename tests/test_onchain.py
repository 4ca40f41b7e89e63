"""On-chain approvals, release and claims end to end: HTTP routes, the real worker, the RPC
emulator, real keypairs signing like wallets, and the test clock for the cancel window."""

from __future__ import annotations

import base64
import re

from stellar_sdk import Keypair, Network, TransactionBuilder, TransactionEnvelope, scval

from testing.soroban_rpc import random_contract_id
from tests.helpers import assert_error, sign_in
from tests.lifecycle_helpers import activate_plan, get_overview, guardian_session, report
from tests.plan_helpers import query
from tests.soroban_helpers import prove_wallet, sign_xdr
from tests.support.onchain import approving, build_sign_submit, run

HASH_RE = re.compile(r"\b[0-9a-f]{64}\b")


async def test_guardians_approve_on_chain_a_beneficiary_finalizes_another_claims(
    onchain, soroban_rpc, clock, run_worker, settings
):
    setup = await approving(onchain, soroban_rpc, guardians=2, threshold=2)
    plan = setup.plan_id
    first = await guardian_session(onchain, setup.guardians[0])

    # Off-chain attestations are refused while a contract is configured, naming the on-chain route.
    resp = await onchain.post(
        f"/api/legacy/guardianships/{plan}/approve", json={"signature": "x"}, headers=first.headers
    )
    assert resp.status == 409 and "/approve/build" in (await resp.json())["message"]

    for index, guardian in enumerate(setup.guardians):
        session = await guardian_session(onchain, guardian)
        tx = await build_sign_submit(
            onchain,
            f"/api/legacy/guardianships/{plan}/approve/build",
            f"/api/legacy/guardianships/{plan}/submit",
            guardian.keypair,
            soroban_rpc,
            headers=session.headers,
        )
        status_path = f"/api/legacy/guardianships/{plan}/transactions/{tx['id']}"
        assert (await (await onchain.get(status_path, headers=session.headers)).json())["status"] == "pending"
        # Another guardian cannot read it.
        other = await guardian_session(onchain, setup.guardians[1 - index])
        assert (await onchain.get(status_path, headers=other.headers)).status == 404
        await run(run_worker, soroban_rpc)
        done = await (await onchain.get(status_path, headers=session.headers)).json()
        assert done["status"] == "confirmed" and done["ledger"] and done["confirmedAt"].endswith("Z")
        sent = soroban_rpc.sent[tx["hash"]]
        assert sent.function == "approve_guardian"
        assert [scval.from_address(a).address for a in sent.args] == [
            setup.owner.keypair.public_key,
            guardian.keypair.public_key,
        ]
        overview = await get_overview(onchain, setup.owner)
        assert overview["approvals"]["count"] == index + 1
    assert overview["status"] == "Approved"

    heir, other_heir = setup.beneficiaries
    heir_wallet, other_wallet = Keypair.random(), Keypair.random()
    release = f"/api/claim/{heir['claimToken']}/release/build"
    # Too early: the owner's cancel window is still open.
    resp = await onchain.post(release, json={"walletAddress": heir_wallet.public_key})
    body = await resp.json()
    assert resp.status == 409 and "cancel window" in body["message"]
    assert resp.headers["Referrer-Policy"] == "no-referrer"  # the capsule's headers, errors too
    unknown = await onchain.post(
        f"/api/claim/{'0' * 64}/release/build", json={"walletAddress": heir_wallet.public_key}
    )
    assert unknown.status == 404
    clock.advance(seconds=overview["settings"]["cancelWindowSeconds"] + 1)
    await run(run_worker, soroban_rpc)  # the scheduler does not release when a contract decides
    assert (await get_overview(onchain, setup.owner))["status"] == "Approved"
    # Ready: the heirs' links were emailed; the capsule says so and shows nothing of the contents.
    overview = await get_overview(onchain, setup.owner)
    assert overview["readyToFinalize"] is True and overview["readySince"].endswith("Z")
    capsule = await (await onchain.get(f"/api/claim/{heir['claimToken']}")).json()
    assert capsule["status"] == "ready" and capsule["wallet"] is None
    # Only a proven wallet may build.
    resp = await onchain.post(release, json={"walletAddress": heir_wallet.public_key})
    assert resp.status == 409 and "/wallet/challenge" in (await resp.json())["message"]
    assert (await prove_wallet(onchain, heir["claimToken"], heir_wallet)).status == 200
    # The wallet must exist on the network.
    resp = await onchain.post(release, json={"walletAddress": heir_wallet.public_key})
    assert resp.status == 409 and "fund" in (await resp.json())["message"]
    soroban_rpc.fund(heir_wallet.public_key)
    tx = await build_sign_submit(
        onchain,
        release,
        f"/api/claim/{heir['claimToken']}/submit",
        heir_wallet,
        soroban_rpc,
        json={"walletAddress": heir_wallet.public_key},
    )
    assert tx["function"] == "finalize_release"
    await run(run_worker, soroban_rpc)
    resp = await onchain.get(f"/api/claim/{heir['claimToken']}/transactions/{tx['id']}")
    assert resp.status == 200 and (await resp.json())["status"] == "confirmed"
    assert resp.headers["Referrer-Policy"] == "no-referrer"
    overview = await get_overview(onchain, setup.owner)
    assert overview["status"] == "Released"
    claim_links = query(settings, "SELECT context->>'stage' AS stage FROM outbox WHERE kind = 'claim_link'")
    assert sorted(r["stage"] for r in claim_links) == ["ready", "ready", "released", "released"]

    # The other beneficiary claims their share.
    soroban_rpc.fund(other_wallet.public_key)
    assert (await prove_wallet(onchain, other_heir["claimToken"], other_wallet, encoding="hex")).status == 200
    claim = f"/api/claim/{other_heir['claimToken']}/claim/build"
    submit = f"/api/claim/{other_heir['claimToken']}/submit"
    tx = await build_sign_submit(
        onchain, claim, submit, other_wallet, soroban_rpc, json={"walletAddress": other_wallet.public_key}
    )
    again = await onchain.post(submit, json={"signedXdr": tx["signedXdr"]})
    assert again.status == 202 and (await again.json())["id"] == tx["id"]  # same envelope, same row
    await run(run_worker, soroban_rpc)
    resp = await onchain.get(f"/api/claim/{other_heir['claimToken']}/transactions/{tx['id']}")
    assert (await resp.json())["status"] == "confirmed"
    # Someone else's token does not show it.
    assert (await onchain.get(f"/api/claim/{heir['claimToken']}/transactions/{tx['id']}")).status == 404
    # A second claim is refused before anything is built.
    resp = await onchain.post(claim, json={"walletAddress": other_wallet.public_key})
    assert resp.status == 409 and "already claimed" in (await resp.json())["message"]

    resp = await onchain.get("/api/legacy/claims", headers=setup.owner.headers)
    assert resp.status == 200
    claims = await resp.json()
    by_id = {c["beneficiaryId"]: c for c in claims["claims"]}
    assert by_id[other_heir["id"]]["claim"]["status"] == "confirmed"
    assert by_id[other_heir["id"]]["claim"]["hash"] == tx["hash"]
    assert by_id[other_heir["id"]]["walletAddress"] == other_wallet.public_key  # bound by the proof
    assert by_id[heir["id"]]["claim"] == {
        "status": "none",
        "hash": None,
        "confirmedAt": None,
        "contractErrorCode": None,
    }
    assert claims["release"]["status"] == "confirmed"
    assert [a["status"] for a in claims["approvals"]] == ["confirmed", "confirmed"]
    kinds = [
        r["kind"]
        for r in query(settings, "SELECT kind FROM activity WHERE user_id = %s", (setup.owner.user["id"],))
    ]
    assert kinds.count("transaction.confirmed") == 4 and kinds.count("plan.released") == 1


async def test_submit_refuses_what_the_service_would_not_have_built(onchain, soroban_rpc, clock, settings):
    setup = await approving(onchain, soroban_rpc, guardians=2, threshold=2)
    plan = setup.plan_id
    guardian = setup.guardians[0]
    session = await guardian_session(onchain, guardian)
    submit = f"/api/legacy/guardianships/{plan}/submit"
    resp = await onchain.post(f"/api/legacy/guardianships/{plan}/approve/build", headers=session.headers)
    built = await resp.json()
    owner = setup.owner.keypair.public_key
    me = guardian.keypair

    def envelope(
        *,
        function: str = "approve_guardian",
        args: list[str] | None = None,
        contract: str | None = None,
        source: str | None = None,
        ops: int = 1,
        max_time: int | None = None,
        prepared_from: str | None = None,
    ) -> TransactionEnvelope:
        from stellar_sdk import Account

        base = TransactionEnvelope.from_xdr(prepared_from or built["xdr"], soroban_rpc.passphrase)
        builder = TransactionBuilder(
            Account(source or me.public_key, base.transaction.sequence - 1), soroban_rpc.passphrase
        )
        for _ in range(ops):
            builder.append_invoke_contract_function_op(
                contract or soroban_rpc.contract_id,
                function,
                [scval.to_address(a) for a in (args or [owner, me.public_key])],
            )
        now = int(clock.now().timestamp())
        builder.add_time_bounds(0, max_time if max_time is not None else now + 120)
        tx = builder.build()
        tx.transaction.soroban_data = base.transaction.soroban_data
        return tx

    def signed(tx: TransactionEnvelope, key: Keypair = me, passphrase: str | None = None) -> str:
        if passphrase:
            tx = TransactionEnvelope.from_xdr(tx.to_xdr(), passphrase)
        tx.sign(key)
        return tx.to_xdr()

    stranger = Keypair.random().public_key
    now = int(clock.now().timestamp())
    cases = {
        "not an envelope": "AAAA",
        "another network": signed(envelope(), passphrase=Network.PUBLIC_NETWORK_PASSPHRASE),
        "two operations": signed(envelope(ops=2)),
        "another contract": signed(envelope(contract=random_contract_id())),
        "another function": signed(envelope(function="finalize_release")),
        "another owner": signed(envelope(args=[stranger, me.public_key])),
        "another guardian": signed(envelope(args=[owner, stranger])),
        "another source": signed(envelope(source=stranger), Keypair.random()),
        "unsigned": envelope().to_xdr(),
        "signed by someone else": signed(envelope(), Keypair.random()),
        "past its time bound": signed(envelope(max_time=now - 1)),
        "no time bound": signed(envelope(max_time=0)),
        "a time bound too far away": signed(envelope(max_time=now + 3600)),
        "trailing bytes": base64.b64encode(base64.b64decode(signed(envelope())) + b"\0\0\0\0").decode(),
    }
    for label, xdr in cases.items():
        resp = await onchain.post(submit, json={"signedXdr": xdr}, headers=session.headers)
        body = await resp.json()
        assert resp.status == 400, (label, body)
        assert_error(body, 400)
        assert HASH_RE.search(str(body)) is None, label
    assert query(settings, "SELECT count(*) AS n FROM transactions")[0]["n"] == 0
    assert soroban_rpc.calls_to("sendTransaction") == []
    # The untouched built transaction, signed, is accepted.
    resp = await onchain.post(
        submit,
        json={"signedXdr": sign_xdr(built["xdr"], me, soroban_rpc.passphrase)},
        headers=session.headers,
    )
    assert resp.status == 202


async def test_build_errors_are_honest(onchain, soroban_rpc):
    setup = await approving(onchain, soroban_rpc, guardians=2, threshold=2)
    session = await guardian_session(onchain, setup.guardians[0])
    build = f"/api/legacy/guardianships/{setup.plan_id}/approve/build"
    soroban_rpc.simulation_errors["approve_guardian"] = 3
    resp = await onchain.post(build, headers=session.headers)
    body = await resp.json()
    assert resp.status == 409 and body["contractErrorCode"] == 3 and "not a guardian" in body["message"]
    del soroban_rpc.simulation_errors["approve_guardian"]
    for fault in ("http500", "garbage"):
        soroban_rpc.fail_next(fault)
        resp = await onchain.post(build, headers=session.headers)
        assert resp.status == 503 and int(resp.headers["Retry-After"]) > 0
        assert_error(await resp.json(), 503)
    await soroban_rpc.stop()  # the node is gone altogether
    resp = await onchain.post(build, headers=session.headers)
    assert resp.status == 503 and resp.headers["Retry-After"]


async def test_contract_unset_answers_503_everywhere_with_no_hash(client, settings):
    owner = await sign_in(client)
    setup = await activate_plan(client, owner, guardians=1, threshold=1)
    session = await guardian_session(client, setup.guardians[0])
    token = setup.beneficiaries[0]["claimToken"]
    plan = setup.plan_id
    tx_id = "00000000-0000-4000-8000-000000000000"
    xdr = {"signedXdr": "AAAA"}
    wallet = {"walletAddress": Keypair.random().public_key}
    calls = [
        ("post", f"/api/legacy/guardianships/{plan}/approve/build", None, session.headers),
        ("post", f"/api/legacy/guardianships/{plan}/submit", xdr, session.headers),
        ("get", f"/api/legacy/guardianships/{plan}/transactions/{tx_id}", None, session.headers),
        ("post", f"/api/claim/{token}/release/build", wallet, None),
        ("post", f"/api/claim/{token}/claim/build", wallet, None),
        ("post", f"/api/claim/{token}/submit", xdr, None),
        ("get", f"/api/claim/{token}/transactions/{tx_id}", None, None),
    ]
    for method, path, body, headers in calls:
        resp = await getattr(client, method)(path, json=body, headers=headers)
        text = await resp.text()
        assert resp.status == 503, (path, text)
        assert_error(await resp.json(), 503)
        assert HASH_RE.search(text.replace(token, "")) is None, path
    resp = await client.get("/api/legacy/claims", headers=owner.headers)
    assert resp.status == 200 and HASH_RE.search(await resp.text()) is None
    assert query(settings, "SELECT count(*) AS n FROM transactions")[0]["n"] == 0


async def test_beneficiary_wallet_set_by_owner_must_match(onchain, soroban_rpc, clock, run_worker, settings):
    owner = await sign_in(onchain)
    setup = await activate_plan(onchain, owner, guardians=1, threshold=1)
    heir, other = setup.beneficiaries
    recorded, intruder = Keypair.random(), Keypair.random()
    path = f"/api/beneficiaries/{heir['id']}"
    resp = await onchain.patch(path, json={"walletAddress": recorded.public_key}, headers=owner.headers)
    assert resp.status == 200 and (await resp.json())["walletAddress"] == recorded.public_key
    resp = await onchain.patch(
        f"/api/beneficiaries/{other['id']}",
        json={"walletAddress": recorded.public_key},
        headers=owner.headers,
    )
    assert resp.status == 409  # unique within the plan
    resp = await onchain.patch(path, json={"walletAddress": "G" + "A" * 55}, headers=owner.headers)
    assert resp.status == 400  # checksum-checked

    guardian = setup.guardians[0]
    soroban_rpc.fund(guardian.keypair.public_key)
    assert (await report(onchain, setup, guardian)).status == 200
    session = await guardian_session(onchain, guardian)
    await build_sign_submit(
        onchain,
        f"/api/legacy/guardianships/{setup.plan_id}/approve/build",
        f"/api/legacy/guardianships/{setup.plan_id}/submit",
        guardian.keypair,
        soroban_rpc,
        headers=session.headers,
    )
    await run(run_worker, soroban_rpc)
    overview = await get_overview(onchain, owner)
    assert overview["status"] == "Approved"
    clock.advance(seconds=overview["settings"]["cancelWindowSeconds"] + 1)
    await run(run_worker, soroban_rpc)  # ready to finalise
    release = f"/api/claim/{heir['claimToken']}/release/build"
    for wallet in (intruder, recorded):
        soroban_rpc.fund(wallet.public_key)
    resp = await onchain.post(release, json={"walletAddress": intruder.public_key})
    assert resp.status == 409 and "not the wallet bound to you" in (await resp.json())["message"]
    # The capsule shows the recorded wallet, bound by the owner.
    capsule = await (await onchain.get(f"/api/claim/{heir['claimToken']}")).json()
    assert capsule["wallet"]["address"] == recorded.public_key and capsule["wallet"]["boundVia"] == "owner"
    # Proving another wallet does not replace the one the owner recorded.
    resp = await prove_wallet(onchain, heir["claimToken"], intruder)
    assert resp.status == 409 and "the plan's owner recorded it" in (await resp.json())["message"]
    # The other heir cannot use, nor prove, the wallet recorded for this one.
    resp = await onchain.post(
        f"/api/claim/{other['claimToken']}/release/build", json={"walletAddress": recorded.public_key}
    )
    assert resp.status == 409 and "Prove your wallet first" in (await resp.json())["message"]
    resp = await prove_wallet(onchain, other["claimToken"], recorded)
    assert resp.status == 409 and "another beneficiary" in (await resp.json())["message"]
    resp = await onchain.post(release, json={"walletAddress": recorded.public_key})
    assert resp.status == 200
    resp = await onchain.post(release)  # the bound wallet when none is named
    assert resp.status == 200
    # A signed call from another heir's wallet is refused at submit: 400, nothing stored.
    assert (await prove_wallet(onchain, other["claimToken"], intruder)).status == 200
    built = await onchain.post(
        f"/api/claim/{other['claimToken']}/release/build", json={"walletAddress": intruder.public_key}
    )
    assert built.status == 200
    signed = sign_xdr((await built.json())["xdr"], intruder, soroban_rpc.passphrase)
    resp = await onchain.post(f"/api/claim/{heir['claimToken']}/submit", json={"signedXdr": signed})
    assert resp.status == 400 and "not the wallet bound to you" in (await resp.json())["message"]
    assert not query(settings, "SELECT id FROM transactions WHERE function = 'finalize_release'")
