"""JSON carried inside a form field (a passkey's `credential`, an upload's `audience`, an heir
address suggestion riding as a note), parsed once with its size and depth bounded.

The standard parser recurses once per nesting level: a few hundred kilobytes of `[[[[…` reach
Python's recursion limit and raise RecursionError, which nobody expects from a parse and which
became a 500 with a traceback. The depth is counted on the text before parsing, so a hostile
field is refused in time linear in its (bounded) length and the parser never recurses deep.
Every failure is `Unparsed` (a ValueError): callers answer it with a 400 in their own words.
"""

from __future__ import annotations

import json
import re
from typing import Any

# What the fields carrying JSON need, with room: a passkey's answer is a few kilobytes, an
# audience at most a few hundred ids; none nests deeper than a handful of levels.
MAX_CHARS = 64 * 1024
MAX_DEPTH = 32

# A JSON string (escapes included): its brackets are text, not nesting.
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.DOTALL)
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")


class Unparsed(ValueError):
    """Not JSON within the bounds: too long, too deep, or not JSON at all."""


def depth(text: str) -> int:
    """The deepest nesting of arrays and objects in `text` (brackets inside strings ignored;
    unbalanced text is left for the parser to refuse)."""
    deepest = level = 0
    for bracket in _NOT_BRACKET.sub("", _STRING.sub('""', text)):
        level += 1 if bracket in "[{" else -1
        deepest = max(deepest, level)
    return deepest


def loads(text: str | bytes, *, max_chars: int = MAX_CHARS, max_depth: int = MAX_DEPTH) -> Any:
    """`text` parsed, or Unparsed: longer than `max_chars`, nested deeper than `max_depth`, or
    not JSON (RecursionError included, should the counting ever miss)."""
    if isinstance(text, bytes):
        if len(text) > max_chars * 4:
            raise Unparsed("too long")
        try:
            text = text.decode()
        except UnicodeDecodeError:
            raise Unparsed("not UTF-8") from None
    if len(text) > max_chars:
        raise Unparsed("too long")
    if depth(text) > max_depth:
        raise Unparsed("too deep")
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        raise Unparsed("not JSON") from None
