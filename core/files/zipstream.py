"""A zip archive written as it is sent: the standard library's `zipfile`, streaming.

`zipfile.ZipFile` writes to any object with `write` (no `seek`: it then puts each member's
sizes and CRC in a data descriptor after its bytes). Here it writes into a small buffer that
is drained after every write, so the archive leaves as a sequence of chunks and memory holds
at most one chunk of a member at a time, whatever the archive's size (bench/README.md,
"Exports"). No thread: `zipfile` only computes a CRC over bytes it is handed.

Each member's bytes come from an async source opened when its turn comes. A source that finds
its file unreadable (`Unreadable`) before its first chunk leaves no member behind; one that
does part-way is closed where it stopped (the archive stays valid). Both are named in
`manifest.json`, the last member, with the path, size and SHA-256 of every member before it.
"""

from __future__ import annotations

import hashlib
import json
import zipfile
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Iterable
from contextlib import aclosing
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

MANIFEST = "manifest.json"
# zipfile refuses dates before 1980 (the DOS epoch).
_EPOCH = (1980, 1, 1, 0, 0, 0)


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
    try:
        for member in members:
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
