"""Each guardian's own page, `<PUBLIC_BASE_URL>/guardian/<token>`: whose plan, its state,
the verification running and what is asked of this guardian now.

The token (models.guardian_links) is a capability, like an heir's link: it shows the
page; acting still needs a proof (models.flows.answers.guardian). A signed answer needs
only who answers (`answerer_by_token`, one read), not the whole page. Nothing of the plan's
contents is shown, and no heir to a guardian who has not accepted. docs/pages.md "The
guardian's page".
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any, TypedDict

from core.db import Cursor, Pool, autocommit
from core.files.crypto import KeyRing
from core.stellar import sep7
from core.text.i18n import _
from models import activity, address_links, guardian_links, plans, sealed_text
from models.account import users
from models.claim import claim_links
from models.common import as_record, live_account
from models.flows.answers import declared
from models.flows.answers.shown import (
    Action,
    Guardian,
    GuardianPage,
    HeirRequest,
    Heirs,
    PlanState,
    Report,
    Verification,
)
from models.plan import objections
from models.plan.guardianships import open_addresses
from models.plan.guardianships.membership import Answerer
from models.plan.guardianships.open_addresses import UNREACHED
from models.plans import ACTIVE, APPROVED, DRAFT, FROZEN, PENDING, RELEASED, Plan


async def answerer_by_token(pool: Pool, *, token: str) -> Answerer | None:
    """Who answers behind a guardian's link, in one read (a signed answer needs no more of the
    page); None for an unknown token."""
    async with autocommit(pool) as cur:
        await cur.execute(
            "SELECT g.id::text AS guardian_id, g.wallet_address, g.accepted_at, g.user_id::text AS owner_id,"
            " g.locale, g.time_zone,"
            " o.wallet_address AS owner_wallet, p.id::text AS plan_id, p.status,"
            " coalesce(p.verification_round, 0) AS verification_round"
            " FROM guardians g JOIN users o ON o.id = g.user_id LEFT JOIN plans p ON p.user_id = g.user_id"
            f" WHERE g.page_token_digest = %s AND {live_account(alias='o')}",
            (guardian_links.digest(token=token),),
        )
        row = await cur.fetchone()
    return None if row is None else as_record(Answerer, row=row)


class Facts(TypedDict):
    """What a guardian's page is made of, as loaded (queries and decryption, nothing decided):
    each part only where the guardian may learn it (`_learns_more` and the rules below)."""

    guardian: dict[str, Any]  # their row, with their owner's name and wallet (opened)
    plan: Plan | None
    threshold: int
    reports: list[Report]
    approvals: int
    approved_by_me: bool
    objections: list[objections.Objection]  # this round's standing ones
    objection_window: datetime | None  # when the guardian's own objection this round lapses (lapsed)
    heir_request: HeirRequest | None
    links: list[claim_links.LinkDelivery]
    changes: list[open_addresses.OpenChange]
    accepted_guardians: int


async def open_by_token(
    pool: Pool,
    ring: KeyRing,
    *,
    token: str,
    now: datetime | None = None,
    report_cooldown_seconds: int = 0,
) -> GuardianPage | None:
    """The page behind a guardian's link, by the token's digest; None for anything else.
    `report_cooldown_seconds` (PLAN_REPORT_COOLDOWN_SECONDS): how long after the owner's check-in a new
    report waits, which the page says rather than offer a report it would refuse."""
    facts = await load(pool, ring, token=token)
    if facts is None:
        return None
    return seen(facts=facts, now=now, report_cooldown=timedelta(seconds=report_cooldown_seconds))


async def load(pool: Pool, ring: KeyRing, *, token: str) -> Facts | None:
    """The facts behind a guardian's link (None for an unknown token): queries only."""
    async with autocommit(pool) as cur:
        await cur.execute(
            "SELECT g.id::text AS id, g.user_id::text AS owner_id,"
            f" {sealed_text.select_list(table='guardians', alias='g', columns=('name',))},"
            " g.wallet_address, g.accepted_at, g.declined_at, g.reconfirm_asked_at, g.unresponsive_since,"
            " g.locale, g.time_zone, g.grammatical_gender, o.grammatical_gender AS owner_gender,"
            " (SELECT count(*) FROM guardian_passkeys k WHERE k.guardian_id = g.id) AS passkeys,"
            f" {sealed_text.select_list(table='users', alias='o', columns=('name',), prefix='owner_')},"
            " o.wallet_address AS owner_wallet, p.id::text AS plan_id,"
            f" {activity.KEY_USED_AT_SQL} AS owner_key_used_at"
            " FROM guardians g JOIN users o ON o.id = g.user_id LEFT JOIN plans p ON p.user_id = g.user_id"
            f" WHERE g.page_token_digest = %s AND {live_account(alias='o')}",
            (guardian_links.digest(token=token),),
        )
        sealed_row = await cur.fetchone()
        if sealed_row is None:
            return None
        row = sealed_text.open_row(ring, table="guardians", row=sealed_row)
        row = sealed_text.open_row(ring, table="users", row=row, id_key="owner_id", prefix="owner_")
        plan = None if row["plan_id"] is None else await plans.get_by_id(cur, plan_id=row["plan_id"])
        facts = Facts(
            guardian=row,
            plan=plan,
            threshold=0,
            reports=[],
            approvals=0,
            approved_by_me=False,
            objections=[],
            objection_window=None,
            heir_request=None,
            links=[],
            changes=[],
            accepted_guardians=0,
        )
        if plan is not None and _learns_more(accepted_at=row["accepted_at"], plan=plan):
            await _load_more(cur, ring, facts=facts, plan=plan)
    return facts


async def _load_more(cur: Cursor, ring: KeyRing, *, facts: Facts, plan: Plan) -> None:
    """What only a guardian who accepted learns: the round, its objections, the heir who asked,
    and, once the heirs hold their links, the links and the changes of address."""
    guardian_id = facts["guardian"]["id"]
    facts["threshold"] = await plans.threshold_now(cur, plan=plan)
    facts["reports"], facts["approvals"], facts["approved_by_me"] = await _round(cur, ring, plan, guardian_id)
    if _objections_shown(plan):
        facts["objections"] = await objections.shown(cur, ring, plan=plan)
    if plan["status"] == PENDING:
        facts["objection_window"] = await objections.window_of(cur, plan=plan, guardian_id=guardian_id)
    if _heir_asked(plan):
        facts["heir_request"] = await _heir_request(cur, ring, plan)
    if _heirs_hold_links(plan):
        deliveries = await claim_links.deliveries(cur, ring, plan_ids=[plan["id"]])
        facts["links"] = deliveries.get(str(plan["id"]), [])
        facts["changes"] = await open_addresses.open_changes(cur, plan_id=plan["id"], guardian_id=guardian_id)
        facts["accepted_guardians"], _ = await plans.acceptance(cur, plan=plan)


def _learns_more(*, accepted_at: datetime | None, plan: Plan) -> bool:
    """Only a guardian who accepted learns more than the plan's state, as on the JSON route: the
    link may have reached a mistyped address, and a report's note is nobody else's to read."""
    return accepted_at is not None and plan["status"] != DRAFT


def _objections_shown(plan: Plan) -> bool:
    return plan["status"] in FROZEN


def _heir_asked(plan: Plan) -> bool:
    return plan["status"] == PENDING and plan["verification_reason"] == "beneficiary_request"


def seen(*, facts: Facts, now: datetime | None, report_cooldown: timedelta) -> GuardianPage:
    """What the guardian sees and may answer, from the facts and the time alone (no database)."""
    row, plan = facts["guardian"], facts["plan"]
    accepted = row["accepted_at"] is not None
    page = GuardianPage(
        plan_id=row["plan_id"],
        status=None if plan is None else plan["status"],
        owner=users.known_as(name=row["owner_name"], wallet=row["owner_wallet"]),
        owner_gender=row.get("owner_gender"),
        locale=row["locale"],
        time_zone=row["time_zone"],
        guardian=_guardian(row),
        plan=_plan_state(facts, plan if accepted else None),
        verification=_verification(facts, plan if accepted else None, now=now),
        heirs=_heirs(facts),
        asks=[],
    )
    vetoed = page["plan"]["vetoed_at"]
    if vetoed is not None and now is not None and vetoed + report_cooldown > now:
        page["plan"]["report_from"] = vetoed + report_cooldown
    page["asks"] = declared.asked_now(page=page)
    return page


def _guardian(row: dict[str, Any]) -> Guardian:
    """The guardian, how they answer and where they stand."""
    accepted = row["accepted_at"] is not None
    return Guardian(
        id=row["id"],
        name=row["name"],
        wallet_address=row["wallet_address"],
        passkeys=int(row["passkeys"]),
        invitation="accepted" if accepted else "declined" if row["declined_at"] else "pending",
        accepted_at=row["accepted_at"],
        reconfirm_asked_at=row["reconfirm_asked_at"] if accepted else None,
        unresponsive_since=row["unresponsive_since"] if accepted else None,
        grammatical_gender=row.get("grammatical_gender"),
    )


def _plan_state(facts: Facts, plan: Plan | None) -> PlanState:
    """The owner and the plan's moments, as a guardian who accepted sees them (`plan` None: not
    accepted; then only whether the owner chose the deadline)."""
    row, status = facts["guardian"], None if plan is None else plan["status"]
    return PlanState(
        owner_name=row["owner_name"],
        owner_wallet=row["owner_wallet"],
        threshold=facts["threshold"],
        deadline_chosen=bool(facts["plan"] and facts["plan"]["deadline_chosen_at"]),
        vetoed_at=plan["last_vetoed_at"] if plan and status == ACTIVE else None,
        report_from=None,
        ready_at=plan["ready_at"] if plan and status == APPROVED else None,
        owner_key_used_at=row["owner_key_used_at"] if status in FROZEN else None,
    )


def _verification(facts: Facts, plan: Plan | None, *, now: datetime | None) -> Verification:
    """The round, to a guardian who accepted; its dates only while it runs."""
    running = plan if plan is not None and plan["status"] == PENDING else None
    mine, window = facts["guardian"]["id"], facts["objection_window"]
    return Verification(
        reason=running["verification_reason"] if running else None,
        started_at=running["verification_started_at"] if running else None,
        deadline=plans.verification_deadline(plan=running) if running else None,
        on_timeout=running["on_verification_timeout"] if running else None,
        timed_out_at=running["verification_timed_out_at"] if running else None,
        heir_request=facts["heir_request"],
        reports=facts["reports"],
        objections=facts["objections"],
        objected_at=next((o["created_at"] for o in facts["objections"] if o["guardian_id"] == mine), None),
        objection_lapsed_at=window if running and window and now is not None and window <= now else None,
        approvals=facts["approvals"],
        approved_by_me=facts["approved_by_me"],
    )


def _heirs(facts: Facts) -> Heirs:
    """The heirs' links and addresses; when too few accepted guardians can agree on a corrected
    address, the bounced heirs nobody can correct (an heir unreached at a new address is named
    in that change's words)."""
    links, changes = facts["links"], facts["changes"]
    short = bool(links) and address_links.short_of_guardians(
        accepted=facts["accepted_guardians"], needed=facts["threshold"]
    )
    unreached = {c["beneficiary_id"] for c in changes if c["status"] == UNREACHED}
    stuck = [b["name"] for b in links if b["status"] == "bounced" and b["beneficiary_id"] not in unreached]
    return Heirs(links=links, changes=changes, uncorrectable=stuck if short else [], short_of_guardians=short)


def _heirs_hold_links(plan: Plan) -> bool:
    return plan["status"] == RELEASED or (plan["status"] == APPROVED and plan["ready_at"] is not None)


async def _heir_request(cur: Cursor, ring: KeyRing, plan: Plan) -> HeirRequest | None:
    """The heir's request that started this round: their name and note, as the guardians'
    email quotes them."""
    await cur.execute(
        f"SELECT r.id, {sealed_text.select_list(table='heir_requests', alias='r')}, r.created_at,"
        " b.id AS b_id,"
        f" {sealed_text.select_list(table='beneficiaries', alias='b', columns=('name',), prefix='b_')}"
        " FROM heir_requests r LEFT JOIN beneficiaries b ON b.id = r.beneficiary_id"
        " WHERE r.plan_id = %s AND r.round = %s ORDER BY r.created_at, r.id LIMIT 1",
        (plan["id"], plan["verification_round"]),
    )
    row = await cur.fetchone()
    if row is None:
        return None
    opened = sealed_text.open_row(ring, table="heir_requests", row=row)
    opened = sealed_text.open_row(ring, table="beneficiaries", row=opened, id_key="b_id", prefix="b_")
    return HeirRequest(name=opened["b_name"], note=opened["note"], created_at=row["created_at"])


async def _round(cur: Cursor, ring: KeyRing, plan: Plan, guardian_id: str) -> tuple[list[Report], int, bool]:
    """This verification round's reports (who, when, their note) and approvals."""
    if plan["status"] not in (PENDING, APPROVED, RELEASED) or plan["verification_round"] == 0:
        return [], 0, False
    db = cur
    await db.execute(
        f"SELECT id::text AS id, {sealed_text.select_list(table='plan_reports', alias='r')}, reason,"
        " created_at FROM plan_reports r WHERE plan_id = %s AND round = %s ORDER BY created_at, id",
        (plan["id"], plan["verification_round"]),
    )
    reports = [
        as_record(
            Report,
            row={
                k: v for k, v in sealed_text.open_row(ring, table="plan_reports", row=r).items() if k != "id"
            },
        )
        for r in await db.fetchall()
    ]
    await db.execute(
        "SELECT count(*) AS n, bool_or(guardian_id = %s) AS mine FROM plan_approvals"
        " WHERE plan_id = %s AND round = %s AND voided_at IS NULL",
        (guardian_id, plan["id"], plan["verification_round"]),
    )
    counts = await db.fetchone()
    return reports, int(counts["n"]), bool(counts["mine"])


def message(*, page: GuardianPage, action: Action, heir: str | None = None) -> str:
    """The words a wallet shows for this request (SEP-7 `msg`): the verb and the people, as the
    answer's declaration words them."""
    words = declared.BY_NAME[action].message
    assert words is not None, "not an answer a wallet signs"
    return sep7.message(_(words), owner=page["owner"], heir=heir)
