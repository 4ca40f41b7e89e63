"""What a guardian's page shows, in sections: who the guardian is and how they answer, the
plan's state and its moments, the verification running, the heirs' links and addresses, and
what is asked now. Made by models.flows.guardian_pages (`seen`, from the facts it loads), read
by the page, by each answer's declaration (models.flows.answers.declared) and by the one check
every answer goes through (models.flows.answers.asking). Never the plan's contents."""

from __future__ import annotations

import typing
from datetime import datetime
from typing import Literal, TypedDict

from models.claim import claim_links
from models.plan import objections
from models.plan.guardianships import open_addresses

Action = Literal[
    "accept",
    "decline",
    "reconfirm",
    "report",
    "approve",
    "object",
    "withdraw_objection",
    "resend",
    "propose_address",
    "suggest_address",
    "agree_address",
    "stop_address",
    "add_passkey",
]
ACTIONS: tuple[Action, ...] = typing.get_args(Action)


class Report(TypedDict):
    guardian_name: str | None
    note: str | None
    reason: str | None  # plans.REPORT_REASONS, or None when the guardian gave none
    created_at: datetime


class HeirRequest(TypedDict):
    name: str | None
    note: str | None
    created_at: datetime


class Guardian(TypedDict):
    """The guardian and where they stand."""

    id: str
    name: str
    wallet_address: str | None  # None: they answer with a passkey (models.flows.answers.passkey)
    passkeys: int  # how many passkeys they registered (a guardian without a wallet)
    invitation: str  # pending | accepted | declined
    accepted_at: datetime | None
    reconfirm_asked_at: datetime | None  # asked to confirm they can still act, unanswered
    unresponsive_since: datetime | None  # that request went unanswered past its grace
    grammatical_gender: str | None  # how we refer to them, as they or the owner chose; None: not said


class PlanState(TypedDict):
    """The plan's owner and its moments, as this guardian may see them."""

    owner_name: str | None
    owner_wallet: str
    threshold: int  # the approvals (and agreements to a corrected address) needed
    deadline_chosen: bool  # the owner chose the deadline or its outcome (False: the service's default)
    # Active, after the owner's check-in ended a verification: when, and until when a new
    # report waits (PLAN_REPORT_COOLDOWN_SECONDS; None: a report is possible now).
    vetoed_at: datetime | None
    report_from: datetime | None
    ready_at: datetime | None
    # Accepted, in verification: the latest sign-in with the owner's wallet this round (someone
    # holds the owner's key).
    owner_key_used_at: datetime | None


class Verification(TypedDict):
    """The verification running, to a guardian who accepted (empty otherwise)."""

    reason: str | None
    started_at: datetime | None
    deadline: datetime | None  # if it has one (models.plans.verification_deadline)
    on_timeout: str | None  # what happens at it: "release" or "wait"
    timed_out_at: datetime | None  # the deadline passed and the plan went on waiting
    # In a verification an heir asked for: who asked, when, and their note (the round's first).
    heir_request: HeirRequest | None
    reports: list[Report]  # this round's
    objections: list[objections.Objection]  # this round's standing ones, theirs included
    objected_at: datetime | None  # their own standing objection this round
    # Their objection this round lapsed (the owner did not check in by then): they cannot object
    # again in it (models.plan.objections `record`).
    objection_lapsed_at: datetime | None
    approvals: int
    approved_by_me: bool


class Heirs(TypedDict):
    """Once accepted and the plan released or ready: the heirs' links and their addresses."""

    links: list[claim_links.LinkDelivery]  # each heir's link delivery (names only)
    # Proposed heir addresses still running, and an heir's latest that could not be reached.
    changes: list[open_addresses.OpenChange]
    # The bounced heirs whose address too few guardians can correct: a sentence each
    # (models.address_links.uncorrectable, in the page's language; an heir whose new address
    # could not be reached is named in that change's words, address_links.unreachable).
    uncorrectable: list[str]
    short_of_guardians: bool  # too few accepted guardians to agree on a corrected address


class GuardianPage(TypedDict):
    """What the page shows a guardian: the plan's state and progress, never its contents."""

    plan_id: str | None
    status: str | None  # None: the owner has no plan yet
    owner: str  # the words naming the owner: their name, or their wallet (users.known_as)
    owner_gender: str | None  # how to refer to the owner (core.text.gender.GENDERS); None: not said
    locale: str | None  # the guardian's language and zone as recorded: their page's
    time_zone: str | None
    guardian: Guardian
    plan: PlanState
    verification: Verification
    heirs: Heirs
    asks: list[Action]  # what is asked of this guardian now
