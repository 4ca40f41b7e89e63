"""Every text file of an heir's zip is in the heir's words: the README and each letter's own
heading (its title when untitled, when it was written, what comes with it) in their language,
the date in words in their time zone, no machine timestamp. The pseudo-language proves every
sentence is marked, as the pages are checked; the owner's letters follow the owner's language."""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any

from core.text import i18n
from tests.capsule_helpers import Family
from tests.i18n_helpers import PSEUDO, ascii_words, english_words, pseudo
from tests.plan_helpers import create
from tests.support.capsule import owner_export, read_zip

ISO_TIME = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}")
NAMES = ["Olive Owner", "Ada", "Cal", "To my family", "Summer", "The piano", "Savings"]
CONTENTS = ["Dear all, look after each other.", "No title, only love.", "summer.jpg"]
ZIP_NAMES = ["README.txt", "letters/", "documents/", "capsule.json", "manifest.json"]


async def heirs_zip(fam: Family) -> tuple[dict[str, Any], dict[str, Any]]:
    """A released plan whose heir Ada lives in Dubai and reads Spanish: two letters, one with a
    photo and one untitled, a thing and an amount."""
    ada = await fam.add_heir("Ada", 60)
    await fam.add_heir("Cal", 40)
    resp = await fam.client.patch(
        f"/api/beneficiaries/{ada['id']}",
        json={"locale": "es", "timeZone": "Asia/Dubai"},
        headers=fam.owner.headers,
    )
    assert resp.status == 200, await resp.text()
    await fam.message("Dear all, look after each other.", title="To my family")
    await fam.message("No title, only love.", title=None)
    await fam.vault.work()
    fam.clock.advance(seconds=1)
    await create(fam.client, fam.owner, "assets", label="The piano", amount=None, assetCode=None)
    await create(fam.client, fam.owner, "assets", label="Savings", amount="25000", assetCode=None)
    await fam.release()
    return ada, await fam.capsule(ada)


def texts(archive: Any) -> dict[str, str]:
    return {name: archive.read(name).decode() for name in archive.namelist() if name.endswith(".txt")}


async def test_the_heirs_letters_and_note_are_in_their_language_and_zone(fam: Family):
    ada, capsule = await heirs_zip(fam)
    archive, _ = await read_zip(await fam.open(ada["claimToken"], "/export"))
    files = texts(archive)
    letters = {name: text for name, text in files.items() if name.startswith("letters/")}
    assert sorted(letters) == ["letters/001 To my family.txt", "letters/002 Una carta.txt"]
    written = datetime.fromisoformat(capsule["messages"][0]["createdAt"].replace("Z", "+00:00"))
    with i18n.speaking("es", "Asia/Dubai"):
        when = i18n.when(written)
    assert "Dubái" in when
    first = letters["letters/001 To my family.txt"].splitlines()
    assert first[:2] == ["To my family", f"Escrita el {when}"]
    assert letters["letters/002 Una carta.txt"].splitlines()[0] == "Una carta"
    for name, text in files.items():
        assert not ISO_TIME.search(text), (name, text)
        assert english_words(text, allowed=[*NAMES, *CONTENTS, *ZIP_NAMES]) == [], (name, text)
    assert "Es para usted, junto con Cal." in files["README.txt"]


async def test_every_sentence_of_the_heirs_zip_is_marked(fam: Family):
    ada, _capsule = await heirs_zip(fam)
    with pseudo():
        archive, _ = await read_zip(await fam.open(ada["claimToken"], f"/export?lang={PSEUDO}"))
    files = texts(archive)
    assert len(files) == 3  # the note and two letters
    for name, text in files.items():
        allowed = [*NAMES, *CONTENTS, *ZIP_NAMES, "Dubai", "daughter"]  # daughter: the owner's word
        assert ascii_words(text, allowed=allowed) == [], (name, text)
        assert not ISO_TIME.search(text), (name, text)


async def test_the_owners_letters_are_in_the_owners_language(fam: Family):
    resp = await fam.client.patch(
        "/api/users/me", json={"locale": "de", "timeZone": "Europe/Berlin"}, headers=fam.owner.headers
    )
    assert resp.status == 200, await resp.text()
    await fam.message("Dear all, look after each other.", title="To my family")
    archive, _ = await read_zip(await owner_export(fam))
    [letter] = [text for name, text in texts(archive).items() if name.startswith("messages/")]
    heading = letter.splitlines()[1]
    assert heading.startswith("Geschrieben am ") and "Berlin" in heading, heading
    assert not ISO_TIME.search(letter)
