"""The owner's plan pages through the app (/plan, /plan/heirs, /plan/guardians): signed in
through the real door (the text-signature form), each change the JSON route's own, each refused
form back beside its fields with the values kept, another owner's id a 404, a GET changing
nothing, and the statements each page reads not growing with the plan."""

from __future__ import annotations

import html
import re

import pytest
from stellar_sdk import Keypair

from tests.helpers import sign_in
from tests.lifecycle_helpers import activate_plan
from tests.plan_helpers import activity_rows, create
from tests.support.owner import beside, browse_as_the_service, guardian, heir, owner_in


def value_of(page: str, field: str) -> str:
    found = re.search(rf'name="{field}" type="[a-z]+" value="([^"]*)"', page)
    assert found, f"no field {field}"
    return html.unescape(found.group(1))


async def test_a_new_accounts_home_answers_200_with_its_next_step_as_a_link(client):
    owner = await owner_in(client)
    page = await owner.page("/plan")
    assert "Your plan is a draft" in page
    assert 'Your next step: <a class="button" href="/plan/heirs#add">Add an heir</a>' in page
    assert 'action="/sign-out"' in page and "Sign out" in page
    assert "Add at least one beneficiary." in page and 'href="/plan/heirs">Go to your heirs</a>' in page
    assert "You have no guardians yet." in page


async def test_heirs_added_from_the_page_are_the_apis_with_the_same_timeline_entry(client, settings):
    owner = await owner_in(client)
    resp, _ = await owner.post("/plan/heirs", heir())
    assert resp.headers["Location"] == "/plan/heirs?done=heir-added#done"
    await owner.post("/plan/heirs", heir(name="Rui", email="rui@example.org", allocationPercentage="32,5"))
    rows = await owner.listed("beneficiaries")
    assert sorted((row["name"], row["allocationPercentage"], row["locale"]) for row in rows) == [
        ("Ana Souza", 60, "pt-BR"),
        ("Rui", 32.5, "pt-BR"),
    ]
    page = await owner.page("/plan/heirs?done=heir-added")
    assert "The heir was added." in page
    assert "Their shares add up to 92.5%." in page and "7.5% is not given to anyone yet." in page
    assert "<bdi>Ana Souza</bdi>" in page and "Address not confirmed yet." in page
    await create(client, owner.api, "beneficiaries", allocationPercentage=7.5, email="x@example.org")
    kinds = [
        row["kind"] for row in activity_rows(settings, owner.api.user["id"]) if "beneficiar" in row["kind"]
    ]
    assert len(kinds) == 3 and len(set(kinds)) == 1  # the page's two and the API's one, alike


@pytest.mark.parametrize(
    ("fields", "field", "words"),
    [
        ({"name": ""}, "name", "Please fill this in."),
        ({"email": "ana.example.org"}, "email", "This does not look like an email address"),
        ({"allocationPercentage": "a half"}, "allocationPercentage", "Please write a number"),
        ({"allocationPercentage": "101"}, "allocationPercentage", "greater than 0 and at most 100"),
        ({"allocationPercentage": "12.345"}, "allocationPercentage", "at most two decimal places"),
        ({"relationship": "x" * 61}, "relationship", "at most 60 characters"),
    ],
)
async def test_a_refused_heir_form_comes_back_beside_its_field_with_the_values_kept(
    client, fields, field, words
):
    owner = await owner_in(client)
    _, page = await owner.post("/plan/heirs", heir(**fields), status=422)
    assert words in beside(page, field)
    assert 'aria-invalid="true"' in page
    assert value_of(page, "email") == heir(**fields)["email"]
    assert value_of(page, "allocationPercentage") == heir(**fields)["allocationPercentage"]
    assert await owner.listed("beneficiaries") == []


async def test_a_share_past_the_total_is_the_models_refusal_beside_the_share(client):
    owner = await owner_in(client)
    await owner.post("/plan/heirs", heir(allocationPercentage="70"))
    _, page = await owner.post("/plan/heirs", heir(name="Rui", allocationPercentage="40,5"), status=422)
    assert beside(page, "allocationPercentage") == (
        "The shares may add up to at most 100%: they add up to 70% now, and this would make 110.5%."
    )
    assert value_of(page, "name") == "Rui" and value_of(page, "allocationPercentage") == "40,5"
    assert len(await owner.listed("beneficiaries")) == 1


async def test_an_heir_is_changed_removed_after_a_confirmation_asked_and_given_a_new_link(client, settings):
    owner = await owner_in(client)
    await owner.post("/plan/heirs", heir())
    (row,) = await owner.listed("beneficiaries")
    edit = await owner.page(f"/plan/heirs/{row['id']}")
    assert value_of(edit, "name") == "Ana Souza" and value_of(edit, "allocationPercentage") == "60"
    _, refused = await owner.post(f"/plan/heirs/{row['id']}", heir(name=""), status=422)
    assert beside(refused, "name") == "Please fill this in."
    await owner.post(f"/plan/heirs/{row['id']}", heir(allocationPercentage="100", relationship="son"))
    (changed,) = await owner.listed("beneficiaries")
    assert (changed["allocationPercentage"], changed["relationship"], changed["name"]) == (
        100,
        "son",
        "Ana Souza",
    )

    resp, _ = await owner.post(f"/plan/heirs/{row['id']}/confirm-email", {})
    assert resp.headers["Location"] == "/plan/heirs?done=heir-asked#done"
    resp, _ = await owner.post(f"/plan/heirs/{row['id']}/new-link", {})
    (rotated,) = await owner.listed("beneficiaries")
    assert rotated["claimToken"] != row["claimToken"]

    confirm = await owner.page(f"/plan/heirs/{row['id']}/remove")
    assert "Yes, remove <bdi>Ana Souza</bdi>" in confirm
    assert len(await owner.listed("beneficiaries")) == 1  # the GET removed nothing
    await owner.post(f"/plan/heirs/{row['id']}/remove", {})
    assert await owner.listed("beneficiaries") == []


async def test_another_owners_heir_or_guardian_is_a_404_and_stays(client):
    other = await sign_in(client)
    theirs = await create(client, other, "beneficiaries")
    their_guardian = await create(client, other, "guardians")
    owner = await owner_in(client)
    for path in (
        f"/plan/heirs/{theirs['id']}",
        f"/plan/guardians/{their_guardian['id']}",
        "/plan/heirs/nonsense",
    ):
        await owner.page(path, status=404)
        await owner.page(path + "/remove", status=404)
    await owner.post(f"/plan/heirs/{theirs['id']}/remove", {}, status=404)
    await owner.post(f"/plan/guardians/{their_guardian['id']}/remove", {}, status=404)
    await owner.post(f"/plan/heirs/{theirs['id']}", heir(), status=404)
    resp = await client.get("/api/beneficiaries", headers=other.headers)
    assert len(await resp.json()) == 1


async def test_guardians_added_from_the_page_are_the_apis_and_can_be_invited_again(client):
    owner = await owner_in(client)
    wallet = Keypair.random().public_key
    await owner.post("/plan/guardians", guardian(walletAddress=wallet))
    await owner.post("/plan/guardians", guardian(name="Cy", email="cy@example.org"))
    rows = {row["name"]: row for row in await owner.listed("guardians")}
    assert rows["Bo Lind"]["walletAddress"] == wallet and rows["Cy"]["walletAddress"] is None
    page = await owner.page("/plan/guardians")
    assert "Answers with their Stellar wallet:" in page and "will create a passkey" in page
    assert "A release needs the approval of 2 of your 2 guardians who have not declined." in page
    resp, _ = await owner.post(f"/plan/guardians/{rows['Cy']['id']}/invite", {})
    # No name on the account yet: the invitation waits for it, and the page says so.
    assert resp.headers["Location"] == "/plan/guardians?done=guardian-waiting#done"
    resp = await client.patch("/api/users/me", json={"name": "Olive Owner"}, headers=owner.api.headers)
    assert resp.status == 200
    resp, _ = await owner.post(f"/plan/guardians/{rows['Cy']['id']}/invite", {})
    assert resp.headers["Location"] == "/plan/guardians?done=guardian-invited#done"
    resp, _ = await owner.post("/plan/guardians", guardian(name="Di", email="di@example.org"))
    assert resp.headers["Location"] == "/plan/guardians?done=guardian-added#done"
    home = await owner.page("/plan")
    assert "<bdi>Bo Lind</bdi>: " in home


@pytest.mark.parametrize(
    ("fields", "field", "words"),
    [
        ({"name": ""}, "name", "Please fill this in."),
        ({"email": ""}, "email", "Please fill this in."),
        ({"walletAddress": "GABC"}, "walletAddress", "This is not a Stellar wallet address"),
    ],
)
async def test_a_refused_guardian_form_comes_back_beside_its_field(client, fields, field, words):
    owner = await owner_in(client)
    _, page = await owner.post("/plan/guardians", guardian(**fields), status=422)
    assert words in beside(page, field)
    assert value_of(page, "walletAddress") == guardian(**fields)["walletAddress"]
    assert await owner.listed("guardians") == []


async def test_the_owners_own_wallet_or_a_guardian_twice_is_refused_in_words(client):
    owner = await owner_in(client)
    _, page = await owner.post(
        "/plan/guardians", guardian(walletAddress=owner.keypair.public_key), status=422
    )
    assert (
        beside(page, "walletAddress") == "This is one of your own wallets: a guardian must be someone else."
    )
    wallet = Keypair.random().public_key
    await owner.post("/plan/guardians", guardian(walletAddress=wallet))
    _, page = await owner.post("/plan/guardians", guardian(name="Cy", walletAddress=wallet), status=422)
    assert "This wallet is already one of your guardians." in page
    assert value_of(page, "name") == "Cy"


async def test_a_guardian_is_changed_and_removed_after_a_confirmation(client):
    owner = await owner_in(client)
    await owner.post("/plan/guardians", guardian())
    (row,) = await owner.listed("guardians")
    edit = await owner.page(f"/plan/guardians/{row['id']}")
    assert value_of(edit, "email") == "bo@example.org"
    await owner.post(f"/plan/guardians/{row['id']}", guardian(email="bo.lind@example.org"))
    (changed,) = await owner.listed("guardians")
    assert changed["email"] == "bo.lind@example.org"
    await owner.page(f"/plan/guardians/{row['id']}/remove")
    assert len(await owner.listed("guardians")) == 1
    await owner.post(f"/plan/guardians/{row['id']}/remove", {})
    assert await owner.listed("guardians") == []


async def test_the_check_in_button_is_the_apis_check_in(client, settings):
    owner = await owner_in(client)
    await owner.post("/plan/check-in", {}, status=409)  # a draft has nothing to check in
    await activate_plan(client, owner.api)
    home = await owner.page("/plan")
    assert "Your next check-in is due by" in home and 'action="/plan/check-in"' in home
    assert 'class="button" href="/plan#check-in">Check in</a>' in home
    resp, _ = await owner.post("/plan/check-in", {})
    assert resp.headers["Location"] == "/plan?done=checked-in#done"
    check_ins = [
        row for row in activity_rows(settings, owner.api.user["id"]) if row["kind"] == "plan.check_in"
    ]
    assert len(check_ins) == 1


async def test_signed_out_every_plan_page_leads_to_sign_in(client):
    browse_as_the_service(client)
    for path in ("/plan", "/plan/heirs", "/plan/guardians"):
        resp = await client.get(path, allow_redirects=False)
        assert resp.status == 303 and resp.headers["Location"].startswith("/sign-in")


async def test_every_word_of_the_plan_pages_is_marked_and_translated(client, settings):
    """Each page, filled in (heirs, a guardian, a refused form, a change made), in the
    pseudo-language (any plain word left was never marked) and in each shipped language (any
    English word left is a translation missing)."""
    from api import html as pages
    from core.text import i18n
    from tests.i18n_helpers import PSEUDO, ascii_words, english_words, pseudo
    from tests.support.words import page_words

    owner = await owner_in(client)
    await owner.post("/plan/heirs", heir())
    await owner.post("/plan/guardians", guardian())
    (row,) = await owner.listed("beneficiaries")
    allowed = [
        "Ana Souza",
        "daughter",
        "Bo Lind",
        "UTC",
        "America",
        "Sao",
        "Paulo",
        *pages.LANGUAGE_NAMES.values(),
    ]
    paths = [
        "/plan",
        "/plan/heirs?done=heir-added",
        "/plan/guardians",
        f"/plan/heirs/{row['id']}",
        f"/plan/heirs/{row['id']}/remove",
    ]
    zones = [zone.replace("_", " ") for zone in pages_zones()]
    allowed += zones
    with pseudo():
        for path in paths:
            page = await owner.page(f"{path}{'&' if '?' in path else '?'}lang={PSEUDO}")
            left = [w for w in ascii_words(page_words(page), allowed=allowed) if "/" not in w]
            assert not left, (path, sorted(set(left)))
        _, refused = await owner.post(f"/plan/heirs?lang={PSEUDO}", heir(name="", email="x"), status=422)
        assert not ascii_words(page_words(refused), allowed=allowed)
    for language in i18n.SHIPPED:
        if language == i18n.SOURCE:
            continue
        for path in paths:
            page = await owner.page(f"{path}{'&' if '?' in path else '?'}lang={language}")
            left = english_words(page_words(page), allowed=[*allowed, "Wallet", "Stellar"])
            assert not left, (language, path, sorted(set(left)))


def pages_zones() -> list[str]:
    from api.owner.plan_pages import zone_choices

    return [value for value, _ in zone_choices() if value]


async def test_the_home_page_answers_200_in_every_state_and_says_it(client, clock, run_worker):
    """Draft, Active, being verified, approved, released: 200 each time, the state in its
    sentence, the check-in offered while it can stop something, nothing to change once released."""
    from tests.lifecycle_helpers import approve, get_overview, report

    owner = await owner_in(client)
    assert "Your plan is a draft" in await owner.page("/plan")
    setup = await activate_plan(client, owner.api, guardians=2, threshold=2)
    home = await owner.page("/plan")
    assert "Your plan is active" in home and 'action="/plan/check-in"' in home
    assert (await report(client, setup, setup.guardians[0])).status == 200
    home = await owner.page("/plan")
    assert "Your guardians are being asked to confirm" in home and 'action="/plan/check-in"' in home
    for each in setup.guardians:
        assert (await approve(client, setup, each)).status == 200
    home = await owner.page("/plan")
    assert "Your guardians approved the release of your plan." in home
    overview = await get_overview(client, owner.api)
    clock.advance(seconds=overview["settings"]["cancelWindowSeconds"] + 1)
    await run_worker()
    assert (await get_overview(client, owner.api))["status"] == "Released"
    home = await owner.page("/plan")
    assert "Your plan has been released" in home
    assert 'action="/plan/check-in"' not in home and 'class="next"' not in home
    heirs = await owner.page("/plan/heirs")
    assert "your heirs can no longer be changed" in heirs and 'action="/plan/heirs#add"' not in heirs
    guardians = await owner.page("/plan/guardians")
    assert "your guardians can no longer be changed" in guardians and "/invite" not in guardians


async def test_names_in_the_checklist_are_isolated_whole_once_each(client):
    owner = await owner_in(client)
    await owner.post("/plan/heirs", heir(name="Ana Souza"))
    await owner.post("/plan/guardians", guardian(name="سارة", email="s@example.org"))
    await owner.post("/plan/guardians", guardian(name="Ana", email="a@example.org"))
    home = await owner.page("/plan")
    checklist = home[home.index('class="checklist"') :]
    assert "<bdi>Ana Souza</bdi> has not confirmed" in checklist
    assert "<bdi>سارة</bdi>" in checklist and "<bdi>Ana</bdi>" in checklist
    assert "<bdi><bdi>" not in home and "<bdi>Ana</bdi> Souza" not in home


async def test_a_confirmation_past_the_days_email_budget_is_said_to_wait(make_client):
    client = await make_client(email_to_named_people_per_day=1)
    owner = await owner_in(client)
    await owner.post("/plan/heirs", heir())
    (row,) = await owner.listed("beneficiaries")
    resp, _ = await owner.post(f"/plan/heirs/{row['id']}/confirm-email", {})
    assert resp.headers["Location"] == "/plan/heirs?done=heir-asked#done"
    resp, _ = await owner.post(f"/plan/heirs/{row['id']}/confirm-email", {})
    assert resp.headers["Location"] == "/plan/heirs?done=heir-asked-later#done"
    assert "goes out within a day" in await owner.page("/plan/heirs?done=heir-asked-later")


async def test_an_heir_with_no_language_keeps_none_when_changed(client):
    owner = await owner_in(client)
    await owner.post("/plan/heirs", heir(locale=""))
    (row,) = await owner.listed("beneficiaries")
    assert row["locale"] is None
    edit = await owner.page(f"/plan/heirs/{row['id']}")
    assert '<option value="" selected>Not chosen: emails in English</option>' in edit
    await owner.post(f"/plan/heirs/{row['id']}", heir(locale="", relationship="son"))
    (changed,) = await owner.listed("beneficiaries")
    assert (changed["locale"], changed["relationship"]) == (None, "son")
