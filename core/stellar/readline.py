"""Undo the patch importing stellar_sdk applies to aiohttp: one explicit call at process start.

`stellar_sdk.client.aiohttp_client` (imported by `stellar_sdk` itself when aiohttp-sse-client
is installed, as it is here) replaces `aiohttp.streams.StreamReader.readline` for the whole
process with a version that has no `max_line_length` keyword: aiohttp's multipart reader passes
that keyword, so every multipart body (archive uploads) would fail, and the line-length limit
would be gone. The service reads no server-sent events through stellar_sdk, so the patch buys it
nothing. `restore_aiohttp_readline()` is called by `service.cli.main` before any command
runs (API and worker alike), by tests/conftest.py and by the benchmarks' ceiling; nothing happens on
import. tests/test_library_seams.py pins both the patch and aiohttp's own definition, so either
library changing fails a test (and says when this module can go).
"""

from __future__ import annotations

import aiohttp.streams


async def _aiohttp_readline(
    self: aiohttp.streams.StreamReader, *, max_line_length: int | None = None
) -> bytes:
    """aiohttp's own `StreamReader.readline` (aiohttp/streams.py), word for word."""
    return await self.readuntil(max_size=max_line_length)


def restore_aiohttp_readline() -> None:
    """Put aiohttp's `StreamReader.readline` back. Idempotent; stellar_sdk's patch runs only on
    the first import of its aiohttp client, which this forces first, so no later import undoes it."""
    import stellar_sdk.client.aiohttp_client  # noqa: F401 - its patch runs now, before the repair

    aiohttp.streams.StreamReader.readline = _aiohttp_readline  # type: ignore[method-assign]
