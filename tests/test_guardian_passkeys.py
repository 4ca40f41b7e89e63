"""A guardian by name and email (docs/security.md, "Guardians with a passkey"): no wallet
needed to be added, `proof` says how each guardian answers, a contract needs a wallet
(readiness names who lacks one), and the owner can invite a guardian again (a lost passkey).
The passkey ceremonies themselves run in Chromium: tests/test_browser_passkeys.py."""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import logging
from typing import Any

from stellar_sdk import Keypair

from api.app import create_app
from tests.helpers import sign_in
from tests.lifecycle_helpers import get_overview
from tests.plan_helpers import activity_rows, create, query
from tests.soroban_helpers import contract_overrides
from tests.support.guardian_page import PAGE_RE


async def _named_owner(client: Any) -> Any:
    owner = await sign_in(client)
    resp = await client.patch(
        "/api/users/me", json={"email": "owner@example.org", "name": "Olive Owner"}, headers=owner.headers
    )
    assert resp.status == 200
    return owner


async def test_a_guardian_needs_only_a_name_and_an_email_and_proof_says_how_they_answer(
    client, run_worker, email_provider
):
    owner = await _named_owner(client)
    resp = await client.post(
        "/api/guardians", json={"name": "Sister", "email": "sister@example.org"}, headers=owner.headers
    )
    assert resp.status == 201, await resp.text()
    sister = await resp.json()
    assert sister["walletAddress"] is None and sister["proof"] is None
    wallet = await create(client, owner, "guardians", name="Lawyer", email="lawyer@example.org")
    assert wallet["proof"] == "wallet"
    listed = {
        g["name"]: g["proof"]
        for g in await (await client.get("/api/guardians", headers=owner.headers)).json()
    }
    assert listed == {"Sister": None, "Lawyer": "wallet"}
    # Two guardians without a wallet are two guardians (no uniqueness on a missing wallet).
    resp = await client.post(
        "/api/guardians", json={"name": "Friend", "email": "friend@example.org"}, headers=owner.headers
    )
    assert resp.status == 201
    # A wallet recorded later makes them a wallet guardian; removing it makes them answer with a passkey.
    key = Keypair.random().public_key
    resp = await client.patch(
        f"/api/guardians/{sister['id']}", json={"walletAddress": key}, headers=owner.headers
    )
    assert resp.status == 200 and (await resp.json())["proof"] == "wallet"
    resp = await client.patch(
        f"/api/guardians/{sister['id']}", json={"walletAddress": None}, headers=owner.headers
    )
    assert resp.status == 200 and (await resp.json())["proof"] is None
    # The invitation says how they will answer, in words.
    await run_worker(settings=email_provider.settings)
    text = email_provider.to("sister@example.org")[-1].body["text"]
    assert "creating a passkey" in text and "Stellar wallet G" not in text
    assert "with the Stellar wallet G" in email_provider.to("lawyer@example.org")[-1].body["text"]


async def test_with_a_contract_readiness_names_the_guardians_without_a_wallet(make_client, soroban_rpc):
    client = await make_client(**contract_overrides(soroban_rpc))
    owner = await _named_owner(client)
    await create(client, owner, "beneficiaries", allocationPercentage=100)
    resp = await client.post(
        "/api/guardians", json={"name": "Sister", "email": "sister@example.org"}, headers=owner.headers
    )
    assert resp.status == 201
    problems = (await get_overview(client, owner))["readiness"]["problems"]
    assert any("a passkey cannot sign them" in p and "Sister" in p for p in problems), problems
    resp = await client.post("/api/legacy/activate", headers=owner.headers)
    assert resp.status == 409
    assert any("Sister" in p for p in (await resp.json())["details"]["readiness"]["problems"])


async def test_without_a_contract_a_guardian_without_a_wallet_is_no_problem(client):
    owner = await _named_owner(client)
    resp = await client.post(
        "/api/guardians", json={"name": "Sister", "email": "sister@example.org"}, headers=owner.headers
    )
    assert resp.status == 201
    problems = (await get_overview(client, owner))["readiness"]["problems"]
    assert not any("passkey" in p for p in problems), problems


async def test_reinvite_replaces_the_link_emails_it_and_tells_the_owner(
    client, run_worker, email_provider, settings
):
    owner = await _named_owner(client)
    resp = await client.post(
        "/api/guardians", json={"name": "Sister", "email": "sister@example.org"}, headers=owner.headers
    )
    sister = await resp.json()
    await run_worker(settings=email_provider.settings)
    old = PAGE_RE.findall(email_provider.to("sister@example.org")[-1].body["text"])[-1][0]
    assert (await client.get(old)).status == 200
    resp = await client.post(f"/api/guardians/{sister['id']}/reinvite", headers=owner.headers)
    assert resp.status == 200, await resp.text()
    assert (await resp.json())["acceptedAt"] is None
    await run_worker(settings=email_provider.settings)
    new = PAGE_RE.findall(email_provider.to("sister@example.org")[-1].body["text"])[-1][0]
    assert new != old
    assert (await client.get(old)).status == 404 and (await client.get(new)).status == 200
    kinds = [row["kind"] for row in activity_rows(settings, owner.user["id"])]
    assert "guardian.reinvited" in kinds
    assert query(settings, "SELECT count(*) AS n FROM guardian_passkeys")[0]["n"] == 0
    # Another owner's guardian, or none: 404.
    other = await sign_in(client)
    assert (await client.post(f"/api/guardians/{sister['id']}/reinvite", headers=other.headers)).status == 404


async def test_an_ip_address_as_public_base_url_is_said_at_start_up(settings, caplog):
    with caplog.at_level(logging.WARNING):
        create_app(dataclasses.replace(settings, public_base_url="http://192.0.2.10:8080"))
    assert any("cannot be a passkey's relying party" in r.getMessage() for r in caplog.records)
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        create_app(settings)
    assert not any("relying party" in r.getMessage() for r in caplog.records)


async def test_only_the_passkey_page_may_run_a_script_and_only_this_origins(
    client, run_worker, email_provider
):
    owner = await _named_owner(client)
    resp = await client.post(
        "/api/guardians", json={"name": "Sister", "email": "sister@example.org"}, headers=owner.headers
    )
    assert resp.status == 201
    await run_worker(settings=email_provider.settings)
    path = PAGE_RE.findall(email_provider.to("sister@example.org")[-1].body["text"])[-1][0]
    page = await client.get(path)
    assert "script-src" not in page.headers["Content-Security-Policy"] and "<script" not in await page.text()
    ceremony = await client.post(f"{path}/ask", data={"action": "accept"})
    assert ceremony.status == 200
    csp = ceremony.headers["Content-Security-Policy"]
    # Exactly the one script, by its URL: not 'self' (any script this origin serves would run).
    assert "script-src https://legacy.example.test/guardian-passkey.js;" in csp
    assert "'self'" not in csp.split("script-src")[1].split(";")[0]
    assert "default-src 'none'" in csp and "unsafe" not in csp
    body = await ceremony.text()
    script = await client.get("/guardian-passkey.js")
    integrity = "sha384-" + base64.b64encode(hashlib.sha384(await script.read()).digest()).decode()
    tag = f'<script src="/guardian-passkey.js" integrity="{integrity}"></script>'
    assert body.count("<script") == 1 and tag in body
    assert 'data-ceremony="create"' in body and "challenge" in body
    assert script.status == 200 and script.content_type == "text/javascript"
    assert "navigator.credentials" in await script.text() and "fetch(" not in await script.text()
