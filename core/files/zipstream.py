"""A zip archive written as it is sent: the standard library's `zipfile`, streaming.

`zipfile.ZipFile` writes to any object with `write` (no `seek`: it then puts each member's
sizes and CRC in a data descriptor after its bytes). Here it writes into a small buffer that
is drained after every write, so the archive leaves as a sequence of chunks and memory holds
at most one chunk of a member at a time, whatever the archive's size. No
thread: `zipfile` only computes a CRC over bytes it is handed.

Each member's bytes come from an async source opened when its turn comes. A source that finds
its file unreadable (`Unreadable`) before its first chunk leaves no member behind; one that
does part-way is closed where it stopped (the archive stays valid). Both are named in
`manifest.json`, the last member, with the path, size and SHA-256 of every member before it.
"""

from __future__ import annotations

import hashlib
import json
import re
import unicodedata
import zipfile
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Iterable
from contextlib import aclosing
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

MANIFEST = "manifest.json"
# zipfile refuses dates before 1980 (the DOS epoch).
_EPOCH = (1980, 1, 1, 0, 0, 0)

# Entry names (`safe_name`): what Windows, macOS and Linux all accept and show as written.
# Device names Windows reserves in any folder, with any extension, in any case ("con.txt",
# "Lpt1.tar.gz"); the superscript digits count too.
_RESERVED = re.compile(r"CON|PRN|AUX|NUL|(COM|LPT)[1-9\u00b9\u00b2\u00b3]", re.IGNORECASE)
# A separator inside a title ("Mum/Dad") becomes a hyphen: the title stays whole and in one folder.
_SEPARATORS = re.compile(r"[/\\|]")
# What Windows forbids in a name, and every control character (C0, DEL, C1).
_FORBIDDEN = re.compile(r'[<>:"?*\x00-\x1f\x7f-\x9f]')
# Invisible characters that are not Unicode "format" (Cf) characters: fillers that render as
# nothing (Hangul, Khmer, Mongolian), the combining grapheme joiner.
_INVISIBLE = frozenset("\u034f\u115f\u1160\u17b4\u17b5\u180b\u180c\u180d\u180f\u3164\uffa0")
# Bytes, not characters: ext4 and APFS allow 255 bytes of UTF-8 per name; room is left for the
# " (2)" a clash adds.
MAX_NAME_BYTES = 200


@dataclass(frozen=True)
class Member:
    """One file of the archive: where it goes, when it was made, and where its bytes come from.

    `size` (when known) lets zipfile choose zip64 for a member past 4 GiB up front. `compress`
    deflates text; files (already compressed photos, videos, PDFs) are stored as they are.
    """

    path: str
    modified: datetime
    open: Callable[[], AsyncIterator[bytes]]
    size: int | None = None
    compress: bool = False


@dataclass
class Manifest:
    """What the archive holds (`files`) and what it could not hold in full (`damaged`)."""

    files: list[dict[str, Any]] = field(default_factory=list)
    damaged: list[dict[str, Any]] = field(default_factory=list)

    def document(self, extra: dict[str, Any]) -> bytes:
        body = {"files": self.files, "damaged": self.damaged, **extra}
        return json.dumps(body, indent=2, ensure_ascii=False).encode()


class Unreadable(Exception):
    """Raised by a member's source for bytes that cannot be read whole (missing, damaged): the
    member is named in the manifest and the archive goes on. Any other error ends the stream."""


class _Sink:
    """What zipfile writes into: a list of pieces, taken out after every write."""

    def __init__(self) -> None:
        self._pieces: list[bytes] = []

    def write(self, data: bytes, /) -> int:
        self._pieces.append(bytes(data))
        return len(data)

    def flush(self) -> None:
        pass

    def close(self) -> None:
        pass

    def take(self) -> bytes:
        data = b"".join(self._pieces)
        self._pieces.clear()
        return data


def safe_name(name: str, *, fallback: str = "file") -> str:
    """One entry name (no folder) safe to extract on Windows, macOS and Linux, reading as the
    owner wrote it as far as that allows:

    - NFC; invisible and bidi characters (Unicode format characters, fillers) removed;
    - tabs, line breaks and other spaces made one plain space;
    - slashes, backslashes and `|` made hyphens (a title with a slash stays whole);
    - `<>:"?*` and control characters made `_`;
    - leading dots (hidden files, `..`) and trailing dots and spaces removed;
    - a reserved device name (`CON`, `nul.txt`, `Com1.tar.gz`) given a `_` after it;
    - at most MAX_NAME_BYTES of UTF-8, the extension kept when cutting.

    An order prefix ("001 ") is ordinary text and stays. Nothing left: `fallback`."""
    text = unicodedata.normalize("NFC", name)
    text = "".join(c for c in text if unicodedata.category(c) != "Cf" and c not in _INVISIBLE)
    text = " ".join(text.split())  # tabs, line breaks, no-break and other spaces: one plain space
    text = _FORBIDDEN.sub("_", _SEPARATORS.sub("-", text))
    text = text.lstrip(". ").rstrip(". ")
    stem, dot, ext = text.partition(".")
    if _RESERVED.fullmatch(stem.rstrip(" ")):
        text = f"{stem.rstrip(' ')}_{dot}{ext}"
    text = _cut(text, MAX_NAME_BYTES).rstrip(". ")
    return text or fallback


def _cut(name: str, limit: int) -> str:
    """`name` in at most `limit` bytes of UTF-8, cut between characters, its extension kept."""
    if len(name.encode()) <= limit:
        return name
    stem, dot, ext = name.rpartition(".")
    if not dot or not stem or len(ext.encode()) > 16:
        stem, dot, ext = name, "", ""
    room = limit - len(f"{dot}{ext}".encode())
    return stem.encode()[:room].decode("utf-8", "ignore").rstrip(". ") + dot + ext


def _check_path(path: str, taken: set[str]) -> None:
    """Every entry's path is made of safe names and is the only one of its spelling in any case
    (Windows and macOS disks ignore case): a caller's mistake stops the stream, never a zip that
    extracts differently on another machine."""
    if any(safe_name(part, fallback="") != part for part in path.split("/")):
        raise ValueError(f"unsafe zip entry name: {path!r}")
    if path.casefold() in taken:
        raise ValueError(f"two zip entries named {path!r}")
    taken.add(path.casefold())


def in_memory(data: bytes) -> Callable[[], AsyncIterator[bytes]]:
    """A member whose bytes are already here (a JSON document, a letter's text)."""

    async def source() -> AsyncIterator[bytes]:
        yield data

    return source


def _info(member: Member) -> zipfile.ZipInfo:
    stamp = member.modified.utctimetuple()[:6]
    info = zipfile.ZipInfo(member.path, date_time=max(tuple(stamp), _EPOCH))  # type: ignore[arg-type]
    info.compress_type = zipfile.ZIP_DEFLATED if member.compress else zipfile.ZIP_STORED
    info.external_attr = 0o644 << 16
    if member.size is not None:
        info.file_size = member.size
    return info


async def zip_stream(
    members: Iterable[Member], *, manifest_extra: dict[str, Any] | None = None
) -> AsyncGenerator[bytes, None]:
    """The archive of `members` then `manifest.json`, chunk by chunk.

    A source raising `Unreadable` before its first chunk is skipped; part-way, its member is
    closed with what it gave. Either way the reason (`str(exc)`, written for a person, no
    content) goes in the manifest's `damaged` list with the path.
    """
    sink = _Sink()
    manifest = Manifest()
    archive = zipfile.ZipFile(sink, "w", allowZip64=True)
    taken: set[str] = {MANIFEST}
    try:
        for member in members:
            _check_path(member.path, taken)
            async with aclosing(member.open()) as source:  # type: ignore[type-var]
                try:
                    first = await anext(source, None)
                except Unreadable as exc:
                    manifest.damaged.append({"path": member.path, "included": False, "reason": str(exc)})
                    continue
                digest, size = hashlib.sha256(), 0
                with archive.open(_info(member), "w") as out:
                    chunk = first
                    try:
                        while chunk is not None:
                            out.write(chunk)
                            digest.update(chunk)
                            size += len(chunk)
                            if data := sink.take():
                                yield data
                            chunk = await anext(source, None)
                    except Unreadable as exc:
                        manifest.damaged.append(
                            {"path": member.path, "included": True, "size": size, "reason": str(exc)}
                        )
                manifest.files.append({"path": member.path, "size": size, "sha256": digest.hexdigest()})
                if data := sink.take():
                    yield data
        manifest_info = zipfile.ZipInfo(MANIFEST, date_time=_EPOCH)
        manifest_info.compress_type = zipfile.ZIP_DEFLATED
        manifest_info.external_attr = 0o644 << 16
        archive.writestr(manifest_info, manifest.document(manifest_extra or {}))
        archive.close()
        yield sink.take()
    finally:
        if archive.fp is not None:  # abandoned part-way (the client left): drop, write nothing more
            archive.fp = None
