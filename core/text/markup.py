"""What a person reads, as HTML: one way for the pages (api/html.py) and the emails
(models/mail/emails.py) to build their Jinja environments, isolate a typed name, and turn the
same markup back into plain text.

Each floor keeps its own environment over its own templates (the pages' in `api/templates/`,
the emails' in `models/mail/templates/`): one shared instance would have to sit below both and
name a folder of a floor above it. What they share is here: autoescape, undefined names as
errors, the reader's language for `_()` / `ngettext()` / `{% trans %}` and `gendered()` (a
sentence agreeing with a person's grammatical gender, core/text/gender.py), and `<bdi>` around
every name someone typed, so a right-to-left name cannot reorder the sentence it sits in.
"""

from __future__ import annotations

import html
import re
from collections.abc import Callable
from typing import Any

import jinja2
from markupsafe import Markup

from core.text import gender, i18n
from core.text.cleaning import clean_line


def environment(loader: jinja2.BaseLoader) -> jinja2.Environment:
    """A Jinja environment over `loader`'s templates, speaking the reader's language
    (core.text.i18n.speaking, set by the caller around each rendering)."""
    env = jinja2.Environment(
        loader=loader,
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        extensions=["jinja2.ext.i18n"],
    )
    env.install_gettext_callables(i18n._, i18n.ngettext, newstyle=True)  # type: ignore[attr-defined]
    env.globals["gendered"] = _template_gendered
    env.filters.update(bdi=bdi, number=i18n.number, spelled=i18n.when)
    return env


@jinja2.pass_context
def _template_gendered(
    context: jinja2.runtime.Context, message: str, person: str | None, **variables: Any
) -> str:
    """`{{ gendered("%(owner)s left this for you", owner_gender, owner=…) }}`: as `_()` with its
    named values (each escaped unless it is markup already, as `{% trans %}` does), the sentence
    agreeing with a person of grammatical gender `person`."""
    words = gender.gendered(message, person)
    if context.eval_ctx.autoescape:
        return Markup(words) % variables  # noqa: S704 - a catalog's sentence; the values escaped
    return words % variables


def bdi(name: Any) -> Markup:
    """A name someone typed, isolated from the text around it (`<bdi>`): a right-to-left name
    cannot reorder the sentence it sits in. Its own bidi controls are gone too (core/text/cleaning.py)."""
    return Markup("<bdi>{}</bdi>").format(clean_line(str(name)))


def escaped(message: str) -> Markup:
    """A translated sentence as markup: its own characters escaped, so that `.format()` escapes
    what is put in it and keeps the markup (a `bdi` name, a link) it is given."""
    return Markup.escape(message)


def _(message: str) -> Markup:
    """`message` in the reader's language, as markup: `.format()` escapes what it is given (a
    note, a date), and keeps a `<bdi>` name or a link as it is (the emails' words)."""
    return escaped(i18n._(message))


def ngettext(singular: str, plural: str, n: int) -> Markup:
    return escaped(i18n.ngettext(singular, plural, n))


def gendered(message: str, person: str | None) -> Markup:
    """`message` agreeing with a person of grammatical gender `person` (core/text/gender.py), as
    markup like `_`."""
    return escaped(gender.gendered(message, person))


def link(url: str) -> Markup:
    """A link written out in full, as the text part shows it, and followed in the HTML part (an
    email address without its `mailto:`, as people write one)."""
    return Markup('<a href="{url}">{shown}</a>').format(url=url, shown=url.removeprefix("mailto:"))


_TAG = re.compile(r"<[^>]*>")
_NAMED = re.compile(r"<bdi>([^<]*)</bdi>")


def plain(markup: Markup) -> str:
    """The words of `markup` built by the helpers above, as the text part says them: no tag,
    no entity, every line break kept (Markup.striptags would fold them)."""
    return html.unescape(_TAG.sub("", str(markup)))


def names_cut(markup: Markup, cut: Callable[[str], str]) -> Markup:
    """`markup` with each isolated name passed through `cut` (a subject carries a shortened name)."""
    shortened = _NAMED.sub(
        lambda m: str(Markup("<bdi>{}</bdi>").format(cut(html.unescape(m.group(1))))), markup
    )
    return Markup(shortened)  # noqa: S704 - the same markup, each name escaped again once cut
