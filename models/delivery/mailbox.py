"""The development mailbox: in development with no email provider configured, every email the
worker would have sent is kept here instead, for `GET /dev/mail` (api/delivery/dev_mail.py) to
show, the way Rails' letter_opener and Mailpit do.

One JSON file per email under `$DATA_DIR/mail/` (mode 0600 in a 0700 directory: the emails carry
claim, guardian and check-in links), named by the outbox row id, so a retried render overwrites
its own file instead of keeping the email twice. Files rather than a table: nothing of it can
exist in a production database, and `rm -r .data/mail` empties it. Never used outside
development (`Settings.dev_mailbox`): in production nothing is kept. Decisions: docs/pages.md.
"""

from __future__ import annotations

import json
import os
import uuid
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from core.mailer import Email

FOLDER = "mail"
SHOWN = 200  # the newest emails the list shows; older ones stay on disk until removed


@dataclass(frozen=True)
class Kept:
    id: str
    kind: str
    kept_at: datetime
    email: Email


def folder(*, data_dir: Path) -> Path:
    return Path(data_dir, FOLDER)


def keep(*, data_dir: Path, outbox_id: str, kind: str, email: Email, now: datetime) -> None:
    """Write one email atomically (a reader never sees half a file)."""
    where = folder(data_dir=data_dir)
    where.mkdir(mode=0o700, parents=True, exist_ok=True)
    record = {
        "id": outbox_id,
        "kind": kind,
        "keptAt": now.isoformat(),
        "to": email.to,
        "subject": email.subject,
        "text": email.text,
        "html": email.html,
        "headers": dict(email.headers),  # as the provider would have put them on the email
    }
    final = where / f"{uuid.UUID(outbox_id)}.json"
    partial = where / f".{final.name}.{os.getpid()}"
    fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        json.dump(record, fh)
    partial.replace(final)


def _read(path: Path) -> Kept | None:
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
        return Kept(
            id=record["id"],
            kind=record["kind"],
            kept_at=datetime.fromisoformat(record["keptAt"]),
            email=Email(
                to=record["to"],
                subject=record["subject"],
                text=record["text"],
                html=record["html"],
                headers=record.get("headers") or {},  # none on an email kept before they were
            ),
        )
    except (OSError, ValueError, KeyError, TypeError):
        return None  # removed meanwhile, or not one of ours


def newest(*, data_dir: Path) -> list[Kept]:
    """The kept emails, newest first (at most SHOWN)."""
    where = folder(data_dir=data_dir)
    paths = where.glob("*.json") if where.is_dir() else []
    kept = [k for k in map(_read, paths) if k is not None]
    kept.sort(key=lambda k: (k.kept_at, k.id), reverse=True)
    return kept[:SHOWN]


def one(*, data_dir: Path, mail_id: str) -> Kept | None:
    """One kept email; None for an id that is not a kept email's (never a path outside the folder)."""
    try:
        name = str(uuid.UUID(mail_id))
    except ValueError:
        return None
    if name != mail_id.lower():
        return None
    return _read(folder(data_dir=data_dir) / f"{name}.json")
