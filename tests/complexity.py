"""The complexity gate of `make lint` (docs/conventions.md, "Complexity"): no production
function is over cyclomatic complexity 15 as radon counts it. radon counts boolean operators
and conditional expressions, as a reader does (ruff's C901 does not, so it is not this gate).
Nothing is exempt. Run as a script it prints each function over the limit and fails."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

from radon.complexity import cc_visit
from radon.visitors import Function

ROOT = Path(__file__).resolve().parent.parent
PRODUCTION = ("service", "api", "workers", "models", "core")
MAX_COMPLEXITY = 15


def _functions(blocks: list[object]) -> Iterator[Function]:
    """Functions, methods and the closures inside them (radon scores a closure on its own)."""
    for block in blocks:
        if isinstance(block, Function):
            yield block
            yield from _functions(block.closures)


def over_limit(base: Path = ROOT, rooms: tuple[str, ...] = PRODUCTION) -> list[str]:
    """`path:line name (complexity)` for each function past MAX_COMPLEXITY."""
    found = []
    for path in sorted(p for room in rooms for p in (base / room).rglob("*.py")):
        for function in _functions(cc_visit(path.read_text())):
            if function.complexity > MAX_COMPLEXITY:
                found.append(
                    f"{path.relative_to(base)}:{function.lineno} {function.fullname} ({function.complexity})"
                )
    return found


def main() -> int:
    found = over_limit()
    for line in found:
        print(line)
    if found:
        print(f"{len(found)} functions over complexity {MAX_COMPLEXITY}: split them into named steps")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
