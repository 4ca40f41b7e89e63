"""How to refer to each person where a language marks grammatical gender (docs/pages.md,
"Grammatical gender"): the owner sets theirs and their people's on the JSON API and on their
pages, heirs and guardians set their own from their page; the sentences that agree with a person
follow it (a Spanish heir is "beneficiaria" or "beneficiario", an Arabic owner's plan "بها" or
"به"), and without one the words need no gender."""

from __future__ import annotations

import io
import re
from pathlib import Path
from typing import Any

import jinja2
import pytest
from babel.messages.pofile import read_po

from core.text import gender, i18n, markup
from core.text.i18n import _
from tests.capsule_helpers import Family
from tests.helpers import assert_error, sign_in
from tests.plan_helpers import activity_rows, body_for, create, query
from tests.support.guardian_page import draft_with_guardians, page_link
from tests.support.owner import guardian, heir, owner_in

NAMED = "%(owner)s named you, %(heir)s, as a beneficiary with %(share)s of the plan."


BAD_VALUES: list[Any] = ["female", "Feminine", "man", 1, ["feminine"], {"x": 1}, "f" * 5_000]


async def _me(client, session) -> dict[str, Any]:
    resp = await client.get("/api/users/me", headers=session.headers)
    assert resp.status == 200
    body: dict[str, Any] = await resp.json()
    return body


# The JSON API.


async def test_the_owner_sets_reads_and_clears_their_own(client):
    owner = await sign_in(client)
    assert owner.user["grammaticalGender"] is None
    resp = await client.patch("/api/users/me", json={"grammaticalGender": "feminine"}, headers=owner.headers)
    assert resp.status == 200 and (await resp.json())["grammaticalGender"] == "feminine"
    assert (await _me(client, owner))["grammaticalGender"] == "feminine"
    await client.patch("/api/users/me", json={"name": "Olive"}, headers=owner.headers)
    assert (await _me(client, owner))["grammaticalGender"] == "feminine"  # a patch without it keeps it
    resp = await client.patch("/api/users/me", json={"grammaticalGender": None}, headers=owner.headers)
    assert resp.status == 200 and (await _me(client, owner))["grammaticalGender"] is None


@pytest.mark.parametrize("value", BAD_VALUES)
async def test_anything_but_the_three_is_a_400_that_changes_nothing(client, value):
    owner = await sign_in(client)
    await client.patch("/api/users/me", json={"grammaticalGender": "neutral"}, headers=owner.headers)
    resp = await client.patch("/api/users/me", json={"grammaticalGender": value}, headers=owner.headers)
    assert resp.status == 400, await resp.text()
    body = await resp.json()
    assert_error(body, 400)
    assert "grammaticalGender" in body["details"]
    if isinstance(value, str):
        assert "feminine, masculine, neutral" in str(body)
    assert (await _me(client, owner))["grammaticalGender"] == "neutral"


@pytest.mark.parametrize("collection", ["beneficiaries", "guardians"])
async def test_the_owner_sets_their_peoples_on_create_and_patch_and_clears_it(client, collection):
    owner = await sign_in(client)
    row = await create(client, owner, collection, grammaticalGender="feminine")
    assert row["grammaticalGender"] == "feminine"
    path = f"/api/{collection}/{row['id']}"
    resp = await client.patch(path, json={"grammaticalGender": "masculine"}, headers=owner.headers)
    assert resp.status == 200 and (await resp.json())["grammaticalGender"] == "masculine"
    listed = await (await client.get(f"/api/{collection}", headers=owner.headers)).json()
    assert [r["grammaticalGender"] for r in listed] == ["masculine"]
    resp = await client.patch(path, json={"grammaticalGender": None}, headers=owner.headers)
    assert (await resp.json())["grammaticalGender"] is None
    resp = await client.patch(path, json={"grammaticalGender": "female"}, headers=owner.headers)
    assert resp.status == 400
    assert_error(await resp.json(), 400)
    resp = await client.post(
        f"/api/{collection}", json=body_for(collection, grammaticalGender="x"), headers=owner.headers
    )
    assert resp.status == 400 and "grammaticalGender" in await resp.text()
    unset = await create(client, owner, collection, email="other@example.org", allocationPercentage=10)
    assert unset["grammaticalGender"] is None


async def test_the_openapi_document_shows_the_field_and_its_values(client):
    document = await (await client.get("/api/docs/openapi.json")).json()
    schemas = document["components"]["schemas"]
    shown = {
        name: schema["properties"]["grammaticalGender"]
        for name, schema in schemas.items()
        if "grammaticalGender" in schema.get("properties", {})
    }
    assert {"User", "ProfileUpdate", "Beneficiary", "BeneficiaryCreate", "Guardian", "GuardianCreate"} <= set(
        shown
    ), sorted(shown)
    for prop in shown.values():
        assert set(prop["enum"]) >= {"feminine", "masculine", "neutral"} and prop.get("nullable") is True


# The owner's pages.


async def test_the_owners_account_page_sets_and_clears_theirs(client):
    owner = await owner_in(client)
    page = await owner.page("/plan/account")
    assert '<select id="grammaticalGender" name="grammaticalGender"' in page
    assert ">Not said</option>" in page and "Feminine (she, her)" in page
    fields = {"name": "Olive", "email": "", "emailConfirmation": "", "locale": "en", "timeZone": "UTC"}
    await owner.post("/plan/account", {**fields, "grammaticalGender": "feminine"})
    assert (await _me(client, owner.api))["grammaticalGender"] == "feminine"
    assert '<option value="feminine" selected>' in await owner.page("/plan/account")
    await owner.post("/plan/account", {**fields, "grammaticalGender": ""})
    assert (await _me(client, owner.api))["grammaticalGender"] is None
    _, text = await owner.post("/plan/account", {**fields, "grammaticalGender": "female"}, status=422)
    assert 'id="grammaticalGender-error"' in text
    assert (await _me(client, owner.api))["grammaticalGender"] is None


async def test_the_heirs_and_guardians_pages_set_and_clear_theirs(client):
    owner = await owner_in(client)
    assert "How we refer to them" in await owner.page("/plan/heirs")
    await owner.post("/plan/heirs", heir(grammaticalGender="feminine"))
    [ana] = await owner.listed("beneficiaries")
    assert ana["grammaticalGender"] == "feminine"
    edit = await owner.page(f"/plan/heirs/{ana['id']}")
    assert '<option value="feminine" selected>' in edit
    await owner.post(f"/plan/heirs/{ana['id']}", heir(grammaticalGender=""))
    assert (await owner.listed("beneficiaries"))[0]["grammaticalGender"] is None

    await owner.post("/plan/guardians", guardian(grammaticalGender="masculine"))
    [bo] = await owner.listed("guardians")
    assert bo["grammaticalGender"] == "masculine"
    await owner.post(f"/plan/guardians/{bo['id']}", guardian(grammaticalGender="neutral"))
    assert (await owner.listed("guardians"))[0]["grammaticalGender"] == "neutral"
    _, text = await owner.post(
        "/plan/guardians", guardian(email="x@example.org", grammaticalGender="he"), status=422
    )
    assert 'id="error-grammaticalGender"' in text


# Their own pages.


async def test_an_heir_sets_theirs_on_their_page_and_the_owner_reads_that_they_did(client, settings):
    owner = await sign_in(client)
    ana = await create(client, owner, "beneficiaries", name="Ana")
    path = f"/claim/{ana['claimToken']}"
    page = await (await client.get(path)).text()
    assert f'action="{path}/gender"' in page and '<option value="" selected>' in page
    resp = await client.post(f"{path}/gender", data={"grammaticalGender": "feminine"}, allow_redirects=False)
    assert (resp.status, resp.headers["Location"]) == (303, f"{path}?saved=gender#refer")
    [row] = query(settings, "SELECT grammatical_gender FROM beneficiaries WHERE id = %s", (ana["id"],))
    assert row["grammatical_gender"] == "feminine"
    shown = await (await client.get(f"{path}?saved=gender")).text()
    assert "Saved: this is how we refer to you from now on." in shown
    assert '<option value="feminine" selected>' in shown
    # The same choice again writes nothing more; the owner's timeline names the field, not its value.
    await client.post(f"{path}/gender", data={"grammaticalGender": "feminine"}, allow_redirects=False)
    entries = [
        r for r in activity_rows(settings, owner.user["id"]) if r["kind"] == "beneficiary.gender_chosen"
    ]
    assert len(entries) == 1 and entries[0]["metadata"] == {"fields": ["grammaticalGender"]}
    assert "feminine" not in str(entries[0])
    timeline = await (await client.get("/api/activity", headers=owner.headers)).json()
    assert "Ana chose, on their page, how we refer to them" in [e["summary"] for e in timeline]
    # Nothing chosen is "not said"; anything else is refused in words, changing nothing.
    await client.post(f"{path}/gender", data={"grammaticalGender": ""}, allow_redirects=False)
    resp = await client.post(f"{path}/gender", data={"grammaticalGender": "woman"}, allow_redirects=False)
    assert resp.status == 400 and "not one of the choices offered" in await resp.text()
    [row] = query(settings, "SELECT grammatical_gender FROM beneficiaries WHERE id = %s", (ana["id"],))
    assert row["grammatical_gender"] is None
    resp = await client.post(f"/claim/{'0' * 64}/gender", data={"grammaticalGender": "feminine"})
    assert resp.status == 404


async def test_a_guardian_sets_theirs_on_their_page(client, run_worker, email_provider, settings):
    owner = await sign_in(client)
    _, guardians = await draft_with_guardians(client, owner, count=1)
    await run_worker(settings=email_provider.settings)
    path = page_link(email_provider, "guardian0@example.org")
    page = await (await client.get(path)).text()
    assert f'action="{path}/gender"' in page and "How we refer to you" in page
    resp = await client.post(f"{path}/gender", data={"grammaticalGender": "masculine"}, allow_redirects=False)
    assert (resp.status, resp.headers["Location"]) == (303, f"{path}?saved=gender#refer")
    guardian_id = guardians[0].row["id"]
    [row] = query(settings, "SELECT grammatical_gender FROM guardians WHERE id = %s", (guardian_id,))
    assert row["grammatical_gender"] == "masculine"
    assert '<option value="masculine" selected>' in await (await client.get(f"{path}?saved=gender")).text()
    kinds = [r["kind"] for r in activity_rows(settings, owner.user["id"])]
    assert kinds.count("guardian.gender_chosen") == 1
    resp = await client.post(f"{path}/gender", data={"grammaticalGender": "x"}, allow_redirects=False)
    assert resp.status == 400


# The words that follow it.


async def test_a_spanish_heir_page_says_beneficiaria_to_her_and_needs_no_gender_without_one(fam: Family):
    lucia = await create(
        fam.client,
        fam.owner,
        "beneficiaries",
        name="Lucía",
        email="lucia@example.org",
        allocationPercentage=60,
        locale="es",
        grammaticalGender="feminine",
        relationship="hija",
    )
    sam = await create(
        fam.client,
        fam.owner,
        "beneficiaries",
        name="Sam",
        email="sam@example.org",
        allocationPercentage=40,
        locale="es",
        relationship="amigo",
    )
    await fam.release()
    hers = await (await fam.client.get(f"/claim/{lucia['claimToken']}")).text()
    assert "beneficiaria del" in hers and "beneficiario" not in hers, _share(hers)
    theirs = await (await fam.client.get(f"/claim/{sam['claimToken']}")).text()
    share = _share(theirs)
    assert "le dejó a usted" in share and "beneficiari" not in share, share


def _share(page: str) -> str:
    found = re.search(r'<h2 id="share">.*?</p>', page, re.S)
    assert found, page[-2000:]
    return found.group(0)


async def test_an_arabic_guardian_reads_her_plan_of_a_woman_and_no_gender_without_one(
    client, run_worker, email_provider
):
    for address, owner_gender in (("woman", "feminine"), ("unsaid", None)):
        owner = await sign_in(client)
        resp = await client.patch(
            "/api/users/me",
            json={
                "name": "Olive Owner",
                "email": f"{address}-owner@example.org",
                "grammaticalGender": owner_gender,
            },
            headers=owner.headers,
        )
        assert resp.status == 200
        await create(client, owner, "guardians", email=f"{address}@example.org", locale="ar")
    await run_worker(settings=email_provider.settings)
    his_or_hers = re.compile(r"الخاصة (بها|به)\b")  # "its own" of the owner, as a pronoun
    hers = email_provider.to("woman@example.org")[-1].body
    assert "الخاصة بها" in hers["subject"] and "عهدت إليك" in hers["text"], hers["text"]
    assert set(his_or_hers.findall(hers["subject"] + hers["text"])) == {"بها"}
    unsaid = email_provider.to("unsaid@example.org")[-1].body
    assert his_or_hers.findall(unsaid["subject"] + unsaid["text"]) == [], unsaid["text"]
    assert "عُهدت إليك الوصاية على خطة الإرث الخاصة بـ" in unsaid["text"]
    assert "وصيًّا" not in unsaid["subject"] + unsaid["text"], unsaid["text"]


def test_the_gendered_form_falls_back_to_the_words_that_need_none():
    with i18n.speaking("es"):
        neutral = _(NAMED)
        assert "beneficiari" not in neutral
        assert "beneficiaria" in gender.gendered(NAMED, "feminine")
        assert "beneficiario" in gender.gendered(NAMED, "masculine")
        assert gender.gendered(NAMED, None) == gender.gendered(NAMED, "neutral") == neutral
        assert gender.gendered(NAMED, "unknown") == neutral
        # A sentence with no form per gender: its one translation, whatever the gender.
        assert gender.gendered("Letters", "feminine") == _("Letters") == "Cartas"
    with i18n.speaking("en"):
        assert gender.gendered(NAMED, "feminine") == NAMED
    with i18n.speaking("ar"):
        assert gender.gendered("", "feminine") == ""


def test_the_templates_form_escapes_its_values_and_keeps_markup():
    env = markup.environment(
        jinja2.DictLoader(
            {"t": '{{ gendered("%(owner)s left this for you, %(heir)s", g, owner=o, heir=h|bdi) }}'}
        )
    )
    with i18n.speaking("ar"):
        shown = env.get_template("t").render(g="feminine", o="<b>Olive</b>", h="Ana")
    assert shown == "تركت لك &lt;b&gt;Olive&lt;/b&gt; هذا يا <bdi>Ana</bdi>"


def test_extraction_gives_each_gendered_sentence_a_form_per_gender():
    source = b'_("Plain")\ngendered("Of {owner}", owners)\ngendered(variable, owners)\n'
    found = [
        (name, message)
        for _line, name, message, _c in gender.extract_python(io.BytesIO(source), ["_"], [], {})
    ]
    assert found == [
        ("_", "Plain"),
        ("_", "Of {owner}"),
        ("pgettext", ("feminine", "Of {owner}")),
        ("pgettext", ("masculine", "Of {owner}")),
    ]
    template = b'{{ _("Plain") }} {{ gendered("Of %(owner)s", g, owner=o) }}'
    found = [
        (name, message)
        for _line, name, message, _c in gender.extract_jinja(io.BytesIO(template), ["_"], [], {})
    ]
    assert ("pgettext", ("feminine", "Of %(owner)s")) in found and ("_", "Of %(owner)s") in found


# What each catalog's own (gender-free) translation must not say: the forms that guessed the
# reader's, the owner's or one unnamed person's gender, as the catalogs said them before.
GUESSES = {
    "es": [
        r"\bser guardián\b",
        r"\bfuera guardián\b",
        r"\bsea guardián\b",
        r"\bcomo guardián\b",
        r"\bes guardián\b",
        r"de guardián\b",
        r"\b[Uu]n guardián\b",
        r"\b[Oo]tro guardián\b",
        r"\b[EeAa]l guardián\b",
        r"\b[Uu]n beneficiario\b",
        r"\b[Oo]tro beneficiario\b",
        r"\b[Ee]l beneficiario\b",
        r"\bbeneficiario del\b",
        r"\b[Uu]n heredero\b",
        r"\busted mismo\b",
        r"\((beneficiario|guardián)\)",
        r"\b[Gg]uardián (añadido|invitado|eliminado)",
    ],
    "fr": [
        r"\bêtre gardien\b",
        r"\bêtes gardien\b",
        r"\bcomme gardien\b",
        r"en tant que gardien\b",
        r"(page|portefeuille) de gardien\b",
        r"\bVotre gardien\b",
        r"\bUn (autre )?gardien\b",
        r"\bun autre gardien\b",
        r"\b[Uu]n (autre )?bénéficiaire\b",
        r"\bUn héritier\b",
        r"l'un des gardiens de son",
        r"pour être sûr\b",
        r"\bPas encore invité\b",
        r"\bGardien (ajouté|invité|retiré)",
    ],
    "pt_BR": [
        r"\bser guardião\b",
        r"\bfosse guardião\b",
        r"\bseja guardião\b",
        r"\bcomo guardião\b",
        r"\bé guardião\b",
        r"de guardião\b",
        r"\b[Uu]m guardião\b",
        r"\b[Oo]utro guardião\b",
        r"\b[Oo] guardião\b",
        r"\b[Uu]m beneficiário\b",
        r"\b[Oo]utro beneficiário\b",
        r"\bcomo beneficiário\b",
        r"\b[Uu]m herdeiro\b",
        r"\bestá vivo\b",
        r"\bvocê mesmo\b",
        r"\bo titular\b",
        r"\((beneficiário|guardião)\)",
        r"\bé chamado\b",
        r"\bGuardião (adicionado|convidado|removido)",
    ],
    "de": [r"\b(Ein|Jeder|Der) Erbe\b", r"\beines Erben\b", r"\bdiesem Erben\b"],
    "ar": [
        "قادرًا",
        "قادر على",
        "وصيًّا على",
        "أنت وصيّ",
        "بصفتك وصيًّا",
        "تُعدّ وصيًّا",
        "متأكدًا",
        "حضوره",
        "خطته",
        "الوصي الخاصة",
        r"قد توفي\b",
        "الذين اختارهم",
        r"ذكرهم %\(owner\)s",
    ],
}
CATALOGS = Path(__file__).resolve().parent.parent / "core" / "text" / "locale"


@pytest.mark.parametrize("language", sorted(GUESSES))
def test_the_words_for_a_person_who_said_nothing_guess_no_gender(language):
    """A reader who chose no form, an owner who said nothing, an heir or a guardian not named:
    the catalog's own translation (the one without a msgctxt) reads right for anyone."""
    with (CATALOGS / language / "LC_MESSAGES" / "messages.po").open("rb") as po:
        catalog = read_po(po)
    guesses = [re.compile(pattern) for pattern in GUESSES[language]]
    found = []
    for message in catalog:
        if not message.id or message.context:
            continue
        strings = message.string if isinstance(message.string, tuple | list) else (message.string,)
        for text in strings:
            found += [(guess.pattern, text) for guess in guesses if guess.search(text)]
    assert found == [], "\n".join(f"{pattern}: {text}" for pattern, text in found)
