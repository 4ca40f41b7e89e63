"""Two middlewares: `request_context` (request id, access log) and `guard_and_map_errors`
(body-size limit, JWT authentication, body validation, and the one error mapper).

Order matters (outermost first): the request-id/log middleware sees the final status of
every request; `guard_and_map_errors` refuses an oversized body, authenticates, then
validates (so an anonymous caller learns nothing about the shape a route expects), and turns
anything raised below it into the standard error body. The checks are functions it calls,
not middlewares of their own: each layer is a coroutine frame on every request.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
import time
from collections.abc import Callable
from http import HTTPStatus
from typing import Any

import psycopg2
from aiohttp import web
from aiohttp.http_exceptions import HttpProcessingError
from aiohttp.typedefs import Handler
from aiohttp_apigami import validation_middleware
from redis.exceptions import RedisError

from api import html
from api.keys import METRICS, USER_ID, context
from api.public import requires_session
from api.sep import wallet_request
from core import tokens
from core.errors import RETRY_SOON, AppError, BadRequest, Unauthorized
from core.logging import redact_path, request_id_var

log = logging.getLogger("api.access")
# Largest non-multipart body (JSON); uploads stream under their own limit (ARCHIVE_MAX_BYTES).
MAX_BODY = 1024 * 1024
error_log = logging.getLogger("api.errors")


def error_body(status: int, message: str | list[str], details: Any = None, **extra: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"statusCode": status, "error": HTTPStatus(status).phrase, "message": message}
    if details is not None:
        body["details"] = details
    body.update(extra)
    return body


def error_response(
    request: web.Request,
    status: int,
    message: str | list[str],
    details: Any = None,
    headers: dict[str, str] | None = None,
    **extra: Any,
) -> web.Response:
    """The standard error body; under a page path (a person's browser), the calm page instead."""
    if html.is_page(request.path) and not wallet_request.is_wallet_callback(request):
        return html.error_page(request, status, message, headers)
    return web.json_response(error_body(status, message, details, **extra), status=status, headers=headers)


@web.middleware
async def request_context(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Tag the request with an id (echoed as X-Request-Id) and log one line when it ends."""
    request_id = secrets.token_hex(16)  # 32 hex characters, like uuid4().hex, and cheaper
    token = request_id_var.set(request_id)
    started = time.perf_counter()
    status = 500
    try:
        response = await handler(request)
        status = response.status
        response.headers["X-Request-Id"] = request_id
        return response
    except asyncio.CancelledError:
        status = 499  # the client went away and aiohttp cancelled the handler: not a server error
        raise
    finally:
        elapsed = time.perf_counter() - started
        request.app[METRICS].observe(request, status, elapsed)
        log.info(
            "request",
            extra={
                "method": request.method,
                "path": redact_path(request.path),
                "status": status,
                "durationMs": round(elapsed * 1000, 2),
            },
        )
        request_id_var.reset(token)


# The one charset a body is read in: JSON is UTF-8 (RFC 8259, 8.1) and the pages, served in
# UTF-8, post their forms in UTF-8; ASCII is a subset. Any other name (unknown to Python, or a
# codec that is no text encoding of a body, like `idna`) would reach aiohttp's decode.
READABLE_CHARSETS = frozenset({"utf-8", "utf8", "us-ascii", "ascii"})


def check_charset(request: web.Request) -> None:
    """Refuse a body whose Content-Type names a charset other than UTF-8, before anything
    decodes it (multipart parts carry their own and are read as UTF-8 by the upload)."""
    charset = request.charset
    if charset is None or not request.body_exists or _streamed(request):
        return
    if charset.strip().lower() not in READABLE_CHARSETS:
        raise BadRequest("The body must be UTF-8: send it without a charset, or with charset=utf-8")


def _streamed(request: web.Request) -> bool:
    """Multipart uploads are streamed and check their own (larger) limit up front."""
    return request.content_type == "multipart/form-data"


@web.middleware
async def guard_and_map_errors(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Refuse an oversized body, authenticate (unless `@public`), validate the request schema,
    run the handler; every failure leaves as the standard error body, internals logged, never
    returned.

    The checks run inside it (functions, not more middlewares: each layer is a coroutine frame
    on every request, which was measurable), authentication first.
    """
    try:
        declared = request.content_length
        if declared is not None and declared > MAX_BODY and not _streamed(request):
            # Refused before a byte of the body is read (aiohttp would read up to the limit first).
            response = error_response(request, 413, f"Request body too large (at most {MAX_BODY} bytes)")
            response.force_close()  # the unread body is not drained: the connection ends here
            return response
        if request.match_info.http_exception is None and requires_session(request):
            await authenticate(request)
        check_charset(request)
        # Body and query validation (aiohttp-apigami's public middleware, called here rather
        # than as one more layer): a handler without a request schema goes straight through.
        return await validation_middleware(request, handler)
    except web.HTTPException as exc:
        if exc.status < 400:
            raise
        return _http_exception_response(request, exc)
    except Exception as exc:
        # One table of families (below) rather than one except clause each.
        return _failure_response(request, exc)


def _http_exception_response(request: web.Request, exc: web.HTTPException) -> web.Response:
    message = exc.text if exc.text and not exc.text.startswith(f"{exc.status}:") else exc.reason
    headers = {k: v for k, v in exc.headers.items() if k in ("Allow", "Retry-After")}
    return error_response(request, exc.status, message, headers=headers)


def _client_gone(request: web.Request, exc: Exception) -> web.Response:
    # The client hung up mid-body: nobody is left to answer. One quiet line, no traceback;
    # 499 ("client closed request", as nginx logs it) in the access log, not a 500.
    log.info("client disconnected before the request was read", extra={"path": redact_path(request.path)})
    return web.Response(status=499, reason="Client Closed Request")


def _app_error(request: web.Request, exc: AppError) -> web.Response:
    response = error_response(request, exc.status, exc.message, exc.details, exc.headers, **exc.extra)
    if exc.status == 408:
        response.force_close()  # the rest of the body may never come
    return response


def _malformed_body(request: web.Request, exc: HttpProcessingError) -> web.Response:
    # Malformed bytes found while a handler reads the body (e.g. a bad multipart header).
    status = exc.code if 400 <= exc.code < 500 else 400
    return error_response(request, status, "Malformed request body")


def _redis_down(request: web.Request, exc: Exception) -> web.Response:
    # Down, stalled past REDIS_TIMEOUT_SECONDS, or refusing writes (read-only, MISCONF, OOM).
    error_log.warning("redis unavailable", extra={"path": redact_path(request.path), "error": repr(exc)})
    return error_response(
        request,
        503,
        "Temporarily unavailable: Redis did not answer; try again shortly",
        headers=RETRY_SOON,
    )


def _database_down(request: web.Request, exc: Exception) -> web.Response:
    error_log.warning("database unavailable", extra={"path": redact_path(request.path), "error": repr(exc)})
    return error_response(
        request,
        503,
        "Temporarily unavailable: the database did not answer; try again shortly",
        headers=RETRY_SOON,
    )


# Checked in order: the first family the failure belongs to answers it.
_FAILURES: tuple[tuple[type[Exception] | tuple[type[Exception], ...], Callable[..., web.Response]], ...] = (
    (ConnectionResetError, _client_gone),
    (AppError, _app_error),
    (HttpProcessingError, _malformed_body),
    (RedisError, _redis_down),
    ((psycopg2.OperationalError, psycopg2.InterfaceError), _database_down),
)


def _failure_response(request: web.Request, exc: Exception) -> web.Response:
    for family, answer in _FAILURES:
        if isinstance(exc, family):
            return answer(request, exc)
    error_log.exception("unhandled error", extra={"path": redact_path(request.path)})
    return error_response(request, 500, "Internal server error")


async def authenticate(request: web.Request) -> None:
    """Require a valid session JWT (every route not declared `@public`; unmatched paths 404
    first); sets request[USER_ID]."""
    ctx = context(request)
    header = request.headers.get("Authorization", "")
    scheme, _, token = header.partition(" ")
    # Header bytes that are not ASCII arrive as surrogate escapes: never a valid token.
    if scheme.lower() != "bearer" or not token.strip() or not header.isascii():
        raise Unauthorized("Missing bearer token", headers={"WWW-Authenticate": "Bearer"})
    settings = ctx.settings
    try:
        claims = tokens.verify(settings.jwt_secret, token.strip(), settings.jwt_issuer, settings.jwt_audience)
    except tokens.InvalidToken:
        raise Unauthorized("Invalid or expired token", headers={"WWW-Authenticate": "Bearer"}) from None
    user_id = claims["sub"]
    check = ctx.accounts
    now = ctx.now().timestamp()
    current = await check.generation(ctx.pool, user_id=user_id, now=now)
    if current is None:
        raise Unauthorized("This account no longer exists", headers={"WWW-Authenticate": "Bearer"})
    issued = tokens.generation(claims)
    if issued != current:
        if issued < current:
            raise Unauthorized(
                "This session was ended (signed out everywhere); sign in again",
                headers={"WWW-Authenticate": "Bearer"},
            )
        # A token we signed with a later generation: another process ended the sessions
        # since this one last read the account. Learn it now (older tokens are refused from here).
        check.remember(user_id=user_id, generation=issued, now=now)
    request[USER_ID] = user_id
