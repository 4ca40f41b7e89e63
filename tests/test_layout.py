"""The house rules of docs/conventions.md that a reader can check from the files alone: one
module writes each table, no SQL writes outside models/, no folder of more than 12 modules, no
module in models/ or api/ over 450 lines, imports run down the floors only and never in a circle
(between modules, and between the parts of api/ and of models/, whose floors run ground, rooms,
flows), and a public model function takes its domain values by keyword."""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
import tomllib
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CODE = ("api", "workers", "models", "core")
PRODUCTION = ("service", *CODE)
# Who may import whom: each room, the rooms below it. api/ and workers/ share a floor and never
# import each other; testing/ (the outside world's stand-ins) serves tests/ and bench/ only, and
# nothing imports tests/.
MAY_IMPORT = {
    "core": set(),
    "models": {"core"},
    "api": {"models", "core"},
    "workers": {"models", "core"},
    "service": {"api", "workers", "models", "core"},
    "testing": {"service", "api", "workers", "models", "core"},
    "bench": {"testing", "service", "api", "workers", "models", "core"},
    "tests": {"testing", "service", "api", "workers", "models", "core"},
}
MAX_MODULES = 12
# models/ in floors (docs/conventions.md, "Floors"): the ground is every top-level module of
# models/ and imports no room; each feature room imports the ground and the rooms listed before
# it; the flows tier on top imports any of them, and nothing in models/ imports it. A new room
# takes its place in this list (above what it imports); a new top-level module is ground.
MODEL_ROOMS = (
    "jobs",
    "proofs",
    "delivery",
    "archive",
    "contents",
    "account",
    "claim",
    "chain",
    "plan",
    "mail",
)
FLOWS = "flows"
# A module in models/ or api/ past this many lines holds more than one reason to change: split it.
MAX_LINES = 450
# What a public model function may take positionally (docs/conventions.md, "Keyword-only domain
# calls"): the record type, the connection, cache, key, storage and process handles. Every other
# parameter (ids, rows, times, texts, SQL fragments, even a function's only one) comes after `*`.
HANDLES = frozenset(
    [
        "self",
        "cls",
        "kind",
        "pool",
        "cur",
        "conn",
        "redis",
        "ring",
        "key_ring",
        "settings",
        "storage",
        "clock",
        "ctx",
        "mailer",
        "app",
    ]
)

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


def _long_modules(base: Path = ROOT, rooms: tuple[str, ...] = ("models",)) -> dict[str, int]:
    """module -> its line count, for each one in `rooms` past MAX_LINES."""
    found = {}
    for path in (p for room in rooms for p in (base / room).rglob("*.py")):
        lines = len(path.read_text().splitlines())
        if lines > MAX_LINES:
            found[str(path.relative_to(base))] = lines
    return found


def test_no_module_in_models_is_over_450_lines():
    long = _long_modules()
    assert not long, (
        f"modules in models/ past {MAX_LINES} lines (split by their second reason to change): {long}"
    )


def test_no_module_in_api_is_over_450_lines():
    long = _long_modules(rooms=("api",))
    assert not long, f"modules in api/ past {MAX_LINES} lines (split by a second reason to change): {long}"


def test_the_check_sees_a_long_module(tmp_path):
    """The count itself can fail: one line past the limit is found, in a sub-room too; the limit is not."""
    for name, lines in {
        "models/plan/long.py": MAX_LINES + 1,
        "models/plan/just.py": MAX_LINES,
        "models/delivery/texts/deep.py": 600,
        "api/plan/legacy.py": 900,
    }.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("x = 1\n" * lines)
    assert _long_modules(tmp_path) == {
        "models/plan/long.py": MAX_LINES + 1,
        "models/delivery/texts/deep.py": 600,
    }
    assert _long_modules(tmp_path, rooms=("api",)) == {"api/plan/legacy.py": 900}


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


def _modules(base: Path) -> dict[str, Path]:
    """Dotted name -> file, for every module of every room."""
    found = {}
    for room in MAY_IMPORT:
        for path in (base / room).rglob("*.py"):
            parts = path.relative_to(base).with_suffix("").parts
            found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def _imports(base: Path) -> list[tuple[str, str, bool]]:
    """(importing module, imported module, under `if TYPE_CHECKING:`) for every import statement,
    function-level ones included; relative imports resolved."""
    modules = _modules(base)
    found = []
    for name, path in modules.items():
        tree = ast.parse(path.read_text())
        typing_only = {
            id(inner)
            for node in ast.walk(tree)
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)
            for statement in node.body
            for inner in ast.walk(statement)
        }
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base_name = node.module or ""
                if node.level:
                    up = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base_name = ".".join([*up, base_name] if base_name else up)
                # `from package import module` imports the module; `from module import name`, the module.
                named = [f"{base_name}.{alias.name}" for alias in node.names]
                targets = [target for target in named if target in modules] or [base_name]
            else:
                continue
            found += [(name, target, id(node) in typing_only) for target in targets]
    return found


def _upward(base: Path = ROOT) -> list[str]:
    """Imports of a room its floor may not import (TYPE_CHECKING ones too)."""
    return sorted(
        {
            f"{module} -> {target}"
            for module, target, _ in _imports(base)
            if (room := module.split(".")[0]) != (other := target.split(".")[0])
            and other in MAY_IMPORT
            and other not in MAY_IMPORT[room]
        }
    )


def _circles(base: Path = ROOT) -> list[list[str]]:
    """Groups of modules that import each other, round a circle (TYPE_CHECKING imports aside)."""
    modules = _modules(base)
    edges: dict[str, set[str]] = defaultdict(set)
    for module, target, typing_only in _imports(base):
        if not typing_only and target in modules and target != module:
            edges[module].add(target)
    return _knots(sorted(modules), edges)


def _part(module: str, room: str) -> str | None:
    """The part of `room` a module belongs to: its sub-package or top-level module (`api.claim`
    for `api.claim.gate`, `api.html`); None outside the room and for the room's own package."""
    names = module.split(".")
    return ".".join(names[:2]) if names[0] == room and len(names) > 1 else None


def _part_circles(base: Path = ROOT, room: str = "api") -> list[list[str]]:
    """Groups of parts of `room` that import each other round a circle, though no two modules
    do: `api.html` importing `api.claim.gate` while `api.claim.page` imports `api.html` is one
    (TYPE_CHECKING imports aside)."""
    edges: dict[str, set[str]] = defaultdict(set)
    parts = set()
    for module, target, typing_only in _imports(base):
        source, sink = _part(module, room), _part(target, room)
        parts |= {p for p in (source, sink) if p}
        if not typing_only and source and sink and source != sink:
            edges[source].add(sink)
    return _knots(sorted(parts), edges)


def _knots(nodes: list[str], edges: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's strongly connected components of more than one node."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    circles = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in edges[node]:
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                circles.append(sorted(group))

    for node in nodes:
        if node not in index:
            visit(node)
    return circles


def test_imports_run_down_the_floors_only():
    """core/ imports nothing above it, bench/ and production code never import tests/."""
    assert _upward() == [], "imports against the floors (see MAY_IMPORT and docs/conventions.md)"


def test_no_import_circle():
    assert _circles() == [], "modules importing each other round a circle (a TYPE_CHECKING one is fine)"


def test_no_import_circle_between_the_parts_of_api():
    assert _part_circles() == [], "parts of api/ importing each other round a circle (move the name down)"


def _floor(part: str, base: Path) -> int | None:
    """Where a part of models/ stands: 0 the ground, then the rooms in MODEL_ROOMS order, then
    the flows; None for a sub-package on no floor."""
    name = part.split(".")[1]
    if (base / "models" / f"{name}.py").exists():
        return 0
    if name in MODEL_ROOMS:
        return 1 + MODEL_ROOMS.index(name)
    return len(MODEL_ROOMS) + 1 if name == FLOWS else None


def _against_the_model_floors(base: Path = ROOT) -> list[str]:
    """Arrows between parts of models/ that do not run down its floors: the ground importing a
    room, a room importing a later room or a flow, anything to or from a part on no floor
    (TYPE_CHECKING imports aside; function-level ones count)."""
    found = set()
    for module, target, typing_only in _imports(base):
        source, sink = _part(module, "models"), _part(target, "models")
        if typing_only or not source or not sink or source == sink:
            continue
        start, end = _floor(source, base), _floor(sink, base)
        if start is None or end is None or end > start or end == start > 0:
            found.add(f"{source} -> {sink}")
    return sorted(found)


def test_models_run_down_their_floors_without_a_circle():
    assert _against_the_model_floors() == [], (
        "imports against the floors of models/ (ground, MODEL_ROOMS in order, flows: docs/conventions.md)"
    )
    assert _part_circles(room="models") == [], "parts of models/ importing each other round a circle"


def test_the_floor_check_sees_an_arrow_up_and_a_circle(tmp_path):
    """The floors check can fail: the ground importing a room, a room importing a later room and
    (inside a function) a flow, a room on no floor, and the circles they make, are found; ground
    to ground, down a floor, a flow importing rooms and a TYPE_CHECKING arrow up are not."""
    for name, text in {
        "models/common.py": "from models import pagination\n",
        "models/pagination.py": "",
        "models/plans.py": "from models.plan import journey\n",
        "models/delivery/outbox.py": "from models.contents import guardians\n",
        "models/contents/guardians.py": "from models import common\nfrom models.delivery import outbox\n",
        "models/plan/journey.py": "def later():\n    from models.flows import release_path\n",
        "models/flows/release_path.py": "from models import plans\nfrom models.plan import journey\n",
        "models/chain/transactions.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
        "    from models.flows import effects\n",
        "models/flows/effects.py": "from models.chain import transactions\n",
        "models/garden/shed.py": "from models import common\n",
    }.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    assert _against_the_model_floors(tmp_path) == [
        "models.delivery -> models.contents",
        "models.garden -> models.common",
        "models.plan -> models.flows",
        "models.plans -> models.plan",
    ]
    assert _part_circles(tmp_path, room="models") == [
        ["models.contents", "models.delivery"],
        ["models.flows", "models.plan", "models.plans"],
    ]


def test_the_part_check_sees_a_circle_between_parts(tmp_path):
    """A circle through two parts of api/ is found though no module imports one that imports it;
    a TYPE_CHECKING arrow and a one-way arrow are not."""
    for name, text in {
        "api/html.py": "from api.claim.gate import CAPSULE_HEADERS\n",
        "api/claim/gate.py": "from api.common import refuse_miss\n",
        "api/claim/page.py": "from api import html\n",
        "api/common.py": "from api.keys import context\n",
        "api/keys.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from api import common\n",
        "api/plan/legacy.py": "from api.plan import schemas\n",
        "api/plan/schemas.py": "from api.common import json_response\n",
    }.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    assert _circles(tmp_path) == []
    assert _part_circles(tmp_path) == [["api.claim", "api.html"]]


def test_the_import_checks_see_an_upward_arrow_and_a_circle(tmp_path):
    """Both import checks can fail: an arrow up from core/, bench/ into tests/, production into
    testing/, api/ into workers/, and a circle, are found; a TYPE_CHECKING circle is not."""
    for name, text in {
        "core/db.py": "from api.app import create_app\n",
        "core/files/storage.py": "def lazy():\n    import service.cli\n",
        "bench/run.py": "from tests.helpers import until\n",
        "models/plan/plans.py": "from testing import soroban_rpc\n",
        "api/app.py": "import workers.main\n",
        "workers/main.py": "from core import clock\n",
        "models/a.py": "from models import b\n",
        "models/b.py": "from . import c\n",
        "models/c.py": "from models.a import thing\n",
        "models/d.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from models import e\n",
        "models/e.py": "from models import d\n",
        "tests/helpers.py": "from testing import soroban_rpc\n",
        "tests/plan_helpers.py": "from bench import run\n",
    }.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    assert _upward(tmp_path) == [
        "api.app -> workers.main",
        "bench.run -> tests.helpers",
        "core.db -> api.app",
        "core.files.storage -> service.cli",
        "models.plan.plans -> testing",
        "tests.plan_helpers -> bench.run",
    ]
    assert _circles(tmp_path) == [["models.a", "models.b", "models.c"]]


# An issue number (`#24`) tells the next engineer nothing without the tracker: production code
# says the why in words. Another project's issue (`aio-libs/aiohttp#3287`) and a colour are fine.
# A colour (`"#000"`, `'#336699'`) is three or six digits closed by a quote; an issue number in a
# quoted section name (`"#29's measure"`) is not.
_ISSUE_NUMBER = re.compile(r"(?<![\w/&-])#(?!(?:\d{3}|\d{6})[\"'])\d+(?!\w)")


def _issue_numbers(base: Path = ROOT) -> list[str]:
    """`file:line: #N` for each issue number in production code (testing/ too) and its templates."""
    found = []
    for room in (*PRODUCTION, "testing"):
        for path in sorted(p for p in (base / room).rglob("*") if p.suffix in (".py", ".html")):
            for number, line in enumerate(path.read_text().splitlines(), 1):
                found += [
                    f"{path.relative_to(base)}:{number}: {m.group()}" for m in _ISSUE_NUMBER.finditer(line)
                ]
    return found


def test_no_issue_number_in_production_code():
    assert _issue_numbers() == [], "say the why in words, not an issue number"


# The figures and the runs that gave them live in bench/ (its README and journal); production
# code says the why in words and names nothing there, so a benchmark's file or section can move
# without leaving a stale pointer in the code.
_BENCH = re.compile(r"\bbench[/.]\w")


def _bench_references(base: Path = ROOT) -> list[str]:
    found = []
    for room in (*PRODUCTION, "testing"):
        paths = sorted(p for p in (base / room).rglob("*") if p.suffix in (".py", ".html", ".js", ".css"))
        for path in paths:
            for number, line in enumerate(path.read_text().splitlines(), 1):
                found += [f"{path.relative_to(base)}:{number}: {m.group()}" for m in _BENCH.finditer(line)]
    return found


def test_production_code_names_nothing_under_bench():
    assert _bench_references() == [], "say the why in words; the figures stay in bench/"


def test_the_bench_check_sees_one(tmp_path):
    for name, text in {
        "core/db.py": "# measured (bench/README.md, \"Pools\")\n",
        "api/app.py": "from bench.ceiling import x\n",
        "models/plans.py": "# the benchmarks measured it; a workbench/ is not ours\n",
    }.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    assert _bench_references(tmp_path) == ["api/app.py:1: bench.c", "core/db.py:1: bench/R"]


def test_the_issue_number_check_sees_one(tmp_path):
    """The check can fail: a comment's, a docstring's, a template's issue number are found; an
    upstream project's issue, a colour, an HTML entity and a fragment link are not."""
    for name, text in {
        "models/plans.py": '"""States (#24 section 1)."""\nx = 1  # see #25\ny = "#29\'s measure"\n',
        "api/server.py": "# aio-libs/aiohttp#3287\ncolour = '#000'\n",
        "api/templates/page.html": '<a href="#main">&#8212;</a> (issue #16)\n',
        "tests/test_x.py": "# #99 is fine in tests\n",
    }.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    assert _issue_numbers(tmp_path) == [
        "api/templates/page.html:1: #16",
        "models/plans.py:1: #24",
        "models/plans.py:2: #25",
        "models/plans.py:3: #29",
    ]


# The "where things live" maps: the README's architecture (its diagram and feature table) and
# the table that opens docs/conventions.md. A newcomer looks a module up there, so each names
# every module: by its path (`models/plans.py`, `core.queue`), by its name on the line that names
# its folder (`delivery/` (outbox, ...)), a floor's own modules by their name anywhere in the map,
# and one file every room has by its file name (each room's `schemas.py`).
MAP_FLOORS = (*PRODUCTION, "testing")


def _map(text: str, start: str, stop: str) -> str:
    begin = text.index(start)
    end = text.find(stop, begin + len(start))
    return text[begin : end if end != -1 else len(text)]


def _maps(base: Path = ROOT) -> dict[str, str]:
    readme = (base / "README.md").read_text()
    conventions = (base / "docs" / "conventions.md").read_text()
    return {
        "README.md": _map(readme, "## Architecture", "\n## "),
        "docs/conventions.md": _map(conventions, "Where to find things:", "No folder holds more than"),
    }


def _named(module: Path, text: str) -> bool:
    parts = module.with_suffix("").parts
    if "/".join(parts) in text or ".".join(parts) in text or f"`{parts[-1]}.py`" in text:
        return True
    word = re.compile(r"(?<![\w.])" + re.escape(parts[-1]) + r"(?!\w)")
    if len(parts) == 2:  # a floor's own module
        return bool(word.search(text))
    return any(f"{parts[-2]}/" in line and word.search(line) for line in text.splitlines())


def _unmapped(base: Path = ROOT) -> dict[str, list[str]]:
    modules = [
        p.relative_to(base)
        for floor in MAP_FLOORS
        for p in sorted((base / floor).rglob("*.py"))
        if p.name != "__init__.py"
    ]
    return {
        name: missing
        for name, text in _maps(base).items()
        if (missing := [str(m) for m in modules if not _named(m, text)])
    }


def test_the_maps_name_every_module():
    assert _unmapped() == {}, "name each module where the map names its folder and feature"


def test_the_map_check_sees_a_module_left_out(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "README.md").write_text("## Architecture\n| Email | `delivery/` (outbox) | `db` |\n## Next\n")
    (tmp_path / "docs" / "conventions.md").write_text(
        "Where to find things:\n`models/delivery/outbox.py`, `core.db`\nNo folder holds more than\n"
    )
    for name in ("models/delivery/outbox.py", "models/delivery/budget.py", "core/db.py", "core/redis.py"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("")
    assert _unmapped(tmp_path) == {
        "README.md": ["models/delivery/budget.py", "core/redis.py"],
        "docs/conventions.md": ["models/delivery/budget.py", "core/redis.py"],
    }


def test_the_readme_links_every_document():
    readme = (ROOT / "README.md").read_text()
    unlinked = [p.name for p in sorted((ROOT / "docs").glob("*.md")) if f"](docs/{p.name})" not in readme]
    assert unlinked == [], "README's Documentation section should link these"


_NAMED_PATH = re.compile(r"(?<![\w./-])((?:" + "|".join(MAY_IMPORT) + r"|migrations|docs)/[\w./-]*\w)")
_NAMED_MODULE = re.compile(r"(?<![\w./-])((?:" + "|".join(PRODUCTION) + r"|testing)(?:\.\w+)+)")
_LOGGER = re.compile(r"getLogger\(\"([\w.]+)\"\)")


def _defines(path: Path, name: str) -> bool:
    """Whether a module's top level binds `name` (a def, class, assignment or import)."""
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) and node.name == name:
            return True
        targets = (
            [t for t in node.targets if isinstance(t, ast.Name)]
            if isinstance(node, ast.Assign)
            else [node.target]
            if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)
            else []
        )
        if any(t.id == name for t in targets):
            return True
        if isinstance(node, ast.Import | ast.ImportFrom) and any(
            (a.asname or a.name.split(".")[0]) == name for a in node.names
        ):
            return True
    return False


def _module_exists(dotted: str, base: Path) -> bool:
    """`models.plan.approvals` (a module or package), `models.plan.approvals.record` (a name its
    top level binds; what follows that name is not checked)."""
    parts = dotted.split(".")
    for n in range(len(parts), 0, -1):
        where = base.joinpath(*parts[:n])
        module = where / "__init__.py" if (where / "__init__.py").exists() else where.with_suffix(".py")
        if module.exists():
            return n == len(parts) or _defines(module, parts[n]) or (where / f"{parts[n]}.py").exists()
    return False


def _path_exists(named: str, base: Path) -> bool:
    """`models/plans.py`, `api/claim/`, `bench/README` (.md), `workers/email.sweep_outbox` (a
    module and a name in it); a pattern (`migrations/NNNN_name.sql`) is no path."""
    if "NNNN" in named:
        return True
    if any((base / f"{named}{end}").exists() for end in ("", ".py", ".md")):
        return True
    module, dot, name = named.rpartition(".")
    return bool(dot) and (base / f"{module}.py").exists() and _defines(base / f"{module}.py", name)


def _stale_names(base: Path = ROOT) -> list[str]:
    """`file:line: name` for each path or dotted module README.md and docs/*.md name that does not
    exist (a logger's name, `api.errors`, is a name too)."""
    loggers = {
        match.group(1)
        for room in PRODUCTION
        for path in (base / room).rglob("*.py")
        for match in _LOGGER.finditer(path.read_text())
    }
    found = []
    for doc in [base / "README.md", *sorted((base / "docs").glob("*.md"))]:
        for number, line in enumerate(doc.read_text().splitlines(), 1):
            where = f"{doc.relative_to(base)}:{number}"
            found += [
                f"{where}: {m.group(1)}"
                for m in _NAMED_PATH.finditer(line)
                if not _path_exists(m.group(1), base)
            ]
            found += [
                f"{where}: {m.group(1)}"
                for m in _NAMED_MODULE.finditer(line)
                if m.group(1) not in loggers and not _module_exists(m.group(1), base)
            ]
    return found


def test_every_path_and_module_the_docs_name_exists():
    assert _stale_names() == [], "README.md or docs/ name a file or module that is not there (moved?)"


def test_the_docs_check_sees_a_stale_name(tmp_path):
    """The check can fail: a moved file, a moved module, a name no longer in its module, are found;
    a file, a package, a module's name, a module path with its function, a logger and a pattern
    are not."""
    for name, text in {
        "models/plans.py": "ACTIVE = 'Active'\nasync def get(cur): ...\n",
        "models/plan/__init__.py": "",
        "workers/email.py": 'import logging\nlog = logging.getLogger("workers.mail")\n'
        "async def sweep(): ...\n",
        "README.md": "The plan: `models/plans.py`, `models/plan/`, `models.plans.ACTIVE`, `models.plan`.\n",
        "docs/a.md": "Moved: `models/plan/plans.py`, models.plan.plans and models.plans.gone.\n"
        "Fine: workers/email.sweep, `workers.mail` warnings, migrations/NNNN_name.sql, docs/a.md.\n",
    }.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    assert _stale_names(tmp_path) == [
        "docs/a.md:1: models/plan/plans.py",
        "docs/a.md:1: models.plan.plans",
        "docs/a.md:1: models.plans.gone",
    ]


def _public_functions(body: list[ast.stmt], prefix: str = "") -> Iterator[tuple[str, ast.arguments]]:
    """(qualified name, parameters) of each public function and public method (of a public class)."""
    for node in body:
        if isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
            yield from _public_functions(node.body, f"{prefix}{node.name}.")
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and not node.name.startswith("_"):
            yield f"{prefix}{node.name}", node.args


def _positional_values(base: Path = ROOT) -> list[str]:
    """`module.function(parameter)` for each parameter of a public function or public method in
    models/ that a caller may pass by position and is not a handle (a `*args` counts too)."""
    found = []
    for path in sorted((base / "models").rglob("*.py")):
        module = ".".join(path.relative_to(base).with_suffix("").parts)
        for name, args in _public_functions(ast.parse(path.read_text()).body):
            values = [a.arg for a in (*args.posonlyargs, *args.args) if a.arg not in HANDLES]
            values += [f"*{args.vararg.arg}"] if args.vararg else []
            found += [f"{module}.{name}({value})" for value in values]
    return found


def test_public_model_functions_take_domain_values_by_keyword():
    assert _positional_values() == [], "put these after `*` (handles only may come first; see HANDLES)"


def test_the_keyword_check_sees_a_positional_value(tmp_path):
    """The check can fail: a value after the handles, a lone value, a method's value and `*args`
    are found; handles, keyword-only values, private functions and nested helpers are not."""
    (tmp_path / "models" / "plan").mkdir(parents=True)
    (tmp_path / "models" / "plan" / "plans.py").write_text(
        "async def set_next_due(cur, plan_id, *, due): ...\n"
        "def majority(guardian_count): ...\n"
        "async def get(cur, ring, *, user_id, lock=False): ...\n"
        "def _record(ring, row): ...\n"
        "class Check:\n"
        "    async def remember(self, user_id, *, now): ...\n"
        "    def _hidden(self, row): ...\n"
        "class _Private:\n"
        "    def open(self, row): ...\n"
        "def fan_out(redis, *row_ids):\n"
        "    def helper(row): ...\n"
    )
    assert _positional_values(tmp_path) == [
        "models.plan.plans.set_next_due(plan_id)",
        "models.plan.plans.majority(guardian_count)",
        "models.plan.plans.Check.remember(user_id)",
        "models.plan.plans.fan_out(*row_ids)",
    ]
