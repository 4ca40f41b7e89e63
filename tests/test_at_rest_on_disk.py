"""What PostgreSQL writes to disk holds no private text (docs/security.md).

A unique marker goes into every free-text field of every route that takes one (profile, heirs,
guardians, assets, messages, archive uploads, a guardian's report note), through creates and
PATCHes; then every file of the cluster's data directory (this database's heap, its indexes and
TOAST, the WAL, the global catalogs; other databases' directories are skipped) is read byte by
byte: none of the markers is there. A control row written in clear, in the same database and the
same run, must be found, so the grep is known to see heap and WAL.

The WAL is read before the CHECKPOINT that puts the heap pages on disk: a checkpoint recycles the
WAL segments before its start, and with other sessions writing WAL meanwhile (the suite's other
processes, anyone sharing the cluster) the segment holding this test's writes could be reused
before the grep read it.

Values are kept short (well under the ~2 kB at which PostgreSQL would compress a value in the
heap), so a plaintext value would be on disk verbatim. The suite runs as root against the local
cluster (.ci/run), which can read the data directory; elsewhere an unreadable directory skips
with the reason, and under CI=true it fails instead.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path

import pytest

from tests.capsule_helpers import Family
from tests.lifecycle_helpers import activate_plan, report
from tests.plan_helpers import create, query

CHUNK = 16 * 1024 * 1024


def _data_directory(settings) -> tuple[Path, str]:
    """The cluster's data directory and this database's directory name under base/."""
    row = query(
        settings,
        "SELECT current_setting('data_directory') AS dir,"
        " (SELECT oid::text FROM pg_database WHERE datname = current_database()) AS oid",
    )[0]
    return Path(row["dir"]), row["oid"]


def _unreadable(reason: str) -> None:
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"{reason}: CI must read the data directory (run the suite as root or as postgres)")
    pytest.skip(reason)


def _files(data_dir: Path, own_oid: str) -> list[Path]:
    found = []
    for root, dirs, files in os.walk(data_dir):
        here = Path(root)
        if here == data_dir / "base":
            dirs[:] = [d for d in dirs if d == own_oid]  # other databases: other tests' data
        found += [here / name for name in files if (here / name).is_file()]  # not the server's socket
    return found


def _grep(paths: list[Path], prefixes: list[bytes]) -> dict[bytes, set[str]]:
    """Which files contain each prefix, read in overlapping chunks (nothing is decoded)."""
    hits: dict[bytes, set[str]] = {p: set() for p in prefixes}
    overlap = max(len(p) for p in prefixes)
    for path in paths:
        try:
            with path.open("rb") as handle:
                tail = b""
                while chunk := handle.read(CHUNK):
                    window = tail + chunk
                    for prefix in prefixes:
                        if prefix in window:
                            hits[prefix].add(str(path))
                    tail = window[-overlap:]
        except FileNotFoundError:  # a WAL segment recycled or a temp file gone meanwhile
            continue
    return hits


def _tokens_in(paths: list[Path], base: bytes, tokens: dict[str, str]) -> dict[str, list[str]]:
    """The fields whose token occurs in any of `paths` (scanned once for the shared `base`)."""
    files = sorted(_grep(paths, [base])[base])
    found: dict[str, list[str]] = {}
    for name in files:
        data = Path(name).read_bytes()
        for field, token in tokens.items():
            if token.encode() in data:
                found.setdefault(field, []).append(name)
    return found


async def test_no_private_text_reaches_the_data_directory_heap_or_wal(fam: Family, settings):
    data_dir, oid = _data_directory(settings)
    if not data_dir.is_dir():
        _unreadable(f"the PostgreSQL data directory {data_dir} is not on this machine (remote DATABASE_URL)")
    try:
        os.listdir(data_dir / "pg_wal")
    except PermissionError:
        _unreadable(f"the PostgreSQL data directory {data_dir} is not readable by this user")

    base = "ondisk" + secrets.token_hex(5)  # unique per run: older WAL cannot match
    token = {
        field: f"{base}{field.replace('.', '').replace('_', '')}"
        for field in (
            "owner.name",
            "owner.email",
            "heir.name",
            "heir.relationship",
            "heir.email",
            "guardian.name",
            "guardian.email",
            "guardian.relationship",
            "asset.label",
            "asset.description",
            "message.title",
            "message.content",
            "archive.title",
            "archive.description",
            "archive.file_name",
            "report.note",
        )
    }
    client, owner = fam.client, fam.owner
    headers = owner.headers

    setup = await activate_plan(client, owner, allocations=(100,), guardians=2)
    resp = await client.patch(
        "/api/users/me",
        json={"name": token["owner.name"], "email": f"{token['owner.email']}@example.org"},
        headers=headers,
    )
    assert resp.status == 200, await resp.text()
    heir = setup.beneficiaries[0]
    resp = await client.patch(
        f"/api/beneficiaries/{heir['id']}",
        json={
            "name": token["heir.name"],
            "relationship": token["heir.relationship"],
            "email": f"{token['heir.email']}@example.org",
        },
        headers=headers,
    )
    assert resp.status == 200, await resp.text()
    guardian = setup.guardians[0]
    resp = await client.patch(
        f"/api/guardians/{guardian.row['id']}",
        json={
            "name": token["guardian.name"],
            "email": f"{token['guardian.email']}@example.org",
            "relationship": token["guardian.relationship"],
        },
        headers=headers,
    )
    assert resp.status == 200, await resp.text()
    asset = await create(
        client, owner, "assets", label=f"first {token['asset.label']}", description=token["asset.description"]
    )
    resp = await client.patch(
        f"/api/assets/{asset['id']}", json={"label": token["asset.label"]}, headers=headers
    )
    assert resp.status == 200, await resp.text()
    note = await fam.message(f"first {token['message.content']}", title=token["message.title"])
    resp = await client.patch(
        f"/api/messages/{note['id']}", json={"content": token["message.content"]}, headers=headers
    )
    assert resp.status == 200, await resp.text()
    await fam.document(
        b"the deed",
        filename=f"{token['archive.file_name']}.pdf",
        content_type="application/pdf",
        title=token["archive.title"],
        description=token["archive.description"],
    )
    await fam.vault.work()  # verified: its texts are read and written again by the worker
    assert (await report(client, setup, guardian, note=token["report.note"])).status == 200

    # Every route still shows them (they are sealed, not lost).
    me = await (await client.get("/api/auth/me", headers=headers)).json()
    assert me["name"] == token["owner.name"]
    listed = await (await client.get("/api/assets", headers=headers)).json()
    assert [a["label"] for a in listed] == [token["asset.label"]]

    # The control: the same kind of write, in clear, must be found on disk.
    control = "ondiskcontrol" + secrets.token_hex(5)
    query(settings, "CREATE TABLE at_rest_control (t text)")
    try:
        # Committed with its WAL flushed (the suite's database commits without waiting for it).
        query(
            settings,
            "SET LOCAL synchronous_commit = on; INSERT INTO at_rest_control VALUES (%s)",
            (control,),
        )
        wal = _files(data_dir / "pg_wal", oid)
        assert any(_grep(wal, [control.encode()])[control.encode()]), "the control is not in the WAL"
        assert _tokens_in(wal, base.encode(), token) == {}

        query(settings, "CHECKPOINT")
        read = set(wal)  # the WAL segments read above are not read twice
        paths = [path for path in _files(data_dir, oid) if path not in read]
        control_hits = _grep(paths, [control.encode()])[control.encode()]
        assert any(f"/base/{oid}/" in p for p in control_hits), control_hits
        assert _tokens_in(paths, base.encode(), token) == {}
    finally:
        query(settings, "DROP TABLE at_rest_control")
