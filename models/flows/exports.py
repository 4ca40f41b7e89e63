"""Exports: everything the owner entrusted, or everything one heir was left, as one archive.

The owner's (`GET /api/legacy/export`) works until the plan is released (the heirs then have
their own), at most EXPORTS_PER_HOUR an hour per account; the heir's
(`GET /api/claim/:token/export`) holds exactly what their capsule shows, read through the
capsule's own queries, so nothing sealed and nothing of another heir can reach it. Both are
on the owner's timeline. This module decides what goes in and under which path; the API
writes the zip (core/files/zipstream.py) as it sends it. Decisions: docs/archive.md, "Exports".
"""

from __future__ import annotations

from datetime import datetime
from typing import TypedDict

from redis.asyncio import Redis

from core import ratelimit
from core.db import Pool, transaction
from core.errors import Conflict, TooManyRequests
from core.files.crypto import KeyRing
from core.files.sealed_files import ServedFile
from core.files.zipstream import safe_name
from core.text import i18n
from core.text.i18n import N_, _
from models import activity, plans
from models.account import users
from models.activity import ActivityEntry
from models.archive import items, serving
from models.claim import capsules, downloads
from models.common import as_record
from models.contents import assets, beneficiaries, guardians, messages

EXPORTS_PER_HOUR = 3
HEIR_EXPORTS_PER_HOUR = 10
RELEASED = "The plan was released: it is your heirs' now, and each can download their own capsule."
LOCKED = "This capsule has not been released; there is nothing to download yet."


class ExportFile(TypedDict):
    """A stored file and the path it takes in the archive."""

    path: str
    file: ServedFile
    created_at: datetime


class ExportText(TypedDict):
    """A letter as text, and its path."""

    path: str
    text: str
    created_at: datetime


class LeftOut(TypedDict):
    """An archive item whose file cannot be in the export (not verified yet, failed, damaged)."""

    id: str
    title: str
    status: str


class OwnerExport(TypedDict):
    user: users.UserWithWallets
    plan: plans.Plan | None
    beneficiaries: list[beneficiaries.Beneficiary]  # the API leaves the claim tokens out
    guardians: list[guardians.Guardian]
    assets: list[assets.Asset]
    messages: list[messages.Message]
    archive: list[items.SealedArchiveItem]  # read once: what plan.json lists and what each file needs
    timeline: list[ActivityEntry]
    letters: list[ExportText]
    files: list[ExportFile]
    left_out: list[LeftOut]


class HeirExport(TypedDict):
    contents: capsules.Contents
    letters: list[ExportText]
    files: list[ExportFile]
    damaged: list[str]  # titles of files the capsule lists as damaged: named, not included


class _Paths:
    """Unique, safe archive paths under one folder: names made safe on every system
    (core.files.zipstream.safe_name: a title's slash is a hyphen, the order prefix stays),
    "name (2).ext" on a clash (compared case-insensitively, as most disks do)."""

    def __init__(self, folder: str) -> None:
        self.folder = folder
        self.taken: set[str] = set()

    def take(self, name: str) -> str:
        clean = safe_name(name)
        stem, dot, ext = clean.rpartition(".")
        if not dot or not stem:
            stem, dot, ext = clean, "", ""
        candidate, n = clean, 1
        while candidate.casefold() in self.taken:
            n += 1
            candidate = f"{stem} ({n}){dot}{ext}"
        self.taken.add(candidate.casefold())
        return f"{self.folder}/{candidate}"


# A letter's media, named in its reader's words where it cannot be included.
_MEDIA = {
    "photo": N_("The photo of {letter}"),
    "video": N_("The video of {letter}"),
    "voice": N_("The voice recording of {letter}"),
}


def letter_text(*, title: str | None, written: datetime, content: str, media: str | None) -> str:
    """A letter as a person reads it: title, when it was written (in words, in the reader's
    language and zone, as their page says it: the caller speaks as them), where its media is,
    then the text. No machine timestamp: the zip entry's own date is for programs."""
    lines = [title or _("A letter"), _("Written on {when}").format(when=i18n.when(written))]
    if media:
        # Translators: the file of a letter's photo, recording or video, named under its letter.
        lines.append(_("With it: {file}").format(file=media))
    return "\n".join([*lines, "", content, ""])


class _Letter(TypedDict):
    title: str | None
    content: str
    created_at: datetime


def _stem(n: int, title: str | None) -> str:
    """Letters keep the order they were written in: "001 Title" (an untitled one in the
    reader's words, as its text file says it)."""
    return f"{n:03d} {title or _('A letter')}"


def _letter(paths: _Paths, n: int, message: _Letter, media_path: str | None) -> ExportText:
    text = letter_text(
        title=message["title"], written=message["created_at"], content=message["content"], media=media_path
    )
    return ExportText(
        path=paths.take(f"{_stem(n, message['title'])}.txt"), text=text, created_at=message["created_at"]
    )


def _served(item: items.SealedArchiveItem) -> ServedFile:
    """What streaming the item's file needs, and nothing else of the item."""
    return ServedFile(
        id=item["id"],
        storage_key=item["storage_key"],
        key_id=item["key_id"],
        wrapped_key=item["wrapped_key"],
        size_bytes=item["size_bytes"],
        stored_bytes=item["stored_bytes"],
        file_name=item["file_name"],
        content_type=item["content_type"],
    )


async def owner_export(pool: Pool, ring: KeyRing, redis: Redis, *, user_id: str) -> OwnerExport:
    """Everything of this account, with where each file goes; 409 once the plan is released,
    429 past EXPORTS_PER_HOUR. Puts `legacy.exported` on the timeline first, so the export's own
    timeline shows it.

    One REPEATABLE READ transaction reads the plan once and each list once, so the zip is one
    moment of the account: a letter edited or a file added while it is read is either wholly in
    it or wholly not. The transaction's one write is that timeline entry (an INSERT, which never
    conflicts under REPEATABLE READ): it must be in the export's own timeline and never written
    for a refused export."""
    async with transaction(pool, isolation="REPEATABLE READ") as cur:
        plan = await plans.get(cur, user_id=user_id)
        if plan is not None and plan["status"] == plans.RELEASED:
            raise Conflict(RELEASED)
        wait = await ratelimit.hit(redis, f"export:{user_id}", EXPORTS_PER_HOUR, 3600)
        if wait:
            raise TooManyRequests(f"At most {EXPORTS_PER_HOUR} exports an hour; try again later.", wait)
        await activity.record(
            cur, user_id=user_id, kind="legacy.exported", entity_id=user_id, summary=N_("Exported everything")
        )
        user = await users.one_with_wallets(cur, ring, user_id=user_id)
        beneficiary_list = await beneficiaries.ROWS.list_all(cur, ring, user_id=user_id)
        guardian_list = await guardians.ROWS.list_all(cur, ring, user_id=user_id)
        asset_list = await assets.ROWS.list_all(cur, ring, user_id=user_id)
        message_list = await messages.ROWS.list_all(cur, ring, user_id=user_id)
        archive = await serving.all_sealed(cur, ring, user_id=user_id)
        timeline = await activity.all_for_user(cur, user_id=user_id)
        await activity.name_entries(cur, ring, user_id=user_id, entries=timeline)
    sealed = {item["id"]: item for item in archive}
    letters: list[ExportText] = []
    files: list[ExportFile] = []
    left_out: list[LeftOut] = []
    placed: set[str] = set()
    letter_paths, archive_paths = _Paths("messages"), _Paths("archive")
    # The letters' text files in the owner's words and zone, as their note (api/archive/readme.py).
    with i18n.speaking(user["locale"], user["time_zone"]):
        for n, message in enumerate(message_list, 1):
            media_path = None
            media = sealed.get(message["media_id"] or "")
            if media is not None and media["status"] == "available" and media["id"] not in placed:
                media_path = letter_paths.take(f"{_stem(n, message['title'])} - {media['file_name']}")
                files.append(ExportFile(path=media_path, file=_served(media), created_at=media["created_at"]))
                placed.add(media["id"])
            # The export is refused once the plan is released, so no letter's text is withheld here.
            letter = _Letter(
                title=message["title"], content=message["content"] or "", created_at=message["created_at"]
            )
            letters.append(_letter(letter_paths, n, letter, media_path))
    for item in archive:
        if item["id"] in placed:
            continue
        if item["status"] != "available":
            left_out.append(LeftOut(id=item["id"], title=item["title"], status=item["status"]))
            continue
        path = archive_paths.take(item["file_name"])
        files.append(ExportFile(path=path, file=_served(sealed[item["id"]]), created_at=item["created_at"]))
    return OwnerExport(
        user=user,
        plan=plan,
        beneficiaries=beneficiary_list,
        guardians=guardian_list,
        assets=asset_list,
        messages=message_list,
        archive=archive,
        timeline=timeline,
        letters=letters,
        files=files,
        left_out=left_out,
    )


async def heir_export(
    pool: Pool, ring: KeyRing, redis: Redis, *, capsule: capsules.Capsule, now: datetime
) -> HeirExport:
    """What this heir's capsule shows now, with where each file goes: opened letters as text
    with their media, documents; 409 before release, 429 past HEIR_EXPORTS_PER_HOUR.
    `capsule.exported` goes on the owner's timeline."""
    if not capsules.is_released(capsule=capsule):
        raise Conflict(LOCKED)
    wait = await ratelimit.hit(redis, f"export:heir:{capsule['beneficiary_id']}", HEIR_EXPORTS_PER_HOUR, 3600)
    if wait:
        raise TooManyRequests(f"At most {HEIR_EXPORTS_PER_HOUR} downloads an hour; try again later.", wait)
    contents = await capsules.contents(pool, ring, capsule=capsule, now=now, opened=False)
    letter_paths, document_paths = _Paths("letters"), _Paths("documents")
    letters: list[ExportText] = []
    files: list[ExportFile] = []
    damaged: list[str] = []
    for n, message in enumerate(contents["messages"], 1):
        media_path = None
        if message["media"] is not None and message["media"]["status"] == "damaged":
            what = _MEDIA.get(message["media"]["type"], N_("The file of {letter}"))
            damaged.append(_(what).format(letter=_stem(n, message["title"])))
        elif message["media"] is not None:
            media = await downloads.media_for_message(
                pool, ring, capsule=capsule, raw_id=message["id"], now=now
            )
            media_path = letter_paths.take(f"{_stem(n, message['title'])} - {media['file_name']}")
            files.append(ExportFile(path=media_path, file=media, created_at=message["created_at"]))
        letters.append(_letter(letter_paths, n, message, media_path))
    for document in contents["documents"]:
        if document["status"] == "damaged":
            damaged.append(document["title"])
            continue
        served = await downloads.document_for_download(pool, ring, capsule=capsule, raw_id=document["id"])
        path = document_paths.take(document["file_name"])
        files.append(ExportFile(path=path, file=served, created_at=contents["released_at"]))
    async with transaction(pool) as cur:
        await activity.record(
            cur,
            user_id=capsule["owner_id"],
            kind="capsule.exported",
            entity_id=capsule["beneficiary_id"],
            summary=N_("A beneficiary downloaded everything in their capsule"),
        )
    return as_record(
        HeirExport, row={"contents": contents, "letters": letters, "files": files, "damaged": damaged}
    )
