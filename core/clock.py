"""The one source of "now" for domain rules (plan deadlines, release rules, time bounds).

Code that decides by time takes the clock it is handed (`app[CLOCK]` in the API,
`context.get(ctx).clock` in a job) instead of calling `datetime.now()`, so tests and demos can move
time forward without sleeping. SQL that compares against "now" binds `clock.now()` as a
parameter rather than calling PostgreSQL's `now()`.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta


class Clock:
    """Wall-clock time in UTC, shifted by `offset` (zero in production)."""

    def __init__(self) -> None:
        self.offset = timedelta(0)

    def now(self) -> datetime:
        return datetime.now(UTC) + self.offset

    def advance(self, delta: timedelta | None = None, **kwargs: float) -> datetime:
        """Move this clock forward (tests, demos); it never runs backward. Returns the new now."""
        step = delta if delta is not None else timedelta(**kwargs)
        if step < timedelta(0):
            raise ValueError("a clock only moves forward")
        self.offset += step
        return self.now()


def wire_time(moment: datetime) -> str:
    """ISO 8601 in UTC with milliseconds and a trailing Z (`2026-01-31T12:00:00.000Z`): the one
    time format the service writes for others to read, in JSON bodies (`api.schemas.UtcDateTime`),
    activity metadata, signed messages and error text alike (docs/api-decisions.md). Email
    bodies render dates for people instead (models/mail/emails.py)."""
    utc = moment.astimezone(UTC)
    # = utc.isoformat(timespec="milliseconds") with Z for +00:00, more cheaply (every
    # row has two or three times; tests/test_list_dump.py checks it against marshmallow).
    return "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ" % (  # noqa: UP031 - the fastest formatting here
        utc.year,
        utc.month,
        utc.day,
        utc.hour,
        utc.minute,
        utc.second,
        utc.microsecond // 1000,
    )


def spelled(moment: datetime) -> str:
    """'Thursday 26 November 2026, 01:00 UTC': a time in a sentence for a person (pages, emails,
    error messages, the plan's notices, timeline summaries), no numeric date a reader could take
    either way. UTC, said so: the service does not know the reader's time zone and will not
    guess it."""
    moment = moment.astimezone(UTC)
    return f"{moment:%A} {moment.day} {moment:%B %Y}, {moment:%H:%M} UTC"
