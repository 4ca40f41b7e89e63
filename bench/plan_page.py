"""GET /plan, the owner's home page, against its ceiling.

The service: the owner's browser session (a cookie, read and its visit noted), the overview of
GET /api/legacy, every guardian's answer, the page rendered in the owner's language, through
every middleware, the owner-page rules (host, session) and the pages' headers.

The ceiling (`ceiling_home`, served by bench/ceiling.py at /plan-page/<cookie>): a bare aiohttp
handler doing the same statements through the same model calls (the session, `owner_pages.home`)
and rendering the same template with the same recipe (`api.owner.home.page`); no middleware,
no owner-page decorator, no negotiation, no headers. Unlike the JSON ceilings it opens the sealed
names too: a page cannot be written from sealed bytes, so that work is the page's floor.
"""

from __future__ import annotations

import base64
import html as markup
import os
import re
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlsplit

import aiohttp
from aiohttp import web
from stellar_sdk import Keypair

from api import html
from api.owner import home
from bench import loadgen
from bench.measure import Bench
from core.db import Pool
from core.files.crypto import KeyRing
from core.settings import load_settings
from core.text import i18n
from core.text.i18n import _
from models.account import sessions
from models.plan import owner_pages, plan_settings

SESSION_COOKIE = "lps_session"  # PUBLIC_BASE_URL is plain http in the bench: no __Host- prefix
RING = web.AppKey("plan_ring", KeyRing)
SETTINGS = web.AppKey("plan_settings", object)
_CHALLENGE = re.compile(r'<textarea id="challenge-text"[^>]*>(.*?)</textarea>', re.S)
PEOPLE = 2  # heirs and guardians each: a plan as a first evening leaves it


def register(app: web.Application, pool_key: web.AppKey[Pool]) -> None:
    """The ceiling's route for the home page, with what it needs beside the pool."""
    settings = load_settings(dict(os.environ))
    app[RING] = KeyRing.parse(os.environ["ENCRYPTION_KEYS"])
    app[SETTINGS] = settings
    i18n.configure(settings.languages)

    async def ceiling_home(request: web.Request) -> web.Response:
        found = await sessions.current(
            request.app[pool_key],
            cookie=request.match_info["cookie"],
            idle_seconds=settings.session_idle_seconds,
            now=datetime.now(UTC),
        )
        if found is None:
            raise web.HTTPUnauthorized()
        view = await owner_pages.home(
            request.app[pool_key],
            request.app[RING],
            user_id=found["user_id"],
            defaults=plan_settings.new_plan_defaults(settings),
            contract=False,
        )
        with i18n.speaking(found["locale"], found["time_zone"]) as speaker:
            body = html._TEMPLATES.get_template("owner/home.html").render(
                stylesheet=html.STYLESHEET_PATH,
                lang=speaker.language,
                dir=i18n.direction(),
                languages=html.switcher(request),
                link=lambda url: url,
                form_token=found["form_token"],
                signed_in=True,
                sign_out="/sign-out",
                title=_("Your plan"),
                done=None,
                day=i18n.day,
                language_names=html.LANGUAGE_NAMES,
                **home.page(view, contract=False),
            )
        return web.Response(text=body, content_type="text/html", charset="utf-8")

    app.router.add_get("/plan-page/{cookie}", ceiling_home)


async def people(
    session: aiohttp.ClientSession, base: str, headers: dict[str, str], *, heirs: bool = True
) -> None:
    """The signed-in owner gets a name, an email address, two guardians and (unless they have
    heirs already) two heirs, through the API."""
    calls: list[tuple[str, str, dict[str, Any]]] = [
        ("PATCH", "/api/users/me", {"name": "Bench Owner", "email": "owner@example.com"})
    ]
    for n in range(PEOPLE):
        calls.append(("POST", "/api/guardians", {"name": f"Guardian {n}", "email": f"g{n}@example.com"}))
        if not heirs:
            continue
        calls.append(
            (
                "POST",
                "/api/beneficiaries",
                {
                    "name": f"Heir {n}",
                    "relationship": "child",
                    "email": f"heir{n}@example.com",
                    "allocationPercentage": 100 / PEOPLE,
                },
            )
        )
    for method, path, body in calls:
        async with session.request(method, f"{base}{path}", json=body, headers=headers) as resp:
            if resp.status >= 300:
                raise RuntimeError(f"{method} {path} answered {resp.status}: {await resp.text()}")


def as_the_service(public: str) -> dict[str, str]:
    """The headers of a browser on PUBLIC_BASE_URL (`public`) when the API listens elsewhere
    (bench/ab.py runs several trees under one PUBLIC_BASE_URL): its Host, and its Origin."""
    return {"Host": urlsplit(public).netloc, "Origin": public}


async def page_session(base: str, keypair: Keypair, *, public: str | None = None) -> str:
    """The owner signs in on /sign-in with the challenge text, as a wallet that signs text does;
    returns the session cookie's value."""
    jar = aiohttp.CookieJar(unsafe=True)
    origin = as_the_service(public or base)
    async with aiohttp.ClientSession(cookie_jar=jar) as browser:
        async with browser.post(
            f"{base}/sign-in/wallet",
            data={"walletAddress": keypair.public_key},
            headers=origin,
            allow_redirects=False,
        ) as resp:
            if resp.status != 303:
                raise RuntimeError(f"/sign-in/wallet answered {resp.status}: {await resp.text()}")
        async with browser.get(f"{base}/sign-in/wait", headers=origin) as resp:
            found = _CHALLENGE.search(await resp.text())
        if found is None:
            raise RuntimeError("the waiting page shows no challenge text")
        text = markup.unescape(found.group(1))
        signature = base64.b64encode(keypair.sign(text.encode())).decode()
        async with browser.post(
            f"{base}/sign-in/signature", data={"signature": signature}, headers=origin, allow_redirects=False
        ) as resp:
            if resp.status != 303:
                raise RuntimeError(f"/sign-in/signature answered {resp.status}: {await resp.text()}")
        for cookie in jar:
            if cookie.key == SESSION_COOKIE:
                return cookie.value
    raise RuntimeError("signing in set no session cookie")


async def run(bench: Bench) -> None:
    base = bench.api.base_url
    keypair = loadgen.wallets(1)[0]
    async with aiohttp.ClientSession() as session:
        async with session.get(f"{base}/sign-in") as resp:
            if resp.status == 404:
                print("  plan: /sign-in is not served by this build; skipped", flush=True)
                return
        owner = await loadgen.sign_in(session, base, keypair)
        await people(session, base, {"Authorization": f"Bearer {owner['token']}"})
    cookie = await page_session(base, keypair)
    cookies = {"Cookie": f"{SESSION_COOKIE}={cookie}"}
    async with aiohttp.ClientSession() as session, session.get(f"{base}/plan", headers=cookies) as resp:
        if resp.status != 200:
            raise RuntimeError(f"GET /plan answered {resp.status}")
    await bench.compare(
        f"GET /plan ({PEOPLE} heirs, {PEOPLE} guardians)",
        bench.http_load(bench.api, [("GET", "/plan", {"Cookie": f"{SESSION_COOKIE}={cookie}"}, None)], 200),
        bench.http_load(bench.ceiling, [("GET", f"/plan-page/{cookie}", {}, None)], 200),
    )
