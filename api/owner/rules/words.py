"""Durations and the settings' consequences in words, in the language being spoken: one recipe
for the settings page, the home page's activation, and the deadline's explanation, so that a
figure reads the same wherever the owner meets it."""

from __future__ import annotations

from typing import Any

from core.text import i18n
from core.text.i18n import _, ngettext

DAY = 24 * 3600
WEEK = 7 * DAY


def span(seconds: int) -> str:
    """A duration as a person says it: "90 days", "2 weeks", "72 hours", "10 minutes"."""
    if seconds <= 0:
        return _("no time")
    if seconds % WEEK == 0 and seconds // WEEK in (1, 2, 3):
        weeks = seconds // WEEK
        return ngettext("{count} week", "{count} weeks", weeks).format(count=i18n.number(weeks))
    if seconds % DAY == 0 and seconds >= 4 * DAY:  # up to three days, in hours ("72 hours")
        days = seconds // DAY
        return ngettext("{count} day", "{count} days", days).format(count=i18n.number(days))
    if seconds % 3600 == 0 and seconds >= 3600:
        hours = seconds // 3600
        return ngettext("{count} hour", "{count} hours", hours).format(count=i18n.number(hours))
    if seconds % 60 == 0 and seconds >= 60:
        minutes = seconds // 60
        return ngettext("{count} minute", "{count} minutes", minutes).format(count=i18n.number(minutes))
    return ngettext("{count} second", "{count} seconds", seconds).format(count=i18n.number(seconds))


def check_in(plan: Any) -> str:
    """What the check-in interval and the grace period do together."""
    interval = span(plan["check_in_interval_seconds"])
    if not plan["grace_period_seconds"]:
        return _(
            "If you do not check in for {interval}, we email you and ask your guardians straight away."
        ).format(interval=interval)
    return _(
        "If you do not check in for {interval}, we email you; {grace} later we ask your guardians."
    ).format(interval=interval, grace=span(plan["grace_period_seconds"]))


def cancel_window(plan: Any) -> str:
    return _(
        "Once your guardians approve, you still have {window} to stop the release by checking in; "
        "then your heirs are sent their links."
    ).format(window=span(plan["cancel_window_seconds"]))


def deadline(plan: Any, *, objection_seconds: int) -> str:
    """What the verification deadline does, and how long a guardian's objection holds it back
    (PLAN_OBJECTION_CHECK_IN_SECONDS: an objection lapses unless the owner checks in)."""
    timeout = plan["verification_timeout_seconds"]
    if timeout is None:
        return _(
            "Your guardians have no deadline: once they are asked, your plan waits for their answers for as "
            "long as it takes, and nothing is released without them."
        )
    if plan["on_verification_timeout"] == "wait":
        return _(
            "Your guardians have {timeout} to answer. If too few have approved by then, nothing is "
            "released: you and your guardians are emailed once, and your plan goes on waiting."
        ).format(timeout=span(timeout))
    return _(
        "Your guardians have {timeout} to answer. If too few have approved by then and you have not "
        "checked in, your plan is released as if they had approved: you are emailed, and you still have "
        "{window} to stop it. A guardian who says it is a mistake holds the deadline back, but only for "
        "{objection} after they say so: if you have not checked in by then, their objection lapses."
    ).format(
        timeout=span(timeout),
        window=span(plan["cancel_window_seconds"]),
        objection=span(objection_seconds),
    )


def threshold(plan: Any, *, needed: int, guardians: int) -> str:
    if plan["guardian_threshold"] is None:
        return ngettext(
            "A majority of your guardians who have not declined must approve a release: today that is "
            "{count} of {guardians}.",
            "A majority of your guardians who have not declined must approve a release: today that is "
            "{count} of {guardians}.",
            needed,
        ).format(count=i18n.number(needed), guardians=i18n.number(guardians))
    return ngettext(
        "{count} of your {guardians} guardians must approve before your plan is released.",
        "{count} of your {guardians} guardians must approve before your plan is released.",
        needed,
    ).format(count=i18n.number(needed), guardians=i18n.number(guardians))


def early_links(plan: Any) -> str:
    if plan["notify_beneficiaries_on_activation"]:
        return _(
            "Each heir is emailed their link once while your plan is active: it opens nothing until the "
            "release."
        )
    return _("Your heirs hear from us only when your plan is released.")


def requests(plan: Any) -> str:
    if plan["allow_beneficiary_requests"]:
        return _(
            "An heir may ask your guardians, from their link, to check on you: that starts a verification, "
            "which you stop by checking in."
        )
    return _("Your heirs cannot ask for a verification: only your silence or a guardian's report starts one.")
