"""Every email says who sends it (docs/pages.md, "Who sends an email"): the service at the host
of PUBLIC_BASE_URL, run by OPERATOR_NAME, on behalf of the plan's owner (to everyone but the
owner), how to tell it is genuine (the hosts its links lead to, what we never ask for) and whom
to write to (OPERATOR_CONTACT); unset, only what is known, and nothing false. The heir's
claim-link email says what its link opens, that it is theirs alone and does not expire, and
what to do with it if it was not expected; the owner's subjects name the guardian."""

from __future__ import annotations

import html
import re
from typing import Any

import pytest

from core.mailer import Email
from core.settings import ConfigError, load_settings
from models.mail import emails
from tests.helpers import sign_in
from tests.lifecycle_helpers import activate_plan, approve_plan, get_overview
from tests.support.email_dump import BASE_URL, NAMES, RING, row

OPERATOR = {"operator_name": "Vance Family Office", "operator_contact": "help@vance.example"}
PAGE = "https://vance.example/contact"
# One reader of each audience, named (the owner's name is known: "on behalf of" names them).
READERS = {"owner": "owner", "guardian": "wallet_guardian", "beneficiary": "heir"}
OWNER = "Eleanor Vance"
SENT_BY = "This email comes from the legacy planning service at legacy.example"
GENUINE = (
    "How to tell this email is genuine: every link in it leads to {hosts}. We never ask for a secret "
    "key, a recovery phrase or a password, and never ask you to send money to anyone."
)


def _render(kind: str, audience: str, *, app_url: str = "", **site: str) -> Email:
    d = row(kind, READERS[audience], {**NAMES[0], "owner_name": OWNER}, {}, "en")
    return emails.render(d=d, ring=RING, base_url=BASE_URL, app_url=app_url, **site)


def _shown(email: Email) -> list[str]:
    """The HTML part's paragraphs as a person reads them."""
    paragraphs = re.findall(r"<p>(.*?)</p>", email.html, flags=re.S)
    return [html.unescape(re.sub(r"<[^>]+>", "", p)) for p in paragraphs]


def _every_kind_to_every_reader() -> list[tuple[str, str]]:
    return [(kind, audience) for kind in sorted(emails.KINDS) for audience in emails.KINDS[kind].audience]


@pytest.mark.parametrize(("kind", "audience"), _every_kind_to_every_reader())
def test_every_email_says_who_sends_it_in_both_parts(kind: str, audience: str) -> None:
    email = _render(kind, audience, **OPERATOR)
    behalf = "" if audience == "owner" else f", on behalf of {OWNER}"
    about = [
        f"{SENT_BY}, run by Vance Family Office{behalf}.",
        GENUINE.format(hosts="legacy.example"),
        "If you have a question, or something here looks wrong, write to help@vance.example.",
    ]
    # The text part ends with them, one paragraph each, after the sign-off's two lines.
    assert email.text.endswith("With care,\nThe legacy planning service\n\n" + "\n\n".join(about) + "\n"), (
        kind
    )
    # The HTML part says the same, one paragraph each, the sign-off on its two lines.
    assert _shown(email)[-3:] == about, kind
    assert "<p>With care,<br>\nThe legacy planning service</p>" in email.html
    assert '<a href="mailto:help@vance.example">help@vance.example</a>' in email.html
    assert "<bdi>Vance Family Office</bdi>" in email.html


@pytest.mark.parametrize(("kind", "audience"), _every_kind_to_every_reader())
def test_unset_the_emails_name_no_operator_and_no_contact(kind: str, audience: str) -> None:
    email = _render(kind, audience)
    for part in (email.text, email.html):
        assert ", run by" not in part and "If you have a question" not in part, kind
        assert "Vance Family Office" not in part
    behalf = "" if audience == "owner" else f", on behalf of {OWNER}"
    assert f"\n\n{SENT_BY}{behalf}.\n\n" in email.text, kind
    assert email.text.endswith(GENUINE.format(hosts="legacy.example") + "\n"), kind
    assert _shown(email)[-2:] == [f"{SENT_BY}{behalf}.", GENUINE.format(hosts="legacy.example")]


def test_an_owner_without_a_name_is_not_named_as_whom_we_write_for() -> None:
    d = row("claim_link", "heir", NAMES[1], {}, "en")
    email = emails.render(d=d, ring=RING, base_url=BASE_URL, app_url="", **OPERATOR)
    assert f"{SENT_BY}, run by Vance Family Office.\n" in email.text
    assert "on behalf of" not in email.text


def test_every_host_its_links_lead_to_is_named_and_a_contact_page_is_a_link() -> None:
    """The owner's sign-in link leads to the web client's host and the contact page to the
    operator's: the email names each, in the reader's language's way of listing them."""
    email = _render(
        "owner_email_changed",
        "owner",
        app_url="https://app.example",
        operator_name="Vance Family Office",
        operator_contact=PAGE,
    )
    assert GENUINE.format(hosts="legacy.example, app.example, or vance.example") in email.text
    assert f"you can reach us here: {PAGE}\n" in email.text
    assert f'<a href="{PAGE}">{PAGE}</a>' in email.html
    d = row("owner_email_changed", "owner", NAMES[0], {}, "es")
    spanish = emails.render(d=d, ring=RING, base_url=BASE_URL, app_url="https://app.example")
    assert "todos sus enlaces llevan a legacy.example o app.example." in spanish.text


def test_an_arabic_reader_reads_the_sender_in_arabic_with_each_host_isolated() -> None:
    d = row("claim_link", "heir", {**NAMES[0], "owner_name": OWNER}, {}, "ar")
    email = emails.render(d=d, ring=RING, base_url=BASE_URL, app_url="", **OPERATOR)
    assert (
        "هذه الرسالة من خدمة تخطيط الإرث على legacy.example، بإدارة Vance Family Office، نيابةً عن"
        in email.text
    )
    assert "<bdi>legacy.example</bdi>" in email.html
    assert 'lang="ar" dir="rtl"' in email.html


@pytest.mark.parametrize("stage", [None, "ready"])
def test_the_claim_link_says_what_it_opens_whose_it_is_and_what_to_do_if_unexpected(
    stage: str | None,
) -> None:
    context = {"stage": stage} if stage else {}
    d = row("claim_link", "heir", {**NAMES[0], "owner_name": OWNER}, context, "en")
    email = emails.render(d=d, ring=RING, base_url=BASE_URL, app_url="", **OPERATOR)
    for sentence in (
        f"This link opens your part of {OWNER}'s plan: what was left to you, and the letters and files "
        "meant for you. Opening it needs no account and no password.",
        "The link is yours alone: anyone who has it can open what it leads to, so please do not forward it "
        "or share it. It does not expire: keep this email, and come back to it whenever you need.",
        f"Did you not expect this email? {OWNER} may not have told you that they named you; many people do "
        f"not. If you do not know {OWNER}, this email was not meant for you: please do not open the link, "
        "and tell us at help@vance.example so that it can reach the right person.",
    ):
        assert f"\n\n{sentence}\n\n" in email.text
        assert sentence in _shown(email)
    # Without a contact, nobody to tell: the stranger is asked to leave it.
    unset = emails.render(d=d, ring=RING, base_url=BASE_URL, app_url="")
    assert "please do not open the link, and delete this email." in unset.text
    assert "tell us" not in unset.text


def test_the_link_sent_again_says_so_and_never_that_it_works_only_for_them() -> None:
    d = row("claim_link", "heir", {**NAMES[0], "owner_name": OWNER}, {"stage": "resend"}, "en")
    email = emails.render(d=d, ring=RING, base_url=BASE_URL, app_url="")
    assert "someone else typed your address on our page" in email.text
    assert "anyone who has it can open what it leads to" in email.text
    assert "works only for you" not in email.text


# The owner's emails about one guardian, whose subject used to say "A guardian".
ABOUT_A_GUARDIAN = {
    "guardian_objected": ("Gus says the verification of your plan is a mistake",),
    "objection_withdrawn": ("Gus has withdrawn their objection",),
    "objection_lapsed": ("The objection from Gus has lapsed",),
    "objection_check_in_reminder": ("Please check in: the objection from Gus lapses on",),
}


@pytest.mark.parametrize("kind", sorted(ABOUT_A_GUARDIAN))
def test_the_owners_subject_names_the_guardian_or_says_one_of_yours(kind: str) -> None:
    (named,) = ABOUT_A_GUARDIAN[kind]
    assert _render(kind, "owner").subject.startswith(named)
    d = row(kind, "owner", NAMES[1], {}, "en")
    unnamed = emails.render(d=d, ring=RING, base_url=BASE_URL, app_url="").subject
    assert "one of your guardians" in unnamed.lower() and "Gus" not in unnamed


def test_no_owner_subject_says_a_guardian_or_a_beneficiary() -> None:
    for kind, declared in emails.KINDS.items():
        if "owner" in declared.audience:
            for names in NAMES:
                d = row(kind, "owner", names, {}, "en")
                subject = emails.render(d=d, ring=RING, base_url=BASE_URL, app_url="").subject
                assert not re.search(r"\bA (guardian|beneficiary)\b", subject), (kind, subject)


@pytest.mark.parametrize(
    ("name", "contact"),
    [
        ("Vance Family Office", "help@vance.example"),
        ("", "https://vance.example/contact?from=email"),
        ("Oficina Familiar Vance & Cía.", ""),
    ],
)
def test_the_operator_settings_take_a_name_and_an_address_or_a_page(name: str, contact: str) -> None:
    settings = load_settings({"OPERATOR_NAME": name, "OPERATOR_CONTACT": contact, "APP_ENV": "test"})
    assert (settings.operator_name, settings.operator_contact) == (name, contact)


@pytest.mark.parametrize(
    ("variable", "value", "said"),
    [
        ("OPERATOR_CONTACT", "help", "OPERATOR_CONTACT must be an email address"),
        ("OPERATOR_CONTACT", "http://vance.example/contact", "or an https:// page"),
        ("OPERATOR_CONTACT", "mailto:help@vance.example", "got 'mailto:help@vance.example'"),
        ("OPERATOR_CONTACT", "Help <help@vance.example>", "OPERATOR_CONTACT must be"),
        ("OPERATOR_NAME", "Vance\nFamily Office", "OPERATOR_NAME must be one line"),
        ("OPERATOR_NAME", "V" * 81, "OPERATOR_NAME must be at most 80 characters"),
    ],
)
def test_a_bad_operator_setting_refuses_to_start_saying_what_to_fix(
    variable: str, value: str, said: str
) -> None:
    with pytest.raises(ConfigError, match=re.escape(said)):
        load_settings({variable: value, "APP_ENV": "test"})


async def test_the_worker_sends_every_email_with_the_operator_it_is_configured_with(
    client: Any, clock: Any, run_worker: Any, email_provider: Any
) -> None:
    """The real worker renders with OPERATOR_NAME and OPERATOR_CONTACT: the heirs' links at
    the release say who sends them, on whose behalf, and whom to write to."""
    owner = await sign_in(client)
    setup = await activate_plan(client, owner)
    await approve_plan(client, setup)
    clock.advance(seconds=setup.overview["settings"]["cancelWindowSeconds"] + 1)
    await run_worker(settings={**email_provider.settings, **OPERATOR})
    assert (await get_overview(client, owner))["status"] == "Released"
    (sent,) = [
        r.body for r in email_provider.to("heir0@example.org") if "left something" in r.body["subject"]
    ]
    assert "run by Vance Family Office, on behalf of Olive Owner." in sent["text"]
    assert "write to help@vance.example." in sent["text"]
    assert "<bdi>Vance Family Office</bdi>" in sent["html"]
    # Every email of the journey carries it, the guardians' and the owner's too.
    assert email_provider.requests
    assert all("run by Vance Family Office" in r.body["text"] for r in email_provider.requests)


@pytest.mark.parametrize("language", ["en", "ar"])
async def test_the_claim_link_and_an_owner_email_read_at_phone_width(
    language: str, browser: Any, screenshots: Any
) -> None:
    """At 390 px the HTML part fits the screen (the claim link's 64 characters once pushed it to
    720 px), and the sender's paragraphs sit under the sign-off; screenshots for a person."""
    context = await browser.new_context(viewport={"width": 390, "height": 844})
    page = await context.new_page()
    for kind, reader in (("claim_link", "heir"), ("guardian_objected", "owner")):
        d = row(kind, reader, {**NAMES[0], "owner_name": OWNER}, {}, language)
        d["check_in_link"] = reader == "owner"
        email = emails.render(d=d, ring=RING, base_url=BASE_URL, app_url="", **OPERATOR)
        await page.set_content(email.html)
        overflow = await page.evaluate(
            "document.documentElement.scrollWidth - document.documentElement.clientWidth"
        )
        assert overflow <= 0, f"{kind} in {language}: {overflow}px of horizontal scroll"
        await page.screenshot(path=str(screenshots / f"email-{kind}-{language}-390.png"), full_page=True)
    await context.close()
