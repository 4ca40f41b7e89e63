"""The README's configuration table and `.env.example` values, from the declaration in core/settings.

A separate module because it changes with the documentation's format, not with configuration.
"""

from __future__ import annotations

import sys
from pathlib import Path

from core.settings import FIELDS, VARIABLES, Variable, declared_default


def shown_default(var: Variable) -> str:
    """The README's default column for a variable."""
    if var.shown_default is not None:
        return var.shown_default
    attr = next((a for a, _, v in FIELDS if v is var), None)
    value = None if attr is None else declared_default(attr)
    return "" if value in (None, "") else f"`{value}`"


def example_value(var: Variable) -> str:
    """The value `.env.example` gives a variable: its example, else its default (secrets: empty)."""
    if var.secret:
        return ""
    if var.example is not None:
        return var.example
    attr = next((a for a, _, v in FIELDS if v is var), None)
    value = None if attr is None else declared_default(attr)
    return "" if value is None else str(value)


README_BEGIN = "<!-- settings-table: generated from core/settings.py by `python -m service.settings_docs` -->"
README_END = "<!-- /settings-table -->"


def readme_table() -> str:
    rows = ["| Variable | Default | Meaning |", "|---|---|---|"]
    rows += [f"| `{var.name}` | {shown_default(var)} | {var.doc} |" for var in VARIABLES]
    return "\n".join(rows)


def rewrite_readme(text: str) -> str:
    """README text with the generated table between its markers."""
    start = text.index(README_BEGIN) + len(README_BEGIN)
    end = text.index(README_END)
    return f"{text[:start]}\n{readme_table()}\n{text[end:]}"


if __name__ == "__main__":
    readme = Path(sys.argv[1] if len(sys.argv) > 1 else "README.md")
    readme.write_text(rewrite_readme(readme.read_text()))
    print(f"rewrote the configuration table in {readme}")
