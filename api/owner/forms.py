"""The owner's forms, read the way the JSON API reads its bodies: one converter, driven by the
schema's field types, turns a posted form into the body the same schema then loads; and the
schema's (or the model's) complaints go back beside each field, in words, in the owner's
language, with what they typed kept.

A form posts the API's own names: camelCase, nested fields with dots (`releaseRule.kind`,
`audience.all`), a list as the same name repeated (`audience.beneficiaryIds`). Decisions
(why an empty field is absent or null, why a refused form is a 422): docs/pages.md.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from marshmallow import Schema, ValidationError, fields
from multidict import MultiDict, MultiDictProxy

from core.errors import AppError
from core.text import i18n
from core.text.i18n import N_, _, ngettext

Form = MultiDictProxy[str] | MultiDict[str]

# A checkbox's value when ticked (browsers send "on" without a value attribute); a form may put
# a hidden "false" before it, so an unticked box is said too (the last value wins).
_TICKED = frozenset({"true", "on", "1", "yes"})
_UNTICKED = frozenset({"false", "off", "0", "no"})
# A number as people write it: digits, one decimal point or comma ("25,5" in most of Europe).
_NUMBER = re.compile(r"[+-]?\d+(?:[.,]\d+)?")
_ABSENT = object()


def form_to_body(schema: Schema, form: Mapping[str, Any]) -> dict[str, Any]:
    """The JSON body `form` stands for, for `schema` to load: dotted names nested, repeated
    names a list, a checkbox `true`, a number field's digits a number, an empty field null where
    the schema allows null and absent elsewhere (so "Missing data" says it is needed). Anything
    the schema does not name (the form's token, a button's name) is left out. A value the field
    cannot take is passed on as typed, for the schema to say why."""
    return _object(schema, _multi(form), prefix="")


def _multi(form: Mapping[str, Any]) -> MultiDict[str]:
    """Text fields only (a file field is no value of a JSON body), every repeat kept."""
    return MultiDict((key, value) for key, value in form.items() if isinstance(value, str))


def _object(schema: Schema, form: MultiDict[str], *, prefix: str) -> dict[str, Any]:
    body: dict[str, Any] = {}
    for name, declared in schema.load_fields.items():
        key = declared.data_key or name
        value = _value(declared, form, prefix + key)
        if value is not _ABSENT:
            body[key] = value
    return body


def _value(declared: fields.Field, form: MultiDict[str], key: str) -> Any:
    if isinstance(declared, fields.Nested):
        inner = _object(declared.schema, form, prefix=key + ".")
        return inner if inner else _ABSENT
    values = form.getall(key, [])
    if isinstance(declared, fields.List):
        items = [value for value in values if value.strip()]
        return [_scalar(declared.inner, value) for value in items] if items else _ABSENT
    if isinstance(declared, fields.Boolean):
        return _checkbox(values)
    if not values:
        return _ABSENT
    raw = values[-1]
    if not raw.strip():
        return None if declared.allow_none else _ABSENT
    return _scalar(declared, raw)


def _checkbox(values: list[str]) -> Any:
    """Ticked: true; a hidden "false" alone (the box left unticked): false; nothing: absent."""
    if not values:
        return _ABSENT
    last = values[-1].strip().lower()
    if last in _TICKED:
        return True
    if last in _UNTICKED or not last:
        return False
    return values[-1]


def _scalar(declared: fields.Field, raw: str) -> Any:
    """A number field's figures as a number; a field of any JSON type (`Raw`, as a release rule's
    value: a date or a count of days) takes whole digits as a number too, as JSON would carry them."""
    if isinstance(declared, fields.Raw) and type(declared) is fields.Raw and raw.strip().isdigit():
        return int(raw.strip())
    if isinstance(declared, fields.Number):
        text = raw.strip()
        if not _NUMBER.fullmatch(text):
            return raw
        text = text.replace(",", ".")
        return float(text) if "." in text else int(text)
    return raw


# What the schemas and the models say, in English for programs, as an owner reads it beside the
# field: each sentence marked here so the catalogs carry it, the figures given back in place.
# A message named by none of these is shown translated if the catalogs know it, else as it is.
FILL_IN = N_("Please fill this in.")
_EXACT = {
    "Missing data for required field.": FILL_IN,
    "Field may not be null.": FILL_IN,
    "Shorter than minimum length 1.": FILL_IN,
    "Must not be blank.": FILL_IN,
    "Not a valid email address.": N_(
        "This does not look like an email address: it should read like name@example.org."
    ),
    "Must be a number, e.g. 25.5.": N_("Please write a number, such as 25 or 12.5."),
    "Not a valid number.": N_("Please write a number, such as 25 or 12.5."),
    "Must be greater than 0 and at most 100.": N_("Please write a share greater than 0 and at most 100."),
    "At most 2 decimal places.": N_("Please use at most two decimal places, such as 12.5 or 33.33."),
    "Not a valid Stellar address (G..., 56 characters, valid checksum).": N_(
        "This is not a Stellar wallet address: one starts with G and has 56 letters and digits. "
        "Copy it from the wallet app."
    ),
    "This is one of your own wallets; a guardian must be someone else.": N_(
        "This is one of your own wallets: a guardian must be someone else."
    ),
    "This wallet is already one of your guardians": N_("This wallet is already one of your guardians."),
    "Not a valid string.": N_("This could not be read: please type it again."),
    "Not a valid boolean.": N_("This could not be read: please type it again."),
}


def _at_most(match: re.Match[str]) -> str:
    count = int(match.group("max"))
    return ngettext(
        "Please use at most {count} character.", "Please use at most {count} characters.", count
    ).format(count=i18n.number(count))


def _shares(match: re.Match[str]) -> str:
    return _(
        "The shares may add up to at most 100%: they add up to {total}% now, and this would make {proposed}%."
    ).format(total=_figure(match.group("total")), proposed=_figure(match.group("proposed")))


def _figure(text: str) -> str:
    number = float(text)
    return i18n.number(int(number) if number.is_integer() else number)


_PATTERNS: tuple[tuple[re.Pattern[str], Callable[[re.Match[str]], str]], ...] = (
    (re.compile(r"Longer than maximum length (?P<max>\d+)\."), _at_most),
    (re.compile(r"Length must be between \d+ and (?P<max>\d+)\."), _at_most),
    (
        re.compile(
            r"Allocations may total at most 100%: the current total is (?P<total>[\d.]+)%, "
            r"and this would make it (?P<proposed>[\d.]+)%\."
        ),
        _shares,
    ),
)


def in_words(message: str, *, typed: str | None = None) -> str:
    """One complaint as the owner reads it, in the language being spoken: an empty field is
    "Please fill this in." whatever the schema's words for it."""
    if _EXACT.get(message) == FILL_IN or (typed is not None and not typed.strip()):
        return _(FILL_IN)
    if message in _EXACT:
        return _(_EXACT[message])
    for pattern, words in _PATTERNS:
        found = pattern.fullmatch(message)
        if found:
            return words(found)
    return _(message)


@dataclass
class FormState:
    """A form as the page shows it: what was typed (every value, kept), and each complaint beside
    its field (`errors`, by the field's posted name) or above the form (`general`). Complaints are
    kept as said and put in words when the page reads them, so in the page's language."""

    values: MultiDict[str] = field(default_factory=MultiDict)
    said: list[tuple[str, str]] = field(default_factory=list)  # (field's name or "", message)
    # The words, once read: a handler may add its own complaint to them (`errors[name].append`).
    _words: dict[str, list[str]] | None = field(default=None, repr=False, compare=False)

    @classmethod
    def of(cls, initial: Mapping[str, Any]) -> FormState:
        """A form filled in from a record's wire names (`None` as empty), for an edit page."""
        values: MultiDict[str] = MultiDict()
        for key, value in initial.items():
            for item in value if isinstance(value, list) else [value]:
                values.add(key, "" if item is None else str(item))
        return cls(values=values)

    def value(self, name: str) -> str:
        return self.values.get(name, "")

    def all(self, name: str) -> list[str]:
        return self.values.getall(name, [])

    @property
    def invalid(self) -> bool:
        return bool(self.said)

    @property
    def errors(self) -> dict[str, list[str]]:
        """Each field's complaints, in words (in the language spoken when first read), once each."""
        if self._words is None:
            self._words = {}
            for name, message in self.said:
                if name:
                    words = in_words(message, typed=self.values.get(name))
                    if words not in self._words.setdefault(name, []):
                        self._words[name].append(words)
        return self._words

    @property
    def general(self) -> list[str]:
        """The complaints that name no field (a 409's sentence), in words, once each."""
        return list(dict.fromkeys(in_words(message) for name, message in self.said if not name))

    def refuse(self, messages: Any) -> FormState:
        """Record a schema's or a model's messages (marshmallow's nesting, or a plain list),
        each under its dotted field name."""
        _walk(self, "", messages)
        self._words = None
        return self


def _walk(state: FormState, prefix: str, messages: Any) -> None:
    if isinstance(messages, dict):
        for key, inner in messages.items():
            _walk(state, _joined(prefix, key), inner)
    elif isinstance(messages, list) and not all(isinstance(item, str) for item in messages):
        for inner in messages:  # a list field's items: said once, under the list's name
            _walk(state, prefix, inner)
    else:
        for message in messages if isinstance(messages, list) else [messages]:
            state.said.append((prefix, str(message)))


def _joined(prefix: str, key: Any) -> str:
    """A nested field's dotted name; the schema's own complaint (`_schema`) is its parent's."""
    name = "" if key == "_schema" else str(key)
    return f"{prefix}.{name}" if prefix and name else prefix or name


def load(schema: Schema, form: Mapping[str, Any]) -> tuple[dict[str, Any] | None, FormState]:
    """The form loaded by `schema` (None when it is refused), and the form as the page shows it
    again: the typed values and, when refused, each complaint beside its field."""
    state = FormState(values=_multi(form))
    try:
        return schema.load(form_to_body(schema, form)), state
    except ValidationError as error:
        return None, state.refuse(error.messages)


def refused(state: FormState, error: AppError) -> FormState:
    """A model's refusal of a loaded form (a 400 naming fields, a 409 in a sentence) added to the
    form as the page shows it again."""
    details = error.details if isinstance(error.details, dict) else None
    return state.refuse(details if details is not None else error.message)
