"""Text the owner types is cleaned when stored (bidi controls everywhere, other control
characters in one-line fields), names are isolated in <bdi> where others read them, and an
email subject carries at most the owner's name, cut."""

from __future__ import annotations

import re

from stellar_sdk import Keypair

from core.stellar import sep7
from core.text.cleaning import clean_block, clean_line
from models.mail.emails import SUBJECT_NAME_LIMIT
from tests.helpers import assert_error, sign_in
from tests.plan_helpers import create

RLO, PDF, LRI, PDI = "\u202e", "\u202c", "\u2066", "\u2069"
PROBE = "URGENT: your bank account is frozen, call 0800 555 0100 or visit bank-verify.example"


async def test_bidi_and_control_characters_are_removed_where_text_is_stored(client):
    owner = await sign_in(client)
    resp = await client.patch(
        "/api/users/me", json={"name": f"Oli{RLO}ve\x07 Own{PDF}er\u2028"}, headers=owner.headers
    )
    assert resp.status == 200
    assert (await resp.json())["name"] == "Olive Owner"

    guardian = await create(
        client, owner, "guardians", name=f"{LRI}Grace{PDI}\t\x1b[31m", relationship=f"fr{RLO}iend"
    )
    assert guardian["name"] == "Grace[31m" and guardian["relationship"] == "friend"
    asset = await create(client, owner, "assets", description=f"First line\n\tindented{RLO}\x0b.")
    assert asset["description"] == "First line\n\tindented."  # line breaks and tabs kept
    message = await create(client, owner, "messages", content=f"Dear Ada,\n\n\t{RLO}see you{PDF}\r\n")
    assert message["content"] == "Dear Ada,\n\n\tsee you\r\n"  # a letter keeps its layout

    # Nothing left once cleaned is empty: refused, as an empty name is.
    resp = await client.post(
        "/api/guardians",
        json={"name": RLO + PDI, "email": "g@example.org", "walletAddress": Keypair.random().public_key},
        headers=owner.headers,
    )
    assert_error(await resp.json(), 400)
    # An address with a control in it is no address.
    resp = await client.patch(
        "/api/users/me", json={"email": f"owner{RLO}@example.org"}, headers=owner.headers
    )
    assert_error(await resp.json(), 400)


async def test_a_subject_carries_the_owners_name_cut_and_names_are_isolated(
    client, run_worker, email_provider
):
    owner = await sign_in(client)
    resp = await client.patch(
        "/api/users/me", json={"name": PROBE, "email": "owner@example.org"}, headers=owner.headers
    )
    assert resp.status == 200
    await create(client, owner, "guardians", name=f"Grace{RLO}", email="grace@example.org")
    await run_worker(settings=email_provider.settings)
    [mail] = email_provider.to("grace@example.org")
    subject = mail.body["subject"]
    assert PROBE not in subject and "bank-verify" not in subject
    name_shown = subject.removesuffix(" asks you to be a guardian of their legacy plan")
    assert name_shown != subject and len(name_shown) <= SUBJECT_NAME_LIMIT and name_shown.endswith("…")
    assert PROBE in mail.body["text"]  # the body names them in full, once opened
    assert "\ue000" not in mail.body["text"] and RLO not in mail.body["text"]
    assert "Dear Grace," in mail.body["text"]
    assert f"<bdi>{PROBE}</bdi> has named you" in mail.body["html"]
    assert "<p>Dear <bdi>Grace</bdi>,</p>" in mail.body["html"]

    # The guardian's page names the owner inside <bdi> too.
    page_url = re.search(r"https?://\S+/guardian/[0-9a-zA-Z_-]+", mail.body["text"])
    assert page_url is not None
    page = await client.get("/guardian/" + page_url.group(0).rsplit("/", 1)[1])
    assert page.status == 200
    assert f"<bdi>{PROBE}</bdi>" in await page.text()


def test_a_wallets_signing_request_shows_no_bidi_control():
    msg = sep7.message("Accept being a guardian for {owner}'s plan", owner=f"Eve{RLO}lyn{LRI}")
    assert msg == "Accept being a guardian for Evelyn's plan"
    assert sep7.message("For {owner}", owner=RLO) == "For the owner"


TAG_A, ZWSP, ZWNJ, ZWJ, LRM = "\U000e0041", "\u200b", "\u200c", "\u200d", "\u200e"
PERSIAN = f"می{ZWNJ}خواهم"  # "I want": the non-joiner is how it is spelled
DEVANAGARI = f"क्{ZWJ}ष"  # a half form, asked for by the joiner
FAMILY = f"👨{ZWJ}👩{ZWJ}👧"
SCOTLAND = "\U0001f3f4" + "".join(chr(0xE0000 + ord(c)) for c in "gbsct") + "\U000e007f"


async def test_names_keep_visible_characters_only(client):
    """A tag character or a zero-width space makes two names that look the same differ, and
    tag characters carry words nobody sees: removed where names are stored. The joiners that
    spell Persian, Indic scripts and emoji stay."""
    owner = await sign_in(client)
    resp = await client.patch("/api/users/me", json={"name": f"A{TAG_A}B"}, headers=owner.headers)
    assert resp.status == 200 and (await resp.json())["name"] == "AB"
    resp = await client.patch(
        "/api/users/me",
        json={"name": f"{ZWSP}Ol\u00adive{ZWJ} {LRM}Ow{ZWNJ}ner\u2060\ufeff\u3164"},
        headers=owner.headers,
    )
    assert (await resp.json())["name"] == "Olive Owner"
    heir = await create(client, owner, "beneficiaries", name=f"{PERSIAN} {DEVANAGARI} {FAMILY} {SCOTLAND}")
    assert heir["name"] == f"{PERSIAN} {DEVANAGARI} {FAMILY} {SCOTLAND}"
    # A tag sequence that spells words, even after a flag, goes.
    hidden = "\U0001f3f4" + "".join(chr(0xE0000 + ord(c)) for c in "call 0800") + "\U000e007f"
    guardian = await create(client, owner, "guardians", name=f"Grace {hidden}")
    assert guardian["name"] == "Grace \U0001f3f4"
    # A letter keeps its bidi marks but loses the invisible rest.
    message = await create(client, owner, "messages", content=f"(x){LRM}!{ZWSP}\n{TAG_A}")
    assert message["content"] == f"(x){LRM}!\n"
    # Nothing visible is no name.
    resp = await client.post(
        "/api/guardians",
        json={
            "name": ZWSP + TAG_A + ZWJ,
            "email": "g@example.org",
            "walletAddress": Keypair.random().public_key,
        },
        headers=owner.headers,
    )
    assert_error(await resp.json(), 400)


def test_joiners_stay_only_where_they_join() -> None:
    assert clean_line(f"A{ZWJ}B") == "AB" and clean_line(f"A{ZWNJ}B") == "AB"
    assert clean_line(f"👨{ZWJ}") == "👨" and clean_line(f"{ZWNJ}می") == "می"
    assert clean_line(f"❤\ufe0f{ZWJ}🔥") == f"❤\ufe0f{ZWJ}🔥"  # after the emoji selector
    assert clean_line(f"👩🏽{ZWJ}💻") == f"👩🏽{ZWJ}💻"  # after a skin tone
    assert clean_line(f"A{ZWJ}👩") == "A👩"
    assert clean_block(f"{PERSIAN}\n{ZWSP}") == f"{PERSIAN}\n"
