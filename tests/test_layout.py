"""The house rules of docs/conventions.md that a reader can check from the files alone: one
module writes each table, no SQL writes outside models/, no folder of more than 12 modules."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tomllib
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CODE = ("api", "workers", "models", "core")
PRODUCTION = ("service", *CODE)
MAX_MODULES = 12

_TABLE = re.compile(r"CREATE TABLE (?:IF NOT EXISTS )?(\w+)")


def _tables() -> set[str]:
    sql = "\n".join(path.read_text() for path in (ROOT / "migrations").glob("*.sql"))
    return {match.group(1) for match in _TABLE.finditer(sql)}


def _writers(tables: set[str], base: Path = ROOT) -> dict[str, set[str]]:
    """table -> the modules whose text holds an INSERT, UPDATE or DELETE of it."""
    write = re.compile(r"\b(?:INSERT INTO|UPDATE|DELETE FROM)\s+(" + "|".join(sorted(tables)) + r")\b")
    found: dict[str, set[str]] = defaultdict(set)
    for folder in CODE:
        for path in (base / folder).rglob("*.py"):
            for match in write.finditer(path.read_text()):
                found[match.group(1)].add(str(path.relative_to(base)))
    return found


def test_one_module_writes_each_table():
    writers = _writers(_tables())
    shared = {table: sorted(modules) for table, modules in writers.items() if len(modules) > 1}
    assert not shared, f"tables written by more than one module (move the SQL to its owner): {shared}"
    outside = {t: sorted(m) for t, m in writers.items() if any(not p.startswith("models/") for p in m)}
    assert not outside, f"SQL writes outside models/: {outside}"


def test_the_check_sees_a_second_writer(tmp_path):
    """The scan itself can fail: a second writer of a table, and one outside models/, are found."""
    for name, text in {
        "models/plan/plans.py": '"UPDATE plans SET status = %s WHERE id = %s"',
        "models/plan/lifecycle.py": '"UPDATE plans SET ready_at = %s WHERE id = %s"',
        "api/plan/legacy.py": '"INSERT INTO plans (user_id) VALUES (%s)"',
        "models/plan/journey.py": '"SELECT * FROM plans"',
    }.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    assert _writers({"plans", "guardians"}, tmp_path) == {
        "plans": {"models/plan/plans.py", "models/plan/lifecycle.py", "api/plan/legacy.py"}
    }


def test_no_folder_holds_more_than_twelve_modules():
    crowded = {}
    for folder in CODE:
        for directory in [ROOT / folder, *(p for p in (ROOT / folder).rglob("*") if p.is_dir())]:
            modules = [p for p in directory.glob("*.py") if p.name != "__init__.py"]
            if len(modules) > MAX_MODULES:
                crowded[str(directory.relative_to(ROOT))] = len(modules)
    assert not crowded, f"folders past {MAX_MODULES} modules (group them by feature): {crowded}"


def test_the_console_script_and_the_build_carry_the_service():
    """`legacy-planning` is service.cli:main and every production package is in the build; the
    installed script runs from outside the checkout (so the install maps `service`)."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert project["project"]["scripts"] == {"legacy-planning": "service.cli:main"}
    include = project["tool"]["setuptools"]["packages"]["find"]["include"]
    assert [room for room in PRODUCTION if f"{room}*" not in include] == []
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "APP_ENV")}
    done = subprocess.run(
        [str(Path(sys.executable).parent / "legacy-planning"), "migrate"],
        cwd="/",
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert (done.returncode, done.stderr.strip()) == (2, "configuration error: DATABASE_URL is required")
