"""A body's charset: JSON (RFC 8259) and the pages' forms are read as UTF-8, so a Content-Type
naming any other charset (unknown to Python, like `foo`, or not a text encoding of the body,
like `idna`) is a 400 in the standard body, or the 400 page under a page path, on every route
and form, before anything reads the body; no traceback is logged."""

from __future__ import annotations

import logging

import pytest

from tests.helpers import assert_error, sign_in
from tests.lifecycle_helpers import activate_plan
from tests.support.guardian_page import page_link

WALLET = "GAAZI4TCR3TY5OJHCTJC2A4QSY6CJWJH5IAJTGKIN2ER7LBNVKOCCWN7"
BAD = ["foo", "idna", "utf-16", "latin-1", "rot13", "base64", "utf-8-sig"]


@pytest.mark.parametrize("charset", BAD)
async def test_json_routes_refuse_a_charset_other_than_utf8(client, caplog, charset):
    session = await sign_in(client)
    bodies = [
        ("POST", "/api/auth/wallet/challenge", None, b'{"walletAddress": "' + WALLET.encode() + b'"}'),
        ("PATCH", "/api/users/me", session, b'{"name": "Ada"}'),
        ("POST", "/api/guardians", session, b'{"name": "Cy", "email": "cy@example.com"}'),
        ("POST", "/api/messages", session, b'{"title": "t", "content": "c", "audience": {"all": true}}'),
        ("POST", "/api/claim/resend", None, b'{"email": "a@example.org"}'),
    ]
    caplog.set_level(logging.INFO)
    for method, path, who, raw in bodies:
        headers = {"Content-Type": f"application/json; charset={charset}"}
        if who is not None:
            headers.update(who.headers)
        resp = await client.request(method, path, data=raw, headers=headers)
        assert resp.status == 400, (path, charset, await resp.text())
        body = await resp.json()
        assert_error(body, 400)
        assert "UTF-8" in body["message"]
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR or r.exc_info]


@pytest.mark.parametrize("charset", ["utf-8", "UTF-8", "utf8", '"utf-8"', "us-ascii"])
async def test_utf8_and_ascii_are_read(client, charset):
    resp = await client.post(
        "/api/auth/wallet/challenge",
        data=b'{"walletAddress": "' + WALLET.encode() + b'"}',
        headers={"Content-Type": f"application/json; charset={charset}"},
    )
    assert resp.status == 200, await resp.text()


@pytest.mark.parametrize("charset", ["foo", "idna", "utf-16"])
async def test_every_page_form_refuses_a_charset_other_than_utf8(
    client, caplog, run_worker, email_provider, charset
):
    owner = await sign_in(client)
    setup = await activate_plan(client, owner)
    await run_worker(settings=email_provider.settings)
    guardian = page_link(email_provider, "guardian0@example.org")
    heir = f"/claim/{setup.beneficiaries[0]['claimToken']}"
    forms = [
        ("/claim", "email=heir0%40example.org"),
        (f"{guardian}/ask", "action=report"),
        (f"{guardian}/sep7/00000000-0000-0000-0000-000000000000?via=page", "xdr=AAAA"),
        (f"{heir}/wallet", f"walletAddress={WALLET}"),
        (f"{heir}/sep7/00000000-0000-0000-0000-000000000000?via=page", "xdr=AAAA"),
        # The one-button forms read no field; the charset is refused before the token is looked
        # up (these tokens open nothing: a 404 page without the rule).
        (f"/check-in/{'0' * 64}", "go=1"),
        (f"/confirm-email/{'0' * 64}", "go=1"),
        (f"/stop-emails/{'0' * 64}", "List-Unsubscribe=One-Click"),
        (f"{guardian}/passkey/00000000-0000-0000-0000-000000000000", "credential=%7B%7D"),
    ]
    caplog.set_level(logging.INFO)
    for path, raw in forms:
        resp = await client.post(
            path,
            data=raw.encode(),
            headers={"Content-Type": f"application/x-www-form-urlencoded; charset={charset}"},
        )
        text = await resp.text()
        assert resp.status == 400, (path, charset, text)
        assert resp.content_type == "text/html" and "That could not be used" in text, text
        assert "UTF-8" in text
    # A wallet posting to a callback (no ?via=page) gets the JSON body.
    resp = await client.post(
        f"{guardian}/sep7/00000000-0000-0000-0000-000000000000",
        data=b"xdr=AAAA",
        headers={"Content-Type": f"application/x-www-form-urlencoded; charset={charset}"},
    )
    assert resp.status == 400
    assert_error(await resp.json(), 400)
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR or r.exc_info]
