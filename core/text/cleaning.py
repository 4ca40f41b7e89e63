"""Cleaning text that people type before it is stored or shown to someone else.

A name or a title is read by other people: in an email subject, on a guardian's page, in a
wallet's signing request. Bidirectional overrides and isolates (U+202A-202E, U+2066-2069) let
a name display as something else ("moc.knab" shown as "bank.com"), so they are removed from
every text; other control characters are removed from one-line texts, while multi-line texts
keep their line breaks and tabs. The API's `Text` field (api/schemas.py) cleans on the way in,
and what is shown to others (email subjects, SEP-7 `msg`) is cleaned again on the way out, for
rows stored before the rule. Decisions: docs/security.md "Text that others read".
"""

from __future__ import annotations

import re

# Embeddings and overrides (LRE, RLE, PDF, LRO, RLO) and isolates (LRI, RLI, FSI, PDI).
BIDI_CONTROLS = "\u202a-\u202e\u2066-\u2069"
_BIDI = re.compile(f"[{BIDI_CONTROLS}]")
# C0 and C1 controls, DEL, and the Unicode line and paragraph separators: none belongs in a name.
_LINE = re.compile(f"[\x00-\x1f\x7f-\x9f\u2028\u2029{BIDI_CONTROLS}]")
# A multi-line text keeps tab (U+0009), line feed (U+000A) and carriage return (U+000D).
_BLOCK = re.compile(f"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f{BIDI_CONTROLS}]")
ELLIPSIS = "…"


def clean_line(text: str) -> str:
    """A one-line text (a name, a title, an address): no control or bidi character."""
    return _LINE.sub("", text)


def clean_block(text: str) -> str:
    """A multi-line text (a note, a description, a letter): no bidi character, no control but
    line breaks and tabs."""
    return _BLOCK.sub("", text)


def without_bidi(text: str) -> str:
    return _BIDI.sub("", text)


def cut(text: str, *, limit: int) -> str:
    """`text` at most `limit` characters: cut at the last space within the limit when there is
    one past its middle, with an ellipsis."""
    if len(text) <= limit:
        return text
    head = text[: limit - 1]
    space = head.rfind(" ")
    if space > limit // 2:
        head = head[:space]
    return head.rstrip(" ,;:.-") + ELLIPSIS
