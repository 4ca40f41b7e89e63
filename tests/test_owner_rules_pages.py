"""The owner's pages of the plan's rules through the app: /plan/settings (choices in words, the
API's seconds behind them, each consequence with its figures, refusals beside their fields),
activation, deactivation and the check-in that stops a release on the home page, the timeline,
the rehearsal of an heir's page, the export and account deletion. Signed in through the real
door; each change the JSON route's own model call, with the same timeline entry."""

from __future__ import annotations

import html
import io
import re
import zipfile
from typing import Any

from aiohttp.test_utils import TestClient

from tests.lifecycle_helpers import activate_plan, get_overview, report
from tests.plan_helpers import activity_rows, create
from tests.support.owner import Owner, beside, form_token, owner_in

ALL_SETTINGS = {
    "checkInIntervalSeconds": "7776000",
    "gracePeriodSeconds": "1209600",
    "cancelWindowSeconds": "259200",
    "verificationTimeoutSeconds": "2592000",
    "onVerificationTimeout": "release",
    "guardianThreshold": "",
    "notifyBeneficiariesOnActivation": "false",
    "allowBeneficiaryRequests": "false",
}


def text_of(page: str) -> str:
    """The page's words, tags dropped and whitespace folded, for sentences that carry markup."""
    return re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", "", page)))


def selected(page: str, field: str) -> str:
    found = re.search(rf'<select id="field-{field}" name="{field}".*?</select>', page, re.S)
    assert found, f"no select {field}"
    chosen = re.search(r'<option value="([^"]*)" selected>', found.group(0))
    assert chosen, f"nothing chosen in {field}"
    return chosen.group(1)


async def settings_of(client: TestClient, owner: Owner) -> dict[str, Any]:
    settings: dict[str, Any] = (await get_overview(client, owner.api))["settings"]
    return settings


async def test_the_settings_page_says_each_rule_in_words_with_its_figures(client):
    owner = await owner_in(client)
    page = await owner.page("/plan/settings")
    words = text_of(page)
    assert "If you do not check in for 90 days, we email you; 2 weeks later we ask your guardians." in words
    assert "Once your guardians approve, you still have 72 hours to stop the release by checking in" in words
    assert "Your guardians have 30 days to answer." in words
    # An objection lapses after PLAN_OBJECTION_CHECK_IN_SECONDS unless the owner checks in.
    assert "holds the deadline back, but only for 2 weeks after they say so" in words
    assert '<option value="7776000" selected>90 days</option>' in page
    assert '<option value="1209600" selected>2 weeks</option>' in page
    assert '<option value="">No deadline</option>' in page
    assert selected(page, "onVerificationTimeout") == "release"
    assert "An heir may ask your guardians, from their link, to check on you" in words


async def test_rules_saved_from_the_page_are_the_apis_with_the_same_timeline_entry(client, settings):
    owner = await owner_in(client)
    await owner.page("/plan/settings")
    chosen = {
        **ALL_SETTINGS,
        "checkInIntervalSeconds": "2592000",
        "gracePeriodSeconds": "0",
        "verificationTimeoutSeconds": "",
        "onVerificationTimeout": "wait",
        "allowBeneficiaryRequests": "false",
    }
    resp, _ = await owner.post("/plan/settings", chosen)
    assert resp.headers["Location"] == "/plan/settings?done=settings-saved#done"
    saved = await settings_of(client, owner)
    assert saved["checkInIntervalSeconds"] == 2592000 and saved["gracePeriodSeconds"] == 0
    assert saved["verificationTimeoutSeconds"] is None and saved["onVerificationTimeout"] == "wait"
    assert saved["allowBeneficiaryRequests"] is False
    words = text_of(await owner.page("/plan/settings?done=settings-saved"))
    assert "Your plan's rules were saved." in words
    assert "If you do not check in for 30 days, we email you and ask your guardians straight away." in words
    assert "Your guardians have no deadline" in words
    assert "Your heirs cannot ask for a verification" in words
    # The API's own change writes the same entry as the page's.
    resp = await client.patch("/api/legacy", json={"gracePeriodSeconds": 600}, headers=owner.api.headers)
    assert resp.status == 200
    kinds = [
        row["kind"] for row in activity_rows(settings, owner.api.user["id"]) if row["kind"] == "plan.updated"
    ]
    assert len(kinds) == 2


async def test_bounds_and_refusals_come_back_in_words_beside_their_fields(client):
    owner = await owner_in(client)
    before = await settings_of(client, owner)
    _, page = await owner.post(
        "/plan/settings",
        {**ALL_SETTINGS, "checkInIntervalSeconds": "30", "guardianThreshold": "3"},
        status=422,
    )
    assert beside(page, "checkInIntervalSeconds") == "Choose at least 1 minute."
    assert (
        beside(page, "guardianThreshold") == "Choose at most your number of guardians, or a majority of them."
    )
    assert "Nothing was saved yet" in page
    assert await settings_of(client, owner) == before
    _, page = await owner.post("/plan/settings", {**ALL_SETTINGS, "gracePeriodSeconds": "soon"}, status=422)
    assert beside(page, "gracePeriodSeconds")


async def test_an_activation_refused_by_readiness_says_each_reason_linked_to_its_page(client):
    owner = await owner_in(client)
    page = await owner.page("/plan")
    assert 'action="/plan/activate"' in page and "If you do not check in for 90 days" in text_of(page)
    resp, _ = await owner.post("/plan/activate", {})
    assert resp.headers["Location"] == "/plan?done=not-ready#done"
    page = await owner.page("/plan?done=not-ready")
    assert "Your plan could not be activated yet" in page
    assert "Add at least one beneficiary." in page and 'href="/plan/heirs">Go to your heirs</a>' in page
    assert 'href="/plan/guardians">Go to your guardians</a>' in page
    assert (await get_overview(client, owner.api))["status"] == "Draft"


async def test_activate_check_in_and_deactivate_from_the_home_page(client, settings):
    owner = await owner_in(client)
    setup = await activate_plan(client, owner.api)
    resp = await client.post("/api/legacy/deactivate", headers=owner.api.headers)
    assert resp.status == 200
    resp, _ = await owner.post("/plan/activate", {})
    assert resp.headers["Location"] == "/plan?done=activated#done"
    overview = await get_overview(client, owner.api)
    assert overview["status"] == "Active"
    page = await owner.page("/plan?done=activated")
    words = text_of(page)
    assert "Your plan is active." in words and "From now on: check in by" in words
    assert "we ask your guardians whether your plan should be released" in words
    assert 'action="/plan/deactivate"' in page and "This stops your check-ins and their reminders" in words
    kinds = [row["kind"] for row in activity_rows(settings, owner.api.user["id"])]
    assert kinds.count("plan.activated") == 2  # the API's, then the page's: the same entry
    # During a verification the check-in says plainly that it stops the release.
    resp = await report(client, setup, setup.guardians[0])
    assert resp.status == 200, await resp.text()
    page = await owner.page("/plan")
    assert "Checking in now stops the release of your plan" in page
    assert 'action="/plan/deactivate"' not in page
    resp, _ = await owner.post("/plan/check-in", {"stops": "release"})
    assert resp.headers["Location"] == "/plan?done=checked-in-stopped#done"
    assert (await get_overview(client, owner.api))["status"] == "Active"
    resp, _ = await owner.post("/plan/deactivate", {})
    assert resp.headers["Location"] == "/plan?done=deactivated#done"
    assert (await get_overview(client, owner.api))["status"] == "Draft"
    assert "plan.deactivated" in [row["kind"] for row in activity_rows(settings, owner.api.user["id"])]
    resp, _ = await owner.post("/plan/deactivate", {})
    assert resp.headers["Location"] == "/plan?done=not-active#done"


async def test_the_settings_cannot_change_during_a_verification_and_say_why(client):
    owner = await owner_in(client)
    setup = await activate_plan(client, owner.api)
    await report(client, setup, setup.guardians[0])
    page = await owner.page("/plan/settings")
    assert "<fieldset disabled>" in page and "Save these rules" not in page
    _, page = await owner.post("/plan/settings", ALL_SETTINGS, status=422)
    assert "can change only while it is a draft or active" in html.unescape(page)


async def test_the_timeline_newest_first_a_page_at_a_time_filtered_by_kind(client):
    owner = await owner_in(client)
    for index in range(26):
        await create(
            client,
            owner.api,
            "beneficiaries",
            name=f"Heir {index}",
            email=f"h{index}@example.org",
            allocationPercentage=1,
        )
    await client.patch("/api/legacy", json={"gracePeriodSeconds": 600}, headers=owner.api.headers)
    page = await owner.page("/plan/timeline")
    entries = re.findall(r'<li><time datetime="[^"]+">[^<]+</time>: <span dir="auto">([^<]+)</span>', page)
    assert len(entries) == 25
    assert entries[0] == "Plan settings changed"  # newest first
    older = re.search(r'<a href="(/plan/timeline\?cursor=[^"]+)">Older entries</a>', page)
    assert older
    rest = await owner.page(html.unescape(older.group(1)))
    assert len(re.findall(r"<li><time ", rest)) >= 2 and "Back to the newest" in rest
    only = await owner.page("/plan/timeline?entityType=plan")
    assert "Plan settings changed" in only and "Heir 3" not in only
    # What the page cannot read is the first page of everything, never an error.
    assert "Plan settings changed" in await owner.page("/plan/timeline?entityType=nonsense&cursor=zz")


async def test_the_export_is_the_owners_zip_behind_a_post(make_client, file_backend, settings):
    client = await make_client(**file_backend)
    owner = await owner_in(client)
    page = await owner.page("/plan/account")
    assert 'action="/plan/account/export"' in page and 'href="/plan/account/delete"' in page
    resp = await client.post("/plan/account/export", data={"formToken": form_token(page)})
    assert resp.status == 200 and resp.content_type == "application/zip"
    names = zipfile.ZipFile(io.BytesIO(await resp.read())).namelist()
    assert "plan.json" in names and "timeline.json" in names
    assert "legacy.exported" in [row["kind"] for row in activity_rows(settings, owner.api.user["id"])]
    assert (await client.get("/plan/account/export", allow_redirects=False)).status == 405


async def test_deleting_the_account_says_what_goes_and_confirms_with_a_wallet(client, settings):
    owner = await owner_in(client)
    page = await owner.page("/plan/account/delete")
    words = text_of(page)
    assert "links open nothing any more: they will never see" in words and "What is deleted" in words
    assert f'name="confirm" value="{owner.keypair.public_key}" checked' in page
    _, page = await owner.post("/plan/account/delete", {"confirm": "G" + "A" * 55}, status=422)
    assert "Choose one of your wallets below to confirm." in page
    resp, page = await owner.post("/plan/account/delete", {"confirm": owner.keypair.public_key}, status=200)
    assert "Your account is being deleted" in page
    resp = await client.get("/plan", allow_redirects=False)
    assert resp.status == 303 and resp.headers["Location"].startswith("/sign-in")
    assert (await client.get("/api/legacy", headers=owner.api.headers)).status == 401


async def test_an_account_cannot_be_deleted_mid_verification_and_the_page_says_why(client):
    owner = await owner_in(client)
    setup = await activate_plan(client, owner.api)
    await report(client, setup, setup.guardians[0])
    _, page = await owner.post("/plan/account/delete", {"confirm": owner.keypair.public_key}, status=409)
    assert "Check in first: that stops the verification." in page
    assert (await get_overview(client, owner.api))["status"] == "PendingVerification"


async def test_with_a_contract_the_deadline_can_only_wait_and_a_release_is_refused_in_words(make_client):
    from stellar_sdk import StrKey

    client = await make_client(service_contract_id=StrKey.encode_contract(bytes(32)))
    owner = await owner_in(client)
    page = await owner.page("/plan/settings")
    assert '<option value="release"' not in page
    assert selected(page, "onVerificationTimeout") == "wait"
    assert "nothing is released: you and your guardians are emailed once" in text_of(page)
    _, page = await owner.post(
        "/plan/settings", {**ALL_SETTINGS, "onVerificationTimeout": "release"}, status=422
    )
    assert beside(page, "onVerificationTimeout").startswith("This service releases a plan on-chain only")
