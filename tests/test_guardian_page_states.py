"""What a guardian sees and may answer, from the facts and the time alone
(models.flows.guardian_pages.seen): one test per state, no database. The page through the
real app: tests/test_guardian_page.py."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any, get_type_hints

from models.flows import guardian_pages
from models.plans import Plan

NOW = datetime(2026, 11, 28, 12, tzinfo=UTC)
ME = "00000000-0000-4000-8000-000000000001"
OTHER = "00000000-0000-4000-8000-000000000002"
HEIR = "00000000-0000-4000-8000-00000000000a"


def _plan(status: str, **values: Any) -> Plan:
    plan: dict[str, Any] = dict.fromkeys(get_type_hints(Plan))
    plan.update(id="p1", status=status, verification_round=1, deadline_chosen_at=None, ready_at=None)
    plan.update(values)
    return plan  # type: ignore[return-value]


def _facts(plan: Plan | None, *, accepted: bool = True, **values: Any) -> guardian_pages.Facts:
    guardian = {
        "id": ME,
        "name": "Grace",
        "wallet_address": "G" + "A" * 55,
        "passkeys": 0,
        "accepted_at": NOW - timedelta(days=30) if accepted else None,
        "declined_at": None,
        "reconfirm_asked_at": None,
        "unresponsive_since": None,
        "owner_name": "Olive",
        "owner_wallet": "G" + "B" * 55,
        "plan_id": None if plan is None else "p1",
        "owner_key_used_at": None,
        "locale": "en",
        "time_zone": "UTC",
    }
    guardian.update(values.pop("guardian", {}))
    facts: dict[str, Any] = {
        "guardian": guardian,
        "plan": plan,
        "threshold": 2,
        "reports": [],
        "approvals": 0,
        "approved_by_me": False,
        "objections": [],
        "objection_window": None,
        "heir_request": None,
        "links": [],
        "changes": [],
        "accepted_guardians": 2,
    }
    facts.update(values)
    return facts  # type: ignore[return-value]


def _seen(facts: guardian_pages.Facts, *, cooldown: int = 0) -> guardian_pages.GuardianPage:
    return guardian_pages.seen(facts=facts, now=NOW, report_cooldown=timedelta(seconds=cooldown))


def test_no_plan_yet_asks_nothing() -> None:
    page = _seen(_facts(None))
    assert page["status"] is None and page["asks"] == [] and page["owner"] == "Olive"


def test_invited_to_a_draft_or_active_plan_may_accept_or_decline() -> None:
    for status in ("Draft", "Active"):
        page = _seen(_facts(_plan(status), accepted=False))
        assert page["guardian"]["invitation"] == "pending" and page["asks"] == ["accept", "decline"]


def test_declined_may_still_accept() -> None:
    page = _seen(_facts(_plan("Active"), accepted=False, guardian={"declined_at": NOW}))
    assert page["guardian"]["invitation"] == "declined" and page["asks"] == ["accept", "decline"]


def test_not_accepted_in_a_verification_asks_nothing_and_learns_nothing_of_it() -> None:
    plan = _plan("PendingVerification", verification_started_at=NOW, verification_reason="inactivity")
    page = _seen(_facts(plan, accepted=False, guardian={"owner_key_used_at": NOW}))
    assert page["asks"] == []
    assert page["verification"]["started_at"] is None and page["plan"]["owner_key_used_at"] is None


def test_accepted_in_an_active_plan_may_report_suggest_an_address_or_decline() -> None:
    page = _seen(_facts(_plan("Active")))
    assert page["asks"] == ["report", "suggest_address", "decline"]


def test_after_a_check_in_a_report_waits_for_its_cooldown() -> None:
    plan = _plan("Active", last_vetoed_at=NOW - timedelta(hours=1))
    page = _seen(_facts(plan), cooldown=86_400)
    assert page["plan"]["report_from"] == NOW + timedelta(hours=23) and "report" not in page["asks"]
    assert "report" in _seen(_facts(plan), cooldown=60)["asks"]


def test_asked_to_reconfirm_may_confirm() -> None:
    page = _seen(_facts(_plan("Active"), guardian={"reconfirm_asked_at": NOW}))
    assert page["asks"][0] == "reconfirm"


def test_in_a_verification_may_approve_or_object_and_sees_its_deadline() -> None:
    plan = _plan(
        "PendingVerification",
        verification_started_at=NOW - timedelta(days=1),
        verification_timeout_seconds=86_400 * 14,
        verification_reason="guardian_report",
        on_verification_timeout="release",
    )
    page = _seen(_facts(plan, guardian={"owner_key_used_at": NOW}))
    assert page["asks"] == ["approve", "object", "suggest_address"]
    assert (
        page["verification"]["deadline"] == NOW + timedelta(days=13)
        and page["verification"]["on_timeout"] == "release"
    )
    assert page["plan"]["owner_key_used_at"] == NOW


def test_after_objecting_may_withdraw_and_not_object_again() -> None:
    plan = _plan("PendingVerification")
    mine = {"guardian_id": ME, "guardian_name": "Grace", "note": None, "created_at": NOW}
    page = _seen(_facts(plan, objections=[mine]))
    assert page["verification"]["objected_at"] == NOW
    assert "object" not in page["asks"] and "withdraw_objection" in page["asks"]


def test_after_approving_may_not_approve_again() -> None:
    page = _seen(_facts(_plan("PendingVerification"), approved_by_me=True, approvals=1))
    assert "approve" not in page["asks"] and page["verification"]["approvals"] == 1


def test_released_with_heirs_may_resend_and_propose_and_answer_a_running_change() -> None:
    links = [{"beneficiary_id": HEIR, "name": "Ann", "status": "sent", "at": NOW}]
    change = {
        "id": "c1",
        "beneficiary_id": HEIR,
        "status": "pending",
        "approvals": 1,
        "hold_until": None,
        "agreed_by_me": False,
    }
    page = _seen(_facts(_plan("Released"), links=links, changes=[change]))
    assert page["asks"] == ["resend", "propose_address", "agree_address", "stop_address"]
    assert page["heirs"]["uncorrectable"] == [] and not page["heirs"]["short_of_guardians"]


def test_short_of_guardians_names_the_bounced_heirs_nobody_can_correct() -> None:
    links = [
        {"beneficiary_id": HEIR, "name": "Ann", "status": "bounced", "at": NOW},
        {"beneficiary_id": OTHER, "name": "Ben", "status": "bounced", "at": NOW},
    ]
    unreached = {
        "id": "c1",
        "beneficiary_id": OTHER,
        "status": "undeliverable",
        "approvals": 2,
        "hold_until": None,
        "agreed_by_me": True,
    }
    page = _seen(_facts(_plan("Released"), links=links, changes=[unreached], accepted_guardians=1))
    assert page["heirs"]["short_of_guardians"] and page["heirs"]["uncorrectable"] == ["Ann"]


def test_approved_and_ready_shows_when() -> None:
    page = _seen(_facts(_plan("Approved", ready_at=NOW)))
    assert page["plan"]["ready_at"] == NOW and page["asks"] == ["suggest_address"]


def test_a_passkey_guardian_may_add_a_passkey_until_the_release() -> None:
    passkey = {"wallet_address": None, "passkeys": 1}
    assert _seen(_facts(_plan("Active"), guardian=passkey))["asks"][-1] == "add_passkey"
    assert "add_passkey" not in _seen(_facts(_plan("Released"), guardian=passkey))["asks"]


def test_after_an_objection_lapsed_may_approve_but_not_object_again() -> None:
    plan = _plan("PendingVerification")
    page = _seen(_facts(plan, objection_window=NOW - timedelta(minutes=1)))
    assert page["verification"]["objection_lapsed_at"] == NOW - timedelta(minutes=1)
    assert "object" not in page["asks"] and "approve" in page["asks"]
    assert "withdraw_objection" not in page["asks"]


def test_after_withdrawing_an_objection_still_running_may_object_again() -> None:
    page = _seen(_facts(_plan("PendingVerification"), objection_window=NOW + timedelta(days=3)))
    assert page["verification"]["objection_lapsed_at"] is None and "object" in page["asks"]
