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
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from importlib import resources
from typing import Any
from urllib.parse import quote

import jinja2
from aiohttp import web
from aiohttp_apigami import docs
from babel import Locale, UnknownLocaleError, numbers
from markupsafe import Markup

from api.headers import CAPSULE_HEADERS, OWNER_HEADERS
from api.public import public
from core.clock import wire_time
from core.errors import BadRequest
from core.text import gender, i18n, markup
from core.text.i18n import N_, _, ngettext
from core.text.markup import bdi

# Paths whose every response is a page for a person (and is as private as the capsule).
PAGE_PREFIXES = (
    "/claim/",
    "/check-in/",
    "/guardian/",
    "/confirm-email/",
    "/confirm-address/",
    "/stop-address/",
    "/address-looks-wrong/",
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
FAVICON_PATH = "/favicon.ico"

# Autoescape, the reader's language (core.text.i18n.speaking, set per page by its handler) for `_()`,
# `ngettext()` and `{% trans %}`, `<bdi>` names: as the emails' (core.text.markup).
_TEMPLATES = markup.environment(jinja2.PackageLoader("api", "templates"))
_STYLESHEET = resources.files("api").joinpath("templates", "page.css").read_bytes()
_PASSKEY_SCRIPT = resources.files("api").joinpath("templates", "passkey.js").read_bytes()
_FAVICON = resources.files("api").joinpath("templates", "favicon.ico").read_bytes()
# Subresource Integrity of the one script: the page loads it only with these exact bytes.
PASSKEY_SCRIPT_INTEGRITY = "sha384-" + base64.b64encode(hashlib.sha384(_PASSKEY_SCRIPT).digest()).decode()

routes = web.RouteTableDef()


# Translators: a file's size; French writes "{size} Ko", "{size} Mo".
_UNITS = (N_("{size} KB"), N_("{size} MB"), N_("{size} GB"), N_("{size} TB"))


def _babel_locale() -> Locale:
    try:
        return Locale.parse(i18n.babel_id(i18n.language()))
    except (UnknownLocaleError, ValueError):
        return Locale.parse(i18n.SOURCE)


def file_size(size: int) -> str:
    """Decimal units, as phones and file managers show them, the figure as the reader's language
    writes it ("1.5 MB", "1,5 Mo")."""
    if size < 1000:
        return ngettext("{count} byte", "{count} bytes", size).format(count=i18n.number(size))
    value = float(size)
    for unit in _UNITS:
        value /= 1000
        if value < 1000 or unit == _UNITS[-1]:
            # Under 1000 of the unit, so no grouping: one decimal under 10 ("1.5 MB"), none above.
            figure = numbers.format_decimal(
                value, format="0" if value >= 10 else "0.0", locale=_babel_locale()
            )
            return _(unit).format(size=figure)
    raise AssertionError("unreachable")


def sentence_start(words: str) -> str:
    """`words` opening a sentence: the first letter capitalised, the rest exactly as written (the
    owner's stand-in, "the holder of the Stellar wallet G…"; jinja's `capitalize` would lower a
    name's other capitals)."""
    return words[:1].upper() + words[1:]


def naming(sentence: Callable[..., str]) -> Callable[..., Markup]:
    """`sentence` (a model's, with a `name=` argument, written as markup when the name is markup:
    models.address_links, shared with the emails) for a template: escaped, with the name in
    `<bdi>` like the names the templates write themselves."""

    def written(*, name: str, **rest: Any) -> Markup:
        return Markup.escape(sentence(name=bdi(name), **rest))

    return written


# A moment in a page's sentence: the reader's language and zone, the zone named.
spelled = i18n.when
_TEMPLATES.filters.update(
    spelled=spelled,
    iso=wire_time,
    file_size=file_size,
    sentence_start=sentence_start,
    bdi=bdi,
    number=i18n.number,
    said=lambda message: said(message),
)

# The request's reader (language, zone name), once negotiated: the error page speaks as the page did.
READER = "lps.reader"
# Each language as its own speakers name it, in the switcher every page carries.
LANGUAGE_NAMES = {
    "en": "English",
    "es": "Español",
    "fr": "Français",
    "de": "Deutsch",
    "pt-BR": "Português (Brasil)",
    "ar": "العربية",
}


def chosen_language(request: web.Request) -> str | None:
    """The language the reader chose on the page (`?lang=`, carried by every link and form of
    the pages, which set no cookies); an unknown one is no choice."""
    language = request.query.get("lang")
    return language if language in i18n.supported() else None


def negotiate(
    request: web.Request, *, locale: str | None = None, time_zone: str | None = None
) -> tuple[str, str | None]:
    """The page's reader (docs/translations.md "Pages: which language"): the language chosen on
    the page, else the one recorded for the person (`locale`), else the browser's
    Accept-Language, else English; the zone recorded for them. Kept on the request for the
    error page."""
    language = i18n.negotiate(
        chosen=chosen_language(request),
        recorded=locale,
        accept_language=request.headers.get("Accept-Language"),
    )
    if request.path.startswith("/dev/"):
        language = i18n.SOURCE  # the developers' mailbox is written in English only
    request[READER] = (language, time_zone)
    return language, time_zone


@contextmanager
def speaking(
    request: web.Request, *, locale: str | None = None, time_zone: str | None = None
) -> Iterator[i18n.Reader]:
    """Write the page for its reader until the block ends. Called with the person's record
    (`locale`, `time_zone`) once the page's model has read it; without, the reader negotiated
    already for this request (or the URL's and the browser's choice)."""
    if locale is None and time_zone is None and READER in request:
        language, zone = request[READER]
    else:
        language, zone = negotiate(request, locale=locale, time_zone=time_zone)
    with i18n.speaking(language, zone) as reader:
        yield reader


def carry_language(request: web.Request, url: str) -> str:
    """`url` (a page's own link or form action) keeping the language the reader chose."""
    language = chosen_language(request)
    if language is None:
        return url
    return f"{url}{'&' if '?' in url else '?'}lang={quote(language)}"


def switcher(request: web.Request) -> list[tuple[str, str, str]]:
    """The same page in each supported language, named in that language (tag, name, link).
    Only a page opened by a link (GET) offers it: a form's answer cannot be asked again."""
    if request.method != "GET" or request.path.startswith("/dev/"):  # the developers' mailbox: English
        return []
    return [
        (language, LANGUAGE_NAMES[language], f"{request.path}?lang={quote(language)}")
        for language in i18n.supported()
        if language in LANGUAGE_NAMES
    ]


def own_gender_form(request: web.Request, *, action: str, now: str | None) -> dict[str, Any]:
    """A token page's form for its reader's own grammatical gender (templates/_own_gender.html),
    the heir's and the guardian's alike, its words in the language spoken now; `saved` after its
    POST came back (`?saved=gender`)."""
    return {
        "action": action,
        "now": now or "",
        "choices": gender.choices(),
        "saved": request.query.get("saved") == "gender",
    }


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


# The owner's own pages (api/owner/): signed in by a cookie, so their forms must carry an
# `Origin`: `Referrer-Policy: same-origin` rather than the token pages' `no-referrer`, under which
# a browser posts every form with `Origin: null`.
OWNER_PATHS = ("/", "/plan", "/sign-in", "/sign-out")
OWNER_PREFIXES = ("/plan/", "/sign-in/")


def is_owner_page(path: str) -> bool:
    return path in OWNER_PATHS or path.startswith(OWNER_PREFIXES)


def is_page(path: str) -> bool:
    return path.startswith(PAGE_PREFIXES) or path in ("/claim", "/dev/mail") or is_owner_page(path)


def render(
    template: str,
    *,
    reader: web.Request,
    status: int = 200,
    headers: dict[str, str] | None = None,
    **context: Any,
) -> web.Response:
    """The page in its reader's language and zone (`speaking`; a handler that read the person's
    record has entered it with their locale and zone), `<html lang dir>` set, every link and form
    of the page carrying the language the reader chose (`link`)."""
    with speaking(reader) as speaker:
        body = _TEMPLATES.get_template(template).render(
            stylesheet=STYLESHEET_PATH,
            favicon=FAVICON_PATH,
            lang=speaker.language,
            dir=i18n.direction(),
            languages=switcher(reader),
            link=lambda url: carry_language(reader, url),
            **context,
        )
    response = web.Response(
        text=body, status=status, content_type="text/html", charset="utf-8", headers=headers
    )
    response.headers["Content-Language"] = speaker.language
    return response


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


def with_inline_script(response: web.Response, *, digest: str) -> web.Response:
    """This page may run one inline script of the service's own, allowed by its hash
    (`sha256-…`) and nothing else."""
    response[_SCRIPT] = PAGE_CSP.replace("default-src 'none';", f"default-src 'none'; script-src '{digest}';")
    return response


# What each error status says to a person; anything else gets the 500 wording.
_ERROR_PAGES = {
    400: (N_("That could not be used"), "said"),
    401: (N_("That signature could not be used"), "said"),
    403: (N_("Nothing was done"), "said"),
    404: (N_("This link does not open anything"), "not_found"),
    405: (N_("This link does not open anything"), "not_found"),
    409: (N_("This link cannot do that now"), "said"),
    429: (N_("Please wait a minute"), "too_many"),
    503: (N_("Please try again a little later"), "unavailable"),
}


# The pages a form or a paste-back is posted from, by their first path segment: the error
# page's sentence with its link back (to try again now; after waiting, for a form sent too often).
_BACK = {
    "claim": (
        N_('<a href="{href}">Go back to your page</a> and try again.'),
        N_('Wait a little, then <a href="{href}">go back to your page</a> and try again.'),
    ),
    "guardian": (
        N_('<a href="{href}">Go back to your guardian page</a> and try again.'),
        N_('Wait a little, then <a href="{href}">go back to your guardian page</a> and try again.'),
    ),
    "check-in": (
        N_('<a href="{href}">Go back to the check-in page</a> and try again.'),
        N_('Wait a little, then <a href="{href}">go back to the check-in page</a> and try again.'),
    ),
    "confirm-email": (
        N_('<a href="{href}">Go back to the confirmation page</a> and try again.'),
        N_('Wait a little, then <a href="{href}">go back to the confirmation page</a> and try again.'),
    ),
    "form": (
        N_('<a href="{href}">Go back to the form</a> and try again.'),
        N_('Wait a little, then <a href="{href}">go back to the form</a> and try again.'),
    ),
}


def came_from(path: str) -> tuple[str, str] | None:
    """The page a post to `path` was made from, and which it is: `/claim/<token>/sep7/<id>` is
    `/claim/<token>`, "claim"; the lost-link form `/claim` is itself, "form". None elsewhere."""
    parts = path.rstrip("/").split("/")
    if parts == ["", "claim"]:
        return "/claim", "form"
    if len(parts) >= 3 and parts[1] in _BACK and parts[2]:
        return f"/{parts[1]}/{parts[2]}", parts[1]
    return None


def said(message: str | list[str]) -> str:
    """An error's message as a person reads it, in the page's language: each sentence a page's
    form can be answered with is marked where it is raised (`N_`) and translated here; the JSON
    body keeps the English."""
    return " ".join(_(part) for part in ([message] if isinstance(message, str) else message))


def error_page(
    request: web.Request, status: int, message: str | list[str], headers: dict[str, str] | None = None
) -> web.Response:
    """The calm page for an error under a page path, in the language the page was read in. The
    JSON body's words are for programs; only the messages of a 400, 401 or 409, and of a 429
    answering a form (written for the person, e.g. "the plan has been released", "this is not
    the wallet bound to you") are shown, translated, with a link back to the page the person
    came from."""
    title, kind = _ERROR_PAGES.get(status, (N_("Something went wrong on our side"), "failed"))
    if status == 429 and request.method == "POST":
        kind = "wait"  # a form sent too often: its own sentence (which limit, when to try again)
    origin = came_from(request.path) if kind in ("said", "wait") else None
    with speaking(request):
        back = None
        if origin is not None:
            sentence = _BACK[origin[1]][kind == "wait"]
            back = Markup(_(sentence)).format(  # noqa: S704 - the catalog's words, escaped link
                href=carry_language(request, origin[0])
            )
        return render(
            "error.html",
            reader=request,
            status=status,
            headers=headers,
            title=_(title),
            kind=kind,
            check_in=request.path.startswith("/check-in/"),
            message=said(message),
            back=back,
        )


async def page_headers(request: web.Request, response: web.StreamResponse) -> None:
    """on_response_prepare: privacy headers and the CSP on every response under a page path."""
    if is_page(request.path):
        response.headers.update(OWNER_HEADERS if is_owner_page(request.path) else CAPSULE_HEADERS)
        # The page's language may come from the browser's Accept-Language (docs/translations.md).
        vary = response.headers.get("Vary")
        if not vary:
            response.headers["Vary"] = "Accept-Language"
        elif "accept-language" not in vary.lower():
            response.headers["Vary"] = f"{vary}, Accept-Language"
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


@routes.get(FAVICON_PATH)
@public
@docs(tags=["pages"], summary="The service's icon, for the browser's tab", produces=["image/x-icon"])
async def favicon(_: web.Request) -> web.Response:
    """Every browser asks for /favicon.ico whatever the page says: a 404 on each page otherwise
    (a sealed ring in the pages' link blue, 32 px; the pages' CSP allows it as an own image)."""
    return web.Response(
        body=_FAVICON, content_type="image/x-icon", headers={"Cache-Control": "public, max-age=86400"}
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
