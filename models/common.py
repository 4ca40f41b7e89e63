"""Small rules every model shares."""

from __future__ import annotations

import uuid

from core.errors import NotFound


def parse_id(raw: str, what: str) -> str:
    """A malformed id names nothing that exists: 404, like a missing or foreign one (never a 500)."""
    try:
        return str(uuid.UUID(raw))
    except (ValueError, AttributeError, TypeError):
        raise NotFound(what) from None
