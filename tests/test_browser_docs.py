"""Swagger UI at /api/docs under its own CSP (#28 F8), in a real browser: it renders and calls
nothing the policy refuses, and no other origin can frame it."""

from __future__ import annotations

from typing import Any

from aiohttp import web

from tests.helpers import until

VIOLATIONS = """() => {
  window.__violations = [];
  document.addEventListener('securitypolicyviolation', e => window.__violations.push(
    e.violatedDirective + ' ' + e.blockedURI));
}"""


async def test_swagger_ui_renders_under_its_csp(client: Any, context: Any) -> None:
    origin = str(client.make_url("")).rstrip("/")
    page = await context.new_page()
    console: list[str] = []
    page.on("console", lambda message: console.append(message.text))
    await page.add_init_script(f"({VIOLATIONS})()")
    response = await page.goto(f"{origin}/api/docs")
    assert response.status == 200
    assert "frame-ancestors 'none'" in (await response.all_headers())["content-security-policy"]
    title = page.locator(".swagger-ui .info .title")
    await title.wait_for(timeout=30_000)
    assert "Legacy Planning Service API" in await title.inner_text()
    # The operations are listed (the OpenAPI document was fetched under connect-src 'self').
    await page.locator(".opblock-summary-path").first.wait_for(timeout=30_000)
    assert await page.evaluate("window.__violations") == []
    assert not [line for line in console if "Content Security Policy" in line], console


async def test_no_other_origin_can_frame_the_docs(client: Any, aiohttp_server: Any, context: Any) -> None:
    api_origin = str(client.make_url("")).rstrip("/")
    app = web.Application()

    async def framing(_: web.Request) -> web.Response:
        body = f'<!doctype html><title>framer</title><iframe src="{api_origin}/api/docs"></iframe>'
        return web.Response(text=body, content_type="text/html")

    app.router.add_get("/", framing)
    other = await aiohttp_server(app)
    page = await context.new_page()
    console: list[str] = []
    page.on("console", lambda message: console.append(message.text))
    await page.goto(str(other.make_url("/")))
    await until(lambda: any("frame-ancestors" in line for line in console), "the browser refuses the frame")
    frames = [f for f in page.frames if f != page.main_frame]
    assert frames
    for frame in frames:
        assert await frame.locator(".swagger-ui").count() == 0
