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
from models.flows.answers.declared import Action
from models.plan import objections
from models.plan.guardianships import open_addresses
from models.plan.guardianships.membership import Answerer
from models.plan.guardianships.open_addresses import UNREACHED
from models.plans import ACTIVE, APPROVED, DRAFT, FROZEN, PENDING, RELEASED, Plan


class Report(TypedDict):
    guardian_name: str | None
    note: str | None
    reason: str | None  # plans.REPORT_REASONS, or None when the guardian gave none
    created_at: datetime


class HeirRequest(TypedDict):
    name: str | None
    note: str | None
    created_at: datetime


class GuardianPage(TypedDict):
    """What the page shows a guardian: the plan's state and progress, never its contents."""

    guardian_id: str
    guardian_name: str
    wallet_address: str | None  # None: they answer with a passkey (models.flows.answers.passkey)
    passkeys: int  # how many passkeys they registered (a guardian without a wallet)
    invitation: str  # pending | accepted | declined
    reconfirm_asked_at: datetime | None  # asked to confirm they can still act, unanswered
    unresponsive_since: datetime | None  # that request went unanswered past its grace
    owner_name: str | None
    owner_wallet: str
    owner: str  # the words naming the owner: their name, or their wallet (users.known_as)
    plan_id: str | None
    status: str | None  # None: the owner has no plan yet
    verification_reason: str | None
    verification_started_at: datetime | None
    deadline: datetime | None  # the verification's, if it has one (models.plans.verification_deadline)
    on_timeout: str | None  # what happens at it: "release" or "wait"
    deadline_chosen: bool  # the owner chose the deadline or its outcome (False: the service's default)
    timed_out_at: datetime | None  # the deadline passed and the plan went on waiting
    accepted_at: datetime | None
    # In a verification an heir asked for: who asked, when, and their note (the round's first).
    heir_request: HeirRequest | None
    # Active, after the owner's check-in ended a verification: when, and until when a new
    # report waits (PLAN_REPORT_COOLDOWN_SECONDS; None: a report is possible now).
    vetoed_at: datetime | None
    report_from: datetime | None
    reports: list[Report]  # this round's
    objections: list[objections.Objection]  # this round's standing ones, theirs included
    objected_at: datetime | None  # their own standing objection this round
    approvals: int
    threshold: int
    approved_by_me: bool
    ready_at: datetime | None
    # Accepted, in verification: the latest sign-in with the owner's wallet this round (someone
    # holds the owner's key).
    owner_key_used_at: datetime | None
    # Once accepted and the plan released or ready: each heir's link delivery (names only).
    beneficiaries: list[claim_links.LinkDelivery]
    # Proposed heir addresses still running, and an heir's latest that could not be reached.
    address_changes: list[open_addresses.OpenChange]
    # The bounced heirs whose address too few guardians can correct: a sentence each
    # (models.address_links.uncorrectable, in the page's language; an heir whose new address
    # could not be reached is named in that change's words, address_links.unreachable).
    uncorrectable: list[str]
    short_of_guardians: bool  # too few accepted guardians to agree on a corrected address
    locale: str | None  # the guardian's language and zone as recorded: their page's
    time_zone: str | None
    asks: list[Action]  # what is asked of this guardian now


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
            " g.locale, g.time_zone,"
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
    status = None if plan is None else plan["status"]
    page = GuardianPage(
        **_who(row),
        plan_id=row["plan_id"],
        status=status,
        **_verification(plan if accepted and status == PENDING else None),
        **_moments(row, plan, accepted=accepted),
        heir_request=facts["heir_request"],
        report_from=None,
        reports=facts["reports"],
        objections=facts["objections"],
        objected_at=next(
            (o["created_at"] for o in facts["objections"] if o["guardian_id"] == row["id"]), None
        ),
        approvals=facts["approvals"],
        threshold=facts["threshold"],
        approved_by_me=facts["approved_by_me"],
        beneficiaries=facts["links"],
        address_changes=facts["changes"],
        **_heirs_unreachable(facts),
        asks=[],
    )
    vetoed = page["vetoed_at"]
    if vetoed is not None and now is not None and vetoed + report_cooldown > now:
        page["report_from"] = vetoed + report_cooldown
    page["asks"] = declared.asked_now(page=page)
    return page


class _Who(TypedDict):
    guardian_id: str
    guardian_name: str
    wallet_address: str | None
    passkeys: int
    invitation: str
    reconfirm_asked_at: datetime | None
    unresponsive_since: datetime | None
    accepted_at: datetime | None
    owner_name: str | None
    owner_wallet: str
    owner: str
    locale: str | None
    time_zone: str | None


def _who(row: dict[str, Any]) -> _Who:
    """The guardian, how they answer and where they stand; their owner, named."""
    accepted = row["accepted_at"] is not None
    return _Who(
        guardian_id=row["id"],
        guardian_name=row["name"],
        wallet_address=row["wallet_address"],
        passkeys=int(row["passkeys"]),
        invitation="accepted" if accepted else "declined" if row["declined_at"] else "pending",
        reconfirm_asked_at=row["reconfirm_asked_at"] if accepted else None,
        unresponsive_since=row["unresponsive_since"] if accepted else None,
        accepted_at=row["accepted_at"],
        owner_name=row["owner_name"],
        owner_wallet=row["owner_wallet"],
        owner=users.known_as(name=row["owner_name"], wallet=row["owner_wallet"]),
        locale=row["locale"],
        time_zone=row["time_zone"],
    )


class _Moments(TypedDict):
    deadline_chosen: bool
    vetoed_at: datetime | None
    ready_at: datetime | None
    owner_key_used_at: datetime | None


def _moments(row: dict[str, Any], plan: Plan | None, *, accepted: bool) -> _Moments:
    """When the plan's state changed, as a guardian who accepted sees it (to anyone else, only
    whether the owner chose the deadline)."""
    status = None if plan is None or not accepted else plan["status"]
    return _Moments(
        deadline_chosen=bool(plan and plan["deadline_chosen_at"]),
        vetoed_at=plan["last_vetoed_at"] if plan and status == ACTIVE else None,
        ready_at=plan["ready_at"] if plan and status == APPROVED else None,
        owner_key_used_at=row["owner_key_used_at"] if status in FROZEN else None,
    )


class _Verifying(TypedDict):
    verification_reason: str | None
    verification_started_at: datetime | None
    deadline: datetime | None
    on_timeout: str | None
    timed_out_at: datetime | None


def _verification(plan: Plan | None) -> _Verifying:
    """A running verification, to a guardian who accepted (None: nothing of it)."""
    if plan is None:
        return _Verifying(
            verification_reason=None,
            verification_started_at=None,
            deadline=None,
            on_timeout=None,
            timed_out_at=None,
        )
    return _Verifying(
        verification_reason=plan["verification_reason"],
        verification_started_at=plan["verification_started_at"],
        deadline=plans.verification_deadline(plan=plan),
        on_timeout=plan["on_verification_timeout"],
        timed_out_at=plan["verification_timed_out_at"],
    )


class _Unreachable(TypedDict):
    uncorrectable: list[str]
    short_of_guardians: bool


def _heirs_unreachable(facts: Facts) -> _Unreachable:
    """Too few accepted guardians to agree on a corrected address, and then the bounced heirs
    nobody can correct (an heir unreached at a new address is named in that change's words)."""
    if not facts["links"]:
        return _Unreachable(uncorrectable=[], short_of_guardians=False)
    short = address_links.short_of_guardians(accepted=facts["accepted_guardians"], needed=facts["threshold"])
    unreached = {c["beneficiary_id"] for c in facts["changes"] if c["status"] == UNREACHED}
    stuck = [
        b["name"] for b in facts["links"] if b["status"] == "bounced" and b["beneficiary_id"] not in unreached
    ]
    return _Unreachable(uncorrectable=stuck if short else [], short_of_guardians=short)


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
