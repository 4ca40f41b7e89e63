"""Domain errors shared by the API and the workers.

Models raise these; the API's one error mapper (api.middleware.guard_and_map_errors) turns
each into the standard error body (`statusCode`, `error`, `message`, optional `details`).
Messages are written for the person reading them and never carry secrets, SQL or stack traces.
"""

from __future__ import annotations

from http import HTTPStatus
from typing import Any


class AppError(Exception):
    status = 500

    def __init__(
        self,
        message: str | list[str],
        *,
        details: Any = None,
        headers: dict[str, str] | None = None,
        extra: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(message if isinstance(message, str) else "; ".join(message))
        self.message = message
        self.details = details
        self.headers = headers or {}
        self.extra = extra or {}

    @property
    def reason(self) -> str:
        return HTTPStatus(self.status).phrase


class BadRequest(AppError):
    status = 400


class Unauthorized(AppError):
    status = 401


class Forbidden(AppError):
    """403: the caller is known and may see the resource, but not do this (yet)."""

    status = 403


class NotFound(AppError):
    status = 404

    def __init__(self, what: str = "Resource") -> None:
        super().__init__(f"{what} not found")


class RequestTimeout(AppError):
    """408: the body did not arrive in time; the API closes the connection after the answer."""

    status = 408


class Conflict(AppError):
    status = 409


class Gone(AppError):
    status = 410


class PayloadTooLarge(AppError):
    status = 413


class RangeNotSatisfiable(AppError):
    """416: pass `Content-Range: bytes */<size>` in `headers` (RFC 9110 §15.5.17)."""

    status = 416


class TooManyRequests(AppError):
    status = 429

    def __init__(self, message: str, retry_after: int) -> None:
        super().__init__(message, headers={"Retry-After": str(max(1, retry_after))})


class ServiceUnavailable(AppError):
    status = 503


# A dependency that is down (database, Redis, object store): when to ask again.
RETRY_SOON = {"Retry-After": "5"}


def validation_error(messages: dict[str, Any] | list[Any] | str) -> BadRequest:
    """Turn marshmallow-style messages into a 400 whose `message` lists `field: reason` lines."""
    lines: list[str] = []

    def walk(prefix: str, value: Any) -> None:
        if isinstance(value, dict):
            for key, sub in value.items():
                name = "body" if key == "_schema" else str(key)
                walk(f"{prefix}.{name}" if prefix else name, sub)
        elif isinstance(value, list) and all(isinstance(v, str) for v in value):
            lines.extend(f"{prefix}: {v}" if prefix else v for v in value)
        elif isinstance(value, list):
            for index, sub in enumerate(value):
                walk(f"{prefix}[{index}]", sub)
        else:
            lines.append(f"{prefix}: {value}" if prefix else str(value))

    walk("", messages)
    details = messages if isinstance(messages, dict) else None
    return BadRequest(lines or ["Invalid request"], details=details)
