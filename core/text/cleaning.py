"""Cleaning text that people type before it is stored or shown to someone else.

A name or a title is read by other people: in an email subject, on a guardian's page, in a
wallet's signing request. Bidirectional overrides and isolates (U+202A-202E, U+2066-2069) let
a name display as something else ("moc.knab" shown as "bank.com"), so they are removed from
every text; other control characters are removed from one-line texts, while multi-line texts
keep their line breaks and tabs. Invisible characters (Unicode's default-ignorable ones: tag
characters, zero-width spaces, soft hyphens, fillers, invisible operators) are removed from
every text too: they make two names that look the same differ, or carry words nobody sees
("ASCII smuggling" in tag characters). What they are needed for stays: the zero-width
non-joiner and joiner between letters of the scripts that spell with them (Persian, Urdu,
Indic), the joiner inside an emoji sequence, the three subdivision flags' tags, variation
selectors and Mongolian's free variation selectors. A multi-line text keeps the bidi marks
(LRM, RLM, ALM), with which a writer places punctuation in a mixed line; a name does not.
The API's `Text` field (api/schemas.py) cleans on the way in,
and what is shown to others (email subjects, SEP-7 `msg`) is cleaned again on the way out, for
rows stored before the rule. Decisions: docs/security.md "Text that others read".
"""

from __future__ import annotations

import re
import unicodedata

# Embeddings and overrides (LRE, RLE, PDF, LRO, RLO) and isolates (LRI, RLI, FSI, PDI).
BIDI_CONTROLS = "\u202a-\u202e\u2066-\u2069"
_BIDI = re.compile(f"[{BIDI_CONTROLS}]")
# Default-ignorable code points (DerivedCoreProperties.txt) but the joiners, the bidi marks, the
# variation selectors and Mongolian's, and the tags (all below), with the interlinear annotation
# controls: soft hyphen, combining grapheme joiner, Hangul fillers, Khmer inherent vowels,
# zero-width space, word joiner and invisible operators, deprecated format controls, BOM, and
# the reserved ones.
INVISIBLE = (
    "\u00ad\u034f\u115f\u1160\u17b4\u17b5\u200b\u2060-\u2065\u206a-\u206f\u3164\ufeff"
    "\uffa0\ufff0-\ufffb\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0080-\U000e00ff"
    "\U000e01f0-\U000e0fff"
)
BIDI_MARKS = "\u061c\u200e\u200f"
# C0 and C1 controls, DEL, and the Unicode line and paragraph separators: none belongs in a name.
_LINE = re.compile(f"[\x00-\x1f\x7f-\x9f\u2028\u2029{BIDI_CONTROLS}{BIDI_MARKS}{INVISIBLE}]")
# A multi-line text keeps tab (U+0009), line feed (U+000A) and carriage return (U+000D).
_BLOCK = re.compile(f"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f{BIDI_CONTROLS}{INVISIBLE}]")
ZWNJ, ZWJ = "\u200c", "\u200d"
_JOINER = re.compile(f"[{ZWNJ}{ZWJ}]")
_TAGS = re.compile("[\U000e0000-\U000e007f]+")
BLACK_FLAG = "\U0001f3f4"
# The tags of the three recommended subdivision flags (England, Scotland, Wales), after U+1F3F4:
# the only tag sequences an emoji keyboard writes.
FLAG_TAGS = frozenset(
    "".join(chr(0xE0000 + ord(c)) for c in code) + "\U000e007f" for code in ("gbeng", "gbsct", "gbwls")
)
# Scripts whose spelling uses the zero-width non-joiner and joiner between letters: Arabic and
# its neighbours (Persian, Urdu, Syriac, Thaana, N'Ko), the Indic scripts from Devanagari to
# Sinhala, Tibetan, Myanmar, Khmer, Mongolian, and Arabic's presentation forms.
JOINING_SCRIPTS = (
    (0x0600, 0x08FF),
    (0x0900, 0x0DFF),
    (0x0F00, 0x0FFF),
    (0x1000, 0x109F),
    (0x1780, 0x18AF),
    (0xA8E0, 0xA8FF),
    (0xFB50, 0xFDFF),
    (0xFE70, 0xFEFE),
)
EMOJI_MODIFIERS = (0x1F3FB, 0x1F3FF)
VS16 = 0xFE0F
ELLIPSIS = "…"


def clean_line(text: str) -> str:
    """A one-line text (a name, a title, an address): no control, bidi or invisible character."""
    return _joiners(_tags(_LINE.sub("", text)))


def clean_block(text: str) -> str:
    """A multi-line text (a note, a description, a letter): no bidi control, no invisible
    character, no control but line breaks and tabs."""
    return _joiners(_tags(_BLOCK.sub("", text)))


def _tags(text: str) -> str:
    def kept(match: re.Match[str]) -> str:
        after_flag = text[match.start() - 1 : match.start()] == BLACK_FLAG
        return match.group() if after_flag and match.group() in FLAG_TAGS else ""

    return _TAGS.sub(kept, text)


def _joiners(text: str) -> str:
    """`text` with a zero-width non-joiner or joiner only where it joins something: between two
    letters of a script that uses it, or (the joiner) between the parts of an emoji."""

    def kept(match: re.Match[str]) -> str:
        start = match.start()
        before = text[start - 1] if start else ""
        after = text[start + 1 : start + 2]
        if _joining_letter(before) and _joining_letter(after):
            return match.group()
        if match.group() == ZWJ and _emoji_part(before) and _pictograph(after):
            return match.group()
        return ""

    return _JOINER.sub(kept, text)


def _joining_letter(char: str) -> bool:
    if not char or not unicodedata.category(char).startswith(("L", "M")):
        return False
    return any(low <= ord(char) <= high for low, high in JOINING_SCRIPTS)


def _pictograph(char: str) -> bool:
    """Whether `char` can be part of an emoji (Extended_Pictographic, roughly: the symbol blocks
    emoji are drawn from)."""
    if not char:
        return False
    code = ord(char)
    return (
        0x2190 <= code <= 0x2BFF
        or 0x1F000 <= code <= 0x1FAFF
        or code in (0xA9, 0xAE, 0x203C, 0x2049, 0x2122, 0x2139, 0x3030, 0x303D, 0x3297, 0x3299)
    )


def _emoji_part(char: str) -> bool:
    """What may stand before the joiner in an emoji sequence: a pictograph, its emoji
    presentation selector, a skin tone, or the end of a tag sequence."""
    if not char:
        return False
    code = ord(char)
    return _pictograph(char) or code in (VS16, 0xE007F) or EMOJI_MODIFIERS[0] <= code <= EMOJI_MODIFIERS[1]


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
