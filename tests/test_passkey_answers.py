"""A passkey guardian's answers through the real app, with a passkey device in Python
(tests/soft_passkey.py): who may answer in a verification round, the signature counter, a
report's note bound to its challenge, an approval bound to the attestation it was asked over,
and nothing kept for a refused accept. docs/security.md, "Guardians with a passkey"."""

from __future__ import annotations

import logging
from typing import Any

import cbor2

from tests.lifecycle_helpers import answer, get_overview, report
from tests.plan_helpers import query
from tests.soft_passkey import SoftPasskey, ceremony_of
from tests.support.guardian_page import (
    ORIGIN,
    accept_with_passkey,
    page_link,
    plan_with_passkey_guardian,
    post_answer,
    post_ask,
)


def _passkeys(settings: Any) -> int:
    return int(query(settings, "SELECT count(*) AS n FROM guardian_passkeys")[0]["n"])


async def test_a_guardian_who_had_not_accepted_when_the_round_began_cannot_take_it_on_in_it(
    client, run_worker, email_provider, settings
):
    setup, sister = await plan_with_passkey_guardian(client, run_worker, email_provider)
    waiting = setup.guardians[2]
    assert (await report(client, setup, setup.guardians[0])).status == 200
    assert (await get_overview(client, setup.owner))["status"] == "PendingVerification"
    # The passkey guardian: no accept on the page, one sentence why, and no first passkey from the link.
    text = await (await client.get(sister)).text()
    assert 'value="accept"' not in text and 'value="decline"' not in text
    assert "You had not accepted when this verification began, so you can accept once it ends" in text
    status, body = await post_ask(client, sister, action="accept")
    assert status == 409 and "not asked of you now" in body
    assert _passkeys(settings) == 0
    # The wallet guardian who had not accepted: the same rule, on the page and on the JSON route.
    await run_worker(settings=email_provider.settings)
    text = await (await client.get(page_link(email_provider, "guardian2@example.org"))).text()
    assert 'value="accept"' not in text and "you can accept once it ends" in text
    resp = await answer(client, waiting, owner_plan_id=setup.plan_id)
    assert resp.status == 409 and "you had not accepted when it began" in (await resp.json())["message"]
    rows = query(settings, "SELECT count(*) AS n FROM guardians WHERE accepted_at IS NOT NULL")
    assert rows[0]["n"] == 2
    # Once the round ends (the owner checks in), accepting works again.
    resp = await client.post("/api/legacy/check-in", headers=setup.owner.headers)
    assert resp.status == 200, await resp.text()
    assert (await answer(client, waiting, owner_plan_id=setup.plan_id)).status == 200
    await accept_with_passkey(client, sister)
    assert _passkeys(settings) == 1


async def _answer_with(
    client: Any, path: str, device: SoftPasskey, counter: int | None = None, **fields: str
):
    """Ask one answer on the page, then answer its passkey page with `device`."""
    status, page = await post_ask(client, path, **fields)
    assert status == 200, page
    action, options = ceremony_of(page)
    return await post_answer(client, action, credential=device.get(options, counter=counter))


async def test_a_counter_that_drops_to_zero_is_refused_as_a_copied_passkey(
    client, run_worker, email_provider, settings, caplog
):
    _, sister = await plan_with_passkey_guardian(client, run_worker, email_provider)
    device = await accept_with_passkey(client, sister)
    # Proving with the passkey (to add another device) stores its counter: 5.
    status, _ = await _answer_with(client, sister, device, counter=5, action="add_passkey")
    assert status == 200
    assert query(settings, "SELECT sign_count FROM guardian_passkeys")[0]["sign_count"] == 5
    with caplog.at_level(logging.WARNING):
        status, text = await _answer_with(client, sister, device, counter=0, action="report")
    assert status == 401 and "counter went backwards" in text
    assert any("possible cloned authenticator" in r.getMessage() for r in caplog.records)
    assert query(settings, "SELECT sign_count FROM guardian_passkeys")[0]["sign_count"] == 5
    assert query(settings, "SELECT count(*) AS n FROM plan_reports")[0]["n"] == 0
    assert (await _answer_with(client, sister, device, counter=6, action="report")) == (303, "")
    assert query(settings, "SELECT count(*) AS n FROM plan_reports")[0]["n"] == 1


async def test_an_approval_proves_the_attestation_it_was_asked_over_whatever_is_asked_since(
    client, run_worker, email_provider, settings
):
    setup, sister = await plan_with_passkey_guardian(client, run_worker, email_provider)
    device = await accept_with_passkey(client, sister)
    assert (await report(client, setup, setup.guardians[0])).status == 200
    status, page = await post_ask(client, sister, action="approve")
    assert status == 200
    action, options = ceremony_of(page)
    # Someone holding only the link asks again (and again): the guardian's own answer still counts.
    for _ in range(2):
        assert (await post_ask(client, sister, action="approve"))[0] == 200
    assert await post_answer(client, action, credential=device.get(options)) == (303, "")
    [approval] = query(settings, "SELECT source, message FROM plan_approvals")
    assert approval["source"] == "passkey" and "answering with my passkey" in approval["message"]
    # Used once: the same answer again records nothing.
    status, text = await post_answer(client, action, credential=device.get(options))
    assert status == 409 and "already used" in text
    assert query(settings, "SELECT count(*) AS n FROM plan_approvals")[0]["n"] == 1


async def test_a_refused_acceptance_keeps_no_passkey(client, run_worker, email_provider, settings):
    setup, sister = await plan_with_passkey_guardian(client, run_worker, email_provider)
    # The passkey page for accepting is open while a verification begins.
    status, page = await post_ask(client, sister, action="accept")
    assert status == 200
    action, options = ceremony_of(page)
    assert (await report(client, setup, setup.guardians[0])).status == 200
    status, text = await post_answer(client, action, credential=SoftPasskey(ORIGIN).create(options))
    assert status == 409 and "you can accept once the verification ends" in text
    assert _passkeys(settings) == 0
    assert query(settings, "SELECT count(*) AS n FROM guardians WHERE accepted_at IS NOT NULL")[0]["n"] == 2


async def test_a_reports_note_is_bound_to_its_passkey_answer(client, run_worker, email_provider, settings):
    _, sister = await plan_with_passkey_guardian(client, run_worker, email_provider)
    device = await accept_with_passkey(client, sister)
    note = "She is in hospital.\nWard 4."
    status, page = await post_ask(client, sister, action="report", reason="incapacity", note=note)
    assert status == 200
    assert 'name="note" value="She is in hospital.\nWard 4."' in page and "<textarea" not in page
    action, options = ceremony_of(page)
    credential = device.get(options)
    # Another note posted with the same answer (or none at all): refused, nothing recorded.
    for other in ("Nothing happened, ignore this.", ""):
        status, text = await post_answer(client, action, credential=credential, note=other)
        assert status == 401 and "not the one this passkey request was made with" in text
    assert query(settings, "SELECT count(*) AS n FROM plan_reports")[0]["n"] == 0
    # The note as shown (a form sends its line breaks as CRLF) goes through.
    assert await post_answer(client, action, credential=credential, note=note.replace("\n", "\r\n")) == (
        303,
        "",
    )
    text = await (await client.get(sister)).text()
    assert "She is in hospital." in text and "Nothing happened" not in text


async def test_a_credential_nested_deep_is_a_400_in_words_with_nothing_recorded_or_logged(
    client, run_worker, email_provider, settings, caplog
):
    _, sister = await plan_with_passkey_guardian(client, run_worker, email_provider)
    deep = '{"rawId":"AA","x":' + "[" * 100_000 + "]" * 100_000 + "}"
    status, page = await post_ask(client, sister, action="accept")
    action, _options = ceremony_of(page)
    with caplog.at_level(logging.WARNING):
        status, text = await post_answer(client, action, credential=deep)
    assert status == 400 and "Your browser did not send a passkey, so nothing was recorded" in text
    assert not any(r.exc_info or "Traceback" in r.getMessage() for r in caplog.records)
    assert _passkeys(settings) == 0
    # To get: the same 400, the guardian's counter untouched and nothing answered.
    device = await accept_with_passkey(client, sister)
    status, page = await post_ask(client, sister, action="report")
    action, _options = ceremony_of(page)
    status, text = await post_answer(client, action, credential=deep)
    assert status == 400 and "Your browser did not send a passkey" in text
    assert query(settings, "SELECT count(*) AS n FROM plan_reports")[0]["n"] == 0
    assert await post_answer(client, action, credential=device.get(_options)) == (303, "")


async def test_a_key_that_could_never_verify_leaves_the_guardian_unaccepted_and_says_why(
    client, run_worker, email_provider, settings
):
    _, sister = await plan_with_passkey_guardian(client, run_worker, email_provider)
    probe = cbor2.dumps({1: 3, 3: -257, -1: b"\x01", -2: b"\x03"})  # RSA with n = 1
    status, page = await post_ask(client, sister, action="accept")
    action, options = ceremony_of(page)
    status, text = await post_answer(
        client, action, credential=SoftPasskey(ORIGIN, cose=probe).create(options)
    )
    assert status == 400 and "uses a kind of key this service cannot check" in text
    assert _passkeys(settings) == 0
    rows = query(settings, "SELECT count(*) AS n FROM guardians WHERE accepted_at IS NOT NULL")
    assert rows[0]["n"] == 2  # the two wallet guardians; the sister is still asked to accept
    assert 'value="accept"' in await (await client.get(sister)).text()


async def test_an_answer_from_another_sites_frame_is_refused(client, run_worker, email_provider, settings):
    _, sister = await plan_with_passkey_guardian(client, run_worker, email_provider)
    framed = {"crossOrigin": True, "topOrigin": "http://evil.example"}
    status, page = await post_ask(client, sister, action="accept")
    action, options = ceremony_of(page)
    device = SoftPasskey(ORIGIN, client_extra=framed)
    status, text = await post_answer(client, action, credential=device.create(options))
    assert status == 401 and "could not be checked" in text and _passkeys(settings) == 0
