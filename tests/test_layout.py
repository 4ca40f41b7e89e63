"""The house rules of docs/conventions.md that a reader can check from the files alone: one
module writes each table, no SQL writes outside models/, no folder of more than 12 modules, no
production function over complexity 15 (tests/complexity.py, as `make lint` runs it), imports
run down the floors only and never in a circle (between modules, and between the parts of api/
and of models/, whose floors run ground, rooms, flows: the import-linter contracts in
pyproject.toml, which `make lint` runs too), a public model function takes its domain values by
keyword, and tests stand alone (no test file imports another, no test changes module state another
reads). A module is as long as its one reason to change: there is no line cap."""

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

from tests.complexity import over_limit

ROOT = Path(__file__).resolve().parent.parent
CODE = ("api", "workers", "models", "core")
PRODUCTION = ("service", *CODE)
# Every room of the checkout; who may import whom is the import-linter contracts'
# ([tool.importlinter] in pyproject.toml).
ROOMS = ("core", "models", "api", "workers", "service", "testing", "bench", "tests")
MAX_MODULES = 12
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
    for room in ROOMS:
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


def _circles(base: Path = ROOT) -> list[list[str]]:
    """Groups of modules that import each other, round a circle (TYPE_CHECKING imports aside)."""
    modules = _modules(base)
    edges: dict[str, set[str]] = defaultdict(set)
    for module, target, typing_only in _imports(base):
        if not typing_only and target in modules and target != module:
            edges[module].add(target)
    return _knots(sorted(modules), edges)


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


def test_no_import_circle():
    """Between modules, a TYPE_CHECKING import aside: import-linter's acyclic contract cannot set
    those apart, so this one stays here."""
    assert _circles() == [], "modules importing each other round a circle (a TYPE_CHECKING one is fine)"


def test_the_circle_check_sees_one(tmp_path):
    """The module check can fail: a circle through a relative import is found; a TYPE_CHECKING
    circle is not."""
    for name, text in {
        "models/a.py": "from models import b\n",
        "models/b.py": "from . import c\n",
        "models/c.py": "from models.a import thing\n",
        "models/d.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from models import e\n",
        "models/e.py": "from models import d\n",
    }.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    assert _circles(tmp_path) == [["models.a", "models.b", "models.c"]]


def _lint_imports(base: Path) -> subprocess.CompletedProcess[str]:
    """import-linter over the tree at `base`, with the contracts of its pyproject.toml."""
    return subprocess.run(
        [str(Path(sys.executable).parent / "lint-imports"), "--no-cache"],
        cwd=base,
        env={**os.environ, "PYTHONPATH": str(base)},
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_import_contracts_hold():
    done = _lint_imports(ROOT)
    assert done.returncode == 0, done.stdout[done.stdout.find("Broken contracts") :] or done.stderr


def _contract_names() -> dict[str, str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    return {c["id"]: c["name"] for c in project["tool"]["importlinter"]["contracts"]}


def _scratch_tree(base: Path, files: dict[str, str]) -> None:
    """Every room and every floor the contracts name (import-linter refuses a missing layer),
    the real contracts, then `files`."""
    (base / "pyproject.toml").write_text((ROOT / "pyproject.toml").read_text())
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    floors = next(c for c in project["tool"]["importlinter"]["contracts"] if c["id"] == "model-floors")
    stubs = [f"{room}/__init__.py" for room in ROOMS if room != "tests"] + ["tests/conftest.py"]
    for line in floors["layers"]:
        for name in re.split(r"[:|]", line):
            name = name.strip()
            stubs.append(f"models/{name}.py" if " : " in line else f"models/{name}/__init__.py")
    for name, text in {**dict.fromkeys(stubs, ""), **files}.items():
        (base / name).parent.mkdir(parents=True, exist_ok=True)
        (base / name).write_text(text)


def test_the_floor_contracts_see_an_arrow_up(tmp_path):
    """Each floors contract can fail: an arrow up from core/ (in a function too), bench/ into
    tests/, production into testing/, api/ into workers/; in models/, the ground importing a
    room, a room importing a later room and a flow, a part on no floor, and their circle."""
    _scratch_tree(
        tmp_path,
        {
            "core/db.py": "from api import app\n",
            "core/storage.py": "def lazy():\n    import service.cli\n",
            "service/cli.py": "",
            "api/app.py": "import workers.main\n",
            "workers/main.py": "",
            "bench/run.py": "from tests import helpers\n",
            "tests/helpers.py": "",
            "models/plans.py": "from models.plan import journey\nfrom testing import soroban_rpc\n",
            "testing/soroban_rpc.py": "",
            "models/plan/journey.py": "def later():\n    from models.flows import release_path\n",
            "models/flows/release_path.py": "from models import plans\n",
            "models/delivery/outbox.py": "from models.contents import guardians\n",
            "models/contents/guardians.py": "from models import common\n",
            "models/garden/__init__.py": "",
            "models/garden/shed.py": "from models import common\n",
        },
    )
    done = _lint_imports(tmp_path)
    assert done.returncode == 1
    names = _contract_names()
    broken = done.stdout[done.stdout.index("Broken contracts") :]
    for line in (
        f"{names['floors']} BROKEN",
        f"{names['model-floors']} BROKEN",
        f"{names['parts']} BROKEN",  # plans -> plan -> flows -> plans is a circle too
    ):
        assert line in done.stdout
    for arrow in (
        "core.db -> api.app",
        "core.storage -> service.cli",
        "api.app -> workers.main",
        "bench.run -> tests.helpers",
        "models.plans -> testing.soroban_rpc",
        "models.plans -> models.plan.journey",
        "models.plan.journey -> models.flows.release_path",
        "models.delivery.outbox -> models.contents.guardians",
        "models.garden",
    ):
        assert arrow in broken, arrow


def test_the_parts_contract_sees_a_circle_between_parts(tmp_path):
    """A circle through two parts of api/ (or of models/) is found though no module imports one
    that imports it; a one-way arrow is not."""
    _scratch_tree(
        tmp_path,
        {
            "api/html.py": "from api.claim.gate import CAPSULE_HEADERS\n",
            "api/claim/__init__.py": "",
            "api/claim/gate.py": "from api.common import refuse_miss\n",
            "api/claim/page.py": "from api import html\n",
            "api/common.py": "",
            "api/plan/__init__.py": "",
            "api/plan/legacy.py": "from api.common import json_response\n",
            "models/delivery/outbox.py": "from models.delivery import budget\n",
            "models/delivery/budget.py": "",
        },
    )
    done = _lint_imports(tmp_path)
    assert done.returncode == 1
    assert f"{_contract_names()['parts']} BROKEN" in done.stdout
    broken = done.stdout[done.stdout.index("Broken contracts") :]
    assert "No cycles are allowed in api." in broken
    assert "No cycles are allowed in models" not in broken
    assert _circles(tmp_path) == []


def test_no_production_function_is_over_complexity_15():
    """The gate `make lint` runs (tests/complexity.py): nothing is exempt."""
    assert over_limit() == [], "split these into named steps or tables"


def test_the_complexity_gate_sees_a_complex_function(tmp_path):
    """The gate counts boolean operators and conditional expressions, and methods and closures:
    16 is found, 15 is not."""

    def body(indent: str, last: str) -> str:
        ifs = "".join(f"{indent}if x == {n}:\n{indent}    return {n}\n" for n in range(12))
        return f"{ifs}{indent}return {last}\n"

    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "plans.py").write_text(
        "def fifteen(x):\n"
        + body("    ", "1 if x and x else 2")
        + "def sixteen(x):\n"
        + body("    ", "1 if x and x or x else 2")
        + "class Plan:\n    def method(self, x):\n"
        + body("        ", "1 if x and x or x else 2")
        + "def outer(x):\n    def inner(x):\n"
        + body("        ", "1 if x and x or x else 2")
        + "    return inner\n"
    )
    assert sorted(over_limit(tmp_path, rooms=("models",))) == [
        "models/plans.py:27 sixteen (16)",
        "models/plans.py:54 Plan.method (16)",
        "models/plans.py:81 inner (16)",
    ]


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
        "core/db.py": '# measured (bench/README.md, "Pools")\n',
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


_NAMED_PATH = re.compile(r"(?<![\w./-])((?:" + "|".join(ROOMS) + r"|migrations|docs)/[\w./-]*\w)")
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


# Tests that stand alone: a helper two test files share lives in a helper module (tests/support/,
# the older tests/*_helpers.py), never in a test file, so one file runs without another's module
# code and fixtures; and no test changes module state that another test reads.
_IMPORTERS = frozenset(
    {"import_module", "__import__", "run_module", "run_path", "spec_from_file_location", "SourceFileLoader"}
)
_MUTATORS = frozenset(
    {
        "append",
        "extend",
        "insert",
        "remove",
        "pop",
        "popitem",
        "clear",
        "add",
        "discard",
        "update",
        "setdefault",
        "sort",
        "reverse",
        "difference_update",
        "intersection_update",
        "symmetric_difference_update",
    }
)
_CONTAINERS = frozenset({"list", "dict", "set", "defaultdict", "OrderedDict", "Counter", "deque"})
_ITERATORS = frozenset({"count", "cycle", "iter"})


def _test_modules(base: Path) -> list[Path]:
    return sorted((base / "tests").rglob("*.py"))


def _names_a_test_file(name: str, base: Path) -> bool:
    """`tests.test_x`, `test_x` (tests/ on the path) or a path to a `test_*.py` under tests/."""
    parts = re.split(r"[./\\]", name.removesuffix(".py"))
    if parts[:1] == ["tests"] and len(parts) > 1:
        return parts[1].startswith("test_")
    return parts[-1].startswith("test_") and (base / "tests" / f"{parts[-1]}.py").exists()


def _imported(node: ast.AST) -> list[str]:
    """The modules an import statement, or a call that imports by name or path, names."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if isinstance(node, ast.ImportFrom):
        module = "." * node.level + (node.module or "")
        return [module, *(f"{module}.{alias.name}" for alias in node.names)]
    if isinstance(node, ast.Call):
        func = node.func
        called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        if called in _IMPORTERS:
            return [a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
    return []


def _test_file_imports(base: Path = ROOT) -> list[str]:
    """Each place a module under tests/ imports a test file: top-level or inside a function, by
    statement or through importlib, runpy or `__import__`."""
    found = []
    for path in _test_modules(base):
        for node in ast.walk(ast.parse(path.read_text())):
            named = [name.lstrip(".") for name in _imported(node)]
            hits: list[str] = []
            for name in named:  # `from tests.test_b import x` names tests.test_b once, not x too
                if _names_a_test_file(name, base) and not any(name.startswith(f"{h}.") for h in hits):
                    hits.append(name)
            found += [f"{path.relative_to(base)}:{node.lineno}: {name}" for name in hits]
    return found


def _module_state(tree: ast.Module) -> tuple[set[str], set[str]]:
    """The module-level names bound to a mutable container, and to an iterator."""
    containers, iterators = set(), set()
    for node in tree.body:
        value = getattr(node, "value", None)
        targets = node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", None)]
        names = {t.id for t in targets if isinstance(t, ast.Name)}
        if isinstance(value, ast.List | ast.Dict | ast.Set | ast.ListComp | ast.DictComp | ast.SetComp):
            containers |= names
        elif isinstance(value, ast.Call):
            func = value.func
            called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            containers |= names if called in _CONTAINERS else set()
            iterators |= names if called in _ITERATORS else set()
    return containers, iterators


def _locals(function: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    args = function.args
    names = {a.arg for a in [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg] if a}
    for node in ast.walk(function):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
    return names


def _state_change(node: ast.AST, shared: set[str], iterators: set[str], local: set[str]) -> str | None:
    """What `node` changes of the module's state, if anything: a shared container mutated or
    rebound, an iterator advanced, a global rebound, os.environ written."""
    if isinstance(node, ast.Global):
        return f"global {', '.join(node.names)}"
    if isinstance(node, ast.Call):
        func, text = node.func, ast.unparse(node.func)
        if isinstance(func, ast.Attribute) and func.attr in _MUTATORS:
            owner = ast.unparse(func.value)
            if owner == "os.environ" or (owner in shared and owner not in local):
                return f"{text}()"
        if text in ("os.putenv", "os.unsetenv"):
            return f"{text}()"
        if text == "next" and node.args and ast.unparse(node.args[0]) in iterators - local:
            return f"next({ast.unparse(node.args[0])})"
    targets = getattr(node, "targets", None) or [getattr(node, "target", None)]
    if isinstance(node, ast.Assign | ast.AugAssign | ast.Delete):
        for target in targets:
            owner = ast.unparse(target.value) if isinstance(target, ast.Subscript) else None
            if owner == "os.environ" or (owner in shared and owner not in local):
                return f"{ast.unparse(target)} written"
    return None


def _shared_state_changes(base: Path = ROOT) -> list[str]:
    """Each place a module under tests/ changes module state in a function: a module-level list,
    dict or set (its own, or one it imports from another module under tests/) mutated, an
    iterator it holds advanced, a global rebound, or os.environ written outside monkeypatch."""
    trees = {path: ast.parse(path.read_text()) for path in _test_modules(base)}
    state = {".".join(p.relative_to(base).with_suffix("").parts): _module_state(t) for p, t in trees.items()}
    found = []
    for path, tree in trees.items():
        containers, iterators = state[".".join(path.relative_to(base).with_suffix("").parts)]
        for node in tree.body:
            if isinstance(node, ast.ImportFrom) and node.module in state:
                theirs, their_iterators = state[node.module]
                containers = containers | {a.asname or a.name for a in node.names if a.name in theirs}
                iterators = iterators | {a.asname or a.name for a in node.names if a.name in their_iterators}
        for function in ast.walk(tree):
            if isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
                local = _locals(function)
                for node in ast.walk(function):
                    change = _state_change(node, containers, iterators, local)
                    if change:
                        found.append((str(path.relative_to(base)), node.lineno, f"{function.name}: {change}"))
    return [f"{path}:{line}: {what}" for path, line, what in sorted(set(found))]


def test_no_test_file_imports_another():
    assert _test_file_imports() == [], "move what is shared to a helper module under tests/support/"


def test_no_test_changes_module_state_another_reads():
    assert _shared_state_changes() == [], "keep it local, pass it in, or change it through monkeypatch"


def test_the_standalone_checks_see_a_test_file_imported_and_state_changed(tmp_path):
    """Both checks can fail: a test file imported at the top, inside a function, from the package,
    by importlib and by path; a module list extended (its own and an imported one), an iterator
    advanced, a global rebound, os.environ written. A helper module imported, a local list of the
    same name, and monkeypatch are not."""
    files = {
        "tests/test_b.py": "ALLOWED = ['Ada']\nTURN = itertools.count()\n",
        "tests/support/words.py": "NAMES = ['Ada']\n",
        "tests/test_a.py": (
            "import importlib\n"
            "from tests.test_b import ALLOWED, TURN\n"
            "from tests.support.words import NAMES\n"
            "from tests import test_b\n"
            "def test_one(monkeypatch):\n"
            "    from tests.test_b import ALLOWED as AGAIN\n"
            "    importlib.import_module('tests.test_c')\n"
            "    importlib.util.spec_from_file_location('c', 'tests/test_c.py')\n"
            "    ALLOWED.extend(['Ben'])\n"
            "    NAMES.append('Ben')\n"
            "    next(TURN)\n"
            "    os.environ['APP_ENV'] = 'test'\n"
            "    monkeypatch.setenv('APP_ENV', 'test')\n"
            "def test_two():\n"
            "    global COUNT\n"
            "    ALLOWED = []\n"
            "    ALLOWED.append('local')\n"
        ),
        "tests/test_c.py": "",
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    assert _test_file_imports(tmp_path) == [
        "tests/test_a.py:2: tests.test_b",
        "tests/test_a.py:4: tests.test_b",
        "tests/test_a.py:6: tests.test_b",
        "tests/test_a.py:7: tests.test_c",
        "tests/test_a.py:8: tests/test_c.py",
    ]
    assert _shared_state_changes(tmp_path) == [
        "tests/test_a.py:9: test_one: ALLOWED.extend()",
        "tests/test_a.py:10: test_one: NAMES.append()",
        "tests/test_a.py:11: test_one: next(TURN)",
        "tests/test_a.py:12: test_one: os.environ['APP_ENV'] written",
        "tests/test_a.py:15: test_two: global COUNT",
    ]
