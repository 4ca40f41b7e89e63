"""How the API meets the network: aiohttp's HTTP protocol with a deadline for request heads,
and the service's own answer to a request aiohttp cannot parse.

aiohttp documents no hook for either (aio-libs/aiohttp#3287, "custom handling of requests that
throw in http_exceptions", is open), so this module is the one place that leans on aiohttp's
protocol class; `tests/test_library_seams.py` fails if what it leans on changes, and
docs/conventions.md ("Library internals") lists each point.

Deadlines (modelled on nginx's `client_header_timeout` and `keepalive_timeout`):

- a new connection has REQUEST_HEAD_TIMEOUT_SECONDS to deliver its first request line and
  headers in full;
- between requests, an idle connection is kept KEEPALIVE_TIMEOUT_SECONDS (aiohttp's own
  `keepalive_timeout`, a public argument);
- once the first byte of a later request arrives, its head has REQUEST_HEAD_TIMEOUT_SECONDS.

A connection past a deadline is closed without an answer, as nginx and Go's `ReadHeaderTimeout`
do. A slow body is not a head: it gets its 408 from `REQUEST_BODY_TIMEOUT_SECONDS`.

Protocol errors (a bad request line or header bytes, a line too long; and a handler that
escaped the application, 500/504) are answered with the standard JSON error body, a fixed
message per kind that repeats nothing the client sent, `nosniff`, `no-store`, and the
capsule's privacy headers. aiohttp hands over no path for a request it could not parse, so
the privacy headers go on every such answer rather than only under `/api/claim/`.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from typing import Any

from aiohttp import web
from aiohttp.http_exceptions import LineTooLong

from api.headers import CAPSULE_HEADERS, SERVER
from api.keys import SETTINGS
from api.middleware import error_body

log = logging.getLogger("api.protocol")

# Every answer to a request the application never saw (CAPSULE_HEADERS carries no-store,
# Referrer-Policy and X-Robots-Tag).
PROTOCOL_ERROR_HEADERS = {
    **CAPSULE_HEADERS,
    "X-Content-Type-Options": "nosniff",
    "Server": SERVER,
}


def _message(status: int, exc: BaseException | None) -> str:
    """A fixed sentence per kind: aiohttp's own message quotes the offending bytes."""
    if status >= 500:
        return "Internal server error"
    if isinstance(exc, LineTooLong):
        return "Request line or header too long"
    return "Malformed HTTP request"


class ServiceRequestHandler(web.RequestHandler):
    """aiohttp's protocol, one per connection, with the head deadline and our error answer."""

    __slots__ = ("_head_deadline", "_head_timeout")

    def __init__(self, manager: web.Server, *, head_timeout: float, **kwargs: Any) -> None:
        super().__init__(manager, **kwargs)
        self._head_timeout = head_timeout
        self._head_deadline: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)
        self._arm_head_deadline()  # the first head counts from the connection's start

    def connection_lost(self, exc: BaseException | None) -> None:
        self._disarm_head_deadline()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        # aiohttp's `_waiter` is pending exactly while it waits for the next complete head (no
        # request being handled, none queued); it is created before any byte can arrive.
        waiter = self._waiter
        waiting = waiter is not None and not waiter.done()
        super().data_received(data)
        if not waiting:
            return  # a body, or bytes pipelined behind a request being handled
        if waiter.done():  # type: ignore[union-attr]  # a head is complete
            self._disarm_head_deadline()
        elif self._head_deadline is None:  # the first bytes of a head, not all of it
            self._arm_head_deadline()

    def _arm_head_deadline(self) -> None:
        self._head_deadline = asyncio.get_running_loop().call_later(self._head_timeout, self._head_too_slow)

    def _disarm_head_deadline(self) -> None:
        if self._head_deadline is not None:
            self._head_deadline.cancel()
            self._head_deadline = None

    def _head_too_slow(self) -> None:
        self._head_deadline = None
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            log.info("request head not complete in time: connection closed")
            self.force_close()

    def handle_error(
        self,
        request: web.BaseRequest,
        status: int = 500,
        exc: BaseException | None = None,
        message: str | None = None,
    ) -> web.StreamResponse:
        """aiohttp calls this for a request it could not parse (400) and for a handler that
        escaped the application (500, 504). `message` (aiohttp's, quoting the request) is dropped."""
        if request.writer.output_size > 0:  # aiohttp's contract: nothing more can be sent
            raise ConnectionError("response already started; cannot send an error response")
        if status >= 500:
            log.error("error outside the application", exc_info=exc)
        else:
            log.info("malformed request refused", extra={"status": status, "kind": type(exc).__name__})
        body = json.dumps(error_body(status, _message(status, exc))).encode()
        response = web.Response(
            status=status, body=body, content_type="application/json", headers=PROTOCOL_ERROR_HEADERS
        )
        response.force_close()
        return response


class ServiceServer(web.Server):
    """aiohttp's low-level server: the protocol factory asyncio calls for each connection."""

    def __init__(self, handler: Any, *, head_timeout: float, keepalive_timeout: float, **kwargs: Any) -> None:
        super().__init__(handler, **kwargs)
        self._head_timeout = head_timeout
        self._keepalive_timeout = keepalive_timeout

    def __call__(self) -> ServiceRequestHandler:
        return ServiceRequestHandler(
            self,
            loop=asyncio.get_running_loop(),
            head_timeout=self._head_timeout,
            keepalive_timeout=self._keepalive_timeout,
            access_log=None,  # the application writes its own access line (api/middleware.py)
        )


class ServiceRunner(web.AppRunner):
    """An AppRunner whose server speaks through ServiceRequestHandler (settings from the app)."""

    async def _make_server(self) -> web.Server:
        built = await super()._make_server()  # starts the app; aiohttp's own server, for its parts
        settings = self.app[SETTINGS]
        return ServiceServer(
            built.request_handler,
            request_factory=built.request_factory,
            handler_cancellation=built.handler_cancellation,
            head_timeout=float(settings.request_head_timeout_seconds),
            keepalive_timeout=float(settings.keepalive_timeout_seconds),
        )


def run(app: web.Application, *, host: str, port: int) -> None:
    """Serve until SIGINT/SIGTERM, then shut down gracefully (what `web.run_app` does, which
    takes no runner of ours)."""

    async def serve() -> None:
        runner = ServiceRunner(app, handle_signals=True)
        await runner.setup()
        try:
            await web.TCPSite(runner, host, port).start()
            await asyncio.Event().wait()  # until a signal raises GracefulExit
        finally:
            await runner.cleanup()

    with contextlib.suppress(web.GracefulExit, KeyboardInterrupt):
        asyncio.run(serve())
