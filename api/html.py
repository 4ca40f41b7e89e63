"""The service's own HTML pages (`/claim/<token>`, `/check-in/<token>`): what every emailed
link opens when no web client is deployed, in any browser, with no JavaScript.

Rendered on the server with Jinja2 (autoescape on; templates in `api/templates/`) from the
same model calls as the JSON routes. Every response under a page path, errors included, gets
the capsule's privacy headers and a Content-Security-Policy that allows no script at all and
nothing from another origin: one stylesheet served here, media and images from this origin.
Errors under those paths are rendered by the one error mapper (`api/middleware.py`) as a
calm page instead of JSON. Decisions (wording, dates, what each state shows): docs/pages.md.
"""

from __future__ import annotations

import base64
import hashlib
from importlib import resources
from typing import Any

import jinja2
from aiohttp import web
from aiohttp_apigami import docs
from markupsafe import Markup

from api.headers import CAPSULE_HEADERS
from api.public import public
from core.clock import spelled, wire_time
from core.errors import BadRequest
from core.text import i18n
from core.text.cleaning import clean_line

# Paths whose every response is a page for a person (and is as private as the capsule).
PAGE_PREFIXES = (
    "/claim/",
    "/check-in/",
    "/guardian/",
    "/confirm-email/",
    "/confirm-address/",
    "/stop-emails/",
    "/dev/mail/",
)
# No script from anywhere (not even inline), nothing from another origin, no framing, forms
# post only here.
PAGE_CSP = (
    "default-src 'none'; style-src 'self'; img-src 'self'; media-src 'self'; "
    "form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
)
_SCRIPT = "lps.page_script"
STYLESHEET_PATH = "/page.css"
PASSKEY_SCRIPT_PATH = "/guardian-passkey.js"

_TEMPLATES = jinja2.Environment(
    loader=jinja2.PackageLoader("api", "templates"),
    autoescape=True,
    undefined=jinja2.StrictUndefined,
    trim_blocks=True,
    lstrip_blocks=True,
    extensions=["jinja2.ext.i18n"],
)
# The reader's language (core.text.i18n.speaking, set per page by its handler): `_()`, `ngettext()`
# and `{% trans %}` blocks in every template.
_TEMPLATES.install_gettext_callables(i18n._, i18n.ngettext, newstyle=True)  # type: ignore[attr-defined]
_STYLESHEET = resources.files("api").joinpath("templates", "page.css").read_bytes()
_PASSKEY_SCRIPT = resources.files("api").joinpath("templates", "passkey.js").read_bytes()
# Subresource Integrity of the one script: the page loads it only with these exact bytes.
PASSKEY_SCRIPT_INTEGRITY = "sha384-" + base64.b64encode(hashlib.sha384(_PASSKEY_SCRIPT).digest()).decode()

routes = web.RouteTableDef()


def file_size(size: int) -> str:
    """Decimal units, as phones and file managers show them."""
    if size < 1000:
        return "1 byte" if size == 1 else f"{size} bytes"
    value = float(size)
    for unit in ("KB", "MB", "GB", "TB"):
        value /= 1000
        if value < 1000 or unit == "TB":
            return f"{value:.0f} {unit}" if value >= 10 else f"{value:.1f} {unit}"
    raise AssertionError("unreachable")


def sentence_start(words: str) -> str:
    """`words` opening a sentence: the first letter capitalised, the rest exactly as written (the
    owner's stand-in, "the holder of the Stellar wallet G…"; jinja's `capitalize` would lower a
    name's other capitals)."""
    return words[:1].upper() + words[1:]


def bdi(name: str) -> Markup:
    """A name someone typed, isolated from the text around it (`<bdi>`): a right-to-left name
    cannot reorder the sentence it sits in. Its own bidi controls are gone too (core/text/cleaning.py)."""
    return Markup("<bdi>{}</bdi>").format(clean_line(str(name)))


_TEMPLATES.filters.update(
    spelled=spelled, iso=wire_time, file_size=file_size, sentence_start=sentence_start, bdi=bdi
)


FORM = "application/x-www-form-urlencoded"


async def read_form(request: web.Request) -> dict[str, str]:
    """A page's form post, text fields only; anything else (another body type, bytes that are
    not UTF-8, text PostgreSQL cannot hold) is 400, never a 500."""
    if request.content_type != FORM:
        raise BadRequest("This did not come from the page's form: open the page again and use its form.")
    try:
        posted = await request.post()
    except (UnicodeDecodeError, ValueError):
        raise BadRequest("The form's text could not be read") from None
    fields = {key: value for key, value in posted.items() if isinstance(value, str)}
    if any("\x00" in value for value in fields.values()):
        raise BadRequest("The form's text could not be read")
    return fields


def is_page(path: str) -> bool:
    return path.startswith(PAGE_PREFIXES) or path in ("/claim", "/dev/mail")


def render(
    template: str, *, status: int = 200, headers: dict[str, str] | None = None, **context: Any
) -> web.Response:
    body = _TEMPLATES.get_template(template).render(stylesheet=STYLESHEET_PATH, **context)
    return web.Response(text=body, status=status, content_type="text/html", charset="utf-8", headers=headers)


def script_csp(*, origin: str) -> str:
    """The passkey page's CSP: PAGE_CSP plus exactly one script, by its full URL on this
    origin (a path in a source matches that file only), never any other script of the origin."""
    return PAGE_CSP.replace(
        "default-src 'none';", f"default-src 'none'; script-src {origin}{PASSKEY_SCRIPT_PATH};"
    )


def with_script(response: web.Response, *, origin: str) -> web.Response:
    """This page may run the service's one script (`script_csp`), served from `origin`."""
    response[_SCRIPT] = script_csp(origin=origin)
    return response


# What each error status says to a person; anything else gets the 500 wording.
_ERROR_PAGES = {
    400: ("That could not be used", "said"),
    401: ("That signature could not be used", "said"),
    404: ("This link does not open anything", "not_found"),
    405: ("This link does not open anything", "not_found"),
    409: ("This link cannot do that now", "said"),
    429: ("Please wait a minute", "too_many"),
    503: ("Please try again a little later", "unavailable"),
}


# The pages a form or a paste-back is posted from, by their first path segment, as the error
# page names them in its link back.
_PAGE_NAMES = {
    "claim": "your page",
    "guardian": "your guardian page",
    "check-in": "the check-in page",
    "confirm-email": "the confirmation page",
}


def came_from(path: str) -> tuple[str, str] | None:
    """The page a post to `path` was made from, and its name in words: `/claim/<token>/sep7/<id>`
    is `/claim/<token>`, "your page"; the lost-link form `/claim` is itself. None elsewhere."""
    parts = path.rstrip("/").split("/")
    if parts == ["", "claim"]:
        return "/claim", "the form"
    if len(parts) >= 3 and parts[1] in _PAGE_NAMES and parts[2]:
        return f"/{parts[1]}/{parts[2]}", _PAGE_NAMES[parts[1]]
    return None


def error_page(
    request: web.Request, status: int, message: str | list[str], headers: dict[str, str] | None = None
) -> web.Response:
    """The calm page for an error under a page path. The JSON body's words are for programs;
    only the messages of a 400, 401 or 409, and of a 429 answering a form (written for the
    person, e.g. "the plan has been released", "this is not the wallet bound to you") are shown
    as they are, with a link back to the page the person came from."""
    title, kind = _ERROR_PAGES.get(status, ("Something went wrong on our side", "failed"))
    if status == 429 and request.method == "POST":
        kind = "wait"  # a form sent too often: its own sentence (which limit, when to try again)
    back = came_from(request.path) if kind in ("said", "wait") else None
    return render(
        "error.html",
        status=status,
        headers=headers,
        title=title,
        kind=kind,
        check_in=request.path.startswith("/check-in/"),
        message=message if isinstance(message, str) else " ".join(message),
        back=back,
    )


async def page_headers(request: web.Request, response: web.StreamResponse) -> None:
    """on_response_prepare: privacy headers and the CSP on every response under a page path."""
    if is_page(request.path):
        response.headers.update(CAPSULE_HEADERS)
        response.headers["Content-Security-Policy"] = response.get(_SCRIPT) or PAGE_CSP


@routes.get(STYLESHEET_PATH)
@public
@docs(tags=["pages"], summary="The stylesheet of the service's own pages", produces=["text/css"])
async def stylesheet(_: web.Request) -> web.Response:
    """The pages' one stylesheet (no fonts, no images: the reader's own system fonts)."""
    return web.Response(
        body=_STYLESHEET,
        content_type="text/css",
        charset="utf-8",
        headers={"Cache-Control": "public, max-age=86400"},
    )


@routes.get(PASSKEY_SCRIPT_PATH)
@public
@docs(
    tags=["pages"],
    summary="The one script of the service's pages: a guardian's passkey ceremony",
    produces=["text/javascript"],
)
async def passkey_script(_: web.Request) -> web.Response:
    """Runs navigator.credentials.create/get with the options on the form and posts the result;
    nothing else (docs/pages.md "A guardian with a passkey")."""
    return web.Response(
        body=_PASSKEY_SCRIPT,
        content_type="text/javascript",
        charset="utf-8",
        headers={"Cache-Control": "public, max-age=86400"},
    )
