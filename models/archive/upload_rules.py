"""What an uploaded file may be called and declared as: its name, its content type, and whether
that type fits the archive item's type. Pure functions (docs/archive.md, "Upload").

Both values are echoed in download headers (Content-Disposition, Content-Type), so nothing
outside these rules may pass.
"""

from __future__ import annotations

import re
import unicodedata

from core.errors import validation_error

MAX_FILE_NAME = 200
# Types whose content must be of one media family: a "photo" that is a PDF is refused.
MEDIA_FAMILIES = {"photo": "image/", "video": "video/", "voice": "audio/"}

# Controls, quotes, path and shell specials, and bidi overrides (which can disguise "exe.pdf").
_UNSAFE_NAME_CHARS = re.compile(r"[\x00-\x1f\x7f-\x9f\"'`/\\:*?<>|;\u200e\u200f\u202a-\u202e\u2066-\u2069]+")
_MEDIA_TOKEN = r"[a-z0-9][a-z0-9!#$&^_.+-]{0,126}"  # noqa: S105 - a regex, not a secret
_MEDIA_TYPE_RE = re.compile(rf"{_MEDIA_TOKEN}/{_MEDIA_TOKEN}")
_CHARSET_RE = re.compile(r"charset\s*=\s*\"?([A-Za-z0-9._:-]{1,40})\"?", re.IGNORECASE)


def sanitize_file_name(*, raw: str | None) -> str:
    """A name safe in Content-Disposition and on any disk: basename only, no controls, quotes
    or separators, NFC, at most MAX_FILE_NAME characters (the extension kept when trimming)."""
    # Browsers escape '"', CR and LF in multipart file names as %22, %0D, %0A (WHATWG).
    name = re.sub(r"%(22|0[dDaA])", "_", unicodedata.normalize("NFC", raw or ""))
    name = re.split(r"[/\\]", name)[-1]
    name = _UNSAFE_NAME_CHARS.sub("_", name)
    name = " ".join(name.split()).strip(" .")
    if len(name) > MAX_FILE_NAME:
        stem, dot, ext = name.rpartition(".")
        if dot and 0 < len(ext) <= 16:
            name = stem[: MAX_FILE_NAME - len(ext) - 1] + "." + ext
        else:
            name = name[:MAX_FILE_NAME]
    return name or "file"


def normalize_content_type(*, raw: str | None) -> str:
    """`type/subtype` lowercased, plus a charset if one was given; anything else is octet-stream.

    The value is echoed in the download's Content-Type, so nothing outside this grammar may
    pass (no header injection, no odd parameters).
    """
    if not raw:
        return "application/octet-stream"
    essence, _, params = raw.partition(";")
    essence = essence.strip().lower()
    if not _MEDIA_TYPE_RE.fullmatch(essence):
        return "application/octet-stream"
    charset = _CHARSET_RE.search(params)
    return f"{essence}; charset={charset.group(1).lower()}" if charset else essence


def check_content_type(*, item_type: str, content_type: str) -> None:
    """A photo must be an image, a video a video and a voice note audio (400 otherwise)."""
    family = MEDIA_FAMILIES.get(item_type)
    if family and not content_type.startswith(family):
        raise validation_error(
            {"type": [f"A {item_type} must be uploaded with a {family}* content type, not {content_type}."]}
        )
