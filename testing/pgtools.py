"""The PostgreSQL client tools (`pg_dump`, `pg_restore`) that match a server's major version.

A dump must be taken by a `pg_dump` of the server's major version (older refuses a newer
server; newer writes archives an older `pg_restore` cannot read). This machine may hold several:
the embedded PostgreSQL (pgserver, the tests' fallback) ships its own in its wheel, the Debian
packages install theirs under /usr/lib/postgresql/<major>/bin, and one may be on PATH.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import psycopg2


def server_major(database_url: str) -> int:
    with psycopg2.connect(database_url) as conn, conn.cursor() as cur:
        cur.execute("SHOW server_version_num")
        (number,) = cur.fetchone()
    conn.close()
    return int(number) // 10000


def _candidates(tool: str) -> list[Path]:
    found = []
    try:
        import pgserver

        found.append(Path(pgserver.__file__).parent / "pginstall" / "bin" / tool)
    except ImportError:
        pass
    found += sorted(Path("/usr/lib/postgresql").glob(f"*/bin/{tool}"), reverse=True)
    on_path = shutil.which(tool)
    if on_path:
        found.append(Path(on_path))
    return [p for p in found if p.is_file()]


def tool_major(path: Path) -> int | None:
    out = subprocess.run([str(path), "--version"], capture_output=True, text=True, check=False).stdout
    match = re.search(r"\(PostgreSQL\) (\d+)", out)
    return int(match.group(1)) if match else None


def matching_tool(tool: str, major: int) -> Path:
    """The `tool` of this major version; RuntimeError naming what was found otherwise."""
    seen = {}
    for path in _candidates(tool):
        version = tool_major(path)
        seen[str(path)] = version
        if version == major:
            return path
    raise RuntimeError(f"no {tool} for PostgreSQL {major} on this machine (found: {seen or 'none'})")
