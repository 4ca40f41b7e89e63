"""The web client's path in a real browser: a page served from another origin calls the API
with a bearer token through `fetch` (a preflighted request, as the web client's are)."""

from __future__ import annotations

from typing import Any

from aiohttp import web

from tests.helpers import sign_in

CALL_ME = """async ([api, token]) => {
  try {
    const resp = await fetch(api + "/api/auth/me", {headers: {Authorization: "Bearer " + token}});
    return {status: resp.status, body: await resp.json()};
  } catch (error) {
    return {error: String(error)};
  }
}"""


async def _web_client_origin(aiohttp_server: Any) -> str:
    """Another origin (its own port) serving the page the web client would be."""
    app = web.Application()

    async def index(_: web.Request) -> web.Response:
        return web.Response(text="<!doctype html><title>web client</title>", content_type="text/html")

    app.router.add_get("/", index)
    server = await aiohttp_server(app)
    return str(server.make_url("")).rstrip("/")


async def _call_me(context: Any, web_origin: str, api_origin: str, token: str) -> dict[str, Any]:
    page = await context.new_page()
    await page.goto(web_origin + "/")
    assert await page.evaluate("location.origin") == web_origin != api_origin
    result: dict[str, Any] = await page.evaluate(CALL_ME, [api_origin, token])
    return result


async def test_a_page_on_an_allowed_origin_reads_auth_me_with_a_bearer_token(
    make_client: Any, aiohttp_server: Any, context: Any
) -> None:
    web_origin = await _web_client_origin(aiohttp_server)
    client = await make_client(cors_allowed_origins=web_origin)
    session = await sign_in(client)
    api_origin = str(client.make_url("")).rstrip("/")
    result = await _call_me(context, web_origin, api_origin, session.token)
    assert result.get("status") == 200, result
    assert result["body"]["id"] == session.user["id"]
    assert result["body"]["walletAddress"] == session.keypair.public_key


async def test_the_browser_refuses_the_call_from_an_origin_not_allowed(
    make_client: Any, aiohttp_server: Any, context: Any
) -> None:
    web_origin = await _web_client_origin(aiohttp_server)
    for allowed in ("", "http://localhost:5173"):
        client = await make_client(cors_allowed_origins=allowed)
        session = await sign_in(client)
        api_origin = str(client.make_url("")).rstrip("/")
        result = await _call_me(context, web_origin, api_origin, session.token)
        # The preflight gets no CORS approval, so the request itself is never sent.
        assert "status" not in result and "TypeError" in result["error"], (allowed, result)
