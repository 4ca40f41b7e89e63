"""The owner's sentences follow the owner's language and zone (docs/translations.md): readiness
problems and warnings and the verification notice on GET /api/legacy, and the Family Timeline's
summaries, written when the entry is. Until translators fill the catalogs the pseudo-language
proves every such sentence is marked (no plain English word left but names); an English owner
reads what they always read; an error body stays English."""

from __future__ import annotations

import ast
import json
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from core.text import i18n
from models import activity
from tests.helpers import sign_in
from tests.i18n_helpers import PSEUDO, ascii_words, english_words, pseudo
from tests.lifecycle_helpers import activate_plan, get_overview, report
from tests.plan_helpers import create, query

NAMES = ["Olive Owner", "Heir 0", "Heir 1", "Guardian 0", "Guardian 1", "Madrid"]


def speak(settings, user_id: str, locale: str | None, zone: str | None) -> None:
    """Record the owner's language and zone as /api/users/me would (the pseudo-language is no
    tag the API accepts, so directly)."""
    query(settings, "UPDATE users SET locale = %s, time_zone = %s WHERE id = %s", (locale, zone, user_id))


async def timeline(client, owner) -> list[dict[str, Any]]:
    resp = await client.get("/api/activity?limit=100", headers=owner.headers)
    assert resp.status == 200, await resp.text()
    entries: list[dict[str, Any]] = await resp.json()
    return entries


async def test_a_draft_plan_s_problems_and_warnings_are_in_the_owner_s_language(client, settings):
    owner = await sign_in(client)
    speak(settings, owner.user["id"], PSEUDO, "Europe/Madrid")
    with pseudo():
        await create(client, owner, "beneficiaries", name="Heir 0", allocationPercentage=60)
        await create(client, owner, "guardians", name="Guardian 0", email="guardian0@example.org")
        await create(client, owner, "guardians", name="Guardian 1", email="guardian1@example.org")
        overview = await get_overview(client, owner)
        problems, warnings = overview["readiness"]["problems"], overview["readiness"]["warnings"]
        assert len(problems) >= 4 and len(warnings) >= 3
        for sentence in problems + warnings:
            assert ascii_words(sentence, allowed=NAMES) == [], sentence
        assert any("Guardian 0" in p for p in problems)  # names are left as written
        # Activation refuses in an error body: English, whatever the owner reads.
        resp = await client.post("/api/legacy/activate", headers=owner.headers)
        assert resp.status == 409
        refused = (await resp.json())["details"]["readiness"]["problems"]
        assert "Add your name so guardians and heirs know whose plan this is." in refused
        entries = [e for e in await timeline(client, owner) if e["kind"] != "user.created"]
        assert len(entries) >= 3
        for entry in entries:
            assert ascii_words(entry["summary"], allowed=NAMES) == [], entry


async def test_an_english_owner_reads_what_they_always_read(client, settings):
    owner = await sign_in(client)
    await create(client, owner, "beneficiaries", name="Heir 0", allocationPercentage=60)
    problems = (await get_overview(client, owner))["readiness"]["problems"]
    assert "Your beneficiaries' shares add up to 60%; they must add up to exactly 100%." in problems
    assert "Add at least one guardian: someone you trust to confirm a release." in problems
    summaries = [e["summary"] for e in await timeline(client, owner)]
    assert "Beneficiary added" in summaries and "Account created with a Stellar wallet" in summaries


async def test_the_verification_notice_and_timeline_follow_the_owner_s_language_and_zone(client, settings):
    owner = await sign_in(client)
    setup = await activate_plan(client, owner)
    speak(settings, owner.user["id"], PSEUDO, "Europe/Madrid")
    with pseudo():
        assert (await report(client, setup, setup.guardians[0])).status == 200
        overview = await get_overview(client, owner)
        notice = overview["verificationNotice"]
        assert ascii_words(notice, allowed=NAMES) == [], notice
        started = datetime.fromisoformat(overview["verificationStartedAt"])
        with i18n.speaking(PSEUDO, "Europe/Madrid"):
            assert i18n.when(started) in notice  # the owner's zone, named
        assert "Guardian 0" in notice
        reported = [e for e in await timeline(client, owner) if e["kind"] == "guardian.reported"]
        assert len(reported) == 1 and ascii_words(reported[0]["summary"], allowed=NAMES) == []
        assert "Guardian 0" in reported[0]["summary"]  # the timeline names who, when it is read


async def test_a_spanish_owner_reads_times_in_their_zone_and_language(client, settings):
    owner = await sign_in(client)
    setup = await activate_plan(client, owner)
    speak(settings, owner.user["id"], "es", "America/Argentina/Buenos_Aires")
    assert (await report(client, setup, setup.guardians[0])).status == 200
    overview = await get_overview(client, owner)
    started = datetime.fromisoformat(overview["verificationStartedAt"])
    with i18n.speaking("es", "America/Argentina/Buenos_Aires"):
        spanish = i18n.when(started)
    assert spanish in overview["verificationNotice"]
    assert "UTC" not in overview["verificationNotice"]


async def test_a_summary_written_in_its_row_s_statement_is_the_owner_s(client, settings):
    """The submitted transaction's entry goes in its row's own statement: every language is
    written first and SQL picks the owner's, English for a language nobody set."""
    owner = await sign_in(client)
    with pseudo():
        written = activity.in_every_language(summary=lambda: i18n._("Plan settings changed"))
        assert set(written) == set(i18n.supported()) and PSEUDO in written
        assert written["en"] == "Plan settings changed" and written[PSEUDO] != written["en"]

        def chosen() -> str:
            sql = "SELECT " + activity.chosen_sql(owner="%(owner)s", summaries="%(summaries)s") + " AS s"
            rows = query(settings, sql, {"owner": owner.user["id"], "summaries": json.dumps(written)})
            return str(rows[0]["s"])

        assert chosen() == written["en"]
        speak(settings, owner.user["id"], PSEUDO, None)
        assert chosen() == written[PSEUDO]
        speak(settings, owner.user["id"], "xx", None)  # a language since removed: English
        assert chosen() == written["en"]


async def test_the_anonymous_resend_answer_follows_the_asker_s_browser(client):
    """POST /api/claim/resend knows nobody (the answer must not say whether the address matched):
    its sentence follows Accept-Language, the same body for every address."""
    english = await client.post("/api/claim/resend", json={"email": "nobody@example.org"})
    assert english.status == 202
    assert (await english.json())["message"].startswith("If this address belongs to someone named")
    with pseudo():
        resp = await client.post(
            "/api/claim/resend", json={"email": "nobody@example.org"}, headers={"Accept-Language": PSEUDO}
        )
        assert resp.status == 202
        body = await resp.json()
        assert body["status"] == "accepted" and ascii_words(body["message"]) == [], body


def _marked(value: ast.expr) -> bool | None:
    """True: a marked sentence or a function writing one; False: English as it stands; None: a
    name, a table or a call whose value is marked where it is defined (not judged here)."""
    if isinstance(value, ast.Call) and getattr(value.func, "id", None) == "N_":
        return True
    if isinstance(value, ast.Lambda):
        return True
    if isinstance(value, ast.IfExp):
        body, orelse = _marked(value.body), _marked(value.orelse)
        return False not in (body, orelse)
    if isinstance(value, (ast.Name, ast.Subscript, ast.Attribute, ast.Call)):
        return None
    return False


def test_every_timeline_summary_is_marked():
    """A summary is written in the owner's language (models.activity.record): a literal, an
    f-string or a sentence glued from pieces would stay English for everyone."""
    unmarked = []
    for path in sorted(Path("models").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.Call):
                continue
            name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", None)
            summary = None
            if name == "record":
                summary = next((k.value for k in node.keywords if k.arg == "summary"), None)
            elif name == "Entry" and len(node.args) >= 2:
                summary = node.args[1]
            if summary is not None and _marked(summary) is False:
                unmarked.append(f"{path}:{node.lineno}")
    assert unmarked == [], "mark these with N_() or write them in a function with _()"


@pytest.mark.parametrize("language", [tag for tag in i18n.SHIPPED if tag != i18n.SOURCE])
async def test_an_owner_reads_their_plan_and_timeline_in_their_language(client, settings, language):
    """With the catalogs filled: no English left in the readiness sentences, the notice or the
    timeline of an owner who reads another language (names aside)."""
    # German writes "Wallet" as its own word (docs/translations.md, glossary).
    names = [*NAMES, "Wallet"] if language == "de" else NAMES
    owner = await sign_in(client)
    speak(settings, owner.user["id"], language, "Europe/Madrid")
    await create(client, owner, "beneficiaries", name="Heir 0", allocationPercentage=60)
    await create(client, owner, "guardians", name="Guardian 0", email="guardian0@example.org")
    readiness = (await get_overview(client, owner))["readiness"]
    for sentence in readiness["problems"] + readiness["warnings"]:
        assert english_words(sentence, allowed=names) == [], sentence

    owner = await sign_in(client)
    speak(settings, owner.user["id"], language, "Europe/Madrid")
    setup = await activate_plan(client, owner)
    assert (await report(client, setup, setup.guardians[0])).status == 200
    overview = await get_overview(client, owner)
    assert english_words(overview["verificationNotice"], allowed=names) == [], overview["verificationNotice"]
    for entry in await timeline(client, owner):
        if entry["kind"] != "user.created":  # written before the owner chose a language
            assert english_words(entry["summary"], allowed=names) == [], entry


async def test_a_timeline_sentence_with_no_time_costs_its_insert_only(client, settings, monkeypatch):
    """A plain summary (most entries: a guardian's approval, a capsule opened) is written in every
    language and the owner's picked in the INSERT itself: no read of the owner's language before
    it, so an answer's transaction is no longer than it was before the pages spoke languages."""
    import aiopg

    from api.keys import DB
    from core.db import transaction

    owner = await sign_in(client)
    statements: list[str] = []
    original = aiopg.Cursor.execute

    async def counting(self: Any, sql: str, *args: Any, **kwargs: Any) -> Any:
        statements.append(sql)
        return await original(self, sql, *args, **kwargs)

    with pseudo():
        speak(settings, owner.user["id"], PSEUDO, None)
        monkeypatch.setattr(aiopg.Cursor, "execute", counting)
        async with transaction(client.app[DB]) as cur:
            statements.clear()
            await activity.record(
                cur,
                user_id=owner.user["id"],
                kind="plan.updated",
                entity_id=None,
                summary="Plan settings changed",
            )
            assert len(statements) == 1, statements
        monkeypatch.undo()
        with i18n.speaking(PSEUDO):
            pseudo_words = i18n._("Plan settings changed")
    rows = query(
        settings,
        "SELECT summary FROM activity WHERE user_id = %s AND kind = 'plan.updated'",
        (owner.user["id"],),
    )
    assert [r["summary"] for r in rows] == [pseudo_words] and pseudo_words != "Plan settings changed"


def test_a_sentence_written_by_a_function_is_kept_only_under_a_key():
    """Written once per process: a function's sentence is cached under the key its caller names
    (a fresh lambda each call would grow the cache forever), a marked sentence under itself."""
    with pytest.raises(TypeError):
        activity.every_language_json(summary=lambda: i18n._("Plan settings changed"))
    keyed = activity.every_language_json(summary=lambda: i18n._("Plan settings changed"), key="settings")
    assert json.loads(keyed)["en"] == "Plan settings changed"
    assert activity.every_language_json(summary="Plan settings changed") == keyed
