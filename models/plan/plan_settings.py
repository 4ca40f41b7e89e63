"""What the owner configures (settings, within the operator's bounds) and what blocks activation.

Kept apart from the transitions (models.flows.lifecycle, models.flows.release_path): these change
with the plan's settings and readiness rules, the transitions with the state machine.
Decisions: docs/lifecycle.md.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any, TypedDict

from arq.connections import ArqRedis

from core.db import Cursor, Pool, transaction
from core.errors import Conflict, validation_error
from core.files.crypto import KeyRing
from core.settings import Settings
from core.text.i18n import N_
from models import plans, sealed_text
from models.common import as_record, wire_names
from models.contents import early_links
from models.delivery import history, outbox
from models.delivery.announce import Entry, announce
from models.delivery.budget import Budget, waiting
from models.plans import ACTIVE, DRAFT, SETTINGS_COLUMNS, get_or_create, update_schedule


class Facts(TypedDict):
    """What activation checks and the overview counts, read in one statement."""

    beneficiaries: int
    allocation_total: Any
    guardians: int
    standing_guardians: int  # guardians who have not declined: a majority counts these
    assets: int
    archive_items: int
    messages: int
    has_owner_email: bool  # the address itself is sealed: only whether there is one
    has_owner_name: bool  # guardians and heirs are told whose plan it is by this name
    owner_email_bounced: bool  # the latest word from the provider on it: bounced or marked as spam
    accepted_guardians: int
    unanswered_guardians: list[str]  # names, oldest first: invited, no answer yet
    declined_guardians: list[str]
    unresponsive_guardians: list[str]  # names: asked to confirm they can still act, no answer
    walletless_guardians: list[str]  # names: they answer with a passkey, which cannot sign on-chain
    owner_wallets: int
    # Guardians who are also beneficiaries (same email, or a beneficiary's wallet), by name.
    guardians_also_heirs: list[str]
    # Heirs whose address bounced (or was marked as spam), and those who never confirmed theirs.
    bounced_heirs: list[str]
    unconfirmed_heirs: list[str]
    # Invitations and confirmation requests waiting for the day's budget (models.delivery.budget).
    deferred_emails: int


async def facts(cur: Cursor, ring: KeyRing, *, user_id: str) -> Facts:
    """Counts in one statement; the names of the guardians who have not accepted (sealed at rest,
    opened here) in a second one, only when there are some."""
    await cur.execute(
        "SELECT (SELECT count(*) FROM beneficiaries WHERE user_id = u.id) AS beneficiaries,"
        " (SELECT COALESCE(sum(allocation_percentage), 0) FROM beneficiaries WHERE user_id = u.id)"
        " AS allocation_total,"
        " (SELECT count(*) FROM guardians WHERE user_id = u.id) AS guardians,"
        " (SELECT count(*) FROM guardians WHERE user_id = u.id AND declined_at IS NULL)"
        " AS standing_guardians,"
        " (SELECT count(*) FROM assets WHERE user_id = u.id) AS assets,"
        " (SELECT count(*) FROM archive_items WHERE user_id = u.id) AS archive_items,"
        " (SELECT count(*) FROM messages WHERE user_id = u.id) AS messages,"
        " (SELECT count(*) FROM guardians WHERE user_id = u.id AND accepted_at IS NOT NULL)"
        " AS accepted_guardians,"
        " (SELECT count(*) FROM user_wallets WHERE user_id = u.id) AS owner_wallets,"
        " (SELECT count(*) FROM guardians WHERE user_id = u.id AND unresponsive_since IS NOT NULL)"
        " AS unresponsive,"
        " (SELECT count(*) FROM guardians WHERE user_id = u.id AND wallet_address IS NULL) AS walletless,"
        f" {waiting(owner='u.id')} AS deferred_emails,"
        " u.email_sealed IS NOT NULL AS has_owner_email, u.name_sealed IS NOT NULL AS has_owner_name,"
        f" {history.address_bounced(recipient_type='owner', alias='u')} AS owner_email_bounced"
        " FROM users u WHERE u.id = %s",
        (user_id,),
    )
    row = dict(await cur.fetchone())
    unresponsive = row.pop("unresponsive")
    walletless = row.pop("walletless")
    known = as_record(
        Facts,
        row={
            **row,
            "unanswered_guardians": [],
            "declined_guardians": [],
            "guardians_also_heirs": [],
            "unresponsive_guardians": [],
            "walletless_guardians": [],
            "bounced_heirs": [],
            "unconfirmed_heirs": [],
        },
    )
    if known["beneficiaries"]:
        await cur.execute(
            f"SELECT b.id, {sealed_text.select_list(table='beneficiaries', alias='b', columns=('name',))},"
            f" {history.address_bounced(recipient_type='beneficiary', alias='b')} AS bounced,"
            " b.email_confirmed_at IS NOT NULL"
            " AS confirmed FROM beneficiaries b WHERE b.user_id = %s ORDER BY b.created_at, b.id",
            (user_id,),
        )
        for heir in await cur.fetchall():
            name = sealed_text.open_row(ring, table="beneficiaries", row=heir)["name"]
            if heir["bounced"]:
                known["bounced_heirs"].append(name)
            elif not heir["confirmed"]:
                known["unconfirmed_heirs"].append(name)
    if known["guardians"] and known["beneficiaries"]:
        known["guardians_also_heirs"] = await _guardians_also_heirs(cur, ring, user_id)
    if unresponsive:
        await cur.execute(
            "SELECT g.id,"
            f" {sealed_text.select_list(table='guardians', alias='g', columns=('name',))}"
            " FROM guardians g"
            " WHERE g.user_id = %s AND g.unresponsive_since IS NOT NULL ORDER BY g.unresponsive_since, g.id",
            (user_id,),
        )
        known["unresponsive_guardians"] = [
            sealed_text.open_row(ring, table="guardians", row=guardian)["name"]
            for guardian in await cur.fetchall()
        ]
    if walletless:
        await cur.execute(
            f"SELECT g.id, {sealed_text.select_list(table='guardians', alias='g', columns=('name',))}"
            " FROM guardians g WHERE g.user_id = %s AND g.wallet_address IS NULL ORDER BY g.created_at, g.id",
            (user_id,),
        )
        known["walletless_guardians"] = [
            sealed_text.open_row(ring, table="guardians", row=guardian)["name"]
            for guardian in await cur.fetchall()
        ]
    if known["accepted_guardians"] < known["guardians"]:
        await cur.execute(
            "SELECT g.id,"
            f" {sealed_text.select_list(table='guardians', alias='g', columns=('name',))},"
            " g.declined_at"
            " FROM guardians g WHERE g.user_id = %s AND g.accepted_at IS NULL ORDER BY g.created_at, g.id",
            (user_id,),
        )
        for guardian in await cur.fetchall():
            name = sealed_text.open_row(ring, table="guardians", row=guardian)["name"]
            (
                known["declined_guardians"] if guardian["declined_at"] else known["unanswered_guardians"]
            ).append(name)
    return known


async def _guardians_also_heirs(cur: Cursor, ring: KeyRing, user_id: str) -> list[str]:
    """Names of the guardians who are also beneficiaries: the same email address (compared as
    the blind index compares it, trimmed and case-insensitive; the indexes are bound to their
    table, so the sealed addresses are opened here) or a beneficiary's wallet."""
    await cur.execute(
        f"SELECT g.id, {sealed_text.select_list(table='guardians', alias='g', columns=('name', 'email'))},"
        " EXISTS (SELECT 1 FROM beneficiaries b WHERE b.user_id = g.user_id"
        " AND b.wallet_address = g.wallet_address) AS heir_wallet"
        " FROM guardians g WHERE g.user_id = %s ORDER BY g.created_at, g.id",
        (user_id,),
    )
    guardians = [sealed_text.open_row(ring, table="guardians", row=row) for row in await cur.fetchall()]
    await cur.execute(
        "SELECT b.id,"
        f" {sealed_text.select_list(table='beneficiaries', alias='b', columns=('email',))}"
        " FROM beneficiaries b"
        " WHERE b.user_id = %s",
        (user_id,),
    )
    emails = {
        sealed_text.normalise(value=sealed_text.open_row(ring, table="beneficiaries", row=row)["email"] or "")
        for row in await cur.fetchall()
    }
    return [
        g["name"]
        for g in guardians
        if g["heir_wallet"] or sealed_text.normalise(value=g["email"] or "") in emails
    ]


def new_plan_defaults(settings: Settings) -> plans.NewPlan:
    """What a plan created now starts with (docs/lifecycle.md, "Settings and bounds")."""
    return plans.new_plan(
        default_timeout_seconds=settings.plan_default_verification_timeout_seconds,
        contract_configured=bool(settings.service_contract_id),
    )


def _check_settings(
    settings: Settings, merged: dict[str, Any], changes: dict[str, Any], guardians: int
) -> None:
    """400 naming each setting out of the operator's bounds."""
    errors: dict[str, list[str]] = {}
    if merged["check_in_interval_seconds"] < settings.plan_min_check_in_interval_seconds:
        errors["checkInIntervalSeconds"] = [
            f"Must be at least {settings.plan_min_check_in_interval_seconds} seconds."
        ]
    if merged["grace_period_seconds"] < 0:
        errors["gracePeriodSeconds"] = ["Must be at least 0 seconds."]
    if merged["cancel_window_seconds"] < settings.plan_min_cancel_window_seconds:
        errors["cancelWindowSeconds"] = [
            f"Must be at least {settings.plan_min_cancel_window_seconds} seconds."
        ]
    threshold = merged["guardian_threshold"]
    if threshold is not None and not 1 <= threshold <= max(guardians, 1):
        errors["guardianThreshold"] = [
            f"Must be between 1 and your number of guardians ({guardians}); null means a majority."
        ]
    timeout = merged["verification_timeout_seconds"]
    if timeout is not None and timeout < settings.plan_min_verification_timeout_seconds:
        errors["verificationTimeoutSeconds"] = [
            f"Must be at least {settings.plan_min_verification_timeout_seconds} seconds, or null for "
            "no deadline."
        ]
    if changes.get("on_verification_timeout") == "release" and settings.service_contract_id:
        errors["onVerificationTimeout"] = [
            "With an on-chain contract a release needs the guardians' approvals on-chain: a deadline can "
            'only "wait".'
        ]
    if errors:
        raise validation_error(errors)


async def update_settings(
    pool: Pool,
    redis: ArqRedis,
    settings: Settings,
    *,
    user_id: str,
    changes: dict[str, Any],
    now: datetime,
    budget: Budget,
) -> None:
    """Settings change in Draft and Active only; in Active the current cycle's due time follows,
    and heirs not told yet are emailed their link if telling them was just turned on."""
    async with transaction(pool) as cur:
        plan = await get_or_create(cur, user_id=user_id, lock=True, defaults=new_plan_defaults(settings))
        if plan["status"] not in (DRAFT, ACTIVE):
            raise Conflict(
                f"Settings can change only while the plan is Draft or Active; it is {plan['status']}.",
                details={"status": plan["status"]},
            )
        known = await facts(cur, settings.key_ring, user_id=user_id)
        current: dict[str, Any] = dict(plan)
        merged: dict[str, Any] = {column: changes.get(column, current[column]) for column in SETTINGS_COLUMNS}
        _check_settings(settings, merged, changes, known["guardians"])
        diff = {c: v for c, v in merged.items() if current[c] != v}
        if not diff:
            return
        values = dict(diff)
        if {"verification_timeout_seconds", "on_verification_timeout"} & set(diff):
            values["deadline_chosen_at"] = now  # guardians are told it is the owner's, not the default
        if plan["status"] == ACTIVE and "check_in_interval_seconds" in diff and plan["last_check_in_at"]:
            values["check_in_due_at"] = plan["last_check_in_at"] + timedelta(
                seconds=diff["check_in_interval_seconds"]
            )
        plan = await update_schedule(cur, plan_id=plan["id"], values=values)
        told = (
            await early_links.send_in(cur, plan=plan, now=now, budget=budget)
            if "notify_beneficiaries_on_activation" in diff
            else []
        )
        await announce(
            cur,
            plan_id=plan["id"],
            owner_id=user_id,
            now=now,
            timeline=Entry(
                "plan.updated",
                N_("Plan settings changed"),
                {"fields": wire_names(columns=diff), "actor": "owner"},
            ),
        )
    await outbox.enqueue(redis, row_ids=told)
