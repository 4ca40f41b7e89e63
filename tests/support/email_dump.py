"""Every email kind rendered for representative readers in every language, dumped to a folder,
and two such dumps compared: the check that a change to how emails are built leaves what they
say as it was (docs/conventions.md, "Emails").

    python -m tests.support.email_dump dump OUT_DIR
    python -m tests.support.email_dump compare BEFORE_DIR AFTER_DIR

It needs no database: the rows are built here, with fixed ids, key and tokens, so two trees
render the same links. Kinds come from the tree being dumped (`models.mail.emails`). The
comparison wants subjects and text parts identical, and HTML parts equal once parsed (markup,
attribute order, entities and whitespace aside); it prints every difference it finds.
"""

from __future__ import annotations

import base64
import json
import re
import sys
import uuid
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

from core.files.crypto import KeyRing
from core.text import i18n
from models import check_in_links
from models.claim_tokens import seal_claim_token
from models.mail import emails
from tests.i18n_helpers import PSEUDO, pseudo

RING = KeyRing.parse("k1:" + base64.b64encode(bytes(range(32))).decode())
WALLET = "GBRPYHIL2CI3FNQ4BXLFMNDLFJUNPU2HY3ZMFSHONUCEOASW7QC7OX2H"
TOKEN = "ab" * 32
BASE_URL = "https://legacy.example"
ISO = "2026-11-27T12:00:43.949000+00:00"
LANGUAGES = [*i18n.SHIPPED, PSEUDO]
ZONES = {"ar": "Asia/Dubai", "es": "Europe/Madrid", "pt-BR": "America/Sao_Paulo"}


def _id(*parts: str) -> str:
    return str(uuid.uuid5(uuid.NAMESPACE_URL, "/".join(parts)))


BENEFICIARY = _id("beneficiary")
SEALED = seal_claim_token(RING, beneficiary_id=BENEFICIARY, token=TOKEN)
CHANGES = [
    {"what": what, "at": ISO, "name": name}
    for what, name in (
        ("beneficiary_added", "Ada <b>"),
        ("beneficiary_removed", None),
        ("guardian_wallet", "Gus"),
        ("wallet_linked", "GABC"),
        ("owner_email", None),
        ("something_new", "Ada"),
    )
]
BASE_CONTEXT: dict[str, Any] = {
    **dict.fromkeys(
        ("dueAt", "verificationAt", "releaseAt", "askedAt", "deadlineAt", "startedAt", "uploadedAt", "at"),
        ISO,
    ),
    "keyId": "k1",
    "days": 3,
    "graceDays": 30,
    "silenceDays": 44,
    "letters": 1,
    "walletAddress": WALLET,
    "walletEnd": "OX2H",
    "itemType": "photo",
    "sizeBytes": 2_500_000,
    "accepted": 1,
    "needed": 2,
    "approved": 1,
    "changes": CHANGES,
    "onTimeout": "release",
    "note": "I saw them yesterday & they're fine",
    "holdUntil": ISO,
    "changeId": "5f0c2c1e-6b1d-4c36-9d8e-2f0b8a1f6a10",
    "proposed": "ada.new@example.org",
    "mayAsk": True,
    "reason": "inactivity",
}
# One axis at a time: each value that changes the words (as tests/test_plain_words.py varies them).
CONTEXTS: list[dict[str, Any]] = [
    {},
    *({"stage": s} for s in ("resend", "ready", "final", "halfway", "14d", "3d", "1d", "grace")),
    *({"outcome": o} for o in ("release", "wait", "complained", "bounced", "well", "released", "waits")),
    *({"reason": r} for r in ("guardian_report", "beneficiary_request")),
    {"onchain": True},
    {"onchain": True, "stage": "ready"},
    {"deadlineChosen": False},
    {"deadlineChosen": False, "outcome": "release"},
    {"deadlineChosen": False, "outcome": "wait"},
    {"objected": True, "outcome": "wait"},
    {"approvalWithdrawn": True},
    {"deadlineAt": None, "onTimeout": "wait"},
    {"onTimeout": "wait"},
    {"letters": 3},
    {"accepted": 3, "needed": 2},
    {"itemType": "voice", "sizeBytes": 10},
    {"uploadedAt": None},
    *({"outcome": "waits", "why": w} for w in ("objected", "owner_chose_wait", "onchain", None)),
    {"mayAsk": False},
    {"beneficiaryId": BENEFICIARY},
    {"guardianId": _id("guardian")},
    {"proposed": None, "holdUntil": None},
    {"cause": "added"},
]
# The readers: who the row is to, and what differs about them.
READERS: dict[str, dict[str, Any]] = {
    "owner": {"recipient_type": "owner", "recipient_name": "Olive Owner"},
    "owner_unnamed": {"recipient_type": "owner", "recipient_name": None, "check_in_link": True},
    "heir": {"recipient_type": "beneficiary", "recipient_name": "Lucía ‮Díaz"},
    "wallet_guardian": {"recipient_type": "guardian", "recipient_name": "Gus"},
    # A guardian without a recorded wallet answers with a passkey (the context says so).
    "passkey_guardian": {
        "recipient_type": "guardian",
        "recipient_name": "مريم",
        "context": {"walletAddress": None},
    },
}
# The people the row names: named, and every name unknown (the wallet and stand-ins speak).
NAMES: list[dict[str, Any]] = [
    {
        "owner_name": "Eleanor <Vance> & Co, who wrote a name longer than any subject should carry",
        "subject_name": "Ada",
        "about_guardian_name": "Gus",
        "request_note": "Please check on them",
        "report_reason": "death",
        "short_of_guardians": True,
    },
    {"owner_name": None, "subject_name": None, "about_guardian_name": None, "report_reason": None},
]


def row(
    kind: str, reader: str, names: dict[str, Any], context: dict[str, Any], language: str
) -> dict[str, Any]:
    reader_row = dict(READERS[reader])
    guardian = reader_row["recipient_type"] == "guardian"
    context = {**context, **reader_row.pop("context", {})}
    d: dict[str, Any] = {
        "id": _id("outbox", kind),
        "kind": kind,
        "attempts": 0,
        "context": {**BASE_CONTEXT, **context},
        "address": "someone@example.org",
        "locale": language,
        "time_zone": ZONES.get(language),
        "owner_wallet": WALLET,
        "beneficiary_id": BENEFICIARY,
        "claim_token_sealed": SEALED,
        "check_in_link": False,
        "check_in_key_id": None,
        "request_note": None,
        "guardian_id": _id("guardian") if guardian else None,
        "guardian_page_version": 1 if guardian else None,
        "guardian_page_key_id": "k1" if guardian else None,
        "short_of_guardians": False,
        "suppressed": False,
        "answered": False,
        "account_gone": False,
        **names,
        **reader_row,
    }
    # The outbox gives an owner's row its check-in link only for these kinds (models.delivery.outbox).
    d["check_in_link"] = d["check_in_link"] and kind in check_in_links.KINDS
    return d


def kinds() -> list[str]:
    table = getattr(emails, "KINDS", None) or emails.TEMPLATES  # type: ignore[attr-defined]
    return sorted(table)


def renderings(kind: str) -> Iterator[tuple[str, dict[str, Any]]]:
    for reader in READERS:
        for n, names in enumerate(NAMES):
            for c, context in enumerate(CONTEXTS):
                for app_url in ("", "https://app.example"):
                    yield (
                        f"{reader}/names{n}/context{c}/app{int(bool(app_url))}",
                        {
                            "reader": reader,
                            "names": names,
                            "context": context,
                            "app_url": app_url,
                        },
                    )


def dump(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    with pseudo():
        for kind in kinds():
            for language in LANGUAGES:
                emails_out: dict[str, Any] = {}
                for key, how in renderings(kind):
                    d = row(kind, how["reader"], how["names"], how["context"], language)
                    try:
                        email = emails.render(
                            d=d, ring=RING, base_url="https://legacy.example", app_url=how["app_url"]
                        )  # type: ignore[arg-type]
                    except Exception as error:  # a row this kind never gets: record that it fails
                        emails_out[key] = {"error": type(error).__name__}
                        continue
                    emails_out[key] = {
                        "subject": email.subject,
                        "text": email.text,
                        "html": email.html,
                        "headers": email.headers,
                    }
                (out / f"{kind}.{language}.json").write_text(
                    json.dumps(emails_out, ensure_ascii=False, indent=0)
                )


class _Shown(HTMLParser):
    """An HTML part as a reader meets it: each element with its attributes (sorted), and the
    words between them with their whitespace collapsed."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.items: list[str] = []
        self._text = ""

    def _flush(self) -> None:
        words = re.sub(r"\s+", " ", self._text).strip()
        if words:
            self.items.append(words)
        self._text = ""

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "bdi" or tag == "a":  # inline: the words run on
            self._text += f" <{tag} {sorted(attrs)}> "
            return
        self._flush()
        self.items.append(f"<{tag} {sorted(attrs)}>")

    def handle_endtag(self, tag: str) -> None:
        if tag in ("bdi", "a"):
            self._text += f" </{tag}> "
            return
        self._flush()

    def handle_data(self, data: str) -> None:
        self._text += data


def shown(part: str) -> list[str]:
    parser = _Shown()
    parser.feed(part)
    parser.close()
    parser._flush()
    return parser.items


# Who each declared audience is among the readers.
AS_READERS = {
    "owner": ("owner", "owner_unnamed"),
    "guardian": ("wallet_guardian", "passkey_guardian"),
    "beneficiary": ("heir",),
}


def _in_audience(kind: str, key: str) -> bool:
    """Whether the rendering `key` is to a reader the kind is declared for (every reader where the
    tree comparing has no declarations)."""
    declared = getattr(emails, "KINDS", {}).get(kind)
    if declared is None:
        return True
    return key.split("/")[0] in {r for a in declared.audience for r in AS_READERS[a]}


class _Tally:
    """What differs between two dumps, part by part, with the first few differences printed."""

    def __init__(self) -> None:
        self.counts = dict.fromkeys(
            ("emails", "subject", "text", "headers", "html", "html_source", "error", "outside"), 0
        )
        self.html_diffs: dict[str, int] = {}

    def differs(self, part: str, where: str, was: Any, now: Any) -> None:
        self.counts[part] += 1
        if self.counts[part] <= 5:
            print(f"{where} {part}:\n  - {was!r}\n  + {now!r}")

    def email(self, where: str, was: dict[str, Any], now: dict[str, Any]) -> None:
        self.counts["emails"] += 1
        if "error" in was or "error" in now:
            if was != now:
                self.differs("error", where, was.get("error"), now.get("error"))
            return
        for part in ("subject", "text", "headers"):
            if was[part] != now[part]:
                self.differs(part, where, was[part], now[part])
        self.counts["html_source"] += was["html"] != now["html"]
        a, b = shown(was["html"]), shown(now["html"])
        if a != b:
            first = next(((x, y) for x, y in zip(a, b, strict=False) if x != y), (len(a), len(b)))
            label = f"{first[0]!r} -> {first[1]!r}"
            self.html_diffs[label] = self.html_diffs.get(label, 0) + 1
            self.differs("html", where, *first)


def compare(before: Path, after: Path) -> int:
    """Every rendering of `before` against `after`, for the readers each kind is declared for."""
    tally = _Tally()
    missing = sorted({p.name for p in before.glob("*.json")} ^ {p.name for p in after.glob("*.json")})
    for path in sorted(before.glob("*.json")):
        if not (after / path.name).exists():
            continue
        old, new = json.loads(path.read_text()), json.loads((after / path.name).read_text())
        kind = path.name.split(".")[0]
        for key, was in old.items():
            now = new.get(key, {"error": "missing"})
            if _in_audience(kind, key):
                tally.email(f"{path.name} {key}", was, now)
            else:
                tally.counts["outside"] += was != now
    print("files only on one side:", missing or "none")
    print("compared (html: as parsed; html_source: byte for byte):", tally.counts)
    for label, count in sorted(tally.html_diffs.items(), key=lambda x: -x[1])[:20]:
        print(f"{count:6d} times: {label}")
    failed = ("subject", "text", "headers", "html", "error")
    return 1 if missing or any(tally.counts[part] for part in failed) else 0


if __name__ == "__main__":
    if sys.argv[1] == "dump":
        dump(Path(sys.argv[2]))
    else:
        sys.exit(compare(Path(sys.argv[2]), Path(sys.argv[3])))
