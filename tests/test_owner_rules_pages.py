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
from stellar_sdk import Keypair

from tests.lifecycle_helpers import activate_plan, approve_plan, get_overview, report
from tests.plan_helpers import activity_rows, create
from tests.support.owner import form_token
from tests.test_owner_plan_pages import Owner, beside, owner_in

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
    kinds = [row["kind"] for row in activity_rows(settings, owner.api.user["id"]) if row["kind"] == "plan.updated"]
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
    assert beside(page, "guardianThreshold") == "Choose at most your number of guardians, or a majority of them."
    assert "Nothing was saved yet" in page
    assert await settings_of(client, owner) == before
    _, page = await owner.post("/plan/settings", {**ALL_SETTINGS, "gracePeriodSeconds": "soon"}, status=422)
    assert beside(page, "gracePeriodSeconds")
