"""`README.txt`, the first entry of both exports: a plain note a person opens before anything
else, saying whose plan it is, what each folder holds and, in the heir's, what they were left
and their share of each asset in words. Plain text (UTF-8, CRLF line ends, so every system's
simplest editor shows its lines); the JSON files stay for programs. docs/archive.md, "Exports".
"""

from __future__ import annotations

from datetime import datetime

from api.html import sentence_start
from core.clock import spelled
from core.files.zipstream import Member, in_memory
from models.claim import shares
from models.flows import exports

NAME = "README.txt"
_LEFT_OUT = {
    "pending": "not checked yet when you downloaded this (download again in a few minutes)",
    "failed": "its upload did not complete",
    "damaged": "the stored copy was found damaged",
}


def member(text: bytes, *, now: datetime) -> Member:
    """The note as the zip's first entry (deflated)."""
    return Member(path=NAME, modified=now, open=in_memory(text), compress=True)


def _count(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"


def _text(paragraphs: list[str]) -> bytes:
    return ("\r\n\r\n".join(paragraphs) + "\r\n").replace("\r\n", "\n").replace("\n", "\r\n").encode()


def _items(lines: list[str]) -> str:
    return "\n".join(f"- {line}" for line in lines)


def owner_readme(export: exports.OwnerExport, *, now: datetime) -> bytes:
    """The owner's note: their plan, what each file and folder holds, what could not be included."""
    name = export["user"]["name"]
    media = sum(1 for f in export["files"] if f["path"].startswith("messages/"))
    stored = len(export["files"]) - media
    parts = [
        f"{name}'s legacy plan" if name else "Your legacy plan",
        "Everything you entrusted to the Legacy Planning Service, as it was on "
        f"{spelled(now)}. It is yours: keep it somewhere safe.",
        "What is inside\n"
        + _items(
            [
                f"{NAME}: this note.",
                "messages/: your "
                + _count(len(export["letters"]), "letter, as a text file", "letters, as text files")
                + ", numbered in the order you wrote them, each with the date it was"
                " written; a photo, recording or video that goes with a letter has the same number.",
                f"archive/: the {_count(stored, 'file', 'files')} you stored, as you uploaded them.",
                "plan.json: your plan, for a computer program to read: your profile, the plan's settings, "
                f"{_count(len(export['beneficiaries']), 'beneficiary', 'beneficiaries')} (without their "
                f"private links), {_count(len(export['guardians']), 'guardian', 'guardians')}, "
                f"{_count(len(export['assets']), 'asset', 'assets')}, your letters with who they are for "
                "and when they open, and your archive.",
                "timeline.json: everything that happened to your plan, for a computer program to read.",
                "manifest.json: the size and SHA-256 fingerprint of every file, to check that nothing was "
                "changed or cut short.",
            ]
        ),
    ]
    if export["left_out"]:
        parts.append(
            "Not included\n"
            + _items(
                [
                    f"{item['title']}: {_LEFT_OUT.get(item['status'], item['status'])}."
                    for item in export["left_out"]
                ]
            )
        )
    return _text(parts)


def heir_readme(export: exports.HeirExport, *, owner: str, now: datetime) -> bytes:
    """The heir's note: from whom, what they were left and their share of each asset in words,
    what each folder holds, the letters still to come and anything damaged."""
    contents = export["contents"]
    heir = contents["name"]
    media = sum(1 for f in export["files"] if f["path"].startswith("letters/"))
    documents = len(export["files"]) - media
    allocation = f"{contents['allocation_percentage'].normalize():f}"
    relationship = f" ({contents['relationship']})" if contents["relationship"] else ""
    parts = [
        f"From {owner}, for {heir}",
        f"This is everything {owner} left for you through the Legacy Planning Service, as your page "
        f"showed it on {spelled(now)}. Keep it somewhere safe. The link in your email opens your page "
        "again whenever you come back.",
    ]
    if contents["assets"]:
        lines = []
        for asset in contents["assets"]:
            words = shares.share_words(
                amount=asset["amount"], asset_code=asset["asset_code"], share=asset["share"]
            )
            lines.append(
                f"{asset['label']}\n  {words}"
                + (f"\n  {asset['description']}" if asset["description"] else "")
            )
        parts.append("What you were left\n" + _items(lines))
    parts.append(
        f"{sentence_start(owner)} named you, {heir}{relationship}, as a beneficiary with"
        f" {allocation}\u00a0% of the plan."
    )
    parts.append(
        "What is inside\n"
        + _items(
            [
                f"{NAME}: this note.",
                "letters/: "
                + _count(len(export["letters"]), "letter, as a text file", "letters, as text files")
                + f", numbered in the order {owner} wrote them, each with the date it was written;"
                " a photo, recording or video that came with a letter has the same number.",
                "documents/: "
                + _count(documents, "document, under its own name.", "documents, under their own names."),
                "capsule.json: all of this, for a computer program to read.",
                "manifest.json: the size and SHA-256 fingerprint of every file, to check that nothing was "
                "changed or cut short.",
            ]
        )
    )
    if contents["sealed_messages"]:
        parts.append(
            "Still to come\n"
            + _items(
                [
                    f"{message['title'] or 'A letter'}: opens on {spelled(message['opens_at'])}."
                    for message in contents["sealed_messages"]
                ]
            )
            + f"\n{sentence_start(owner)} asked for "
            + ("this letter" if len(contents["sealed_messages"]) == 1 else "these letters")
            + " to open later. They are not in this download: your page will show each from that day."
        )
    if export["damaged"]:
        parts.append(
            "Not included\n"
            + _items([f"{title}: the stored copy was found damaged." for title in export["damaged"]])
        )
    return _text(parts)
