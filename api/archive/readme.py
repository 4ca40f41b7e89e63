"""`README.txt`, the first entry of both exports: a plain note a person opens before anything
else, saying whose plan it is, what each folder holds and, in the heir's, what they were left
and their share of each asset in words, in its reader's language (the caller speaks as them:
the owner's, the heir's page's); folder and file names stay as they are in the zip. Plain text
(UTF-8, CRLF line ends, so every system's simplest editor shows its lines); the JSON files stay
for programs. docs/archive.md, "Exports".
"""

from __future__ import annotations

from datetime import datetime

from api.html import sentence_start
from core.files.zipstream import Member, in_memory
from core.text import i18n
from core.text.i18n import N_, _, ngettext
from models.claim import shares
from models.flows import exports

NAME = "README.txt"
_LEFT_OUT = {
    "pending": N_("not checked yet when you downloaded this (download again in a few minutes)"),
    "failed": N_("its upload did not complete"),
    "damaged": N_("the stored copy was found damaged"),
}


def member(text: bytes, *, now: datetime) -> Member:
    """The note as the zip's first entry (deflated)."""
    return Member(path=NAME, modified=now, open=in_memory(text), compress=True)


def _text(paragraphs: list[str]) -> bytes:
    return ("\r\n\r\n".join(paragraphs) + "\r\n").replace("\r\n", "\n").replace("\n", "\r\n").encode()


def _items(lines: list[str]) -> str:
    return "\n".join(f"- {line}" for line in lines)


def _entry(file: str, text: str) -> str:
    """One line of "What is inside": a file or folder (its name as in the zip) and what it holds."""
    # Translators: a file or folder of the download and what it holds ("plan.json: your plan, ...").
    return _("{file}: {holds}").format(file=file, holds=text)


def _manifest() -> str:
    return _entry(
        "manifest.json",
        _("the size and SHA-256 fingerprint of every file, to check that nothing was changed or cut short."),
    )


def _owner_entries(*, letters: int, stored: int, phrases: dict[str, str]) -> list[str]:
    """The owner's files and folders: a folder only when the zip has it (no "archive/: the 0
    files" for a folder that is not there)."""
    entries = [_entry(NAME, _("this note."))]
    if letters:
        entries.append(
            _entry(
                "messages/",
                ngettext(
                    "your {count} letter, as a text file, numbered in the order you wrote them, each "
                    "with the date it was written; a photo, recording or video that goes with a letter "
                    "has the same number.",
                    "your {count} letters, as text files, numbered in the order you wrote them, each "
                    "with the date it was written; a photo, recording or video that goes with a letter "
                    "has the same number.",
                    letters,
                ).format(count=i18n.number(letters)),
            )
        )
    if stored:
        entries.append(
            _entry(
                "archive/",
                ngettext(
                    "the {count} file you stored, as you uploaded them.",
                    "the {count} files you stored, as you uploaded them.",
                    stored,
                ).format(count=i18n.number(stored)),
            )
        )
    return [
        *entries,
        _entry(
            "plan.json",
            _(
                "your plan, for a computer program to read: your profile, the plan's settings, "
                "{beneficiaries} (without their private links), {guardians}, {assets}, your letters "
                "with who they are for and when they open, and your archive."
            ).format(**phrases),
        ),
        _entry("timeline.json", _("everything that happened to your plan, for a computer program to read.")),
        _manifest(),
    ]


def owner_readme(export: exports.OwnerExport, *, now: datetime) -> bytes:
    """The owner's note: their plan, what each file and folder holds, what could not be included."""
    name = export["user"]["name"]
    media = sum(1 for f in export["files"] if f["path"].startswith("messages/"))
    stored = len(export["files"]) - media
    letters = len(export["letters"])
    beneficiaries, guardians = len(export["beneficiaries"]), len(export["guardians"])
    assets = len(export["assets"])
    phrases = {
        "beneficiaries": ngettext("{count} beneficiary", "{count} beneficiaries", beneficiaries).format(
            count=i18n.number(beneficiaries)
        ),
        "guardians": ngettext("{count} guardian", "{count} guardians", guardians).format(
            count=i18n.number(guardians)
        ),
        "assets": ngettext("{count} asset", "{count} assets", assets).format(count=i18n.number(assets)),
    }
    parts = [
        _("{name}'s legacy plan").format(name=name) if name else _("Your legacy plan"),
        _(
            "Everything you entrusted to the Legacy Planning Service, as it was on {when}. It is yours: keep "
            "it somewhere safe."
        ).format(when=i18n.when(now)),
        _("What is inside") + "\n" + _items(_owner_entries(letters=letters, stored=stored, phrases=phrases)),
    ]
    if export["left_out"]:
        parts.append(
            _("Not included")
            + "\n"
            + _items(
                [
                    _("{title}: {why}.").format(
                        title=item["title"],
                        why=_(_LEFT_OUT[item["status"]]) if item["status"] in _LEFT_OUT else item["status"],
                    )
                    for item in export["left_out"]
                ]
            )
        )
    return _text(parts)


def _heir_entries(*, letters: int, documents: int, owner: str) -> list[str]:
    """The heir's files and folders, a folder only when the zip has it."""
    entries = [_entry(NAME, _("this note."))]
    if letters:
        entries.append(
            _entry(
                "letters/",
                ngettext(
                    "{count} letter, as a text file, numbered in the order {owner} wrote them, each "
                    "with the date it was written; a photo, recording or video that came with a letter "
                    "has the same number.",
                    "{count} letters, as text files, numbered in the order {owner} wrote them, each "
                    "with the date it was written; a photo, recording or video that came with a letter "
                    "has the same number.",
                    letters,
                ).format(count=i18n.number(letters), owner=owner),
            )
        )
    if documents:
        entries.append(
            _entry(
                "documents/",
                ngettext(
                    "{count} document, under its own name.",
                    "{count} documents, under their own names.",
                    documents,
                ).format(count=i18n.number(documents)),
            )
        )
    return [*entries, _entry("capsule.json", _("all of this, for a computer program to read.")), _manifest()]


def heir_readme(export: exports.HeirExport, *, owner: str, now: datetime) -> bytes:
    """The heir's note: from whom, what they were left and their share of each asset in words,
    what each folder holds, the letters still to come and anything damaged."""
    contents = export["contents"]
    heir = contents["name"]
    media = sum(1 for f in export["files"] if f["path"].startswith("letters/"))
    documents = len(export["files"]) - media
    letters = len(export["letters"])
    percentage = shares.exact_figure(value=contents["allocation_percentage"])
    parts = [
        _("From {owner}, for {heir}").format(owner=owner, heir=heir),
        _(
            "This is everything {owner} left for you through the Legacy Planning Service, as your page "
            "showed it on {when}. Keep it somewhere safe. The link in your email opens your page again "
            "whenever you come back."
        ).format(owner=owner, when=i18n.when(now)),
    ]
    if contents["assets"]:
        lines = []
        for asset in contents["assets"]:
            words = shares.asset_words(
                amount=asset["amount"],
                asset_code=asset["asset_code"],
                share=asset["share"],
                shared_with=asset["shared_with"],
            )
            lines.append(
                f"{asset['label']}\n  {words}"
                + (f"\n  {asset['description']}" if asset["description"] else "")
            )
        parts.append(_("What you were left") + "\n" + _items(lines))
    parts.append(
        _(
            "{owner} named you, {heir} ({relationship}), as a beneficiary with {percentage}\u00a0% of "
            "the plan."
        ).format(
            owner=sentence_start(owner),
            heir=heir,
            relationship=contents["relationship"],
            percentage=percentage,
        )
        if contents["relationship"]
        else _("{owner} named you, {heir}, as a beneficiary with {percentage}\u00a0% of the plan.").format(
            owner=sentence_start(owner), heir=heir, percentage=percentage
        )
    )
    parts.append(
        _("What is inside") + "\n" + _items(_heir_entries(letters=letters, documents=documents, owner=owner))
    )
    sealed = contents["sealed_messages"]
    if sealed:
        parts.append(
            _("Still to come")
            + "\n"
            + _items(
                [
                    _("{title}: opens on {when}.").format(
                        title=message["title"] or _("A letter"), when=i18n.when(message["opens_at"])
                    )
                    for message in sealed
                ]
            )
            + "\n"
            + ngettext(
                "{owner} asked for this letter to open later. It is not in this download: your page will "
                "show it from that day.",
                "{owner} asked for these letters to open later. They are not in this download: your page "
                "will show each from that day.",
                len(sealed),
            ).format(owner=sentence_start(owner))
        )
    if export["damaged"]:
        parts.append(
            _("Not included")
            + "\n"
            + _items(
                [
                    _("{title}: the stored copy was found damaged.").format(title=title)
                    for title in export["damaged"]
                ]
            )
        )
    return _text(parts)
