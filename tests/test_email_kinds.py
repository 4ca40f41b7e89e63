"""Each email kind is one declaration (models.mail.texts.common.Kind), rendered once through the
one layout (models/mail/templates/email.html): what the declarations must agree with, and what
every rendering keeps (a typed name escaped and isolated, the text part saying what the HTML
part says)."""

from __future__ import annotations

import html
import re
from typing import Any

import jinja2
import pytest
from markupsafe import Markup

from core.text import i18n
from core.text.markup import bdi
from models import check_in_links
from models.delivery.budget import BUDGETED
from models.mail import emails
from models.mail.texts.common import GUARDIAN, Kind, environment
from tests.support.email_dump import BASE_URL, NAMES, RING, row

# The guardian emails that do not end with the guardian's page: the invitation gives it in its own
# words, and a deleted plan's page is soon gone.
NO_PAGE_FOOTER = {"guardian_invitation", "plan_deleted"}


def test_every_declared_link_and_footer_is_one_the_renderer_builds() -> None:
    for kind, declared in emails.KINDS.items():
        assert declared.audience, kind
        assert set(declared.audience) <= {"owner", "guardian", "beneficiary"}, kind
        assert set(declared.links) <= set(emails.LINKS), kind
        assert set(declared.footers) <= set(emails.FOOTERS), kind


def test_the_footers_follow_the_rules_of_their_links() -> None:
    """The check-in link goes with the kinds the outbox gives one, "I don't know this person"
    with the emails an owner causes by typing an address, the guardian's page with every
    guardian email but two."""
    footed = {
        footer: {k for k, d in emails.KINDS.items() if footer in d.footers} for footer in emails.FOOTERS
    }
    assert footed["check_in"] == set(check_in_links.KINDS)
    assert footed["unknown"] == set(BUDGETED)
    to_guardians = {k for k, d in emails.KINDS.items() if GUARDIAN in d.audience}
    assert footed["guardian_page"] == to_guardians - NO_PAGE_FOOTER


def _render(kind: str, reader: str, **changes: Any) -> Any:
    d = row(kind, reader, NAMES[0], {}, "ar")
    d.update(changes)
    return emails.render(d=d, ring=RING, base_url=BASE_URL, app_url="https://app.example")


def test_the_words_of_a_kind_are_rendered_once_for_subject_and_both_parts(monkeypatch: Any) -> None:
    """A kind's template is rendered once: the subject and the body it sets make the subject and
    both parts."""
    calls: list[str] = []
    words = (
        '{{ seen(d["kind"]) }}'
        '{% set subject = _("Subject for {name}").format(name=d["recipient_name"]) %}'
        '{% set body = _("Body for {name}").format(name=d["recipient_name"]) %}'
    )
    env = environment()
    env.loader = jinja2.ChoiceLoader([jinja2.DictLoader({"kinds/test.html": words}), env.loader])
    env.globals["seen"] = lambda kind: calls.append(kind) or ""
    monkeypatch.setattr(emails, "_ENVIRONMENT", env)
    d: Any = row("plan_deleted", "wallet_guardian", NAMES[0], {}, "en")
    site = emails.Site(ring=RING, base_url=BASE_URL, app_url="")
    with i18n.speaking("en", None):
        email = emails._render(Kind("kinds/test.html", audience=(GUARDIAN,)), d=d, site=site)
    assert calls == ["plan_deleted"]
    assert email.subject == "Subject for Gus"
    assert "Body for Gus" in email.text
    assert "<p>Body for <bdi>Gus</bdi></p>" in email.html


def test_a_typed_name_is_escaped_and_isolated_and_shown_as_typed_in_the_text() -> None:
    name = 'Ann <img src=x onerror="alert(1)"> & \u202eCo \ue000'
    email = _render("guardian_invitation", "wallet_guardian", owner_name=name, recipient_name=name)
    assert "<img" not in email.html
    assert "<bdi>Ann &lt;img src=x onerror=&#34;alert(1)&#34;&gt; &amp; Co \ue000</bdi>" in email.html
    assert 'Ann <img src=x onerror="alert(1)"> & Co \ue000' in email.text  # bidi control gone, the rest kept
    assert "\u202e" not in email.subject + email.text + email.html


@pytest.mark.parametrize("kind", sorted(emails.KINDS))
def test_the_text_part_says_what_the_html_part_says(kind: str) -> None:
    reader = {"owner": "owner_unnamed", "guardian": "passkey_guardian", "beneficiary": "heir"}
    for audience in emails.KINDS[kind].audience:
        email = _render(kind, reader[audience])
        paragraphs = re.findall(r"<p>(.*?)</p>", email.html, flags=re.S)
        shown = [html.unescape(re.sub(r"<[^>]+>", "", p)) for p in paragraphs]
        assert "\n\n".join(shown) + "\n" == email.text, kind
        assert 'lang="ar" dir="rtl"' in email.html


def test_a_line_break_in_the_words_is_one_in_the_html_part_too() -> None:
    """The sign-off's two lines are two lines in a mail client as in the text part."""
    email = _render("plan_deleted", "wallet_guardian", locale="en")
    assert "\n\nWith care,\nThe legacy planning service\n\nThis email comes from" in email.text
    assert "<p>With care,<br>\nThe legacy planning service</p>" in email.html


def test_a_sentence_shared_with_the_pages_isolates_the_name_without_a_marker() -> None:
    """models.address_links writes its sentences for plain text (readiness, JSON) or as markup
    when given a `<bdi>` name (the guardians' emails, the guardian page through `naming`)."""
    from api import html as pages
    from models import address_links

    with i18n.speaking("en", None):
        said = address_links.uncorrectable(name="Ann <b>")
        written = pages.naming(address_links.uncorrectable)(name="Ann <b>")
        short = address_links.unreachable(name=bdi("Ann <b>"), short=True)
    assert not isinstance(said, Markup) and said.startswith("Nobody can correct Ann <b>'s email address")
    assert written.startswith("Nobody can correct <bdi>Ann &lt;b&gt;</bdi>&#39;s email address")
    assert isinstance(short, Markup) and short.count("<bdi>Ann &lt;b&gt;</bdi>") == 2
