"""A wallet's words (SEP-7 `msg`) in the signer's language stay within SEP-7's 300 characters in
every shipped language and the pseudo-language, whatever the names: the longest name is cut
first, and a translation longer than the limit on its own is cut too (a wallet refuses a longer
`msg`). A missing owner's name reads "the owner" in the signer's language."""

from __future__ import annotations

from typing import Any, cast, get_args

import pytest

from core.stellar import sep7
from core.text import i18n
from models.flows import guardian_pages
from tests.i18n_helpers import PSEUDO, pseudo, pseudo_text

# The heir's page's requests (api/claim/capsule_page.py, capsule_page_wallet.py), by their English.
HEIR_MESSAGES = [
    "Finalise the release of {owner}'s plan, for everyone it names",
    "Claim {heir}'s share of what {owner} left",
    "Prove this wallet is yours, {heir}, to receive what {owner} left you",
]
NAMES = [
    ("Ada", "Ben"),
    ("O" * 400, "H" * 400),
    ("أحمد بن عبد الله " * 30, "Zoë " * 120),
    ("Ölaf‮Ørn" * 60, None),
    (None, "Heir " * 90),
]
LANGUAGES = [*i18n.SHIPPED, PSEUDO]
# What a guardian may be asked to sign with a wallet (a passkey added is no wallet request).
WALLET_ACTIONS = [a for a in get_args(guardian_pages.Action) if a != "add_passkey"]


def guardian_words(action: str, owner: str | None, heir: str | None) -> str:
    page = cast(Any, {"owner": owner})
    return guardian_pages.message(page=page, action=cast(Any, action), heir=heir)


@pytest.mark.parametrize("language", LANGUAGES)
def test_every_request_fits_sep7_in_every_language(language):
    with pseudo(), i18n.speaking(language):
        for owner, heir in NAMES:
            for action in WALLET_ACTIONS:
                words = guardian_words(action, owner, heir)
                assert 0 < len(words) <= sep7.MSG_LIMIT, (language, action, len(words))
            for template in HEIR_MESSAGES:
                words = sep7.message(i18n._(template), owner=owner, heir=heir)
                assert 0 < len(words) <= sep7.MSG_LIMIT, (language, template, len(words))


def test_short_names_are_kept_whole_and_a_missing_owner_is_named_in_the_signer_s_language():
    with pseudo(), i18n.speaking(PSEUDO):
        words = sep7.message(i18n._("Claim {heir}'s share of what {owner} left"), heir="Eve", owner=None)
        assert words == pseudo_text("Claim {heir}'s share of what {owner} left").format(
            heir="Eve", owner=pseudo_text("the owner")
        )
    assert sep7.message("For {owner}", owner=None) == "For the owner"  # English unchanged


def test_a_translation_longer_than_the_limit_on_its_own_is_cut_not_refused():
    words = sep7.message("x" * 280 + " {owner} " + "y" * 280, owner="Ada")
    assert len(words) == sep7.MSG_LIMIT and words.endswith("…")
    assert len(sep7.message("z" * 500)) == sep7.MSG_LIMIT  # no names at all
