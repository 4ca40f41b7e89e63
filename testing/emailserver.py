"""A local HTTP server standing in for the email provider: it records every request and
answers with scripted statuses (default 202), like a provider's JSON API would.

Use the `email_provider` fixture; `email_provider.settings` are the overrides that point a
worker at it (`run_worker(settings=email_provider.settings)`).
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import pytest_asyncio
from aiohttp import web

API_KEY = "test-provider-key"


@dataclass
class Captured:
    headers: dict[str, str]
    body: dict[str, Any]

    @property
    def to(self) -> str:
        return str(self.body["to"][0])


@dataclass
class CaptureServer:
    url: str = ""
    requests: list[Captured] = field(default_factory=list)
    # Scripted answers, used in order: (status, headers); then 202.
    script: list[tuple[int, dict[str, str]]] = field(default_factory=list)
    # Scripted answers by recipient address, used before `script` (concurrent requests of one
    # batch arrive in any order, so a test scripting several outcomes names the recipient).
    script_to: dict[str, list[tuple[int, dict[str, str]]]] = field(default_factory=dict)
    # Set `hold` to keep each request open (recorded, unanswered) until the event is set, like a
    # provider that accepted the email but whose answer never reached the sender.
    hold: asyncio.Event | None = None
    received: asyncio.Event = field(default_factory=asyncio.Event)

    @property
    def settings(self) -> dict[str, Any]:
        return {
            "email_provider_url": self.url,
            "email_provider_api_key": API_KEY,
            "email_from": "Legacy <no-reply@example.test>",
        }

    def to(self, address: str) -> list[Captured]:
        return [r for r in self.requests if r.to == address]

    async def handle(self, request: web.Request) -> web.Response:
        captured = Captured(dict(request.headers), json.loads(await request.read()))
        self.requests.append(captured)
        self.received.set()
        if self.hold is not None:
            await self.hold.wait()
        scripted = self.script_to.get(captured.to) or self.script
        status, headers = scripted.pop(0) if scripted else (202, {})
        # A provider's id for each email, unique across test servers (the webhook finds rows by it).
        return web.json_response({"id": f"msg-{uuid.uuid4()}"}, status=status, headers=headers)


async def start_capture_server(port: int = 0) -> tuple[CaptureServer, web.AppRunner]:
    server = CaptureServer()
    app = web.Application()
    app.router.add_post("/emails", server.handle)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", port)
    await site.start()
    bound = runner.addresses[0][1]
    server.url = f"http://127.0.0.1:{bound}/emails"
    return server, runner


@pytest_asyncio.fixture
async def email_provider() -> AsyncIterator[CaptureServer]:
    server, runner = await start_capture_server()
    yield server
    await runner.cleanup()


async def _serve(port: int) -> None:
    import asyncio

    server, runner = await start_capture_server(port)
    server.requests = _Counter()
    print(f"email capture server on {server.url}", flush=True)
    try:
        await asyncio.Event().wait()
    finally:
        await runner.cleanup()


class _Counter(list[Captured]):
    """Long benchmark runs only count requests; the bodies are not kept."""

    total = 0

    def append(self, item: Captured) -> None:
        self.total += 1


if __name__ == "__main__":  # the benchmarks run it as its own process: python -m testing.emailserver PORT
    import asyncio
    import sys

    asyncio.run(_serve(int(sys.argv[1])))
