"""The lifecycle cron: advance every due plan (reminders, grace notice, verification, release),
and announce the letters opening now to the heirs of released plans.

Safe with several workers: each plan is taken under FOR UPDATE SKIP LOCKED and every step is
a guarded transition (models.flows.scheduler). Release never comes from here when a contract is
configured: only a confirmed finalize_release releases then.
"""

from __future__ import annotations

import logging
from datetime import timedelta
from typing import Any

from models.delivery import letters, outbox
from models.delivery.budget import Budget
from models.flows import scheduler
from models.plan.guardianships import address_changes, reconfirmation
from workers import context

log = logging.getLogger(__name__)


async def scan_plans(ctx: dict[str, Any]) -> dict[str, int]:
    app = context.get(ctx)
    settings = app.settings
    result = await scheduler.scan(
        app.db,
        now=app.clock.now(),
        contract_configured=bool(settings.service_contract_id),
        warning_seconds=settings.plan_deadline_warning_seconds,
    )
    await outbox.enqueue(app.redis, row_ids=result["outbox"])
    counts = result["counts"]
    # Letters opening now for heirs of released plans: each heir emailed once, so a letter opening
    # years later is not missed.
    opened = await letters.announce_due(app.db, now=app.clock.now())
    await outbox.enqueue(app.redis, row_ids=opened)
    if opened:
        counts = {**counts, "letter_emails": len(opened)}
    # Guardians asked to confirm they can still act (found out before a release needs them), on the same beat.
    asked, row_ids = await reconfirmation.sweep(
        app.db,
        now=app.clock.now(),
        interval=timedelta(seconds=settings.guardian_reconfirm_interval_seconds),
        grace=timedelta(seconds=settings.guardian_reconfirm_grace_seconds),
    )
    await outbox.enqueue(app.redis, row_ids=row_ids)
    counts.update({f"guardians_{k}": v for k, v in asked.items()})
    # Corrected heir addresses whose hold passed unstopped: the new address is asked to confirm
    # (a guardian typed it: it counts per plan in the day's budget, no client address).
    confirming = await address_changes.sweep(
        app.db,
        app.redis,
        app.key_ring,
        now=app.clock.now(),
        budget=Budget(
            per_account=settings.email_to_named_people_per_day,
            per_client=settings.email_to_named_people_per_client_per_day,
            client=None,
        ),
    )
    if confirming:
        counts = {**counts, "addresses_confirming": confirming}
    # Those whose confirmation link reached nobody who can press it end, and the guardians are told.
    unreached = await address_changes.end_unreached(app.db, app.redis, now=app.clock.now())
    if unreached:
        counts = {**counts, "addresses_unreached": unreached}
    if counts:
        log.info("lifecycle scan", extra={"counts": counts})
    return counts
